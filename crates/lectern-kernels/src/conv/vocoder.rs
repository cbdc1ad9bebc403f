//! The vocoder's CPU kernels: its stride-1 convolutions as one GEMM of the stacked tap weights
//! and one tap-sum pass over blocks of output frames ([`conv1d`]), and Snake in one parallel
//! pass ([`snake`]; candle's ops make five single-threaded passes) with a vectorised sine
//! ([`sin_fast`]).
//!
//! The pointwise op in front of a conv — Snake in the residual units, the leaky ReLU and the
//! nearest upsampling in front of an upsampling conv or `conv_post` — runs inside the conv
//! ([`ConvInput`]): each task computes it for the input frames its block reads, in cache.
//! On a long group the vocoder's tensors are tens to hundreds of MB, and every separate pass
//! wrote one more of them (freshly mapped, so page-faulted in) for the conv to read back; the
//! residual blocks' mean is one pass too ([`mean`]). Bit-identical to the separate ops (tested).
//!
//! A sum over taps of products on shifted views ([`crate::conv::tap_major::conv1d_tap_major`])
//! packs the same input `k` times and writes `k − 1` full-size sums and a padded copy. Here (as
//! on CUDA, [`crate::cuda::hift::conv1d`]) the `k` taps are one product
//! `W (k·out, in) @ x (in, frames)`, and one pass adds the shifted taps in order, then the bias,
//! then the residual, reading the padding as zeros.
//!
//! The frames are cut into blocks, one rayon task each (the pool candle's kernels use): a
//! task's products `k·out × frames-of-the-block` (≤ [`TAPS_BUDGET_FLOATS`], so they stay in
//! the core's cache between the GEMM and the tap sum) come from one single-threaded gemm,
//! and its tap sum writes the block's columns of the output directly. Nothing the size of
//! the whole `(k·out, t)` product is ever held (60 s of audio at the last stage would be
//! 170 MB).
//!
//! Same additions in the same order as the tap-major path (`((W₀x₀ + W₁x₁) + …) + b`, then
//! `residual + ·`), so the two differ only by the GEMM's own rounding (tests below; every
//! HiFT and end-to-end fixture gate runs through this path on the CPU).

// The `gemm` crate's raw-pointer products for the vocoder's convolutions (SAFETY notes).
#![allow(unsafe_code)]

use candle::{DType, Device, Storage, Tensor};
use gemm::{Parallelism, gemm};
use rayon::prelude::*;

use crate::conv::direct::{self as conv_direct, Kernel, Panels};
pub use crate::conv::input::{ConvInput, SIN_FAST_LIMIT, SnakeParams, sin_fast};
use crate::conv::input::{leaky_relu_repeat_row, snake_row};
use crate::cuda::hift::ConvGeometry;
use crate::shared_out::OutPtr;

/// Most tap products one task holds: 256 Ki floats = 1 MiB, within a core's L2.
pub const TAPS_BUDGET_FLOATS: usize = 256 << 10;
/// Fewest output frames in a block (short blocks make the GEMM inefficient).
const MIN_BLOCK: usize = 64;

/// Whether [`conv1d`] serves this input (CPU, f32).
pub fn applies(x: &Tensor) -> bool {
    x.device().is_cpu() && x.dtype() == DType::F32
}

