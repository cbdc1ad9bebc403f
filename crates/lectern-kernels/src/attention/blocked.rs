//! The register-blocked f32 attention core, written once over [`F32Lanes`] and run at two
//! widths: [`crate::attention::avx512`] (16 lanes) and [`crate::attention::avx2`] (8 lanes),
//! each an `#[target_feature]` entry point that calls [`block`] with its instruction set and
//! its block sizes (the const parameters), and its own few pieces where the widths differ
//! ([`crate::attention::lanes`]).
//!
//! The portable core runs each query block's two products through the `gemm` crate, which
//! packs the head's keys (and values) again for every block of 64 queries and dispatches per
//! call, and its softmax makes four passes over each row of scores. Here a task
//! ([`crate::attention::tasks`]) packs its head's `Kᵀ` once, in panels of two vectors of keys
//! (`2 · LANES`), and for each block of queries runs:
//!
//! * `S = Q·Kᵀ` panel by panel (a panel stays in L1 while every query of the block meets it)
//!   on a `SCORE_ROWS`-query × panel register block (two accumulators a row, a broadcast of `q`
//!   and two loads of `Kᵀ` per step of `dh`), the width keeping each row's running maximum
//!   as the block is stored if it can ([`F32Lanes::take_max`]);
//! * the softmax's weights `exp(s − max)` written in place and summed in the same pass
//!   (`LANES` lane sums over the whole vectors, then the width's tail), unnormalised;
//! * `O = P·V` over chunks of 64 keys (their values, 16 KB at `dh` 64, stay in L1 while every
//!   query of the block meets them) on a `PV_ROWS`-query × `PV_VECTORS`-vector register block
//!   (one broadcast of `P` and `PV_VECTORS` loads of `V` per key), in passes over the head's
//!   values, whose sums are kept between chunks, each output row divided by its weights' sum
//!   as it is stored (as flash attention does; the portable core divides the weights instead:
//!   the two differ by rounding only, the cores' tests).
//!
//! Every sum runs in the same order whatever the loop order around it (over `dh` for a score,
//! over the keys for an output value), so the blocking changes no bit: a score, a weight and
//! an output value before its division have the same bits at either width. Only the weights'
//! sums differ between the widths (their lanes and tails), and with them the divided outputs.
//!
//! The same operations as the portable core otherwise: `q` carries the softmax scale, the
//! exponential is [`exp`] (= [`crate::attention::exp_fast`] per lane, operation for
//! operation), sums are f32.

// Raw pointers into the tasks' scratch and the shared output (SAFETY notes at each use).
#![allow(unsafe_code)]

use crate::attention::lanes::F32Lanes;
use crate::attention::tasks::{Head, PvArgs, Scratch};
use crate::attention::{EXP_POLY, LN2_HI, LN2_LO};
use crate::shared_out::OutPtr;

/// Keys per chunk of `P·V`: 64 keys' values (16 KB at `dh` 64) stay in L1 while the block's
/// queries meet them.
const KEY_CHUNK: usize = 64;

/// Keys per packed panel of `Kᵀ` at a width: two vectors (the score kernel's columns).
pub(super) const fn panel<L: F32Lanes>() -> usize {
    2 * L::LANES
}

/// One query block: scores, weights, `P·V` divided by the sums, into `out` at `out_at`, on
/// `SCORE_ROWS`-query score blocks and `PV_ROWS`-query × `PV_VECTORS`-vector `P·V` blocks;
/// `QUERY_BLOCK` (a multiple of both kernels' rows) is the most rows `q` has.
///
/// # Safety
/// `s` was made and packed for `head` with panels of [`panel`]`::<L>()` keys and blocks of
/// `QUERY_BLOCK` queries; `dh` is a multiple of `PV_VECTORS · LANES`; `out` holds `rows` rows
/// of `dh` values at `out_at`, rows `head.row_stride` apart, written by this task alone.
#[inline(always)]
pub(super) unsafe fn block<
    L: F32Lanes,
    const SCORE_ROWS: usize,
    const PV_ROWS: usize,
    const PV_VECTORS: usize,
    const QUERY_BLOCK: usize,
