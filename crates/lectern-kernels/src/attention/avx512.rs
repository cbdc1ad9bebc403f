//! The f32 attention core on AVX-512F: [`crate::attention::attend`]'s route where the CPU
//! has AVX-512 and a head is 16, 32, 48 or 64 values wide (the DiT's is 64).
//!
//! [`crate::attention::blocked`]'s core at 16 lanes (`__m512`, the [`Avx512`] instruction
//! set):
//!
//! * key panels of 32 keys (8 KB at `dh` 64); scores on an 8-query × 32-key register block
//!   (16 accumulators, a broadcast of `q` and two loads of `Kᵀ` per step of `dh`);
//! * `P·V` on a 4-query × `dh` block: the whole head in one pass, `dh / 16` accumulators a row
//!   (reading `V` whole for every 4 queries is bound by the L2), one build of the generic
//!   block per head width;
//! * blocks of 64 queries: 64 × 1208 scores × 4 B = 309 KB, with the head's packed keys and
//!   its values (as much again each) in a core's L2.
//!
//! With mask registers, each row's running maximum is taken from the score kernel's registers
//! as the block is stored (masked to the panel's keys: [`KeyLanes`]), so the softmax reads
//! the scores once; the weights pass sums in 16 lanes, the row's last `t mod 16` weights in
//! one masked vector, then across the lanes (`_mm512_reduce_add_ps`).

// AVX-512 intrinsics: the instruction set's methods (SAFETY notes at each use).
#![allow(unsafe_code)]

use std::arch::x86_64::{
    __m512, _CMP_LT_OQ, _mm512_add_epi32, _mm512_add_ps, _mm512_castps_si512, _mm512_castsi512_ps,
    _mm512_cmp_ps_mask, _mm512_div_ps, _mm512_fmadd_ps, _mm512_loadu_ps, _mm512_mask_add_ps,
    _mm512_mask_blend_ps, _mm512_mask_max_ps, _mm512_mask_storeu_ps, _mm512_maskz_loadu_ps,
    _mm512_max_ps, _mm512_mul_ps, _mm512_reduce_add_ps, _mm512_reduce_max_ps, _mm512_set1_epi32,
    _mm512_set1_ps, _mm512_setzero_ps, _mm512_slli_epi32, _mm512_storeu_ps, _mm512_sub_epi32,
    _mm512_sub_ps,
};

use crate::attention::blocked::{self, panel};
use crate::attention::lanes::F32Lanes;
use crate::attention::tasks::{self as attention_tasks, BlockKernel, Head, Layout, Scratch};
use crate::shared_out::OutPtr;

/// Queries per score block and per P·V block (the kernels' rows).
const SCORE_ROWS: usize = 8;
const PV_ROWS: usize = 4;
/// Queries per block: see the module doc.
const QUERY_BLOCK: usize = 64;

/// Whether this core serves heads of `dh` values on this CPU.
pub(super) fn supported(dh: usize) -> bool {
    Avx512::new().is_some() && dh % 16 == 0 && (16..=64).contains(&dh)
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
    let layout = Layout { panel: panel::<Avx512>(), query_block: QUERY_BLOCK };
    let block: BlockKernel = match dh / 16 {
        1 => block::<1>,
        2 => block::<2>,
        3 => block::<3>,
        _ => block::<4>,
    };
    // SAFETY: AVX512F is present (asserted above); `block` serves heads of `dh` = 16·Z values.
    unsafe { attention_tasks::run(heads, (qs, ks, vs), layout, block) }
}

/// [`blocked::block`] compiled for AVX-512F, at this core's block sizes, for heads of `Z`·16
/// values (`P·V` in one pass).
///
/// # Safety
/// AVX512F is present; `head.dh` is a multiple of 16·Z; `s` and `out` as
/// [`attention_tasks::BlockKernel`] has them.
#[target_feature(enable = "avx512f")]
unsafe fn block<const Z: usize>(
    s: &mut Scratch,
    head: &Head,
    q: &[f32],
    v: &[f32],
    out: OutPtr,
    out_at: usize,
) {
    // SAFETY: the caller promises AVX512F.
    let avx512 = unsafe { Avx512::new_unchecked() };
    // SAFETY: `run` made and packed `s` for this core's layout (panels of `panel::<Avx512>()`
    // keys, blocks of QUERY_BLOCK queries); dh is a multiple of 16·Z (the caller's promise);
    // `out` as the caller grants.
    unsafe {
        blocked::block::<Avx512, SCORE_ROWS, PV_ROWS, Z, QUERY_BLOCK>(
            avx512, s, head, q, v, out, out_at,
        )
    }
}

