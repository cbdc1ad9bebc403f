//! The f32 attention core on AVX2 and FMA: [`crate::attention::attend`]'s route on CPUs
//! without AVX-512 (AMD Zen 1–3, Intel's client cores) for heads of 16, 32, 48 or 64 values
//! (the DiT's is 64).
//!
//! [`crate::attention::blocked`]'s core at 8 lanes (`__m256`, the [`Avx2`] instruction set),
//! [`crate::attention::avx512`]'s design at half the width:
//!
//! * key panels of 16 keys; scores on a 6-query × 16-key register block (12 accumulators, a
//!   broadcast of `q` and two loads of `Kᵀ` per step of `dh`: 15 of the 16 AVX2 registers);
//! * `P·V` on a 6-query × 16-value block (12 accumulators; a 64-value head in four passes);
//! * blocks of 48 queries: 48 × 1208 scores × 4 B = 232 KB, with the head's packed keys
//!   (309 KB) in a Zen 3 core's 512 KB L2.
//!
//! Without mask registers, the score kernel keeps no row maximum (the last panel's padding
//! keys would count): the weights pass finds it (8 lane maxima over the row's whole vectors,
//! then across the lanes and the last `t mod 8` scores), and sums the weights in 8 lanes,
//! then across the lanes in order, then the row's last `t mod 8` weights by the scalar
//! [`crate::attention::exp_fast`] (the same function as the vector [`blocked::exp`]).

// AVX2 intrinsics: the instruction set's methods (SAFETY notes at each use).
#![allow(unsafe_code)]

use std::arch::x86_64::{
    __m256, _CMP_LT_OQ, _mm256_add_epi32, _mm256_add_ps, _mm256_blendv_ps, _mm256_castps_si256,
    _mm256_castsi256_ps, _mm256_cmp_ps, _mm256_div_ps, _mm256_fmadd_ps, _mm256_loadu_ps,
    _mm256_max_ps, _mm256_mul_ps, _mm256_set1_epi32, _mm256_set1_ps, _mm256_setzero_ps,
    _mm256_slli_epi32, _mm256_storeu_ps, _mm256_sub_epi32, _mm256_sub_ps,
};

use crate::attention::blocked::{self, panel};
use crate::attention::exp_fast;
use crate::attention::lanes::F32Lanes;
use crate::attention::tasks::{self as attention_tasks, Head, Layout, Scratch};
use crate::shared_out::OutPtr;

/// Queries per score block and per P·V block (the kernels' rows).
const SCORE_ROWS: usize = 6;
const PV_ROWS: usize = 6;
/// Vectors of a head's values per P·V pass (16 values).
const PV_VECTORS: usize = 2;
/// Queries per block (a multiple of both kernels' rows): see the module doc.
const QUERY_BLOCK: usize = 48;

/// Whether this core serves heads of `dh` values on this CPU.
pub(super) fn supported(dh: usize) -> bool {
    Avx2::new().is_some() && dh % 16 == 0 && (16..=64).contains(&dh)
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
    let layout = Layout { panel: panel::<Avx2>(), query_block: QUERY_BLOCK };
    // SAFETY: AVX2 and FMA are present (asserted above); `block` serves heads of `dh` values
    // (multiples of its 16-value passes).
    unsafe { attention_tasks::run(heads, (qs, ks, vs), layout, block) }
}

/// [`blocked::block`] compiled for AVX2 and FMA, at this core's block sizes.
///
/// # Safety
/// AVX2 and FMA are present; `s` and `out` as [`attention_tasks::BlockKernel`] has them.
#[target_feature(enable = "avx2,fma")]
unsafe fn block(s: &mut Scratch, head: &Head, q: &[f32], v: &[f32], out: OutPtr, out_at: usize) {
    // SAFETY: the caller promises AVX2 and FMA.
    let avx2 = unsafe { Avx2::new_unchecked() };
    // SAFETY: `run` made and packed `s` for this core's layout (panels of `panel::<Avx2>()`
    // keys, blocks of QUERY_BLOCK queries); dh is a multiple of 16 (`supported`); `out` as
    // the caller grants.
    unsafe {
        blocked::block::<Avx2, SCORE_ROWS, PV_ROWS, PV_VECTORS, QUERY_BLOCK>(
            avx2, s, head, q, v, out, out_at,
        )
    }
}

/// AVX2 and FMA on 8 lanes: a value exists only where the CPU has both.
#[derive(Clone, Copy)]
pub(super) struct Avx2(());

impl Avx2 {
    /// The instruction set, if this CPU has it.
    pub(super) fn new() -> Option<Self> {
        crate::simd::has_avx2_fma().then_some(Self(()))
    }

    /// The instruction set, unchecked.
    ///
    /// # Safety
    /// The CPU has AVX2 and FMA.
    unsafe fn new_unchecked() -> Self {
        Self(())
    }
}

// SAFETY: `Avx2` is made only where the CPU has AVX2 and FMA (`new` checks, `new_unchecked`'s
// callers promise), which is all its methods use; `load` and `store` move 8 f32s.
unsafe impl F32Lanes for Avx2 {
    type V = __m256;
    const LANES: usize = 8;

