//! The instruction set [`crate::attention::blocked`]'s kernels are written over: one vector of
//! f32 lanes and what the kernels do with it, implemented by [`crate::attention::avx2`]'s
//! `Avx2` (8 lanes, `__m256`) and [`crate::attention::avx512`]'s `Avx512` (16 lanes,
//! `__m512`), as candle's `cpu::Cpu` is by its AVX and NEON files.
//!
//! A value of an implementing type is a token: it exists only where the CPU has the
//! instruction set (its constructor checks, or its unchecked constructor's caller promises),
//! so the arithmetic is safe to call and only the loads and stores (raw pointers) are
//! `unsafe`. The methods are `#[inline(always)]`, and so are the generic kernels: all of it is
//! compiled inside each core's `#[target_feature]` entry point, with that entry's features.
//!
//! Each operation is one instruction on every lane (or, for [`F32Lanes::pow2_of_rounded`] and
//! [`F32Lanes::zero_below`], the same few on either width), so a kernel written over the trait
//! computes on each lane what it would with either width's intrinsics spelled out.
//!
//! The widths differ where AVX-512 has mask registers and AVX2 has none: the row maximum (the
//! score kernel keeps it under masks on AVX-512; the weights pass finds it on AVX2) and the
//! weights pass's last `len mod LANES` scores (a masked vector on AVX-512, scalar on AVX2).
//! Those are the items after [`F32Lanes::zero_below`], each width's own.

/// A vector of `LANES` f32 lanes on one x86 instruction set; see the module doc.
///
/// # Safety
/// An implementation makes a value of `Self` only where the CPU has every feature its methods
/// use, and [`F32Lanes::load`] and [`F32Lanes::store`] touch exactly `LANES` consecutive f32s:
/// the generic kernels' bounds rest on both.
pub(super) unsafe trait F32Lanes: Copy {
    /// The vector.
    type V: Copy;
    /// Its f32 lanes.
    const LANES: usize;

    /// All lanes 0.
    fn zero(self) -> Self::V;
    /// All lanes `x`.
    fn splat(self, x: f32) -> Self::V;
    /// `LANES` values from `p` (no alignment needed).
    ///
    /// # Safety
    /// `p..p + LANES` are readable f32s.
    unsafe fn load(self, p: *const f32) -> Self::V;
    /// `v` to `p..p + LANES` (no alignment needed).
    ///
    /// # Safety
    /// `p..p + LANES` are writable f32s that nothing else refers to meanwhile.
    unsafe fn store(self, p: *mut f32, v: Self::V);
    /// `a + b` per lane.
    fn add(self, a: Self::V, b: Self::V) -> Self::V;
    /// `a − b` per lane.
    fn sub(self, a: Self::V, b: Self::V) -> Self::V;
    /// `a · b` per lane.
    fn mul(self, a: Self::V, b: Self::V) -> Self::V;
    /// `a / b` per lane.
    fn div(self, a: Self::V, b: Self::V) -> Self::V;
    /// `max(a, b)` per lane as `MAXPS` takes it: `b` where either is NaN or both are zeros.
    fn max(self, a: Self::V, b: Self::V) -> Self::V;
    /// `a · b + c` per lane, rounded once.
    fn fma(self, a: Self::V, b: Self::V, c: Self::V) -> Self::V;
    /// `2ⁿ` per lane for the integer `n` held in the low mantissa bits of `shifted = round +
    /// n` (the exponential's rounding sum): the f32 with the bits
    /// `(bits(shifted) − bits(round) + 127) << 23`, in wrapping 32-bit integer arithmetic.
    fn pow2_of_rounded(self, shifted: Self::V, round: f32) -> Self::V;
    /// Per lane, 0 where `x < limit` (an ordered comparison: false for NaN), else `v`.
    fn zero_below(self, x: Self::V, limit: f32, v: Self::V) -> Self::V;

    /// A row's running maximum, as the score kernel keeps it (nothing, on a width that finds
    /// the maximum in the weights pass instead).
    type RowMax: Copy;
    /// Which lanes of a key panel's two vectors hold keys (the last panel's others are
    /// padding, whose zero scores must not count towards a maximum).
    type KeyLanes: Copy;
    /// A row's running maximum before any key.
    fn row_max_start(self) -> Self::RowMax;
    /// The lanes of a panel that holds `keys` keys (at most `2 · LANES`).
    fn key_lanes(self, keys: usize) -> Self::KeyLanes;
    /// Takes one row's scores of a panel (its two vectors, as they are stored) into the row's
    /// running maximum, those of `lanes` only.
    fn take_max(self, max: &mut Self::RowMax, scores: [Self::V; 2], lanes: Self::KeyLanes);
    /// The maximum of `row`'s scores: from the running maximum the score kernel kept of them,
    /// or from `row`.
    fn row_max(self, max: Self::RowMax, row: &[f32]) -> f32;
    /// The end of the weights pass: `exp(s − max)` in place over `tail` (the row's last
    /// `len mod LANES` scores, fewer than `LANES`), and the row's sum of weights from the lane
    /// sums `sum` of the whole vectors before it and the tail's weights.
    fn weights_tail(self, sum: Self::V, tail: &mut [f32], max: f32) -> f32;
}