/// AVX-512F on 16 lanes: a value exists only where the CPU has it.
#[derive(Clone, Copy)]
pub(super) struct Avx512(());

impl Avx512 {
    /// The instruction set, if this CPU has it.
    pub(super) fn new() -> Option<Self> {
        crate::simd::has_avx512f().then_some(Self(()))
    }

    /// The instruction set, unchecked.
    ///
    /// # Safety
    /// The CPU has AVX512F.
    unsafe fn new_unchecked() -> Self {
        Self(())
    }
}

/// Which of a key panel's 32 lanes hold keys (the last panel's others are padding): masks of
/// its two vectors' lanes.
#[derive(Clone, Copy)]
pub(super) struct KeyLanes {
    lo: u16,
    hi: u16,
}

impl KeyLanes {
    /// The lanes of a panel that holds `keys` keys (at most 32).
    fn of(keys: usize) -> Self {
        let lanes = |n: usize| ((1u32 << n.min(16)) - 1) as u16;
        Self { lo: lanes(keys), hi: lanes(keys.saturating_sub(16)) }
    }
}

// SAFETY: `Avx512` is made only where the CPU has AVX512F (`new` checks, `new_unchecked`'s
// callers promise), which is all its methods use; `load` and `store` move 16 f32s.
unsafe impl F32Lanes for Avx512 {
    type V = __m512;
    const LANES: usize = 16;

    #[inline(always)]
    fn zero(self) -> __m512 {
        // SAFETY: `self` proves AVX512F (the trait's impl note), for this and every call below.
        unsafe { _mm512_setzero_ps() }
    }
    #[inline(always)]
    fn splat(self, x: f32) -> __m512 {
        // SAFETY: AVX512F is present (`self`).
        unsafe { _mm512_set1_ps(x) }
    }
    #[inline(always)]
    unsafe fn load(self, p: *const f32) -> __m512 {
        // SAFETY: AVX512F is present (`self`); 16 readable f32s at `p`, as the caller grants;
        // `loadu` needs no alignment.
        unsafe { _mm512_loadu_ps(p) }
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut f32, v: __m512) {
        // SAFETY: AVX512F is present (`self`); 16 writable f32s at `p`, as the caller grants.
        unsafe { _mm512_storeu_ps(p, v) }
    }
    #[inline(always)]
    fn add(self, a: __m512, b: __m512) -> __m512 {
        // SAFETY: AVX512F is present (`self`).
        unsafe { _mm512_add_ps(a, b) }
    }
    #[inline(always)]
    fn sub(self, a: __m512, b: __m512) -> __m512 {
        // SAFETY: AVX512F is present (`self`).
        unsafe { _mm512_sub_ps(a, b) }
    }
    #[inline(always)]
    fn mul(self, a: __m512, b: __m512) -> __m512 {
        // SAFETY: AVX512F is present (`self`).
        unsafe { _mm512_mul_ps(a, b) }
    }
    #[inline(always)]
    fn div(self, a: __m512, b: __m512) -> __m512 {
        // SAFETY: AVX512F is present (`self`).
        unsafe { _mm512_div_ps(a, b) }
    }
    #[inline(always)]
    fn max(self, a: __m512, b: __m512) -> __m512 {
        // SAFETY: AVX512F is present (`self`).
        unsafe { _mm512_max_ps(a, b) }
    }
    #[inline(always)]
    fn fma(self, a: __m512, b: __m512, c: __m512) -> __m512 {
        // SAFETY: AVX512F is present (`self`).
        unsafe { _mm512_fmadd_ps(a, b, c) }
    }
    #[inline(always)]
    fn pow2_of_rounded(self, shifted: __m512, round: f32) -> __m512 {
        // SAFETY: AVX512F is present (`self`).
        unsafe {
            let n = _mm512_sub_epi32(
                _mm512_castps_si512(shifted),
                _mm512_set1_epi32(round.to_bits() as i32),
            );
            _mm512_castsi512_ps(_mm512_slli_epi32::<23>(_mm512_add_epi32(
                n,
                _mm512_set1_epi32(127),
            )))
        }
    }
    #[inline(always)]
    fn zero_below(self, x: __m512, limit: f32, v: __m512) -> __m512 {
        // SAFETY: AVX512F is present (`self`).
        unsafe {
            let below = _mm512_cmp_ps_mask::<_CMP_LT_OQ>(x, _mm512_set1_ps(limit));
            _mm512_mask_blend_ps(below, v, _mm512_setzero_ps())
        }
    }