>(
    l: L,
    s: &mut Scratch,
    head: &Head,
    q: &[f32],
    v: &[f32],
    out: OutPtr,
    out_at: usize,
) {
    let (t, dh, t_pad) = (head.t, head.dh, head.t_pad);
    let panel = panel::<L>();
    let rows = q.len() / dh;
    let score_rows = rows.next_multiple_of(SCORE_ROWS);
    s.q[..q.len()].copy_from_slice(q);
    s.q[q.len()..score_rows * dh].fill(0.0);
    let mut maxes = [l.row_max_start(); QUERY_BLOCK];
    for p in 0..t_pad / panel {
        let lanes = l.key_lanes((t - p * panel).min(panel));
        for r0 in (0..score_rows).step_by(SCORE_ROWS) {
            // SAFETY: q rows r0..r0 + SCORE_ROWS (≤ QUERY_BLOCK) × dh, panel p of the packed
            // keys, scores rows r0..r0 + SCORE_ROWS × columns p·panel.. + panel (≤ t_pad).
            unsafe {
                scores::<L, SCORE_ROWS>(
                    l,
                    s.q.as_ptr().add(r0 * dh),
                    s.keys.as_ptr().add(p * dh * panel),
                    dh,
                    s.scores.as_mut_ptr().add(r0 * t_pad + p * panel),
                    t_pad,
                    (&mut maxes[r0..r0 + SCORE_ROWS], lanes),
                )
            };
        }
    }
    let mut sums = [1f32; QUERY_BLOCK];
    for (r, sum) in sums.iter_mut().take(rows).enumerate() {
        *sum = weights(l, &mut s.scores[r * t_pad..r * t_pad + t], maxes[r]);
    }
    let pv_rows = rows.next_multiple_of(PV_ROWS);
    for r in rows..pv_rows {
        s.scores[r * t_pad..r * t_pad + t].fill(0.0);
    }
    for j0 in (0..t).step_by(KEY_CHUNK) {
        let chunk = j0..(j0 + KEY_CHUNK).min(t);
        let (first, last) = (j0 == 0, chunk.end == t);
        for r0 in (0..pv_rows).step_by(PV_ROWS) {
            let args = PvArgs {
                p: s.scores[r0 * t_pad..].as_ptr(),
                p_stride: t_pad,
                v: v.as_ptr(),
                dh,
                keys: chunk.clone(),
                partial: s.partial[r0 * dh..].as_mut_ptr(),
                sums: &sums[r0..r0 + PV_ROWS],
                rows: (rows - r0.min(rows)).min(PV_ROWS),
                // SAFETY: rows r0.. of the block are within the caller's `rows` rows.
                out: unsafe { out.get().add(out_at + r0 * head.row_stride) },
                out_stride: head.row_stride,
            };
            for d0 in (0..dh).step_by(PV_VECTORS * L::LANES) {
                // SAFETY: P rows r0..r0 + PV_ROWS × t (scores, t_pad apart), V t × dh, the
                // partial sums' rows r0..r0 + PV_ROWS × dh (≤ QUERY_BLOCK rows), and `rows`
                // output rows, as the caller grants; values d0..d0 + PV_VECTORS · LANES ≤ dh.
                unsafe { pv::<L, PV_ROWS, PV_VECTORS>(l, &args, d0, first, last) };
            }
        }
    }
}

/// `S[r][c] = Σ_d q[r][d] · Kᵀ[d][c]` for `R` query rows and one key panel (two vectors);
/// each row's running maximum takes in the panel's key lanes.
///
/// # Safety
/// `q` R rows × dh, `keys` dh × panel, `s` R rows (`s_stride` apart) × panel, in bounds;
/// `maxes` has R rows.
#[inline(always)]
unsafe fn scores<L: F32Lanes, const R: usize>(
    l: L,
    q: *const f32,
    keys: *const f32,
    dh: usize,
    s: *mut f32,
    s_stride: usize,
    (maxes, lanes): (&mut [L::RowMax], L::KeyLanes),
) {
    let (n, panel) = (L::LANES, panel::<L>());
    let mut acc = [[l.zero(); 2]; R];
    for d in 0..dh {
        // SAFETY: step d of the panel (two vectors), as the caller grants.
        let (lo, hi) = unsafe { (l.load(keys.add(d * panel)), l.load(keys.add(d * panel + n))) };
        for (r, acc) in acc.iter_mut().enumerate() {
            // SAFETY: q[r][d] with r < R and d < dh, inside the R rows × dh of `q` the caller
            // grants (rows of the task's zero-padded `Scratch::q`, an f32 buffer, so the read
            // is aligned).
            let x = l.splat(unsafe { *q.add(r * dh + d) });
            acc[0] = l.fma(x, lo, acc[0]);
            acc[1] = l.fma(x, hi, acc[1]);
        }
    }
    for (r, (acc, max)) in acc.iter().zip(maxes).enumerate() {
        // SAFETY: row r's panel of scores, as the caller grants.
        unsafe {
            l.store(s.add(r * s_stride), acc[0]);
            l.store(s.add(r * s_stride + n), acc[1]);
        }
        l.take_max(max, *acc, lanes);
    }
}

