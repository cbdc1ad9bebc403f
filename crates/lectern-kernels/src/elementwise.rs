//! The DiT blocks' elementwise work on the CPU, each in one parallel pass: the AdaLN
//! modulation, the gated residuals, bias + GELU and the q|k|v bias + rotary + split — what
//! [`crate::cuda::flow`] does on CUDA.
//!
//! candle's CPU ops run these as separate single-threaded passes over the `(b, t, dim)`
//! activations (nine for a modulation, three for a gated residual, a `tanhf` call per element
//! for GELU, a permute copy and a rotary round trip for q|k|v), the other cores idle meanwhile.
//! Here every pass runs over rows on the rayon pool
//! (the pool candle's kernels use), with the same operations in the same order as candle's
//! path; only the row sums of the LayerNorm (eight interleaved partial sums) and GELU's
//! `tanh` (from a vectorisable `exp`) round differently (tests below; every DiT, flow and
//! end-to-end fixture gate runs through this path on the CPU). The row loops are compiled for
//! AVX-512 and AVX2 too (`crate::simd`), with the same results.

use candle::{DType, Device, Tensor};
use rayon::prelude::*;

use crate::attention::exp_fast;
use crate::cpu_slice::with_f32_slice;

/// Whether these ops serve `x` (CPU, f32, contiguous).
pub fn applies(x: &Tensor) -> bool {
    x.device().is_cpu() && x.dtype() == DType::F32 && x.is_contiguous()
}

/// Rows per rayon task (a few hundred KB of activations).
const ROWS_PER_TASK: usize = 32;

/// The rows `(b, dim)` of a per-batch vector (a view into the modulation vector: row stride
/// of its own, unit stride along `dim`), copied out.
fn batch_rows(v: &Tensor, b: usize, dim: usize) -> candle::Result<Vec<f32>> {
    let v = v.contiguous()?;
    if v.dims() != [b, dim] {
        candle::bail!("cpu op: per-batch vector {:?}, want ({b}, {dim})", v.dims());
    }
    v.flatten_all()?.to_vec1::<f32>()
}

/// Eight interleaved partial sums (vectorisable; rounding differs from a sequential sum only).
#[inline(always)]
fn sum8(xs: &[f32], f: impl Fn(f32) -> f32) -> f32 {
    let mut acc = [0f32; 8];
    let mut chunks = xs.chunks_exact(8);
    for c in &mut chunks {
        for (a, &x) in acc.iter_mut().zip(c) {
            *a += f(x);
        }
    }
    let tail: f32 = chunks.remainder().iter().map(|&x| f(x)).sum();
    acc.iter().sum::<f32>() + tail
}

/// `LN(xs)·(1 + scale) + shift` for `xs` `(b, t, dim)`, `scale` and `shift` `(b, dim)`: the
/// two-pass LayerNorm (mean, then centred variance, eps inside the square root) as
/// `dit::layer_norm` computes it, and the modulation, in one pass per row.
pub fn modulate(xs: &Tensor, scale: &Tensor, shift: &Tensor, eps: f32) -> candle::Result<Tensor> {
    let (b, t, dim) = xs.dims3()?;
    let (scale, shift) = (batch_rows(scale, b, dim)?, batch_rows(shift, b, dim)?);
    let mut out = vec![0f32; b * t * dim];
    with_f32_slice(xs, |x| {
        out.par_chunks_mut(dim * ROWS_PER_TASK).enumerate().for_each(|(task, ys)| {
            let rows = Rows { first: task * ROWS_PER_TASK, t, dim };
            modulate_rows(ys, x, rows, &scale, &shift, eps);
        });
        Ok(())
    })?;
    Tensor::from_vec(out, (b, t, dim), &Device::Cpu)
}

/// Where a task's output rows lie: the first row's index over all `b·t` rows, `t` rows a batch
/// item, `dim` values a row.
#[derive(Clone, Copy)]
struct Rows {
    first: usize,
    t: usize,
    dim: usize,
}

