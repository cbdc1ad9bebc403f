//! The vocoder's stride-1 convolutions as a direct convolution, on AVX2 + FMA or AVX-512.
//!
//! Why: the stacked-tap path ([`crate::conv::vocoder::conv1d`]) spends most of the vocoder's time in the
//! `gemm` crate's micro-kernel on a product whose inner dimension is only the conv's input
//! channels (64 at the last stage), then reads all `k` tap products back for the tap sum: far
//! below the FMA peak. Here each block of 4 output channels × 24 frames
//! (48 on AVX-512) keeps its 12 vector sums in registers over all `k · in` products (the input
//! channels and the taps are the inner dimension together), reading the input in place from a
//! zero-padded copy of the task's frames, and is stored once, bias and residual added. Nothing
//! is packed per call but that copy: the weights are packed once ([`Panels`]). The whole
//! vocoder is faster on it than on the stacked-tap path ([`vocoder_default`]).
//!
//! Each output's sum runs over chunks of input channels, within a chunk over the taps, within a
//! tap over the chunk's channels, one FMA each, from zero — whatever the block, the task, the
//! thread count or the kernel's width, so the bits depend on none of them. It differs from the
//! stacked-tap path by rounding only (tests below, and every HiFT and end-to-end fixture gate
//! runs through it where the vocoder uses it).

// Assembly kernels on raw pointers into the task's buffers (SAFETY notes at each use).
#![allow(unsafe_code)]

use crate::conv::input::{ConvInput, leaky_relu_repeat_row, snake_row};
use crate::cuda::hift::ConvGeometry;
use crate::shared_out::OutPtr;
use rayon::prelude::*;

/// Output channels per block (broadcast weights).
pub const MR: usize = 4;
/// Input channels whose frames a block reads for all taps before it goes on to the next ones,
/// so that their frames (32 rows of the block's 24 or 48 frames plus the taps' span) and their
/// weights stay in L1 over the taps.
pub const CHANNEL_CHUNK: usize = 32;
/// Input floats one task's padded copy may hold: 32 Ki floats = 128 KiB, within L2.
const INPUT_BUDGET_FLOATS: usize = 32 << 10;

/// A kernel of the direct convolution, by vector width.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kernel {
    /// AVX2 + FMA: blocks of 4 channels × 24 frames (three 8-float vectors).
    Avx2,
    /// AVX-512F: blocks of 4 channels × 48 frames (three 16-float vectors).
    Avx512,
}

impl Kernel {
    /// The kernels this CPU runs, narrowest first.
    pub fn all_here() -> Vec<Kernel> {
        [Kernel::Avx2, Kernel::Avx512].into_iter().filter(|k| k.runs_here()).collect()
    }

    /// The widest kernel this CPU runs.
    pub fn widest() -> Option<Kernel> {
        Self::all_here().pop()
    }

    /// Whether this CPU runs it (std caches the detection).
    pub fn runs_here(self) -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            match self {
                Kernel::Avx2 => crate::simd::has_avx2_fma(),
                Kernel::Avx512 => crate::simd::has_avx512f(),
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = self;
            false
        }
    }
}

/// The kernel the vocoder's stride-1 CPU convs run on by default: the widest this CPU runs.
/// Each beats the stacked-tap path on its CPUs (docs/benchmarks.md); the AVX2 kernel does not
/// where the `gemm` crate's AVX-512 kernels serve that path (docs/refutations.md).
pub fn vocoder_default() -> Option<Kernel> {
    Kernel::widest()
}

/// A conv's weights in the order the kernel reads them: per block of [`MR`] output channels,
/// per chunk of [`CHANNEL_CHUNK`] input channels, per tap, per input channel of the chunk, the
/// block's [`MR`] weights (rows past `out` are zero).
#[derive(Debug, Clone)]
pub struct Panels {
    data: Vec<f32>,
    out: usize,
    c_in: usize,
    k: usize,
}

