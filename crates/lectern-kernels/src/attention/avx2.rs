//! The f32 attention core on AVX2 and FMA: [`crate::attention::attend`]'s route on CPUs
//! without AVX-512 (AMD Zen 1–3, Intel's client cores) for heads of 16, 32, 48 or 64 values
//! (the DiT's is 64).
//!
//! [`crate::attention::avx512`]'s design at half the width: a task packs its head's `Kᵀ` once,
//! in panels of 16 keys (the portable core's `gemm` calls pack them again for every block of
//! queries), and per block of queries runs
//!
//! * `S = Q·Kᵀ` on a 6-query × 16-key register block (12 accumulators, a broadcast of `q` and
//!   two loads of `Kᵀ` per step of `dh`: 15 of the 16 AVX2 registers);
//! * the softmax's weights `exp(s − max)` written in place and summed in the same pass (8 lane
//!   sums; the row's last `t mod 8` weights by the scalar [`exp_fast`], the same function);
//! * `O = P·V` over chunks of 64 keys (their values, 16 KB, stay in L1 while every query of
//!   the block meets them) on a 6-query × 16-value block (12 accumulators; a 64-value head in
//!   four passes) whose sums are kept between chunks, each output row divided by its weights'
//!   sum as it is stored.
//!
//! The same operations as the other cores otherwise: `q` carries the softmax scale, the
//! exponential is [`exp8`] (= [`exp_fast`] per lane, operation for operation), sums are f32.

// AVX2 intrinsics on raw pointers into the tasks' scratch and the shared output (SAFETY notes
// at each use).
#![allow(unsafe_code)]

use std::arch::x86_64::{
    __m256, _CMP_LT_OQ, _mm256_add_epi32, _mm256_add_ps, _mm256_blendv_ps, _mm256_castps_si256,
    _mm256_castsi256_ps, _mm256_cmp_ps, _mm256_div_ps, _mm256_fmadd_ps, _mm256_loadu_ps,
    _mm256_max_ps, _mm256_mul_ps, _mm256_set1_epi32, _mm256_set1_ps, _mm256_setzero_ps,
    _mm256_slli_epi32, _mm256_storeu_ps, _mm256_sub_epi32, _mm256_sub_ps,
};

use crate::attention::tasks::{self as attention_tasks, Head, Layout, PvArgs, Scratch};
use crate::attention::{EXP_POLY, LN2_HI, LN2_LO, exp_fast};
use crate::shared_out::OutPtr;

/// Keys per packed panel of `Kᵀ` (two vectors: the score kernel's columns).
const PANEL: usize = 16;
/// Queries per score block and per P·V block (the kernels' rows).
const SCORE_ROWS: usize = 6;
const PV_ROWS: usize = 6;
/// Values of a head per P·V pass (two vectors).
const PV_VALUES: usize = 16;
/// Keys per chunk of `P·V`: 64 keys' values (16 KB at `dh` 64) stay in L1 while the block's
/// queries meet them.
const KEY_CHUNK: usize = 64;
/// Queries per block (a multiple of both kernels' rows): 48 × 1208 scores × 4 B = 232 KB, with
/// the head's packed keys (309 KB) in a Zen 3 core's 512 KB L2.
const QUERY_BLOCK: usize = 48;

/// Whether this core serves heads of `dh` values on this CPU.
pub(super) fn supported(dh: usize) -> bool {
    crate::simd::has_avx2_fma() && dh % 16 == 0 && (16..=64).contains(&dh)
}

/// q (pre-scaled), k, v `(b, h, t, dh)` contiguous f32 → `(b, t, h·dh)`.
///
/// # Panics
/// If [`supported`] does not hold for `dh` or the slices are not `b·h·t·dh` long.
pub(super) fn attend(
    heads: (usize, usize, usize, usize),
    qs: &[f32],
    ks: &[f32],
    vs: &[f32],
) -> Vec<f32> {
    let dh = heads.3;
    assert!(supported(dh), "AVX2 attention: no AVX2 and FMA here, or dh {dh}");
    let layout = Layout { panel: PANEL, query_block: QUERY_BLOCK };
    // SAFETY: AVX2 and FMA are present (asserted above); `block` serves heads of `dh` values.
    unsafe { attention_tasks::run(heads, (qs, ks, vs), layout, block) }
}