crate::simd::multiversioned! {
    /// [`modulate`] for the rows of `ys` (rows `rows.first…` of `x`).
    fn modulate_rows(ys: &mut [f32], x: &[f32], rows: Rows, scale: &[f32], shift: &[f32], eps: f32) {
        let Rows { first, t, dim } = rows;
        for (i, y) in ys.chunks_exact_mut(dim).enumerate() {
            let row = first + i;
            let xr = &x[row * dim..][..dim];
            let bi = row / t;
            let mean = sum8(xr, |v| v) / dim as f32;
            let var = sum8(xr, |v| (v - mean) * (v - mean)) / dim as f32;
            let denom = (var + eps).sqrt();
            let (sc, sh) = (&scale[bi * dim..][..dim], &shift[bi * dim..][..dim]);
            for (((y, &v), &s), &h) in y.iter_mut().zip(xr).zip(sc).zip(sh) {
                *y = (v - mean) / denom * (s + 1.0) + h;
            }
        }
    }
}

crate::simd::multiversioned! {
    /// [`gated_residual`] for the rows of `out` (rows `rows.first…` of `xs` and `ys`).
    fn gated_rows(out: &mut [f32], xs: &[f32], ys: &[f32], rows: Rows, bias: &[f32], gate: &[f32]) {
        let Rows { first, t, dim } = rows;
        for (i, o) in out.chunks_exact_mut(dim).enumerate() {
            let row = first + i;
            let g = &gate[(row / t) * dim..][..dim];
            let (xr, yr) = (&xs[row * dim..][..dim], &ys[row * dim..][..dim]);
            for ((((o, &xv), &yv), &bv), &gv) in o.iter_mut().zip(xr).zip(yr).zip(bias).zip(g) {
                *o = xv + (yv + bv) * gv;
            }
        }
    }
}

crate::simd::multiversioned! {
    /// `GELU_tanh(x + bias)` over rows of `bias.len()` values.
    fn bias_gelu_rows(out: &mut [f32], xs: &[f32], bias: &[f32]) {
        let dim = bias.len();
        for (o, xr) in out.chunks_exact_mut(dim).zip(xs.chunks_exact(dim)) {
            for ((o, &v), &bv) in o.iter_mut().zip(xr).zip(bias) {
                *o = gelu(v + bv);
            }
        }
    }
}

crate::simd::multiversioned! {
    /// [`mish_fast`] over a slice.
    fn mish_values(out: &mut [f32], xs: &[f32]) {
        for (o, &z) in out.iter_mut().zip(xs) {
            *o = mish_fast(z);
        }
    }
}

/// `Mish(z) = z·tanh(ln(1 + eᶻ))` through one exponential: with `e = eᶻ`,
/// `tanh(ln(1 + e)) = e(e + 2) / (e(e + 2) + 2)` exactly. Above z = 20 the tanh is 1 in f32
/// (1 − 2e−18), and below −87 `eᶻ` is 0. Within a few 1e-7 of candle's
/// `z·tanhf(logf(1 + expf(z)))` (tested below), and vectorisable where those are libm calls.
#[inline(always)]
fn mish_fast(z: f32) -> f32 {
    let e = exp_fast(z.min(20.0));
    let n = e * (e + 2.0);
    if z > 20.0 { z } else { z * (n / (n + 2.0)) }
}

/// Mish over a CPU f32 tensor of any shape, in parallel blocks.
pub fn mish(x: &Tensor) -> candle::Result<Tensor> {
    let x = x.contiguous()?;
    let mut out = vec![0f32; x.elem_count()];
    with_f32_slice(&x, |xs| {
        out.par_chunks_mut(1 << 14)
            .zip(xs.par_chunks(1 << 14))
            .for_each(|(o, x)| mish_values(o, x));
        Ok(())
    })?;
    Tensor::from_vec(out, x.shape(), &Device::Cpu)
}

/// `x + (y + bias)·gate` for `x`, `y` `(b, t, dim)`, `bias` `(dim,)`, `gate` `(b, dim)`.
pub fn gated_residual(
    x: &Tensor,
    y: &Tensor,
    bias: &Tensor,
    gate: &Tensor,
) -> candle::Result<Tensor> {
    let (b, t, dim) = x.dims3()?;
    if y.dims() != x.dims() {
        candle::bail!("cpu gated residual: x {:?}, y {:?}", x.dims(), y.dims());
    }
    let gate = batch_rows(gate, b, dim)?;
    let bias = bias.contiguous()?.to_vec1::<f32>()?;
    let y = y.contiguous()?;
    let mut out = vec![0f32; b * t * dim];
    with_f32_slice(x, |xs| {
        with_f32_slice(&y, |ys| {
            out.par_chunks_mut(dim * ROWS_PER_TASK).enumerate().for_each(|(task, o)| {
                let rows = Rows { first: task * ROWS_PER_TASK, t, dim };
                gated_rows(o, xs, ys, rows, &bias, &gate);
            });
            Ok(())
        })
    })?;
    Tensor::from_vec(out, (b, t, dim), &Device::Cpu)
}