    /// 16 lane maxima.
    type RowMax = __m512;
    type KeyLanes = KeyLanes;
    #[inline(always)]
    fn row_max_start(self) -> __m512 {
        self.splat(f32::NEG_INFINITY)
    }
    #[inline(always)]
    fn key_lanes(self, keys: usize) -> KeyLanes {
        KeyLanes::of(keys)
    }
    #[inline(always)]
    fn take_max(self, max: &mut __m512, scores: [__m512; 2], lanes: KeyLanes) {
        // SAFETY: AVX512F is present (`self`).
        unsafe {
            *max = _mm512_mask_max_ps(*max, lanes.lo, *max, scores[0]);
            *max = _mm512_mask_max_ps(*max, lanes.hi, *max, scores[1]);
        }
    }
    /// Across the score kernel's 16 lane maxima.
    #[inline(always)]
    fn row_max(self, max: __m512, _row: &[f32]) -> f32 {
        // SAFETY: AVX512F is present (`self`).
        unsafe { _mm512_reduce_max_ps(max) }
    }

    /// The tail's weights in one masked vector, added to their lanes' sums, then across the
    /// lanes.
    #[inline(always)]
    fn weights_tail(self, mut sum: __m512, tail: &mut [f32], max: f32) -> f32 {
        let n = tail.len();
        assert!(n < 16, "AVX-512 weights: a tail of {n}");
        if n > 0 {
            let mask = ((1u32 << n) - 1) as u16;
            let ptr = tail.as_mut_ptr();
            // SAFETY: AVX512F is present (`self`); `mask` has the low n bits set, so only
            // the n values of `tail` are read (masked-off lanes are not accessed and cannot
            // fault).
            let last = unsafe { _mm512_maskz_loadu_ps(mask, ptr) };
            let e = blocked::exp(self, self.sub(last, self.splat(max)));
            // SAFETY: AVX512F; under the same mask, only the n values of `tail` are written.
            unsafe { _mm512_mask_storeu_ps(ptr, mask, e) };
            // SAFETY: AVX512F is present (`self`).
            sum = unsafe { _mm512_mask_add_ps(sum, mask, sum, e) };
        }
        // SAFETY: AVX512F is present (`self`).
        unsafe { _mm512_reduce_add_ps(sum) }
    }
}

/// The softmax's weights `exp(s − max)` of one row of scores, in place; returns their sum.
/// The tests' way to the weights (the core takes each row's maximum from the scores' stores).
///
/// # Safety
/// AVX512F is present.
#[cfg(test)]
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn weights_in_place(row: &mut [f32]) -> f32 {
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    // SAFETY: the caller promises AVX512F.
    let avx512 = unsafe { Avx512::new_unchecked() };
    blocked::weights(avx512, row, avx512.splat(max))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attention::core_checks;
    use lectern_test_support::optional::cpu_or_skip;

    #[test]
    fn matches_the_portable_core() {
        if !cpu_or_skip(&["avx512f"], crate::simd::has_avx512f()) {
            return;
        }
        core_checks::matches_the_portable_core(attend);
    }

    #[test]
    fn the_same_bits_on_any_thread_count() {
        if !cpu_or_skip(&["avx512f"], crate::simd::has_avx512f()) {
            return;
        }
        core_checks::the_same_bits_on_any_thread_count(attend, 2 * QUERY_BLOCK + 5);
    }

    /// A panel's masks cover its keys and no padding (the row maxima must not see the padded
    /// keys' zero scores).
    #[test]
    fn key_lanes_cover_the_keys_only() {
        let lanes = |p: usize, t: usize| {
            let panel = panel::<Avx512>();
            let of = KeyLanes::of((t - p * panel).min(panel));
            (of.lo, of.hi)
        };
        assert_eq!(lanes(0, 77), (0xFFFF, 0xFFFF));
        assert_eq!(lanes(2, 77), (0x1FFF, 0)); // keys 64..77
        assert_eq!(lanes(1, 48), (0xFFFF, 0)); // keys 32..48
        assert_eq!(lanes(1, 50), (0xFFFF, 0b11)); // keys 32..50
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
        if !cpu_or_skip(&["avx512f"], crate::simd::has_avx512f()) {
            return;
        }
        // SAFETY: the CPU has the features (checked above).
        core_checks::weights_follow_exp_fast(|row| unsafe { weights_in_place(row) });
    }
}