/// A stride-1 conv with its zero padding: `x` `(1, in, t)` f32, `stacked` the tap weights
/// `(k·out, in)` (tap-major), `bias` `(out,)`, `residual` `(1, out, t_out)`, where
/// `t_out = pad_left + t + pad_right − (k − 1)·dilation` → `(1, out, t_out)`, `t` the frames of
/// `input` (zero padding is added to `input`'s frames, as upstream pads them).
///
/// With `direct` (a kernel this CPU runs, the same weights packed for it), the conv is
/// [`conv_direct`]'s direct convolution instead of the stacked-tap GEMM and tap sum.
#[allow(clippy::too_many_arguments)]
pub fn conv1d(
    x: &Tensor,
    stacked: &Tensor,
    bias: &Tensor,
    geometry: ConvGeometry,
    residual: Option<&Tensor>,
    input: ConvInput,
    direct: Option<(Kernel, &Panels)>,
) -> candle::Result<Tensor> {
    let ConvGeometry { k, dilation, pad_left, pad_right } = geometry;
    let (batch, c_in, x_frames) = x.dims3()?;
    if batch != 1 {
        candle::bail!("cpu conv: a batch of {batch}, this conv takes one");
    }
    let t = input.frames(x_frames);
    let (rows, w_in) = stacked.dims2()?;
    let out = rows / k.max(1);
    if k == 0 || rows != k * out || w_in != c_in || bias.dims() != [out] {
        candle::bail!("cpu conv: x {:?}, weights {:?}, k {k}", x.dims(), stacked.dims());
    }
    let span = (k - 1) * dilation;
    let Some(t_out) = (pad_left + t + pad_right).checked_sub(span) else {
        candle::bail!("cpu conv: {t} frames are fewer than the kernel's span {span}");
    };
    if let Some(r) = residual
        && r.dims() != [1, out, t_out]
    {
        candle::bail!("cpu conv: residual {:?}, output (1, {out}, {t_out})", r.dims());
    }
    if let ConvInput::Snake(sn) = input
        && (sn.alpha.len() != c_in || sn.inv_alpha.len() != c_in)
    {
        candle::bail!("cpu conv: {c_in} input channels, {} Snake alphas", sn.alpha.len());
    }
    let (x, stacked, bias) = (x.contiguous()?, stacked.contiguous()?, bias.contiguous()?);
    let residual = residual.map(Tensor::contiguous).transpose()?;
    let (xg, xl) = x.storage_and_layout();
    let (wg, wl) = stacked.storage_and_layout();
    let (bg, bl) = bias.storage_and_layout();
    let (Storage::Cpu(xs), Storage::Cpu(ws), Storage::Cpu(bs)) = (&*xg, &*wg, &*bg) else {
        candle::bail!("cpu conv needs CPU tensors");
    };
    let xs = &xs.as_slice::<f32>()?[xl.start_offset()..][..c_in * x_frames];
    let ws = &ws.as_slice::<f32>()?[wl.start_offset()..][..rows * c_in];
    let bs = &bs.as_slice::<f32>()?[bl.start_offset()..][..out];
    let rg = residual.as_ref().map(|r| r.storage_and_layout());
    let rs = match &rg {
        Some((g, l)) => match &**g {
            Storage::Cpu(s) => Some(&s.as_slice::<f32>()?[l.start_offset()..][..out * t_out]),
            _ => candle::bail!("cpu conv needs CPU tensors"),
        },
        None => None,
    };

    let mut y = vec![0f32; out * t_out];
    if let Some((kernel, panels)) = direct {
        if (panels.out(), panels.c_in(), panels.k()) != (out, c_in, k) {
            candle::bail!("cpu conv: panels {panels:?} for weights {:?}", stacked.dims());
        }
        conv_direct::conv1d(kernel, xs, x_frames, panels, bs, geometry, rs, input, &mut y);
        drop((xg, wg, bg, rg));
        return Tensor::from_vec(y, (1, out, t_out), &Device::Cpu);
    }
    let y_ptr = OutPtr::new(&mut y);
    let block = (TAPS_BUDGET_FLOATS / rows).max(MIN_BLOCK).min(t_out.max(1));
    let blocks = t_out.div_ceil(block);
    (0..blocks).into_par_iter().for_each_init(Scratch::default, |scratch, b| {
        let p0 = b * block;
        let len = block.min(t_out - p0);
        // Input frames this block's outputs read: p + j·d − pad_left for p in the block.
        let first = p0.saturating_sub(pad_left).min(t);
        let end = (p0 + len + span).saturating_sub(pad_left).min(t);
        let cols = end - first;
        let Scratch { taps, computed } = scratch;
        taps.resize(rows * cols, 0.0);
        if cols > 0 {
            // The GEMM's right-hand side: x's frames first..end in place (rows t apart), or
            // the input function of them in `computed` (rows cols apart).
            let (rhs, rhs_row) = match input {
                ConvInput::Plain => (&xs[first..], t),
                ConvInput::Snake(sn) => {
                    computed.resize(c_in * cols, 0.0);
                    for (i, row) in computed.chunks_exact_mut(cols).enumerate() {
                        let x_row = &xs[i * t + first..][..cols];
                        snake_row(row, x_row, sn.alpha[i], sn.inv_alpha[i]);
                    }
                    (computed.as_slice(), cols)
                }
                ConvInput::LeakyReluRepeat { slope, times } => {
                    computed.resize(c_in * cols, 0.0);
                    for (i, row) in computed.chunks_exact_mut(cols).enumerate() {
                        let x_row = &xs[i * x_frames..][..x_frames];
                        leaky_relu_repeat_row(row, x_row, first, times, slope);
                    }
                    (computed.as_slice(), cols)
                }
            };
            // SAFETY: `ws` holds rows × c_in, `rhs` c_in rows of `cols` columns `rhs_row`
            // apart, and `taps` rows × cols; the gemm reads and writes only those.
            unsafe {
                gemm(
                    rows,
                    cols,
                    c_in,
                    taps.as_mut_ptr(),
                    1,
                    cols as isize,
                    false,
                    ws.as_ptr(),
                    1,
                    c_in as isize,
                    rhs.as_ptr(),
                    1,
                    rhs_row as isize,
                    0.0,
                    1.0,
                    false,
                    false,
                    false,
                    Parallelism::None,
                );
            }
        }
        for o in 0..out {
            // SAFETY: this task alone writes columns p0..p0+len of row o of `y`
            // (out × t_out elements, alive until after the loop).
            let dst =
                unsafe { std::slice::from_raw_parts_mut(y_ptr.get().add(o * t_out + p0), len) };
            for j in 0..k {
                let row = &taps[(j * out + o) * cols..][..cols];
                // Output p0 + i reads input p0 + i + j·d − pad_left, at `row[base + i]`;
                // outside `row` it reads the zero padding.
                let base = (p0 + j * dilation) as isize - (pad_left + first) as isize;
                let lo = (-base).clamp(0, len as isize) as usize;
                let hi = ((cols as isize - base).clamp(0, len as isize) as usize).max(lo);
                let src: &[f32] =
                    if hi > lo { &row[(base + lo as isize) as usize..][..hi - lo] } else { &[] };
                if j == 0 {
                    dst[..lo].fill(0.0);
                    dst[lo..hi].copy_from_slice(src);
                    dst[hi..].fill(0.0);
                } else {
                    add_assign(&mut dst[lo..hi], src);
                }
            }
            match rs {
                Some(r) => add_bias_to_residual(dst, bs[o], &r[o * t_out + p0..][..len]),
                None => add_bias(dst, bs[o]),
            }
        }
    });
    drop((xg, wg, bg, rg));
    Tensor::from_vec(y, (1, out, t_out), &Device::Cpu)
}

