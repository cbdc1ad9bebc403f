//! The vocoder's CPU kernels: its stride-1 convolutions as one GEMM of the stacked tap weights
//! and one tap-sum pass over blocks of output frames ([`conv1d`]), and Snake in one parallel
//! pass ([`snake`]; candle's ops took five single-threaded passes).
//!
//! Before, a stride-1 conv ran as a sum over taps of `(out, in) @ (in, t)` products on shifted
//! views ([`super::conv::conv1d_tap_major`]): `k` GEMMs that each packed the same input again,
//! `k − 1` full-size adds (a new tensor each), a bias pass and a residual pass, on an input
//! copied once more to add its zero padding. Here (as on CUDA, [`super::kernels::conv1d`])
//! the `k` taps are one product `W (k·out, in) @ x (in, frames)`, and one pass adds the
//! shifted taps in order, then the bias, then the residual, reading the padding as zeros.
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

use super::kernels::ConvGeometry;
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
/// `t_out = pad_left + t + pad_right − (k − 1)·dilation` → `(1, out, t_out)`.
pub fn conv1d(
    x: &Tensor,
    stacked: &Tensor,
    bias: &Tensor,
    geometry: ConvGeometry,
    residual: Option<&Tensor>,
) -> candle::Result<Tensor> {
    let ConvGeometry { k, dilation, pad_left, pad_right } = geometry;
    let (_, c_in, t) = x.dims3()?;
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
    let (x, stacked, bias) = (x.contiguous()?, stacked.contiguous()?, bias.contiguous()?);
    let residual = residual.map(Tensor::contiguous).transpose()?;
    let (xg, xl) = x.storage_and_layout();
    let (wg, wl) = stacked.storage_and_layout();
    let (bg, bl) = bias.storage_and_layout();
    let (Storage::Cpu(xs), Storage::Cpu(ws), Storage::Cpu(bs)) = (&*xg, &*wg, &*bg) else {
        candle::bail!("cpu conv needs CPU tensors");
    };
    let xs = &xs.as_slice::<f32>()?[xl.start_offset()..][..c_in * t];
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
    let y_ptr = OutPtr::new(&mut y);
    let block = (TAPS_BUDGET_FLOATS / rows).max(MIN_BLOCK).min(t_out.max(1));
    let blocks = t_out.div_ceil(block);
    (0..blocks).into_par_iter().for_each_init(Vec::new, |taps: &mut Vec<f32>, b| {
        let p0 = b * block;
        let len = block.min(t_out - p0);
        // Input frames this block's outputs read: p + j·d − pad_left for p in the block.
        let first = p0.saturating_sub(pad_left).min(t);
        let end = (p0 + len + span).saturating_sub(pad_left).min(t);
        let cols = end - first;
        taps.resize(rows * cols, 0.0);
        if cols > 0 {
            // SAFETY: `ws` holds rows × c_in, `xs` c_in × t (columns first..end read), and
            // `taps` rows × cols; the gemm reads and writes only those.
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
                    xs.as_ptr().add(first),
                    1,
                    t as isize,
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
                    dst[lo..hi].iter_mut().zip(src).for_each(|(d, s)| *d += s);
                }
            }
            let bias = bs[o];
            match rs {
                Some(r) => {
                    let r = &r[o * t_out + p0..][..len];
                    for (d, r) in dst.iter_mut().zip(r) {
                        *d = r + (*d + bias);
                    }
                }
                None => dst.iter_mut().for_each(|d| *d += bias),
            }
        }
    });
    drop((xg, wg, bg, rg));
    Tensor::from_vec(y, (1, out, t_out), &Device::Cpu)
}