    #[inline(always)]
    fn zero(self) -> __m256 {
        // SAFETY: `self` proves AVX2 (the trait's impl note), for this and every call below.
        unsafe { _mm256_setzero_ps() }
    }
    #[inline(always)]
    fn splat(self, x: f32) -> __m256 {
        // SAFETY: AVX2 is present (`self`).
        unsafe { _mm256_set1_ps(x) }
    }
    #[inline(always)]
    unsafe fn load(self, p: *const f32) -> __m256 {
        // SAFETY: AVX2 is present (`self`); 8 readable f32s at `p`, as the caller grants;
        // `loadu` needs no alignment.
        unsafe { _mm256_loadu_ps(p) }
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut f32, v: __m256) {
        // SAFETY: AVX2 is present (`self`); 8 writable f32s at `p`, as the caller grants.
        unsafe { _mm256_storeu_ps(p, v) }
    }
    #[inline(always)]
    fn add(self, a: __m256, b: __m256) -> __m256 {
        // SAFETY: AVX2 is present (`self`).
        unsafe { _mm256_add_ps(a, b) }
    }
    #[inline(always)]
    fn sub(self, a: __m256, b: __m256) -> __m256 {
        // SAFETY: AVX2 is present (`self`).
        unsafe { _mm256_sub_ps(a, b) }
    }
    #[inline(always)]
    fn mul(self, a: __m256, b: __m256) -> __m256 {
        // SAFETY: AVX2 is present (`self`).
        unsafe { _mm256_mul_ps(a, b) }
    }
    #[inline(always)]
    fn div(self, a: __m256, b: __m256) -> __m256 {
        // SAFETY: AVX2 is present (`self`).
        unsafe { _mm256_div_ps(a, b) }
    }
    #[inline(always)]
    fn max(self, a: __m256, b: __m256) -> __m256 {
        // SAFETY: AVX2 is present (`self`).
        unsafe { _mm256_max_ps(a, b) }
    }
    #[inline(always)]
    fn fma(self, a: __m256, b: __m256, c: __m256) -> __m256 {
        // SAFETY: FMA is present (`self`).
        unsafe { _mm256_fmadd_ps(a, b, c) }
    }
    #[inline(always)]
    fn pow2_of_rounded(self, shifted: __m256, round: f32) -> __m256 {
        // SAFETY: AVX2 is present (`self`).
        unsafe {
            let n = _mm256_sub_epi32(
                _mm256_castps_si256(shifted),
                _mm256_set1_epi32(round.to_bits() as i32),
            );
            _mm256_castsi256_ps(_mm256_slli_epi32::<23>(_mm256_add_epi32(
                n,
                _mm256_set1_epi32(127),
            )))
        }
    }
    #[inline(always)]
    fn zero_below(self, x: __m256, limit: f32, v: __m256) -> __m256 {
        // SAFETY: AVX2 is present (`self`).
        unsafe {
            let below = _mm256_cmp_ps::<_CMP_LT_OQ>(x, _mm256_set1_ps(limit));
            _mm256_blendv_ps(v, _mm256_setzero_ps(), below)
        }
    }

    /// None: the weights pass finds the maximum.
    type RowMax = ();
    type KeyLanes = ();
    #[inline(always)]
    fn row_max_start(self) {}
    #[inline(always)]
    fn key_lanes(self, _keys: usize) {}
    #[inline(always)]
    fn take_max(self, _max: &mut (), _scores: [__m256; 2], _lanes: ()) {}

    /// 8 lane maxima over the row's whole vectors, then across the lanes and the last
    /// `len mod 8` scores.
    #[inline(always)]
    fn row_max(self, _max: (), row: &[f32]) -> f32 {
        let body = row.len() - row.len() % 8;
        let mut vmax = self.splat(f32::NEG_INFINITY);
        for i in (0..body).step_by(8) {
            // SAFETY: i is a multiple of 8 below `body` (the length rounded down to a multiple
            // of 8), so lanes i..i + 8 ≤ body lie in `row`.
            vmax = self.max(vmax, unsafe { self.load(row.as_ptr().add(i)) });
        }
        let mut lanes = [0f32; 8];
        // SAFETY: 8 floats into `lanes`.
        unsafe { self.store(lanes.as_mut_ptr(), vmax) };
        lanes.iter().chain(&row[body..]).copied().fold(f32::NEG_INFINITY, f32::max)
    }

    /// Across the 8 lane sums in order, then each tail weight by the scalar [`exp_fast`].
    #[inline(always)]
    fn weights_tail(self, sum: __m256, tail: &mut [f32], max: f32) -> f32 {
        let mut lanes = [0f32; 8];
        // SAFETY: 8 floats into `lanes`.
        unsafe { self.store(lanes.as_mut_ptr(), sum) };
        let mut total: f32 = lanes.iter().sum();
        for x in tail {
            *x = exp_fast(*x - max);
            total += *x;
        }
        total
    }
}

/// The softmax's weights `exp(s − max)` of one row of scores, in place; returns their sum.
///
/// # Safety
/// AVX2 and FMA are present.
#[cfg(test)]
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn weights_in_place(row: &mut [f32]) -> f32 {
    // SAFETY: the caller promises AVX2 and FMA.
    blocked::weights(unsafe { Avx2::new_unchecked() }, row, ())
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
    fn weights_and_exp_follow_exp_fast() {
        if !cpu_or_skip(&["avx2", "fma"], crate::simd::has_avx2_fma()) {
            return;
        }
        // SAFETY: the CPU has the features (checked above).
        core_checks::weights_follow_exp_fast(|row| unsafe { weights_in_place(row) });
    }
}