/// `tanh(x)` from [`exp_fast`]: `sign(x)·(1 − e^{−2|x|}) / (1 + e^{−2|x|})`, within a
/// few 1e-8 of `tanhf` in absolute terms (tested below), vectorisable where `tanhf` is a call.
#[inline(always)]
fn tanh_fast(x: f32) -> f32 {
    let e = exp_fast(-2.0 * x.abs());
    ((1.0 - e) / (1.0 + e)).copysign(x)
}

/// GELU (tanh form) as candle computes it, with [`tanh_fast`].
#[inline(always)]
fn gelu(v: f32) -> f32 {
    const SQRT_TWO_OVER_PI: f32 = 0.797_884_6;
    0.5 * v * (1.0 + tanh_fast(SQRT_TWO_OVER_PI * v * (1.0 + 0.044715 * v * v)))
}

/// `GELU_tanh(x + bias)` for `x` `(…, dim)`, `bias` `(dim,)`.
pub fn bias_gelu(x: &Tensor, bias: &Tensor) -> candle::Result<Tensor> {
    let dim = x.dim(candle::D::Minus1)?;
    let bias = bias.contiguous()?.to_vec1::<f32>()?;
    if bias.len() != dim {
        candle::bail!("cpu bias gelu: bias of {} for rows of {dim}", bias.len());
    }
    let mut out = vec![0f32; x.elem_count()];
    with_f32_slice(x, |xs| {
        out.par_chunks_mut(dim * ROWS_PER_TASK)
            .zip(xs.par_chunks(dim * ROWS_PER_TASK))
            .for_each(|(o, xr)| bias_gelu_rows(o, xr, &bias));
        Ok(())
    })?;
    Tensor::from_vec(out, x.shape(), &Device::Cpu)
}