impl Panels {
    /// Packs the tap-major stacked weights `(k·out, in)`.
    pub fn pack(stacked: &[f32], k: usize, out: usize, c_in: usize) -> Self {
        assert_eq!(stacked.len(), k * out * c_in, "stacked weights (k·out, in)");
        let blocks = out.div_ceil(MR);
        let mut data = vec![0f32; blocks * k * c_in * MR];
        for (b, panel) in data.chunks_exact_mut(k * c_in * MR).enumerate() {
            let order = channel_chunks(c_in)
                .flat_map(|chunk| (0..k).flat_map(move |j| chunk.clone().map(move |c| (j, c))));
            for ((j, c), w) in order.zip(panel.chunks_exact_mut(MR)) {
                for (m, w) in w.iter_mut().enumerate() {
                    let o = b * MR + m;
                    if o < out {
                        *w = stacked[(j * out + o) * c_in + c];
                    }
                }
            }
        }
        Self { data, out, c_in, k }
    }

    pub fn out(&self) -> usize {
        self.out
    }

    pub fn c_in(&self) -> usize {
        self.c_in
    }

    pub fn k(&self) -> usize {
        self.k
    }

    fn panel(&self, block: usize) -> &[f32] {
        let len = self.k * self.c_in * MR;
        &self.data[block * len..][..len]
    }
}

/// The conv [`crate::conv::vocoder::conv1d`] describes, on [`Panels`] with `kernel`: `xs`
/// `(in, x_frames)`, `y` `(out, t_out)` written whole. The caller has checked the shapes.
///
/// # Panics
/// If this CPU does not run `kernel`.
#[allow(clippy::too_many_arguments)]
pub fn conv1d(
    kernel: Kernel,
    xs: &[f32],
    x_frames: usize,
    panels: &Panels,
    bias: &[f32],
    geometry: ConvGeometry,
    residual: Option<&[f32]>,
    input: ConvInput,
    y: &mut [f32],
) {
    assert!(kernel.runs_here(), "this CPU does not run the {kernel:?} direct conv");
    let conv = Conv { xs, x_frames, panels, bias, geometry, residual, input };
    match kernel {
        Kernel::Avx2 => conv.run::<24>(avx2::tile_sums, y),
        Kernel::Avx512 => conv.run::<48>(avx512::tile_sums, y),
    }
}

/// One block's sums, `NR` frames wide (`avx2::tile_sums`, `avx512::tile_sums`).
type TileSums<const NR: usize> =
    unsafe fn(&[f32], &[f32], usize, usize, usize, usize, &mut [[f32; NR]; MR]);

/// A conv's operands, as [`conv1d`] takes them.
struct Conv<'a> {
    xs: &'a [f32],
    x_frames: usize,
    panels: &'a Panels,
    bias: &'a [f32],
    geometry: ConvGeometry,
    residual: Option<&'a [f32]>,
    input: ConvInput<'a>,
}

