//! `lectern::memory::keep_freed_memory` in a process of its own (`harness = false`): set first
//! thing in `main`, as the `lectern` binary does, before any thread exists. A thread started
//! after it (the engine's threads are) then gets a freed 64 MB block back without a page fault
//! on writing it, where glibc's default maps such a block afresh on every allocation and each
//! 4 KB page faults in (16 384 faults a block).

#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)] // getrusage(2): FFI
fn minor_faults_of_this_thread() -> i64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes one `rusage` into the buffer it is given.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, usage.as_mut_ptr()) };
    assert_eq!(rc, 0, "getrusage");
    // SAFETY: written by the successful call above (and zeroed before it).
    unsafe { usage.assume_init() }.ru_minflt
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn main() {
    const BYTES: usize = 64 << 20;
    assert!(lectern::memory::keep_freed_memory(), "glibc refused a setting");
    let faults = std::thread::spawn(|| {
        drop(std::hint::black_box(vec![1u8; BYTES]));
        (0..3)
            .map(|_| {
                let before = minor_faults_of_this_thread();
                let block = std::hint::black_box(vec![2u8; BYTES]);
                let taken = minor_faults_of_this_thread() - before;
                drop(block);
                taken
            })
            .collect::<Vec<_>>()
    })
    .join()
    .expect("the allocating thread");
    assert!(faults.iter().all(|&f| f < 1000), "page faults per 64 MB block: {faults:?}");
    println!("memory policy: a freed 64 MB block is reused on another thread ({faults:?} faults)");
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn main() {
    assert!(!lectern::memory::keep_freed_memory());
    println!("memory policy: not glibc, the allocator is left as it is");
}
