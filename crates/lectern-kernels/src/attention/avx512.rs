//! The f32 attention core on AVX-512F: [`crate::attention::attend`]'s route where the CPU
//! has AVX-512 and a head is 16, 32, 48 or 64 values wide (the DiT's is 64).
//!
//! The portable core runs each query block's two products through the `gemm` crate, which
//! packs the head's keys (and values) again for every block of 64 queries and dispatches per
//! call, and its softmax makes four passes over each row of scores. Here a task packs its
//! head's `Kᵀ` once, in panels of 32 keys, and for each block of 64 queries runs:
//!
//! * `S = Q·Kᵀ` panel by panel (a panel, 8 KB, stays in L1 while every query of the block
//!   meets it) on an 8-query × 32-key register block (16 accumulators, a broadcast of `q` and
//!   two loads of `Kᵀ` per step of `dh`); each row's running maximum is taken from the
//!   registers as the block is stored, so the softmax reads the scores once;
//! * the softmax's weights `exp(s − max)` written in place and summed in the same pass (16
//!   lane sums), unnormalised;
//! * `O = P·V` over chunks of 64 keys (their values, 16 KB, stay in L1 while every query of
//!   the block meets them; reading `V` whole for every 4 queries is bound by the L2) on
//!   a 4-query × `dh` register block whose sums are kept between chunks, each output row
//!   divided by its weights' sum as it is stored (as flash attention does; the portable core
//!   divides the weights instead — the two differ by rounding only, tests below).
//!
//! Every sum runs in the same order whatever the loop order around it (over `dh` for a score,
//! over the keys for an output value), so the blocking changes no bit.
//!
//! The same operations as the portable core otherwise: `q` carries the softmax scale, the
//! exponential is [`exp16`] (= [`crate::attention::exp_fast`] per lane), sums are f32.

// AVX-512 intrinsics on raw pointers into the tasks' scratch and the shared output (SAFETY
// notes at each use).
#![allow(unsafe_code)]

use std::arch::x86_64::{
    __m512, _CMP_LT_OQ, _mm512_add_epi32, _mm512_add_ps, _mm512_castps_si512, _mm512_castsi512_ps,
    _mm512_cmp_ps_mask, _mm512_div_ps, _mm512_fmadd_ps, _mm512_loadu_ps, _mm512_mask_add_ps,
    _mm512_mask_blend_ps, _mm512_mask_max_ps, _mm512_mask_storeu_ps, _mm512_maskz_loadu_ps,
    _mm512_max_ps, _mm512_mul_ps, _mm512_reduce_add_ps, _mm512_reduce_max_ps, _mm512_set1_epi32,
    _mm512_set1_ps, _mm512_setzero_ps, _mm512_slli_epi32, _mm512_storeu_ps, _mm512_sub_epi32,
    _mm512_sub_ps,
};

use crate::attention::tasks::{self as attention_tasks, Head, Layout, PvArgs, Scratch};
use crate::attention::{EXP_POLY, LN2_HI, LN2_LO};
use crate::shared_out::OutPtr;

/// Keys per packed panel of `Kᵀ` (two vectors: the score kernel's columns).
const PANEL: usize = 32;
/// Queries per score block and per P·V block (the kernels' rows).
const SCORE_ROWS: usize = 8;
const PV_ROWS: usize = 4;
/// Queries per block: 64 × 1208 scores × 4 B = 309 KB, with the head's packed keys and its
/// values (as much again each) in a core's L2.
const QUERY_BLOCK: usize = 64;
/// Keys per chunk of `P·V`: 64 keys' values (16 KB at `dh` 64) stay in L1 while the block's
/// queries meet them.
const KEY_CHUNK: usize = 64;

/// Whether this core serves heads of `dh` values on this CPU.
pub(super) fn supported(dh: usize) -> bool {
    std::arch::is_x86_feature_detected!("avx512f") && dh % 16 == 0 && (16..=64).contains(&dh)
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
    assert!(supported(dh), "AVX-512 attention: no AVX512F here, or dh {dh}");
    let layout = Layout { panel: PANEL, query_block: QUERY_BLOCK };
    // SAFETY: AVX512F is present (asserted above); `block` serves heads of `dh` values.
    unsafe { attention_tasks::run(heads, (qs, ks, vs), layout, block) }
}

