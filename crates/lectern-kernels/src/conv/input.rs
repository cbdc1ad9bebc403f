//! What a vocoder convolution reads: its input as it is, or a pointwise function of it (Snake,
//! leaky ReLU with nearest upsampling) computed row by row in cache. A leaf both CPU
//! convolutions use ([`super::vocoder`], [`super::direct`]).

/// Snake's per-channel parameters `alpha` and `1 / (alpha + 1e-9)`, for a conv whose input
/// goes through Snake first ([`ConvInput::Snake`]).
#[derive(Debug, Clone, Copy)]
pub struct SnakeParams<'a> {
    pub alpha: &'a [f32],
    pub inv_alpha: &'a [f32],
}

/// What [`conv1d`](crate::conv::vocoder::conv1d) convolves: `x` itself, or a pointwise function of it that each task
/// computes for the input frames its block reads, in cache, instead of a separate pass
/// writing a whole tensor that the conv then reads back. The frames two blocks share are
/// computed by both.
#[derive(Debug, Clone, Copy)]
pub enum ConvInput<'a> {
    /// `x` as it is.
    Plain,
    /// `snake(x)` (as [`snake`](crate::conv::vocoder::snake) computes it).
    Snake(SnakeParams<'a>),
    /// `leaky_relu(x, slope)` with every frame repeated `times` times (nearest upsampling):
    /// `times · t` frames. The leaky ReLU is candle's `x.maximum(x · slope)`, bit for bit.
    LeakyReluRepeat { slope: f32, times: usize },
}

impl ConvInput<'_> {
    /// Frames the conv reads from an `x` of `t` frames.
    pub(crate) fn frames(&self, t: usize) -> usize {
        match self {
            Self::LeakyReluRepeat { times, .. } => t * times,
            Self::Plain | Self::Snake(_) => t,
        }
    }
}

/// Frames `first .. first + dst.len()` of `leaky_relu(x_row, slope)` with every frame repeated
/// `times` times: `dst[c] = lrelu(x_row[(first + c) / times])`.
pub(crate) fn leaky_relu_repeat_row(
    dst: &mut [f32],
    x_row: &[f32],
    first: usize,
    times: usize,
    slope: f32,
) {
    let (mut c, mut frame) = (0, first / times);
    let mut copies = times - first % times; // of `frame`, still to write
    while c < dst.len() {
        let v = x_row[frame];
        let scaled = v * slope + 0.0; // candle's `x * slope` (an affine map, `v·mul + add`)
        let y = if v < scaled { scaled } else { v }; // candle's `maximum`
        let n = copies.min(dst.len() - c);
        dst[c..c + n].fill(y);
        (c, frame, copies) = (c + n, frame + 1, times);
    }
}

crate::simd::multiversioned! {
    /// Snake over one channel's frames: `y = z + sin(a·z)²·ia`. Where an argument is beyond
    /// [`SIN_FAST_LIMIT`] (or not finite), the row is computed again with libm's `sinf`.
    pub(crate) fn snake_row(y: &mut [f32], x: &[f32], a: f32, ia: f32) {
        for (y, &z) in y.iter_mut().zip(x) {
            let s = sin_fast(z * a);
            *y = z + (s * s) * ia;
        }
        // An integer maximum vectorises (a float one would have to keep its order).
        let widest = x.iter().map(|&z| (z * a).to_bits() & 0x7fff_ffff).fold(0, u32::max);
        if widest > SIN_FAST_LIMIT.to_bits() {
            for (y, &z) in y.iter_mut().zip(x) {
                let s = (z * a).sin();
                *y = z + (s * s) * ia;
            }
        }
    }
}

/// Largest |x| [`sin_fast`] serves: its reduction `x − j·π/2` is exact up to here (the first
/// two parts of π/2 have 8 and 11 significant bits, so `j·P` is exact for |j| < 2¹³).
pub const SIN_FAST_LIMIT: f32 = 8192.0;

/// `sin(x)` for |x| ≤ [`SIN_FAST_LIMIT`], branch-free so that loops over it vectorise: the
/// nearest multiple `j` of π/2 (three-part Cody–Waite reduction), then Cephes' sine or cosine
/// polynomial on `|r| ≤ π/4` picked and signed by `j mod 4`. Within 7.8e-8 of the true sine
/// (tested below against f64), as libm's `sinf` is within 6e-8; no fused multiply-adds, so
/// every vector width gives the same bits.
#[inline(always)]
pub fn sin_fast(x: f32) -> f32 {
    const ROUND: f32 = 12_582_912.0; // 1.5·2²³: adding and subtracting rounds to an integer
    const P1: f32 = 1.570_312_5; // π/2 = P1 + P2 + P3
    const P2: f32 = 4.837_513e-4;
    const P3: f32 = 7.549_79e-8;
    let shifted = x * std::f32::consts::FRAC_2_PI + ROUND;
    let j = shifted - ROUND;
    let r = ((x - j * P1) - j * P2) - j * P3;
    let r2 = r * r;
    let sin = ((-1.951_529_6e-4 * r2 + 8.332_161e-3) * r2 - 1.666_665_5e-1) * r2 * r + r;
    let cos =
        ((2.443_315_7e-5 * r2 - 1.388_731_6e-3) * r2 + 4.166_664_6e-2) * r2 * r2 - 0.5 * r2 + 1.0;
    // j's low bits in the low mantissa bits of `shifted`: its bits minus ROUND's.
    let quadrant = (shifted.to_bits() as i32).wrapping_sub(ROUND.to_bits() as i32);
    let v = if quadrant & 1 == 0 { sin } else { cos };
    if quadrant & 2 == 0 { v } else { -v }
}