/// One task's buffers, kept across the blocks it takes.
#[derive(Default)]
struct Scratch {
    /// The block's tap products `(k·out, cols)`.
    taps: Vec<f32>,
    /// The input function of the block's frames `(in, cols)` ([`ConvInput`]).
    computed: Vec<f32>,
}

// The tap sum's passes, compiled for the CPU's widest vectors (the closure around them is
// compiled for baseline x86-64, 4 floats a step): the same additions in the same order.
crate::simd::multiversioned! {
    /// `dst += src`.
    fn add_assign(dst: &mut [f32], src: &[f32]) {
        dst.iter_mut().zip(src).for_each(|(d, s)| *d += s);
    }
}

crate::simd::multiversioned! {
    /// `dst += bias`.
    fn add_bias(dst: &mut [f32], bias: f32) {
        dst.iter_mut().for_each(|d| *d += bias);
    }
}

crate::simd::multiversioned! {
    /// `dst = residual + (dst + bias)`.
    fn add_bias_to_residual(dst: &mut [f32], bias: f32, residual: &[f32]) {
        dst.iter_mut().zip(residual).for_each(|(d, r)| *d = r + (*d + bias));
    }
}

/// `(((t₀ + t₁) + t₂) + …) / n` for `n` CPU f32 tensors of one shape, in one parallel pass
/// (candle's ops: `n − 1` adds and a division, each a new tensor). A true division, as
/// upstream's `xs / n`.
pub fn mean(ts: &[Tensor]) -> candle::Result<Tensor> {
    let Some(first) = ts.first() else { candle::bail!("cpu mean of no tensors") };
    if ts.iter().any(|t| t.dims() != first.dims()) {
        candle::bail!("cpu mean: shapes differ");
    }
    let n = first.elem_count();
    let ts: Vec<Tensor> = ts.iter().map(Tensor::contiguous).collect::<candle::Result<_>>()?;
    let guards: Vec<_> = ts.iter().map(Tensor::storage_and_layout).collect();
    let mut srcs = Vec::with_capacity(ts.len());
    for (g, l) in &guards {
        let Storage::Cpu(s) = &**g else { candle::bail!("cpu mean needs CPU tensors") };
        srcs.push(&s.as_slice::<f32>()?[l.start_offset()..][..n]);
    }
    let count = srcs.len() as f32;
    let mut y = vec![0f32; n];
    const CHUNK: usize = 1 << 14;
    y.par_chunks_mut(CHUNK).enumerate().for_each(|(c, dst)| {
        let at = c * CHUNK;
        dst.copy_from_slice(&srcs[0][at..][..dst.len()]);
        for src in &srcs[1..] {
            add_assign(dst, &src[at..][..dst.len()]);
        }
        divide(dst, count);
    });
    drop(guards);
    Tensor::from_vec(y, first.shape(), &Device::Cpu)
}