/// The q|k|v projection `(b, t, 3·h·dh)` without its bias → q, k, v `(b, h, t, dh)` each: the
/// bias added and head 0 of q and k rotated by the interleaved-pair tables `cos_sin`
/// `(2, t, dh / 2)` (upstream rotates channels 0 … dh − 1 only), written head-major in one
/// pass.
pub fn qkv_bias_rope(
    qkv: &Tensor,
    bias: &Tensor,
    cos_sin: &Tensor,
    heads: usize,
) -> candle::Result<(Tensor, Tensor, Tensor)> {
    let (b, t, width) = qkv.dims3()?;
    let dh = width / (3 * heads).max(1);
    if width != 3 * heads * dh || !dh.is_multiple_of(2) || cos_sin.dims() != [2, t, dh / 2] {
        candle::bail!("cpu qkv: {:?} with {heads} heads, tables {:?}", qkv.dims(), cos_sin.dims());
    }
    let bias = bias.contiguous()?.to_vec1::<f32>()?;
    let tables = cos_sin.contiguous()?.flatten_all()?.to_vec1::<f32>()?;
    let (cos, sin) = tables.split_at(t * dh / 2);
    let hd = heads * dh;
    // out[which][bb][head][tt][d]: task = (which, bb, head), each a contiguous (t, dh) plane.
    let mut out = vec![0f32; 3 * b * hd * t];
    with_f32_slice(qkv, |src| {
        out.par_chunks_mut(t * dh).enumerate().for_each(|(plane, dst)| {
            let (which, bb, head) = (plane / (b * heads), (plane / heads) % b, plane % heads);
            let col0 = which * hd + head * dh;
            let rotate = which < 2 && head == 0;
            for (tt, d_row) in dst.chunks_exact_mut(dh).enumerate() {
                let s_row = &src[(bb * t + tt) * width + col0..][..dh];
                let b_row = &bias[col0..col0 + dh];
                if rotate {
                    let (c, s) = (&cos[tt * dh / 2..][..dh / 2], &sin[tt * dh / 2..][..dh / 2]);
                    for p in 0..dh / 2 {
                        let x0 = s_row[2 * p] + b_row[2 * p];
                        let x1 = s_row[2 * p + 1] + b_row[2 * p + 1];
                        d_row[2 * p] = x0 * c[p] - x1 * s[p];
                        d_row[2 * p + 1] = x0 * s[p] + x1 * c[p];
                    }
                } else {
                    for ((d, &sv), &bv) in d_row.iter_mut().zip(s_row).zip(b_row) {
                        *d = sv + bv;
                    }
                }
            }
        });
        Ok(())
    })?;
    let joined = Tensor::from_vec(out, (3, b, heads, t, dh), &Device::Cpu)?;
    Ok((joined.get(0)?, joined.get(1)?, joined.get(2)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use lectern_test_support::tensors::max_abs_diff;

    /// Values uniform in [−1, 1) times `scale`.
    fn seeded(shape: &[usize], seed: u64, scale: f32) -> Tensor {
        (lectern_test_support::tensors::seeded(shape, seed) * f64::from(scale)).unwrap()
    }

    #[test]
    fn gated_residual_matches_candles_ops() {
        let (b, t, dim) = (2, 40, 64);
        let (x, y) = (seeded(&[b, t, dim], 3, 1.0), seeded(&[b, t, dim], 4, 1.0));
        let (bias, gate) = (seeded(&[dim], 5, 1.0), seeded(&[b, dim], 6, 1.0));
        let got = gated_residual(&x, &y, &bias, &gate).unwrap();
        let want = (&x
            + y.broadcast_add(&bias).unwrap().broadcast_mul(&gate.unsqueeze(1).unwrap()).unwrap())
        .unwrap();
        assert_eq!(max_abs_diff(&got, &want), 0.0, "same operations, same order");
    }

    #[test]
    fn bias_gelu_matches_candles_gelu() {
        let (x, bias) = (seeded(&[3, 50, 128], 7, 6.0), seeded(&[128], 8, 1.0));
        let got = bias_gelu(&x, &bias).unwrap();
        let want = x.broadcast_add(&bias).unwrap().gelu().unwrap();
        let d = max_abs_diff(&got, &want);
        assert!(d < 2e-6, "bias gelu: max |Δ| {d:e}");
    }

    /// The pass compiled for this CPU's vector extension gives the scalar function's bits.
    #[test]
    fn vectorized_gelu_is_bit_identical_to_the_scalar_function() {
        let (x, bias) = (seeded(&[2, 33, 64], 11, 8.0), seeded(&[64], 12, 1.0));
        let got = bias_gelu(&x, &bias).unwrap().flatten_all().unwrap().to_vec1::<f32>().unwrap();
        let (xs, bs) =
            (x.flatten_all().unwrap().to_vec1::<f32>().unwrap(), bias.to_vec1::<f32>().unwrap());
        for (i, (&g, &v)) in got.iter().zip(&xs).enumerate() {
            assert_eq!(g.to_bits(), gelu(v + bs[i % 64]).to_bits(), "element {i}");
        }
    }

    #[test]
    fn fast_mish_is_close_to_candles_mish() {
        let candle_mish = |z: f32| z * (z.exp() + 1.0).ln().tanh();
        let mut worst = 0f32;
        for i in -1_000_000..=1_000_000 {
            let z = i as f32 / 10_000.0; // −100 … 100
            let (got, want) = (mish_fast(z), candle_mish(z));
            worst = worst.max((got - want).abs() / want.abs().max(1.0));
        }
        // Most of it is the reference's own rounding of 1 + eᶻ before logf.
        assert!(worst < 2e-6, "worst error {worst:e}");
        assert_eq!(mish_fast(0.0), 0.0);
    }

    #[test]
    fn fast_tanh_is_close_to_tanhf() {
        let mut worst = 0f32;
        for i in -200_000..=200_000 {
            let x = i as f32 / 10_000.0;
            worst = worst.max((tanh_fast(x) - x.tanh()).abs());
        }
        assert!(worst < 2e-7, "worst absolute error {worst:e}");
        assert_eq!(tanh_fast(0.0), 0.0);
        assert_eq!(tanh_fast(100.0), 1.0);
        assert_eq!(tanh_fast(-100.0), -1.0);
    }
}