impl Conv<'_> {
    /// The conv in tasks of whole tiles of `NR` frames, each tile's sums from `tile_sums`.
    fn run<const NR: usize>(&self, tile_sums: TileSums<NR>, y: &mut [f32]) {
        let ConvGeometry { k, dilation, pad_left, .. } = self.geometry;
        let Panels { out, c_in, .. } = *self.panels;
        let t_out = y.len() / out.max(1);
        assert_eq!(y.len(), out * t_out);
        let t = self.input.frames(self.x_frames);
        let span = (k - 1) * dilation;
        let block = block_frames(c_in, span, t_out, NR);
        let y_ptr = OutPtr::new(y);
        (0..t_out.div_ceil(block)).into_par_iter().for_each_init(Vec::new, |padded, b| {
            let p0 = b * block;
            let len = block.min(t_out - p0);
            let tiles = len.div_ceil(NR);
            // Input frames p0 − pad_left + q for q < width: every frame the block's tiles read.
            let width = tiles * NR + span;
            let row = padded_row(width);
            padded.resize(c_in * row, 0.0);
            let first = p0 as isize - pad_left as isize;
            fill_input(padded, row, width, self.xs, self.x_frames, t, first, self.input);
            for ob in 0..out.div_ceil(MR) {
                let panel = self.panels.panel(ob);
                for q in (0..tiles).map(|tile| tile * NR) {
                    let mut sums = [[0f32; NR]; MR];
                    // SAFETY: the CPU runs the kernel (asserted by `conv1d`); it reads
                    // `padded` rows 0..c_in at columns q + j·d .. q + j·d + NR ≤ width ≤ row,
                    // and the panel's k·c_in·MR weights.
                    unsafe { tile_sums(panel, &padded[q..], row, k, dilation, c_in, &mut sums) };
                    let valid = NR.min(len - q);
                    for (m, sums) in sums.iter().enumerate().take(out - ob * MR) {
                        let (o, at) = (ob * MR + m, (ob * MR + m) * t_out + p0 + q);
                        // SAFETY: this task alone writes columns p0..p0+len of row o of `y`
                        // (out × t_out elements, alive until the tasks end).
                        let dst =
                            unsafe { std::slice::from_raw_parts_mut(y_ptr.get().add(at), valid) };
                        match self.residual {
                            Some(r) => {
                                store_residual_plus_bias(dst, sums, self.bias[o], &r[at..][..valid])
                            }
                            None => store_plus_bias(dst, sums, self.bias[o]),
                        }
                    }
                }
            }
        });
    }
}

/// The input channels in chunks of [`CHANNEL_CHUNK`].
fn channel_chunks(c_in: usize) -> impl Iterator<Item = std::ops::Range<usize>> {
    (0..c_in).step_by(CHANNEL_CHUNK).map(move |c| c..(c + CHANNEL_CHUNK).min(c_in))
}

/// Frames per task: the task's padded input within [`INPUT_BUDGET_FLOATS`], whole tiles of
/// `nr` frames, at least two tiles, and at least four tasks per thread where the output is
/// that long.
fn block_frames(c_in: usize, span: usize, t_out: usize, nr: usize) -> usize {
    let by_cache = (INPUT_BUDGET_FLOATS / c_in.max(1)).saturating_sub(span);
    let by_threads = t_out.div_ceil(4 * rayon::current_num_threads());
    let frames = by_cache.min(by_threads).max(2 * nr);
    frames.div_ceil(nr) * nr
}

/// A padded row's length: at least `width`, and not a multiple of 1 KiB floats, whose rows
/// would share cache sets.
fn padded_row(width: usize) -> usize {
    let row = width.div_ceil(8) * 8;
    if row % 1024 == 0 { row + 8 } else { row }
}

/// `padded[c][q]` for `q < width` = the conv's input function of frame `first + q` of channel
/// `c`, zero outside `0..t` (the conv's zero padding). Columns past `width` are left as they
/// are: no tile reads them.
#[allow(clippy::too_many_arguments)]
fn fill_input(
    padded: &mut [f32],
    row: usize,
    width: usize,
    xs: &[f32],
    x_frames: usize,
    t: usize,
    first: isize,
    input: ConvInput,
) {
    let lo = (-first).clamp(0, width as isize) as usize;
    let hi = ((t as isize - first).clamp(0, width as isize) as usize).max(lo);
    let from = (first + lo as isize).max(0) as usize; // the first frame of x the block reads
    for (c, dst) in padded.chunks_exact_mut(row).enumerate() {
        dst[..lo].fill(0.0);
        dst[hi..width].fill(0.0);
        let dst = &mut dst[lo..hi];
        if dst.is_empty() {
            continue;
        }
        match input {
            ConvInput::Plain => dst.copy_from_slice(&xs[c * x_frames + from..][..hi - lo]),
            ConvInput::Snake(sn) => {
                let x_row = &xs[c * x_frames + from..][..hi - lo];
                snake_row(dst, x_row, sn.alpha[c], sn.inv_alpha[c]);
            }
            ConvInput::LeakyReluRepeat { slope, times } => {
                let x_row = &xs[c * x_frames..][..x_frames];
                leaky_relu_repeat_row(dst, x_row, from, times, slope);
            }
        }
    }
}