crate::simd::multiversioned! {
    /// `dst /= by`.
    fn divide(dst: &mut [f32], by: f32) {
        dst.iter_mut().for_each(|d| *d /= by);
    }
}

/// Snake `x + inv_alpha · sin(alpha · x)²` for `x` `(1, c, t)` and `c` parameters, in one pass over rows of channels on the rayon pool, with [`sin_fast`] (16 sines a
/// step on AVX-512 where libm's `sinf` is one call per value; within 1.4e-7 of it).
pub fn snake(x: &Tensor, params: SnakeParams) -> candle::Result<Tensor> {
    let (_, c, t) = x.dims3()?;
    let SnakeParams { alpha, inv_alpha: inv } = params;
    if alpha.len() != c || inv.len() != c {
        candle::bail!("cpu snake: {c} channels, {} alphas", alpha.len());
    }
    let x = x.contiguous()?;
    let (g, l) = x.storage_and_layout();
    let Storage::Cpu(s) = &*g else { candle::bail!("cpu snake needs a CPU tensor") };
    let xs = &s.as_slice::<f32>()?[l.start_offset()..][..c * t];
    let mut y = vec![0f32; c * t];
    // Blocks of whole rows (a channel's frames), at least ~16 K values a task.
    let rows = 16_384usize.div_ceil(t.max(1)).max(1);
    y.par_chunks_mut(rows * t.max(1)).zip(xs.par_chunks(rows * t.max(1))).enumerate().for_each(
        |(task, (ys, xr))| {
            for (i, (yr, xr)) in ys.chunks_exact_mut(t).zip(xr.chunks_exact(t)).enumerate() {
                let ch = task * rows + i;
                snake_row(yr, xr, alpha[ch], inv[ch]);
            }
        },
    );
    drop(g);
    Tensor::from_vec(y, (1, c, t), &Device::Cpu)
}