/// One query block: scores, weights, `P·V` divided by the sums, into `out` at `out_at`.
///
/// # Safety
/// AVX512F is present; `out` holds `rows` rows of `dh` values at `out_at`, rows
/// `head.row_stride` apart, written by this task alone.
#[target_feature(enable = "avx512f")]
unsafe fn block(s: &mut Scratch, head: &Head, q: &[f32], v: &[f32], out: OutPtr, out_at: usize) {
    let (t, dh, t_pad) = (head.t, head.dh, head.t_pad);
    let rows = q.len() / dh;
    let score_rows = rows.next_multiple_of(SCORE_ROWS);
    s.q[..q.len()].copy_from_slice(q);
    s.q[q.len()..score_rows * dh].fill(0.0);
    let mut maxes = [_mm512_set1_ps(f32::NEG_INFINITY); QUERY_BLOCK];
    for p in 0..t_pad / PANEL {
        let keys = KeyLanes::of_panel(p, t);
        for r0 in (0..score_rows).step_by(SCORE_ROWS) {
            // SAFETY: q rows r0..r0 + 8 (≤ QUERY_BLOCK) × dh, panel p of the packed keys,
            // scores rows r0..r0 + 8 × columns 32p..32p + 32 (≤ t_pad).
            unsafe {
                scores_8x32(
                    s.q.as_ptr().add(r0 * dh),
                    s.keys.as_ptr().add(p * dh * PANEL),
                    dh,
                    s.scores.as_mut_ptr().add(r0 * t_pad + p * PANEL),
                    t_pad,
                    (&mut maxes[r0..r0 + SCORE_ROWS], keys),
                )
            };
        }
    }
    let mut sums = [1f32; QUERY_BLOCK];
    for (r, sum) in sums.iter_mut().take(rows).enumerate() {
        let max = _mm512_reduce_max_ps(maxes[r]);
        *sum = exp_in_place(&mut s.scores[r * t_pad..r * t_pad + t], max);
    }
    let pv_rows = rows.next_multiple_of(PV_ROWS);
    for r in rows..pv_rows {
        s.scores[r * t_pad..r * t_pad + t].fill(0.0);
    }
    for j0 in (0..t).step_by(KEY_CHUNK) {
        let chunk = j0..(j0 + KEY_CHUNK).min(t);
        let (first, last) = (j0 == 0, chunk.end == t);
        for r0 in (0..pv_rows).step_by(PV_ROWS) {
            let store = (rows - r0.min(rows)).min(PV_ROWS);
            let args = PvArgs {
                p: s.scores[r0 * t_pad..].as_ptr(),
                p_stride: t_pad,
                v: v.as_ptr(),
                dh,
                keys: chunk.clone(),
                partial: s.partial[r0 * dh..].as_mut_ptr(),
                sums: &sums[r0..r0 + PV_ROWS],
                rows: store,
                // SAFETY: rows r0.. of the block are within the caller's `rows` rows.
                out: unsafe { out.get().add(out_at + r0 * head.row_stride) },
                out_stride: head.row_stride,
            };
            // SAFETY: P rows r0..r0 + 4 × t (scores, t_pad apart), V t × dh, the partial
            // sums' rows r0..r0 + 4 × dh (≤ QUERY_BLOCK rows), and `store` output rows, as
            // the caller grants.
            unsafe {
                match dh / 16 {
                    1 => pv_4::<1>(&args, first, last),
                    2 => pv_4::<2>(&args, first, last),
                    3 => pv_4::<3>(&args, first, last),
                    _ => pv_4::<4>(&args, first, last),
                }
            }
        }
    }
}

/// Which of a key panel's 32 lanes hold keys (the last panel's others are padding): masks of
/// its two vectors' lanes.
#[derive(Clone, Copy)]
struct KeyLanes {
    lo: u16,
    hi: u16,
}

impl KeyLanes {
    fn of_panel(p: usize, t: usize) -> Self {
        let keys = (t - p * PANEL).min(PANEL);
        let lanes = |n: usize| ((1u32 << n.min(16)) - 1) as u16;
        Self { lo: lanes(keys), hi: lanes(keys.saturating_sub(16)) }
    }
}

