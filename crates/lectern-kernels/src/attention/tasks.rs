//! The task layout the register-blocked f32 attention cores share ([`crate::attention::avx512`],
//! [`crate::attention::avx2`]): every (batch, head, run of query blocks) is one task on the
//! rayon pool. A task packs its head's `Kᵀ` once, in panels of the core's width, and runs the
//! core's block kernel ([`crate::attention::blocked::block`] at its width) on each of its query
//! blocks; a block's output rows come from one task whatever the thread count, so the bits do
//! not depend on `--threads`.

// The cores' kernels are `unsafe fn`s (their CPU features) called from the tasks (SAFETY note
// at the call).
#![allow(unsafe_code)]

use std::ops::Range;

use rayon::prelude::*;

use crate::shared_out::OutPtr;

/// A core's geometry.
#[derive(Clone, Copy)]
pub(super) struct Layout {
    /// Keys per packed panel of `Kᵀ` (the score kernel's columns).
    pub panel: usize,
    /// Queries per block: a multiple of the core's kernel rows.
    pub query_block: usize,
}

/// One head's sizes.
pub(super) struct Head {
    pub t: usize,
    pub dh: usize,
    /// `t` rounded up to whole key panels: the row stride of the scores.
    pub t_pad: usize,
    /// Values from one output row to the next in `(b, t, h·dh)`.
    pub row_stride: usize,
}

/// A task's buffers: the head's packed `Kᵀ`, a query block (zero rows past its end), its
/// scores, and its output sums between key chunks.
pub(super) struct Scratch {
    pub keys: Vec<f32>,
    pub q: Vec<f32>,
    pub scores: Vec<f32>,
    pub partial: Vec<f32>,
}

impl Scratch {
    fn new(head: &Head, layout: Layout) -> Self {
        Self {
            keys: vec![0.0; head.t_pad * head.dh],
            q: vec![0.0; layout.query_block * head.dh],
            scores: vec![0.0; layout.query_block * head.t_pad],
            partial: vec![0.0; layout.query_block * head.dh],
        }
    }

    /// `Kᵀ` in panels: panel `p`, step `d`, lane `c` holds `k[panel·p + c][d]` (0 past `t`).
    fn pack_keys(&mut self, head: &Head, panel_keys: usize, k: &[f32]) {
        let (t, dh) = (head.t, head.dh);
        for (p, panel) in self.keys.chunks_exact_mut(dh * panel_keys).enumerate() {
            for (c, key) in (p * panel_keys..(p * panel_keys + panel_keys).min(t)).enumerate() {
                for (d, &x) in k[key * dh..(key + 1) * dh].iter().enumerate() {
                    panel[d * panel_keys + c] = x;
                }
            }
        }
    }
}

/// The operands of one `P·V` register block (a core's kernel rows) over one chunk of keys.
pub(super) struct PvArgs<'a> {
    /// The block's first row of weights, rows `p_stride` apart.
    pub p: *const f32,
    pub p_stride: usize,
    /// `V`'s row 0, rows `dh` apart.
    pub v: *const f32,
    pub dh: usize,
    pub keys: Range<usize>,
    /// The block's sums over the chunks before this one: its rows × dh, dh apart.
    pub partial: *mut f32,
    /// The block's rows' weight sums.
    pub sums: &'a [f32],
    /// Output rows to store (the block's others are padding).
    pub rows: usize,
    pub out: *mut f32,
    pub out_stride: usize,
}

/// A core's kernel for one query block `q` (its rows × dh): scores, weights, `P·V` divided by
/// the sums, into `out` at `out_at`.
///
/// # Safety
/// The CPU has the core's features; `out` holds `q.len() / dh` rows of `dh` values at
/// `out_at`, rows `head.row_stride` apart, written by this task alone.
pub(super) type BlockKernel = unsafe fn(&mut Scratch, &Head, &[f32], &[f32], OutPtr, usize);

/// q (pre-scaled), k, v `(b, h, t, dh)` contiguous f32 → `(b, t, h·dh)`, every query block
/// through `block`.
///
/// # Safety
/// The CPU has the features `block` needs, and `block` serves heads of `dh` values.
///
/// # Panics
/// If the slices are not `b·h·t·dh` long.
pub(super) unsafe fn run(
    (b, h, t, dh): (usize, usize, usize, usize),
    (qs, ks, vs): (&[f32], &[f32], &[f32]),
    layout: Layout,
    block: BlockKernel,
) -> Vec<f32> {
    let n = b * h * t * dh;
    assert!(qs.len() == n && ks.len() == n && vs.len() == n, "CPU attention: sizes");
    let mut out = vec![0f32; n];
    if n == 0 {
        return out;
    }
    let out_ptr = OutPtr::new(&mut out);
    let blocks = t.div_ceil(layout.query_block);
    // Enough tasks to balance the threads; each packs its head's keys once.
    let per_head = (4 * rayon::current_num_threads()).div_ceil(b * h).clamp(1, blocks);
    let head = Head { t, dh, t_pad: t.next_multiple_of(layout.panel), row_stride: h * dh };
    (0..b * h * per_head).into_par_iter().for_each_init(
        || Scratch::new(&head, layout),
        |scratch, task| {
            let (bh, part) = (task / per_head, task % per_head);
            let (bi, hi) = (bh / h, bh % h);
            let at = bh * t * dh;
            let (q, k, v) = (&qs[at..at + t * dh], &ks[at..at + t * dh], &vs[at..at + t * dh]);
            scratch.pack_keys(&head, layout.panel, k);
            let out_head = (bi * t * h + hi) * dh; // row 0 of this head in (b, t, h·dh)
            for block_index in part * blocks / per_head..(part + 1) * blocks / per_head {
                let r0 = block_index * layout.query_block;
                let rows = layout.query_block.min(t - r0);
                // SAFETY: the CPU has the kernel's features (the caller's promise); this task
                // alone writes rows r0..r0 + rows of this head's dh columns of `out` (b·t·h·dh
                // values, alive until after the loop).
                unsafe {
                    block(
                        scratch,
                        &head,
                        &q[r0 * dh..(r0 + rows) * dh],
                        v,
                        out_ptr,
                        out_head + r0 * head.row_stride,
                    )
                };
            }
        },
    );
    out
}
