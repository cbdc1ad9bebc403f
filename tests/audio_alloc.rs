//! The output callback's body never allocates: a counting global allocator (this test binary
//! only) counts allocations made on this thread while `Renderer::render` runs through every
//! path: playback, channel fan-out, integer conversion, underrun, pause and flush.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use lectern::audio::callback::{Shared, ring};

struct Counting;

static ALLOCS: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
}

// SAFETY: forwards to the system allocator; only bumps a counter on the side.
#[allow(unsafe_code)] // a counting allocator wraps the system one
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.with(Cell::get) {
            ALLOCS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if COUNTING.with(Cell::get) {
            ALLOCS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if COUNTING.with(Cell::get) {
            ALLOCS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: same contract as ours.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations (and frees) made on this thread while `f` runs.
fn count<R>(f: impl FnOnce() -> R) -> (usize, R) {
    let before = ALLOCS.load(Ordering::Relaxed);
    COUNTING.with(|c| c.set(true));
    let r = f();
    COUNTING.with(|c| c.set(false));
    (ALLOCS.load(Ordering::Relaxed) - before, r)
}

#[test]
fn render_does_not_allocate() {
    // Everything that may allocate happens out here, as on the player thread.
    let shared = Arc::new(Shared::default());
    let (mut prod, mut r) = ring(4096, Arc::clone(&shared), 2);
    let take: Vec<f32> = (0..3000).map(|i| (i as f32 * 0.01).sin()).collect();
    let mut out_f32 = vec![0.0f32; 2 * 512];
    let mut out_i16 = vec![0i16; 2 * 512];
    let mut out_u8 = vec![0u8; 2 * 512];
    // Counting works: an allocation inside `count` is seen.
    let (n, v) = count(|| vec![1u8; 10]);
    assert!(n >= 1);
    drop(v);

    let _ = prod.push_partial_slice(&take);
    shared.set_pending(true);
    let (n, played) = count(|| {
        let mut played = 0;
        for _ in 0..4 {
            played += r.render(&mut out_f32);
            played += r.render(&mut out_i16);
        }
        played += r.render(&mut out_u8); // includes an underrun: 3000 < 9 × 512
        shared.set_paused(true);
        r.render(&mut out_f32);
        shared.set_paused(false);
        played
    });
    assert_eq!(n, 0, "render allocated {n} times");
    assert_eq!(played, 3000);
    assert!(shared.underruns() >= 1);

    let _ = prod.push_partial_slice(&take[..100]);
    let req = shared.request_flush();
    let (n, _) = count(|| r.render(&mut out_f32));
    assert_eq!(n, 0, "flush allocated {n} times");
    assert!(shared.flushed(req));
}
