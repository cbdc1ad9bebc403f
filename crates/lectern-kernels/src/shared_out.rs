//! One output buffer written by many rayon tasks at once, each in a region of its own (the
//! CPU attention's query blocks, the bf16 kernels' output blocks, the vocoder conv's columns).

// Sharing a raw pointer across threads needs `unsafe impl Send/Sync` (SAFETY note there).
#![allow(unsafe_code)]

/// A raw pointer to the shared output. Its users write disjoint regions only and keep the
/// buffer alive until every task has ended; each use says which region is its own.
#[derive(Clone, Copy)]
pub(crate) struct OutPtr(*mut f32);

// SAFETY: the tasks write disjoint regions of a buffer that outlives them (see `OutPtr`).
unsafe impl Send for OutPtr {}
// SAFETY: a shared `&OutPtr` gives out nothing but copies of the pointer (`get`); every write
// through them goes to a region that one task alone owns, in a buffer that outlives the tasks
// (see `OutPtr`), so no element is accessed from two threads at once.
unsafe impl Sync for OutPtr {}

impl OutPtr {
    pub(crate) fn new(buffer: &mut [f32]) -> Self {
        Self(buffer.as_mut_ptr())
    }

    /// Through a method, so closures capture the `Sync` wrapper, not its raw field.
    pub(crate) fn get(self) -> *mut f32 {
        self.0
    }
}