/// One query block: scores, weights, `P·V` divided by the sums, into `out` at `out_at`.
///
/// # Safety
/// AVX2 and FMA are present; `out` holds `rows` rows of `dh` values at `out_at`, rows
/// `head.row_stride` apart, written by this task alone.
#[target_feature(enable = "avx2,fma")]
unsafe fn block(s: &mut Scratch, head: &Head, q: &[f32], v: &[f32], out: OutPtr, out_at: usize) {
    let (t, dh, t_pad) = (head.t, head.dh, head.t_pad);
    let rows = q.len() / dh;
    let score_rows = rows.next_multiple_of(SCORE_ROWS);
    s.q[..q.len()].copy_from_slice(q);
    s.q[q.len()..score_rows * dh].fill(0.0);
    // Each key panel (dh × 16, 4 KB) stays in L1 while every query row passes it.
    for p in 0..t_pad / PANEL {
        for r0 in (0..score_rows).step_by(SCORE_ROWS) {
            // SAFETY: q rows r0..r0 + 6 (≤ QUERY_BLOCK) × dh, panel p of the packed keys,
            // scores rows r0..r0 + 6 × columns 16p..16p + 16 (≤ t_pad).
            unsafe {
                scores_6x16(
                    s.q.as_ptr().add(r0 * dh),
                    s.keys.as_ptr().add(p * dh * PANEL),
                    dh,
                    s.scores.as_mut_ptr().add(r0 * t_pad + p * PANEL),
                    t_pad,
                )
            };
        }
    }
    let mut sums = [1f32; QUERY_BLOCK];
    for (r, sum) in sums.iter_mut().take(rows).enumerate() {
        *sum = weights_in_place(&mut s.scores[r * t_pad..r * t_pad + t]);
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
            for d0 in (0..dh).step_by(PV_VALUES) {
                // SAFETY: P rows r0..r0 + 6 × t (scores, t_pad apart), V t × dh, the
                // partial sums' rows r0..r0 + 6 × dh (≤ QUERY_BLOCK rows), and `rows`
                // output rows, as the caller grants; values d0..d0 + 16 ≤ dh.
                unsafe { pv_6x16(&args, d0, first, last) };
            }
        }
    }
}

/// `S[r][c] = Σ_d q[r][d] · Kᵀ[d][c]` for 6 query rows and one 16-key panel.
///
/// # Safety
/// AVX2 and FMA; `q` 6 rows × dh, `keys` dh × 16, `s` 6 rows (`s_stride` apart) × 16, in
/// bounds.
#[inline]
#[target_feature(enable = "avx2,fma")]
unsafe fn scores_6x16(q: *const f32, keys: *const f32, dh: usize, s: *mut f32, s_stride: usize) {
    let mut acc = [[_mm256_setzero_ps(); 2]; SCORE_ROWS];
    for d in 0..dh {
        // SAFETY: step d of the panel (16 values) and q[r][d], r < 6, as the caller grants.
        let (lo, hi) = unsafe {
            (_mm256_loadu_ps(keys.add(d * PANEL)), _mm256_loadu_ps(keys.add(d * PANEL + 8)))
        };
        for (r, acc) in acc.iter_mut().enumerate() {
            // SAFETY: q[r][d] with r < 6 and d < dh, inside the 6 rows × dh of `q` the caller
            // grants (rows r0..r0 + 6 of the task's zero-padded `Scratch::q`, an f32 buffer,
            // so the read is aligned).
            let x = _mm256_set1_ps(unsafe { *q.add(r * dh + d) });
            acc[0] = _mm256_fmadd_ps(x, lo, acc[0]);
            acc[1] = _mm256_fmadd_ps(x, hi, acc[1]);
        }
    }
    for (r, acc) in acc.iter().enumerate() {
        // SAFETY: row r's 16 scores, as the caller grants.
        unsafe {
            _mm256_storeu_ps(s.add(r * s_stride), acc[0]);
            _mm256_storeu_ps(s.add(r * s_stride + 8), acc[1]);
        }
    }
}