/// `S[r][c] = Σ_d q[r][d] · Kᵀ[d][c]` for 8 query rows and one 32-key panel; each row's
/// running maximum (16 lanes) takes in the panel's key lanes.
///
/// # Safety
/// AVX512F; `q` 8 rows × dh, `keys` dh × 32, `s` 8 rows (`s_stride` apart) × 32, in bounds.
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn scores_8x32(
    q: *const f32,
    keys: *const f32,
    dh: usize,
    s: *mut f32,
    s_stride: usize,
    (maxes, lanes): (&mut [__m512], KeyLanes),
) {
    let mut acc = [[_mm512_setzero_ps(); 2]; SCORE_ROWS];
    for d in 0..dh {
        // SAFETY: step d of the panel (32 values) and q[r][d], r < 8, as the caller grants.
        let (lo, hi) = unsafe {
            (_mm512_loadu_ps(keys.add(d * PANEL)), _mm512_loadu_ps(keys.add(d * PANEL + 16)))
        };
        for (r, acc) in acc.iter_mut().enumerate() {
            // SAFETY: q[r][d] with r < 8 and d < dh, inside the 8 rows × dh of `q` the caller
            // grants (rows r0..r0 + 8 of the task's zero-padded `Scratch::q`, an f32 buffer,
            // so the read is aligned).
            let x = _mm512_set1_ps(unsafe { *q.add(r * dh + d) });
            acc[0] = _mm512_fmadd_ps(x, lo, acc[0]);
            acc[1] = _mm512_fmadd_ps(x, hi, acc[1]);
        }
    }
    for (r, (acc, max)) in acc.iter().zip(maxes).enumerate() {
        // SAFETY: row r's 32 scores, as the caller grants.
        unsafe {
            _mm512_storeu_ps(s.add(r * s_stride), acc[0]);
            _mm512_storeu_ps(s.add(r * s_stride + 16), acc[1]);
        }
        *max = _mm512_mask_max_ps(*max, lanes.lo, *max, acc[0]);
        *max = _mm512_mask_max_ps(*max, lanes.hi, *max, acc[1]);
    }
}

/// `O[r] += Σ_{j in chunk} P[r][j] · V[j]` for 4 query rows and `Z`·16 = dh values, starting
/// from zero on the `first` chunk and from `partial` after it; after the `last` chunk each row
/// is divided by its weights' sum and stored in `out`, before it the sums go back to `partial`.
///
/// # Safety
/// AVX512F; `p` 4 rows × the chunk's keys, `v` those keys' rows × dh, `partial` 4 rows × dh,
/// `out` `rows` rows × dh, in bounds.
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn pv_4<const Z: usize>(a: &PvArgs, first: bool, last: bool) {
    let mut acc = [[_mm512_setzero_ps(); Z]; PV_ROWS];
    if !first {
        for (r, acc) in acc.iter_mut().enumerate() {
            for (z, acc) in acc.iter_mut().enumerate() {
                // SAFETY: partial row r, values 16z..16z + 16 < dh.
                *acc = unsafe { _mm512_loadu_ps(a.partial.add(r * a.dh + 16 * z)) };
            }
        }
    }
    for j in a.keys.clone() {
        let mut vj = [_mm512_setzero_ps(); Z];
        for (z, vz) in vj.iter_mut().enumerate() {
            // SAFETY: V row j, values 16z..16z + 16 < dh.
            *vz = unsafe { _mm512_loadu_ps(a.v.add(j * a.dh + 16 * z)) };
        }
        for (r, acc) in acc.iter_mut().enumerate() {
            // SAFETY: P row r, column j of the chunk.
            let w = _mm512_set1_ps(unsafe { *a.p.add(r * a.p_stride + j) });
            for z in 0..Z {
                acc[z] = _mm512_fmadd_ps(w, vj[z], acc[z]);
            }
        }
    }
    if !last {
        for (r, acc) in acc.iter().enumerate() {
            for (z, &o) in acc.iter().enumerate() {
                // SAFETY: partial row r, values 16z..16z + 16 < dh.
                unsafe { _mm512_storeu_ps(a.partial.add(r * a.dh + 16 * z), o) };
            }
        }
        return;
    }
    for (r, acc) in acc.iter().enumerate().take(a.rows) {
        let sum = _mm512_set1_ps(a.sums[r]);
        for (z, &o) in acc.iter().enumerate() {
            // SAFETY: output row r < rows, values 16z..16z + 16 < dh.
            unsafe {
                _mm512_storeu_ps(a.out.add(r * a.out_stride + 16 * z), _mm512_div_ps(o, sum))
            };
        }
    }
}

/// The softmax's weights `exp(s − max)` of one row of scores, in place; returns their sum.
/// The tests' way to the weights (the core takes each row's maximum from the scores' stores).
#[cfg(test)]
#[target_feature(enable = "avx512f")]
fn weights_in_place(row: &mut [f32]) -> f32 {
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    exp_in_place(row, max)
}