/// Snake `x + inv_alpha · sin(alpha · x)²` for `x` `(1, c, t)`, `alpha` and `inv_alpha`
/// `(c,)`, in one pass over rows of channels on the rayon pool: the same operations as
/// candle's path (`sinf` per element), in the same order.
pub fn snake(x: &Tensor, alpha: &Tensor, inv_alpha: &Tensor) -> candle::Result<Tensor> {
    let (_, c, t) = x.dims3()?;
    let alpha = alpha.contiguous()?.to_vec1::<f32>()?;
    let inv = inv_alpha.contiguous()?.to_vec1::<f32>()?;
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
                let (a, ia) = (alpha[ch], inv[ch]);
                for (y, &z) in yr.iter_mut().zip(xr) {
                    let s = (z * a).sin();
                    *y = z + (s * s) * ia;
                }
            }
        },
    );
    drop(g);
    Tensor::from_vec(y, (1, c, t), &Device::Cpu)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hift::conv::conv1d_tap_major;

    fn seeded(shape: &[usize], seed: u64) -> Tensor {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let n: usize = shape.iter().product();
        let data: Vec<f32> = (0..n).map(|_| rng.gen_range(-1.0f32..1.0)).collect();
        Tensor::from_vec(data, shape, &Device::Cpu).unwrap()
    }

    fn max_abs_diff(a: &Tensor, b: &Tensor) -> f32 {
        (a - b).unwrap().abs().unwrap().flatten_all().unwrap().max(0).unwrap().to_scalar().unwrap()
    }

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
    fn snake_matches_candles_ops() {
        let (c, t) = (5, 7000);
        let x = (seeded(&[1, c, t], 90) * 4.0).unwrap();
        let alpha = (seeded(&[c], 91).abs().unwrap() + 0.5).unwrap();
        let inv: Vec<f32> =
            alpha.to_vec1::<f32>().unwrap().iter().map(|a| 1.0 / (a + 1e-9)).collect();
        let inv = Tensor::from_vec(inv, c, &Device::Cpu).unwrap();
        let got = snake(&x, &alpha, &inv).unwrap();
        let (a3, i3) = (alpha.reshape((1, c, 1)).unwrap(), inv.reshape((1, c, 1)).unwrap());
        let s = x.broadcast_mul(&a3).unwrap().sin().unwrap().sqr().unwrap();
        let want = (&x + s.broadcast_mul(&i3).unwrap()).unwrap();
        assert_eq!(max_abs_diff(&got, &want), 0.0, "same operations, same order");
    }

    #[test]
    fn matches_the_tap_major_path() {
        // (in, out, t, k, dilation, pad_left, pad_right, residual): left-causal dilated,
        // look-ahead, unpadded (streaming), a 1-tap conv, and blocks of several tasks.
        let cases = [
            (8, 6, 50, 3, 1, 2, 0, false),
            (8, 8, 300, 11, 5, 50, 0, true),
            (5, 7, 40, 5, 1, 0, 4, false),
            (6, 6, 60, 7, 3, 0, 0, true),
            (18, 4, 33, 1, 1, 0, 0, false),
            (64, 64, 9000, 7, 3, 18, 0, true),
        ];
        for (i, &(c_in, out, t, k, d, pl, pr, res)) in cases.iter().enumerate() {
            let seed = 10 * i as u64;
            let x = seeded(&[1, c_in, t], seed);
            let w = seeded(&[out, c_in, k], seed + 1);
            let bias = seeded(&[out], seed + 2);
            let g = ConvGeometry { k, dilation: d, pad_left: pl, pad_right: pr };
            let t_out = pl + t + pr - (k - 1) * d;
            let r = res.then(|| seeded(&[1, out, t_out], seed + 3));
            let stacked =
                w.permute((2, 0, 1)).unwrap().contiguous().unwrap().flatten_to(1).unwrap();
            let got = conv1d(&x, &stacked, &bias, g, r.as_ref()).unwrap();
            let want = reference(&x, &w, &bias, g, r.as_ref());
            assert_eq!(got.dims(), want.dims(), "case {i}");
            let diff = max_abs_diff(&got, &want);
            assert!(diff < 1e-5, "case {i}: max |Δ| {diff:e}");
        }
    }
}