/// `O[r][d0..d0 + 16] += Σ_{j in chunk} P[r][j] · V[j][d0..d0 + 16]` for 6 query rows: the
/// score kernel's shape (12 accumulators, two loads of `V` and a broadcast of `P` per key),
/// starting from zero on the `first` chunk and from `partial` after it; after the `last` chunk
/// each row is divided by its weights' sum and stored in `out`, before it the sums go back to
/// `partial`.
///
/// # Safety
/// AVX2 and FMA; `p` 6 rows × the chunk's keys, `v` those keys' rows × dh with `d0 + 16 ≤ dh`,
/// `partial` 6 rows × dh, `out` `rows` rows × dh, in bounds.
#[inline]
#[target_feature(enable = "avx2,fma")]
unsafe fn pv_6x16(a: &PvArgs, d0: usize, first: bool, last: bool) {
    let mut acc = [[_mm256_setzero_ps(); 2]; PV_ROWS];
    if !first {
        for (r, acc) in acc.iter_mut().enumerate() {
            for (z, acc) in acc.iter_mut().enumerate() {
                // SAFETY: partial row r, values d0 + 8z..d0 + 8z + 8 ≤ dh.
                *acc = unsafe { _mm256_loadu_ps(a.partial.add(r * a.dh + d0 + 8 * z)) };
            }
        }
    }
    // The rows' pointers once, and V's by steps, not recomputed per key.
    let p_rows: [*const f32; PV_ROWS] = std::array::from_fn(|r| a.p.wrapping_add(r * a.p_stride));
    let mut v = a.v.wrapping_add(a.keys.start * a.dh + d0);
    for j in a.keys.clone() {
        // SAFETY: V row j, values d0..d0 + 16 ≤ dh.
        let (lo, hi) = unsafe { (_mm256_loadu_ps(v), _mm256_loadu_ps(v.add(8))) };
        v = v.wrapping_add(a.dh);
        for (acc, row) in acc.iter_mut().zip(&p_rows) {
            // SAFETY: P row r, column j of the chunk.
            let w = _mm256_set1_ps(unsafe { *row.add(j) });
            acc[0] = _mm256_fmadd_ps(w, lo, acc[0]);
            acc[1] = _mm256_fmadd_ps(w, hi, acc[1]);
        }
    }
    if !last {
        for (r, acc) in acc.iter().enumerate() {
            for (z, &o) in acc.iter().enumerate() {
                // SAFETY: partial row r, values d0 + 8z..d0 + 8z + 8 ≤ dh.
                unsafe { _mm256_storeu_ps(a.partial.add(r * a.dh + d0 + 8 * z), o) };
            }
        }
        return;
    }
    for (r, acc) in acc.iter().enumerate().take(a.rows) {
        let sum = _mm256_set1_ps(a.sums[r]);
        for (z, &o) in acc.iter().enumerate() {
            // SAFETY: output row r < rows, values d0 + 8z..d0 + 8z + 8 ≤ dh.
            unsafe {
                _mm256_storeu_ps(a.out.add(r * a.out_stride + d0 + 8 * z), _mm256_div_ps(o, sum))
            };
        }
    }
}