/// `exp(s − max)` over one row of scores, in place; returns their sum (16 lane sums, then
/// across the lanes).
#[target_feature(enable = "avx512f")]
fn exp_in_place(row: &mut [f32], max: f32) -> f32 {
    let n = row.len();
    let ptr = row.as_mut_ptr();
    let tail = n % 16;
    let tail_mask: u16 = ((1u32 << tail) - 1) as u16;
    let body = n - tail;
    let max = _mm512_set1_ps(max);
    let mut sum = _mm512_setzero_ps();
    for i in (0..body).step_by(16) {
        // SAFETY: i is a multiple of 16 below `body` (n rounded down to a multiple of 16), so
        // lanes i..i + 16 ≤ body ≤ n lie in `row`; `loadu` needs no alignment.
        let e = exp16(_mm512_sub_ps(unsafe { _mm512_loadu_ps(ptr.add(i)) }, max));
        // SAFETY: the same 16 lanes of `row`, written through `ptr` (from `row.as_mut_ptr()`;
        // nothing else refers to them meanwhile).
        unsafe { _mm512_storeu_ps(ptr.add(i), e) };
        sum = _mm512_add_ps(sum, e);
    }
    if tail > 0 {
        // SAFETY: body < n here, and `tail_mask` has the low n − body bits set: only lanes
        // body..n of `row` are read (masked-off lanes are not accessed and cannot fault).
        let last = unsafe { _mm512_maskz_loadu_ps(tail_mask, ptr.add(body)) };
        let e = exp16(_mm512_sub_ps(last, max));
        // SAFETY: under the same mask, only lanes body..n of `row` are written.
        unsafe { _mm512_mask_storeu_ps(ptr.add(body), tail_mask, e) };
        sum = _mm512_mask_add_ps(sum, tail_mask, sum, e);
    }
    _mm512_reduce_add_ps(sum)
}

/// [`crate::attention::exp_fast`] on 16 lanes, operation for operation.
#[inline]
#[target_feature(enable = "avx512f")]
pub(super) fn exp16(x: __m512) -> __m512 {
    const ROUND: f32 = 12_582_912.0;
    let c = _mm512_set1_ps;
    let xc = _mm512_max_ps(x, c(-87.0));
    let shifted = _mm512_add_ps(_mm512_mul_ps(xc, c(std::f32::consts::LOG2_E)), c(ROUND));
    let n = _mm512_sub_ps(shifted, c(ROUND));
    let r =
        _mm512_add_ps(_mm512_sub_ps(xc, _mm512_mul_ps(n, c(LN2_HI))), _mm512_mul_ps(n, c(LN2_LO)));
    let mut p = c(EXP_POLY[0]);
    for &k in &EXP_POLY[1..] {
        p = _mm512_add_ps(_mm512_mul_ps(p, r), c(k));
    }
    let y = _mm512_add_ps(_mm512_add_ps(_mm512_mul_ps(_mm512_mul_ps(p, r), r), r), c(1.0));
    let n_int =
        _mm512_sub_epi32(_mm512_castps_si512(shifted), _mm512_set1_epi32(ROUND.to_bits() as i32));
    let two_n = _mm512_castsi512_ps(_mm512_slli_epi32::<23>(_mm512_add_epi32(
        n_int,
        _mm512_set1_epi32(127),
    )));
    let scaled = _mm512_mul_ps(y, two_n);
    _mm512_mask_blend_ps(_mm512_cmp_ps_mask::<_CMP_LT_OQ>(x, c(-87.0)), scaled, _mm512_setzero_ps())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attention::core_checks;
    use lectern_test_support::optional::cpu_or_skip;

    #[test]
    fn matches_the_portable_core() {
        if !cpu_or_skip(&["avx512f"], std::arch::is_x86_feature_detected!("avx512f")) {
            return;
        }
        core_checks::matches_the_portable_core(attend);
    }

    #[test]
    fn the_same_bits_on_any_thread_count() {
        if !cpu_or_skip(&["avx512f"], std::arch::is_x86_feature_detected!("avx512f")) {
            return;
        }
        core_checks::the_same_bits_on_any_thread_count(attend, 2 * QUERY_BLOCK + 5);
    }

    /// A panel's masks cover its keys and no padding (the row maxima must not see the padded
    /// keys' zero scores).
    #[test]
    fn key_lanes_cover_the_keys_only() {
        let full = KeyLanes::of_panel(0, 77);
        assert_eq!((full.lo, full.hi), (0xFFFF, 0xFFFF));
        let last = KeyLanes::of_panel(2, 77); // keys 64..77
        assert_eq!((last.lo, last.hi), (0x1FFF, 0));
        let half = KeyLanes::of_panel(1, 48); // keys 32..48
        assert_eq!((half.lo, half.hi), (0xFFFF, 0));
        let over = KeyLanes::of_panel(1, 50); // keys 32..50
        assert_eq!((over.lo, over.hi), (0xFFFF, 0b11));
    }

    /// Unsupported widths are refused, not computed wrongly.
    #[test]
    fn serves_whole_vectors_up_to_64() {
        for dh in [8, 24, 80, 128] {
            assert!(!supported(dh), "dh {dh}");
        }
    }

    #[test]
    fn weights_and_exp16_follow_exp_fast() {
        if !cpu_or_skip(&["avx512f"], std::arch::is_x86_feature_detected!("avx512f")) {
            return;
        }
        // SAFETY: the CPU has the features (checked above).
        core_checks::weights_follow_exp_fast(|row| unsafe { weights_in_place(row) });
    }
}