/// `(in, out, t, k, dilation, pad_left, pad_right, residual)`.
#[cfg(test)]
pub(super) type ConvTestCase = (usize, usize, usize, usize, usize, usize, usize, bool);

/// Convs both CPU paths' tests run, `(in, out, t, k, dilation, pad_left, pad_right,
/// residual)`: left-causal dilated, look-ahead, unpadded (streaming), a 1-tap conv, outputs that
/// are not whole blocks of 4 channels (conv_post's 18) or 24 frames, inputs not whole chunks of
/// 32 channels (the mel's 80), fewer frames than the taps' span, and many tasks with halos.
#[cfg(test)]
pub(super) const CONV_TEST_CASES: [ConvTestCase; 8] = [
    (8, 6, 50, 3, 1, 2, 0, false),
    (8, 8, 300, 11, 5, 50, 0, true),
    (5, 7, 40, 5, 1, 0, 4, false),
    (6, 6, 60, 7, 3, 0, 0, true),
    (18, 4, 33, 1, 1, 0, 0, false),
    (80, 18, 97, 5, 1, 0, 4, true),
    (64, 64, 9000, 7, 3, 18, 0, true),
    (3, 2, 4, 3, 1, 2, 0, false),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conv::tap_major::conv1d_tap_major;
    use lectern_test_support::tensors::max_abs_diff;
    use lectern_test_support::tensors::seeded;

    /// The tap-major reference: pad, sum of per-tap products, bias, residual.
    fn reference(
        x: &Tensor,
        w: &Tensor, // (out, in, k)
        bias: &Tensor,
        g: ConvGeometry,
        residual: Option<&Tensor>,
    ) -> Tensor {
        let x = x.pad_with_zeros(2, g.pad_left, g.pad_right).unwrap();
        let taps = w.permute((2, 0, 1)).unwrap().contiguous().unwrap();
        let y = conv1d_tap_major(&x, &taps, g.dilation).unwrap();
        let y = y.broadcast_add(&bias.reshape((1, (), 1)).unwrap()).unwrap();
        match residual {
            Some(r) => (r + y).unwrap(),
            None => y,
        }
    }

    #[test]
    fn sin_fast_is_within_1e7_of_the_sine() {
        // Every 1/4096 up to the limit, near each multiple of π/4 (the reduction's and the
        // polynomials' edges), the limit itself, and small arguments relative to their size.
        let mut worst = 0f64;
        let mut check = |x: f32| {
            let err = (sin_fast(x) as f64 - (x as f64).sin()).abs();
            worst = worst.max(err);
            assert!(err < 1.2e-7, "sin_fast({x:e}): off by {err:e}");
        };
        let steps = (SIN_FAST_LIMIT * 4096.0) as i32;
        (-steps..=steps).step_by(7).for_each(|i| check(i as f32 / 4096.0));
        for m in (-10_430..=10_430).filter(|&m| m != 0) {
            let edge = m as f64 * std::f64::consts::FRAC_PI_4;
            for ulps in -3..=3 {
                let x = edge as f32;
                check(f32::from_bits((x.to_bits() as i32 + ulps) as u32));
            }
        }
        check(SIN_FAST_LIMIT);
        check(-SIN_FAST_LIMIT);
        for x in [1e-30f32, 1e-7, 3e-4, -2e-3] {
            let rel = ((sin_fast(x) as f64 - (x as f64).sin()) / (x as f64).sin()).abs();
            assert!(rel < 2e-7, "sin_fast({x:e}): relative error {rel:e}");
        }
        eprintln!("sin_fast: largest error {worst:e}");
    }

    /// Snake as candle's ops compute it (libm's `sinf`).
    fn snake_by_candle(x: &Tensor, alpha: &Tensor, inv: &Tensor) -> Tensor {
        let c = alpha.dims1().unwrap();
        let (a3, i3) = (alpha.reshape((1, c, 1)).unwrap(), inv.reshape((1, c, 1)).unwrap());
        let s = x.broadcast_mul(&a3).unwrap().sin().unwrap().sqr().unwrap();
        (x + s.broadcast_mul(&i3).unwrap()).unwrap()
    }

    #[test]
    fn snake_matches_candles_ops() {
        let (c, t) = (5, 7000);
        let x = (seeded(&[1, c, t], 90) * 4.0).unwrap();
        let alpha = (seeded(&[c], 91).abs().unwrap() + 0.5).unwrap();
        let inv: Vec<f32> =
            alpha.to_vec1::<f32>().unwrap().iter().map(|a| 1.0 / (a + 1e-9)).collect();
        let alpha_host = alpha.to_vec1::<f32>().unwrap();
        let params = SnakeParams { alpha: &alpha_host, inv_alpha: &inv };
        let got = snake(&x, params).unwrap();
        let inv = Tensor::new(inv.as_slice(), &Device::Cpu).unwrap();
        let want = snake_by_candle(&x, &alpha, &inv);
        // |Δ sin²| ≤ 2·|Δ sin| (2.4e-7) times 1/α (≤ 2 here), plus the sum's rounding.
        let diff = max_abs_diff(&got, &want);
        assert!(diff < 1e-6, "snake: max |Δ| {diff:e}");
        assert!(diff > 0.0, "sin_fast is not libm's sinf: a zero difference means it was not used");
    }

    #[test]
    fn snake_falls_back_to_libm_beyond_the_limit() {
        // One channel's frames reach past SIN_FAST_LIMIT: that row is libm's bit for bit.
        let (c, t) = (2, 300);
        let mut data = vec![0.5f32; c * t];
        data[t + 17] = 3.0e4;
        data[t + 18] = f32::NAN;
        let x = Tensor::from_vec(data, (1, c, t), &Device::Cpu).unwrap();
        let ones = [1.0f32, 1.0];
        let params = SnakeParams { alpha: &ones, inv_alpha: &ones };
        let alpha = Tensor::new(&ones, &Device::Cpu).unwrap();
        let got = snake(&x, params).unwrap().flatten_all().unwrap().to_vec1::<f32>();
        let want = snake_by_candle(&x, &alpha, &alpha).flatten_all().unwrap().to_vec1::<f32>();
        let (got, want) = (got.unwrap(), want.unwrap());
        for i in t..2 * t {
            assert_eq!(got[i].to_bits(), want[i].to_bits(), "frame {}", i - t);
        }
    }

    #[test]
    fn snake_input_equals_snake_then_conv() {
        // (in, out, t, k, dilation, pad_left, residual): causal dilated convs of one and of
        // many blocks (halo frames shared by neighbours).
        let cases = [
            (8, 6, 50, 3, 1, 2, true),
            (16, 16, 3000, 11, 5, 50, true),
            (64, 64, 9000, 7, 3, 18, false),
        ];
        for (i, &(c_in, out, t, k, d, pl, res)) in cases.iter().enumerate() {
            let seed = 100 + 10 * i as u64;
            let x = (seeded(&[1, c_in, t], seed) * 3.0).unwrap();
            let stacked = seeded(&[k * out, c_in], seed + 1);
            let bias = seeded(&[out], seed + 2);
            let alpha: Vec<f32> = (0..c_in).map(|c| 0.3 + 0.1 * c as f32).collect();
            let inv: Vec<f32> = alpha.iter().map(|a| 1.0 / (a + 1e-9)).collect();
            let g = ConvGeometry { k, dilation: d, pad_left: pl, pad_right: 0 };
            let r = res.then(|| seeded(&[1, out, t + pl - (k - 1) * d], seed + 3));
            let params = SnakeParams { alpha: &alpha, inv_alpha: &inv };
            let fused =
                conv1d(&x, &stacked, &bias, g, r.as_ref(), ConvInput::Snake(params), None).unwrap();
            let activated = snake(&x, params).unwrap();
            let two_steps =
                conv1d(&activated, &stacked, &bias, g, r.as_ref(), ConvInput::Plain, None).unwrap();
            assert_eq!(max_abs_diff(&fused, &two_steps), 0.0, "case {i}");
        }
    }

    #[test]
    fn leaky_relu_repeat_input_equals_candles_three_ops() {
        // (in, out, t, times, k): the vocoder's upsampling convs (causal, k > times), and one
        // of many blocks whose edges fall inside a run of repeated frames.
        for (i, &(c_in, out, t, times, k)) in
            [(8, 4, 20, 8, 16), (6, 5, 37, 5, 11), (32, 16, 3000, 3, 7)].iter().enumerate()
        {
            let seed = 200 + 10 * i as u64;
            let x = seeded(&[1, c_in, t], seed);
            let stacked = seeded(&[k * out, c_in], seed + 1);
            let bias = seeded(&[out], seed + 2);
            let g = ConvGeometry { k, dilation: 1, pad_left: k - 1, pad_right: 0 };
            let input = ConvInput::LeakyReluRepeat { slope: 0.1, times };
            let fused = conv1d(&x, &stacked, &bias, g, None, input, None).unwrap();
            let activated = x.maximum(&(&x * 0.1).unwrap()).unwrap();
            let upsampled = activated
                .unsqueeze(3)
                .unwrap()
                .broadcast_as((1, c_in, t, times))
                .unwrap()
                .reshape((1, c_in, t * times))
                .unwrap();
            let three_ops =
                conv1d(&upsampled, &stacked, &bias, g, None, ConvInput::Plain, None).unwrap();
            assert_eq!(fused.dims(), [1, out, t * times], "case {i}");
            assert_eq!(max_abs_diff(&fused, &three_ops), 0.0, "case {i}");
        }
    }

    #[test]
    fn mean_equals_candles_adds_and_division() {
        let ts: Vec<Tensor> = (0..3).map(|i| seeded(&[1, 7, 40_001], 300 + i)).collect();
        let three = Tensor::new(3f32, &Device::Cpu).unwrap();
        let want = ((&ts[0] + &ts[1]).unwrap() + &ts[2]).unwrap().broadcast_div(&three).unwrap();
        assert_eq!(max_abs_diff(&mean(&ts).unwrap(), &want), 0.0);
        assert_eq!(max_abs_diff(&mean(&ts[..1]).unwrap(), &ts[0]), 0.0);
        assert!(mean(&[ts[0].clone(), ts[1].narrow(2, 0, 4).unwrap()]).is_err());
    }

    #[test]
    fn a_batch_of_two_is_an_error() {
        let x = seeded(&[2, 4, 30], 400);
        let g = ConvGeometry { k: 3, dilation: 1, pad_left: 2, pad_right: 0 };
        let (stacked, bias) = (seeded(&[3 * 5, 4], 401), seeded(&[5], 402));
        assert!(conv1d(&x, &stacked, &bias, g, None, ConvInput::Plain, None).is_err());
    }

    #[test]
    fn matches_the_tap_major_path() {
        for (i, &(c_in, out, t, k, d, pl, pr, res)) in CONV_TEST_CASES.iter().enumerate() {
            let seed = 10 * i as u64;
            let x = seeded(&[1, c_in, t], seed);
            let w = seeded(&[out, c_in, k], seed + 1);
            let bias = seeded(&[out], seed + 2);
            let g = ConvGeometry { k, dilation: d, pad_left: pl, pad_right: pr };
            let t_out = pl + t + pr - (k - 1) * d;
            let r = res.then(|| seeded(&[1, out, t_out], seed + 3));
            let stacked =
                w.permute((2, 0, 1)).unwrap().contiguous().unwrap().flatten_to(1).unwrap();
            let got = conv1d(&x, &stacked, &bias, g, r.as_ref(), ConvInput::Plain, None).unwrap();
            let want = reference(&x, &w, &bias, g, r.as_ref());
            assert_eq!(got.dims(), want.dims(), "case {i}");
            let diff = max_abs_diff(&got, &want);
            assert!(diff < 1e-5, "case {i}: max |Δ| {diff:e}");
        }
    }
}