/// The softmax's weights `exp(s − max)` of one row of scores, in place; returns their sum (8
/// lane sums, then across the lanes, then the row's last `len mod 8` weights).
#[target_feature(enable = "avx2,fma")]
fn weights_in_place(row: &mut [f32]) -> f32 {
    let n = row.len();
    let body = n - n % 8;
    let ptr = row.as_mut_ptr();
    let mut vmax = _mm256_set1_ps(f32::NEG_INFINITY);
    for i in (0..body).step_by(8) {
        // SAFETY: i is a multiple of 8 below `body` (n rounded down to a multiple of 8), so
        // lanes i..i + 8 ≤ body ≤ n lie in `row`; `loadu` needs no alignment.
        vmax = _mm256_max_ps(vmax, unsafe { _mm256_loadu_ps(ptr.add(i)) });
    }
    let mut lanes = [0f32; 8];
    // SAFETY: 8 floats into `lanes`.
    unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), vmax) };
    let max = lanes.iter().chain(&row[body..]).copied().fold(f32::NEG_INFINITY, f32::max);
    let vmax = _mm256_set1_ps(max);
    let mut sum = _mm256_setzero_ps();
    for i in (0..body).step_by(8) {
        // SAFETY: lanes i..i + 8 ≤ body ≤ n of `row`, as in the first loop.
        let e = exp8(_mm256_sub_ps(unsafe { _mm256_loadu_ps(ptr.add(i)) }, vmax));
        // SAFETY: the same 8 lanes of `row`, written through `ptr` (from `row.as_mut_ptr()`;
        // nothing else refers to them meanwhile); `storeu` needs no alignment.
        unsafe { _mm256_storeu_ps(ptr.add(i), e) };
        sum = _mm256_add_ps(sum, e);
    }
    // SAFETY: 8 floats into `lanes`.
    unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), sum) };
    let mut total: f32 = lanes.iter().sum();
    for x in &mut row[body..] {
        *x = exp_fast(*x - max);
        total += *x;
    }
    total
}

/// [`exp_fast`] on 8 lanes, operation for operation.
#[inline]
#[target_feature(enable = "avx2,fma")]
fn exp8(x: __m256) -> __m256 {
    const ROUND: f32 = 12_582_912.0;
    let c = _mm256_set1_ps;
    let xc = _mm256_max_ps(x, c(-87.0));
    let shifted = _mm256_add_ps(_mm256_mul_ps(xc, c(std::f32::consts::LOG2_E)), c(ROUND));
    let n = _mm256_sub_ps(shifted, c(ROUND));
    let r =
        _mm256_add_ps(_mm256_sub_ps(xc, _mm256_mul_ps(n, c(LN2_HI))), _mm256_mul_ps(n, c(LN2_LO)));
    let mut p = c(EXP_POLY[0]);
    for &k in &EXP_POLY[1..] {
        p = _mm256_add_ps(_mm256_mul_ps(p, r), c(k));
    }
    let y = _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(_mm256_mul_ps(p, r), r), r), c(1.0));
    let n_int =
        _mm256_sub_epi32(_mm256_castps_si256(shifted), _mm256_set1_epi32(ROUND.to_bits() as i32));
    let two_n = _mm256_castsi256_ps(_mm256_slli_epi32::<23>(_mm256_add_epi32(
        n_int,
        _mm256_set1_epi32(127),
    )));
    let scaled = _mm256_mul_ps(y, two_n);
    _mm256_blendv_ps(scaled, _mm256_setzero_ps(), _mm256_cmp_ps::<_CMP_LT_OQ>(x, c(-87.0)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attention::core_checks;
    use lectern_test_support::optional::cpu_or_skip;

    #[test]
    fn matches_the_portable_core() {
        if !cpu_or_skip(&["avx2", "fma"], crate::simd::has_avx2_fma()) {
            return;
        }
        core_checks::matches_the_portable_core(attend);
    }

    #[test]
    fn the_same_bits_on_any_thread_count() {
        if !cpu_or_skip(&["avx2", "fma"], crate::simd::has_avx2_fma()) {
            return;
        }
        core_checks::the_same_bits_on_any_thread_count(attend, 2 * QUERY_BLOCK + 5);
    }

    /// Unsupported widths are refused, not computed wrongly.
    #[test]
    fn serves_whole_vectors_up_to_64() {
        for dh in [8, 24, 80, 128] {
            assert!(!supported(dh), "dh {dh}");
        }
    }

    #[test]
    fn weights_and_exp8_follow_exp_fast() {
        if !cpu_or_skip(&["avx2", "fma"], crate::simd::has_avx2_fma()) {
            return;
        }
        // SAFETY: the CPU has the features (checked above).
        core_checks::weights_follow_exp_fast(|row| unsafe { weights_in_place(row) });
    }
}
