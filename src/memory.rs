//! The process's allocator policy: memory the engine frees stays in the process for its next
//! allocation instead of going back to the kernel.
//!
//! Why: on the CPU the flow and the vocoder make tensors of 5–100 MB many times a second (a
//! DiT block alone writes about ten of them). glibc's malloc maps each allocation above its
//! mmap threshold (32 MB at most) afresh, maps large blocks afresh on any thread but the main
//! one (the engine's threads allocate from their own arenas, whose heaps are 64 MB at most),
//! and trims the heap's top back to the kernel once 2 × that threshold is free. Every page of
//! such a fresh block faults in and is cleared by the kernel before its first write, system
//! time that weighs most with `--flow-matmul bf16` (docs/refutations.md).
//!
//! The policy, set once at start-up before any thread exists:
//! * one arena, so that every thread's blocks come from the same heap (`M_ARENA_MAX`);
//! * no block is mapped on its own (`M_MMAP_MAX` 0): large blocks come from the heap too, and
//!   glibc still maps one where the heap cannot grow;
//! * up to 1 GiB free at the heap's top stays mapped (`M_TRIM_THRESHOLD`). The engine's largest
//!   transient (a flow group's attention and vocoder tensors) is a few hundred MB, so what the
//!   process keeps beyond its peak is bounded, and more than that goes back.
//!
//! glibc only (Linux with the GNU C library); elsewhere the allocator is left as it is.

/// Most bytes free at the heap's top that stay mapped.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const TRIM_THRESHOLD_BYTES: libc::c_int = 1 << 30;

/// Sets the policy above; call first thing in `main`, before any thread starts. Returns
/// whether glibc took every setting (it refuses none of these values in practice; the engine
/// works either way, only slower).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)] // mallopt(3): FFI
pub fn keep_freed_memory() -> bool {
    let settings = [
        (libc::M_ARENA_MAX, 1),
        (libc::M_MMAP_MAX, 0),
        (libc::M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES),
    ];
    // SAFETY: mallopt only changes malloc's parameters; called before other threads allocate,
    // and glibc serialises it with allocations anyway.
    settings.iter().all(|&(param, value)| unsafe { libc::mallopt(param, value) } == 1)
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub fn keep_freed_memory() -> bool {
    false
}

// Tested in its own process (tests/memory_policy.rs): the policy must be set before any thread
// exists, as `main` does, which no test in a harness's threads can do.