crate::simd::multiversioned! {
    /// `dst = sums + bias`.
    fn store_plus_bias(dst: &mut [f32], sums: &[f32], bias: f32) {
        dst.iter_mut().zip(sums).for_each(|(d, s)| *d = s + bias);
    }
}

crate::simd::multiversioned! {
    /// `dst = residual + (sums + bias)`: the stacked-tap path's order.
    fn store_residual_plus_bias(dst: &mut [f32], sums: &[f32], bias: f32, residual: &[f32]) {
        dst.iter_mut().zip(sums).zip(residual).for_each(|((d, s), r)| *d = r + (s + bias));
    }
}

/// `mod $name { unsafe fn tile_sums }`: one block's sums on vectors of `$lanes` floats (three
/// per row of the block), for the CPU feature `$feature`, registers of class `$class`.
macro_rules! tile_sums_kernel {
    ($name:ident, $feature:literal, $class:ident, $lanes:literal,
     $setzero:ident, $storeu:ident) => {
        pub(super) mod $name {
            use super::MR;

            /// One block's sums:
            /// `sums[m][n] = Σ_chunks Σ_j Σ_(c in chunk) w[j][c][m] · x[c][n + j·d]`, `x` rows
            /// `row` floats apart, `panel` in [`super::Panels`]' order.
            ///
            /// The loop over a chunk's channels is written in assembly: with 12 sums, 3 input
            /// vectors and a broadcast weight it needs all 16 AVX2 registers, and the compiler
            /// kept one sum on the stack, a store and a reload in every step's dependency chain
            /// (slower than the `gemm` crate's path: docs/refutations.md).
            ///
            /// # Safety
            /// The CPU has the kernel's features; `x` holds `c_in` rows of at least
            /// `(k − 1)·d + 3·lanes` floats, `row` apart; `panel` holds `k · c_in · MR` floats.
            #[cfg(target_arch = "x86_64")]
            #[target_feature(enable = $feature)]
            pub(in crate::conv) unsafe fn tile_sums(
                panel: &[f32],
                x: &[f32],
                row: usize,
                k: usize,
                dilation: usize,
                c_in: usize,
                sums: &mut [[f32; 3 * $lanes]; MR],
            ) {
                use std::arch::asm;
                use std::arch::x86_64::*;
                debug_assert!(c_in > 0 && panel.len() >= k * c_in * MR);
                debug_assert!(x.len() >= (c_in - 1) * row + (k - 1) * dilation + 3 * $lanes);
                let z = $setzero();
                let [mut a0, mut a1, mut a2, mut a3, mut a4, mut a5] = [z; 6];
                let [mut a6, mut a7, mut a8, mut a9, mut a10, mut a11] = [z; 6];
                let mut w = panel.as_ptr();
                let steps = super::channel_chunks(c_in)
                    .flat_map(|chunk| (0..k).map(move |j| (chunk.clone(), j)));
                for (chunk, j) in steps {
                    // SAFETY: the CPU has `$feature` (the function's contract), all that the
                    // VEX/EVEX loads, broadcasts and FMAs on `$class` registers need. The loop
                    // runs chunk.len() ≥ 1 times (`channel_chunks` yields no empty chunk), once
                    // per channel c of the chunk: it reads the 4 weights (16 bytes) at `w` and
                    // three vectors of row c of `x` at columns j·d..j·d + 3·lanes. `w` walks
                    // the panel in `Panels`' order, (chunk, tap, channel) steps of MR = 4
                    // floats, k·c_in·MR floats over all steps: what `panel` holds. Row c <
                    // c_in and column j·d + 3·lanes ≤ (k − 1)·d + 3·lanes stay inside `x` (the
                    // contract). The asm only reads memory (`readonly`), touches no stack, and
                    // declares every register it writes.
                    unsafe {
                        asm!(
                            "2:",
                            "vmovups {x0}, [{x}]",
                            "vmovups {x1}, [{x} + {v}]",
                            "vmovups {x2}, [{x} + 2 * {v}]",
                            "vbroadcastss {wv}, dword ptr [{w}]",
                            "vfmadd231ps {a0}, {wv}, {x0}",
                            "vfmadd231ps {a1}, {wv}, {x1}",
                            "vfmadd231ps {a2}, {wv}, {x2}",
                            "vbroadcastss {wv}, dword ptr [{w} + 4]",
                            "vfmadd231ps {a3}, {wv}, {x0}",
                            "vfmadd231ps {a4}, {wv}, {x1}",
                            "vfmadd231ps {a5}, {wv}, {x2}",
                            "vbroadcastss {wv}, dword ptr [{w} + 8]",
                            "vfmadd231ps {a6}, {wv}, {x0}",
                            "vfmadd231ps {a7}, {wv}, {x1}",
                            "vfmadd231ps {a8}, {wv}, {x2}",
                            "vbroadcastss {wv}, dword ptr [{w} + 12]",
                            "vfmadd231ps {a9}, {wv}, {x0}",
                            "vfmadd231ps {a10}, {wv}, {x1}",
                            "vfmadd231ps {a11}, {wv}, {x2}",
                            "add {w}, 16",
                            "add {x}, {row_bytes}",
                            "dec {n}",
                            "jnz 2b",
                            w = inout(reg) w,
                            x = inout(reg) x.as_ptr().add(chunk.start * row + j * dilation) => _,
                            n = inout(reg) chunk.len() => _,
                            row_bytes = in(reg) row * 4,
                            v = const 4 * $lanes,
                            a0 = inout($class) a0, a1 = inout($class) a1,
                            a2 = inout($class) a2, a3 = inout($class) a3,
                            a4 = inout($class) a4, a5 = inout($class) a5,
                            a6 = inout($class) a6, a7 = inout($class) a7,
                            a8 = inout($class) a8, a9 = inout($class) a9,
                            a10 = inout($class) a10, a11 = inout($class) a11,
                            x0 = out($class) _, x1 = out($class) _, x2 = out($class) _,
                            wv = out($class) _,
                            options(nostack, readonly),
                        );
                    }
                }
                let acc = [[a0, a1, a2], [a3, a4, a5], [a6, a7, a8], [a9, a10, a11]];
                for (acc, sums) in acc.iter().zip(sums.iter_mut()) {
                    for (v, a) in acc.iter().enumerate() {
                        // SAFETY: `sums` rows hold three vectors.
                        unsafe { $storeu(sums.as_mut_ptr().add($lanes * v), *a) };
                    }
                }
            }

            #[cfg(not(target_arch = "x86_64"))]
            pub(in crate::conv) unsafe fn tile_sums(
                _: &[f32],
                _: &[f32],
                _: usize,
                _: usize,
                _: usize,
                _: usize,
                _: &mut [[f32; 3 * $lanes]; MR],
            ) {
                unreachable!("the direct conv runs on x86-64 only (no kernel runs elsewhere)")
            }
        }
    };
}