/// `O[r][d0..d0 + Z·LANES] += Σ_{j in chunk} P[r][j] · V[j][d0..d0 + Z·LANES]` for `R` query
/// rows (`Z` loads of `V` and a broadcast of `P` per key), starting from zero on the `first`
/// chunk and from `partial` after it; after the `last` chunk each row is divided by its
/// weights' sum and stored in `out`, before it the sums go back to `partial`.
///
/// # Safety
/// `p` R rows × the chunk's keys, `v` those keys' rows × dh with `d0 + Z·LANES ≤ dh`,
/// `partial` R rows × dh, `sums` R rows, `out` `rows` (≤ R) rows × dh, in bounds.
#[inline(always)]
unsafe fn pv<L: F32Lanes, const R: usize, const Z: usize>(
    l: L,
    a: &PvArgs,
    d0: usize,
    first: bool,
    last: bool,
) {
    let n = L::LANES;
    let mut acc = [[l.zero(); Z]; R];
    if !first {
        for (r, acc) in acc.iter_mut().enumerate() {
            for (z, acc) in acc.iter_mut().enumerate() {
                // SAFETY: partial row r, values d0 + z·LANES.. + LANES ≤ dh.
                *acc = unsafe { l.load(a.partial.add(r * a.dh + d0 + n * z)) };
            }
        }
    }
    // The rows' pointers once, and V's by steps, not recomputed per key.
    let p_rows: [*const f32; R] = std::array::from_fn(|r| a.p.wrapping_add(r * a.p_stride));
    let mut v = a.v.wrapping_add(a.keys.start * a.dh + d0);
    for j in a.keys.clone() {
        let mut vj = [l.zero(); Z];
        for (z, vz) in vj.iter_mut().enumerate() {
            // SAFETY: V row j, values d0 + z·LANES.. + LANES ≤ dh.
            *vz = unsafe { l.load(v.add(n * z)) };
        }
        v = v.wrapping_add(a.dh);
        for (acc, row) in acc.iter_mut().zip(&p_rows) {
            // SAFETY: P row r, column j of the chunk.
            let w = l.splat(unsafe { *row.add(j) });
            for (acc, &vz) in acc.iter_mut().zip(&vj) {
                *acc = l.fma(w, vz, *acc);
            }
        }
    }
    if !last {
        for (r, acc) in acc.iter().enumerate() {
            for (z, &o) in acc.iter().enumerate() {
                // SAFETY: partial row r, values d0 + z·LANES.. + LANES ≤ dh.
                unsafe { l.store(a.partial.add(r * a.dh + d0 + n * z), o) };
            }
        }
        return;
    }
    for (r, acc) in acc.iter().enumerate().take(a.rows) {
        let sum = l.splat(a.sums[r]);
        for (z, &o) in acc.iter().enumerate() {
            // SAFETY: output row r < rows, values d0 + z·LANES.. + LANES ≤ dh.
            unsafe { l.store(a.out.add(r * a.out_stride + d0 + n * z), l.div(o, sum)) };
        }
    }
}

/// The softmax's weights `exp(s − max)` of one row of scores, in place, its maximum from the
/// running maximum `max` the score kernel kept or from the row ([`F32Lanes::row_max`]);
/// returns their sum (`LANES` lane sums over the row's whole vectors, then the width's
/// [`F32Lanes::weights_tail`]).
#[inline(always)]
pub(super) fn weights<L: F32Lanes>(l: L, row: &mut [f32], max: L::RowMax) -> f32 {
    let max = l.row_max(max, row);
    let n = row.len();
    let body = n - n % L::LANES;
    let ptr = row.as_mut_ptr();
    let vmax = l.splat(max);
    let mut sum = l.zero();
    for i in (0..body).step_by(L::LANES) {
        // SAFETY: i is a multiple of LANES below `body` (n rounded down to a multiple of
        // LANES), so lanes i..i + LANES ≤ body ≤ n lie in `row`.
        let e = exp(l, l.sub(unsafe { l.load(ptr.add(i)) }, vmax));
        // SAFETY: the same lanes of `row`, written through `ptr` (from `row.as_mut_ptr()`;
        // nothing else refers to them meanwhile).
        unsafe { l.store(ptr.add(i), e) };
        sum = l.add(sum, e);
    }
    l.weights_tail(sum, &mut row[body..], max)
}

/// [`crate::attention::exp_fast`] on every lane, operation for operation.
#[inline(always)]
pub(super) fn exp<L: F32Lanes>(l: L, x: L::V) -> L::V {
    const ROUND: f32 = 12_582_912.0;
    let c = |x| l.splat(x);
    let xc = l.max(x, c(-87.0));
    let shifted = l.add(l.mul(xc, c(std::f32::consts::LOG2_E)), c(ROUND));
    let n = l.sub(shifted, c(ROUND));
    let r = l.add(l.sub(xc, l.mul(n, c(LN2_HI))), l.mul(n, c(LN2_LO)));
    let mut p = c(EXP_POLY[0]);
    for &k in &EXP_POLY[1..] {
        p = l.add(l.mul(p, r), c(k));
    }
    let y = l.add(l.add(l.mul(l.mul(p, r), r), r), c(1.0));
    let scaled = l.mul(y, l.pow2_of_rounded(shifted, ROUND));
    l.zero_below(x, -87.0, scaled)
}