tile_sums_kernel!(avx2, "avx2,fma", ymm_reg, 8, _mm256_setzero_ps, _mm256_storeu_ps);
tile_sums_kernel!(avx512, "avx512f", zmm_reg, 16, _mm512_setzero_ps, _mm512_storeu_ps);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conv::vocoder::{self as cpu, SnakeParams};
    use candle::Tensor;
    use lectern_test_support::optional::cpu_or_skip;
    use lectern_test_support::tensors::seeded;

    /// `(1, out, t_out)` in f64 straight from the definition: `y[o][p] = residual + (bias +
    /// Σ_j Σ_c w[j][o][c] · x[c][p + j·d − pad_left])`, `x` zero outside its frames.
    fn exact(
        x: &Tensor,
        stacked: &Tensor,
        bias: &Tensor,
        g: ConvGeometry,
        residual: Option<&Tensor>,
    ) -> Vec<f64> {
        let ((_, c_in, t), out) = (x.dims3().unwrap(), bias.dims1().unwrap());
        let (x, stacked, bias) = (host(x), host(stacked), host(bias));
        let residual = residual.map(host);
        let t_out = g.pad_left + t + g.pad_right - (g.k - 1) * g.dilation;
        let mut y = vec![0f64; out * t_out];
        for o in 0..out {
            for p in 0..t_out {
                let mut sum = f64::from(bias[o]);
                for j in 0..g.k {
                    let f = (p + j * g.dilation) as isize - g.pad_left as isize;
                    if !(0..t as isize).contains(&f) {
                        continue;
                    }
                    for c in 0..c_in {
                        let w = stacked[(j * out + o) * c_in + c];
                        sum += f64::from(w) * f64::from(x[c * t + f as usize]);
                    }
                }
                let r = residual.as_ref().map_or(0.0, |r| f64::from(r[o * t_out + p]));
                y[o * t_out + p] = sum + r;
            }
        }
        y
    }

    fn host(t: &Tensor) -> Vec<f32> {
        t.flatten_all().unwrap().to_vec1().unwrap()
    }

    /// The direct conv with `kernel`, weights packed here.
    fn direct(
        kernel: Kernel,
        x: &Tensor,
        stacked: &Tensor,
        bias: &Tensor,
        g: ConvGeometry,
        residual: Option<&Tensor>,
        input: ConvInput,
    ) -> Vec<f32> {
        let (rows, c_in) = stacked.dims2().unwrap();
        let out = rows / g.k;
        let panels = Panels::pack(&host(stacked), g.k, out, c_in);
        let x_frames = x.dim(2).unwrap();
        let t_out = g.pad_left + input.frames(x_frames) + g.pad_right - (g.k - 1) * g.dilation;
        let mut y = vec![f32::NAN; out * t_out];
        let residual = residual.map(host);
        let (xs, bias) = (host(x), host(bias));
        conv1d(kernel, &xs, x_frames, &panels, &bias, g, residual.as_deref(), input, &mut y);
        y
    }

    /// The kernels this CPU runs, or none with a note.
    fn kernels() -> Vec<Kernel> {
        let here = Kernel::all_here();
        cpu_or_skip(&["avx2", "fma"], !here.is_empty());
        here
    }

    #[test]
    fn direct_conv_is_the_convolution_within_rounding() {
        let cases = cpu::CONV_TEST_CASES;
        for (kernel, (i, &(c_in, out, t, k, d, pl, pr, res))) in
            kernels().into_iter().flat_map(|kr| cases.iter().enumerate().map(move |c| (kr, c)))
        {
            let seed = 500 + 10 * i as u64;
            let x = seeded(&[1, c_in, t], seed);
            let stacked = seeded(&[k * out, c_in], seed + 1);
            let bias = seeded(&[out], seed + 2);
            let g = ConvGeometry { k, dilation: d, pad_left: pl, pad_right: pr };
            let t_out = pl + t + pr - (k - 1) * d;
            let r = res.then(|| seeded(&[1, out, t_out], seed + 3));
            let got = direct(kernel, &x, &stacked, &bias, g, r.as_ref(), ConvInput::Plain);
            let want = exact(&x, &stacked, &bias, g, r.as_ref());
            assert_eq!(got.len(), want.len(), "{kernel:?} case {i}");
            // Each output sums k·in products of values within ±1: f32 rounding of such a sum
            // stays far below 1e-6 · k · in.
            let bound = 1e-6 * (k * c_in) as f64;
            let worst = got.iter().zip(&want).map(|(&a, &b)| (f64::from(a) - b).abs());
            let worst = worst.fold(0f64, f64::max);
            assert!(worst < bound, "{kernel:?} case {i}: off by {worst:e} (bound {bound:e})");
        }
    }

    #[test]
    fn direct_input_functions_equal_their_separate_passes() {
        for kernel in kernels() {
            input_functions_equal_their_separate_passes(kernel);
        }
    }

    fn input_functions_equal_their_separate_passes(kernel: Kernel) {
        // Snake in front of a dilated causal conv, over many tasks; the upsampling convs'
        // leaky ReLU and nearest repeat, with task edges inside a run of repeated frames.
        let (c_in, out, t, k, d) = (64, 64, 9000, 7, 3);
        let x = (seeded(&[1, c_in, t], 600) * 3.0).unwrap();
        let stacked = seeded(&[k * out, c_in], 601);
        let bias = seeded(&[out], 602);
        let alpha: Vec<f32> = (0..c_in).map(|c| 0.3 + 0.1 * c as f32).collect();
        let inv: Vec<f32> = alpha.iter().map(|a| 1.0 / (a + 1e-9)).collect();
        let g = ConvGeometry { k, dilation: d, pad_left: (k - 1) * d, pad_right: 0 };
        let params = SnakeParams { alpha: &alpha, inv_alpha: &inv };
        let fused = direct(kernel, &x, &stacked, &bias, g, None, ConvInput::Snake(params));
        let activated = cpu::snake(&x, params).unwrap();
        let two_passes = direct(kernel, &activated, &stacked, &bias, g, None, ConvInput::Plain);
        assert_eq!(fused, two_passes, "{kernel:?}: snake");

        let (c_in, out, t, times, k) = (32, 16, 3000, 3, 7);
        let x = seeded(&[1, c_in, t], 610);
        let stacked = seeded(&[k * out, c_in], 611);
        let bias = seeded(&[out], 612);
        let g = ConvGeometry { k, dilation: 1, pad_left: k - 1, pad_right: 0 };
        let input = ConvInput::LeakyReluRepeat { slope: 0.1, times };
        let fused = direct(kernel, &x, &stacked, &bias, g, None, input);
        let activated = x.maximum(&(&x * 0.1).unwrap()).unwrap();
        let upsampled = activated.unsqueeze(3).unwrap().broadcast_as((1, c_in, t, times));
        let upsampled = upsampled.unwrap().reshape((1, c_in, t * times)).unwrap();
        let three_passes = direct(kernel, &upsampled, &stacked, &bias, g, None, ConvInput::Plain);
        assert_eq!(fused, three_passes, "{kernel:?}: leaky relu + repeat");
    }

    #[test]
    fn direct_conv_gives_the_same_bits_on_any_thread_count_and_width() {
        // The blocks per task follow the thread count and the kernel's width; each output's
        // sum must not.
        let (c_in, out, t, k, d) = (128, 20, 5000, 11, 5);
        let x = seeded(&[1, c_in, t], 700);
        let stacked = seeded(&[k * out, c_in], 701);
        let bias = seeded(&[out], 702);
        let g = ConvGeometry { k, dilation: d, pad_left: (k - 1) * d, pad_right: 0 };
        let on = |kernel: Kernel, threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| direct(kernel, &x, &stacked, &bias, g, None, ConvInput::Plain))
        };
        let kernels = kernels();
        let Some(&first) = kernels.first() else { return };
        let one = on(first, 1);
        for kernel in kernels {
            for threads in [1, 2, 3] {
                assert!(one == on(kernel, threads), "{kernel:?} on {threads} threads");
            }
        }
    }

    #[test]
    fn panels_for_other_weights_are_an_error() {
        let x = seeded(&[1, 4, 30], 800);
        let g = ConvGeometry { k: 3, dilation: 1, pad_left: 2, pad_right: 0 };
        let (stacked, bias) = (seeded(&[3 * 5, 4], 801), seeded(&[5], 802));
        let other = Panels::pack(&host(&seeded(&[3 * 4, 4], 803)), 3, 4, 4);
        for kernel in Kernel::all_here() {
            let direct = Some((kernel, &other));
            assert!(cpu::conv1d(&x, &stacked, &bias, g, None, ConvInput::Plain, direct).is_err());
        }
    }

    #[test]
    fn the_vocoder_takes_the_widest_kernel_here() {
        let here = Kernel::all_here();
        assert_eq!(vocoder_default(), here.last().copied(), "kernels here: {here:?}");
        #[cfg(target_arch = "x86_64")]
        if crate::simd::has_avx512f() {
            assert_eq!(vocoder_default(), Some(Kernel::Avx512));
        }
    }
}
