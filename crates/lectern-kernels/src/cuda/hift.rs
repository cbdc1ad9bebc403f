//! The vocoder's own CUDA kernels (`kernels.cu`, compiled at run time:
//! `nvrtc`).
//!
//! Why: with candle's ops most of a HiFT call's GPU time is outside the GEMMs (Nsight Compute)
//! — a stride-1 conv runs as one `(out, in) @ (in, t)` matmul per tap, each on a copied window
//! of the padded input and each added to the last (k copies, k matmuls, k − 1 adds, then the
//! bias), and every Snake activation takes five passes. Here a
//! conv is one GEMM of the stacked tap weights `(k·out, in) @ (in, t)` (cuBLAS, through
//! candle) and one `tap_sum` pass that adds the shifted taps, the bias and optionally a
//! residual, the padding read as zeros instead of copied in; [`snake`] is one pass.
//!
//! Each function returns `None` where it does not apply (not CUDA, not f32, other layouts);
//! the caller then runs candle's ops, as it does when the vocoder's kernels are off
//! (`lectern_model::hift::Hift::set_kernels`).

// CUDA kernel launches (each with a SAFETY note on its arguments).
#![allow(unsafe_code)]

use candle::Tensor;

use crate::checks::{is_f32_vector, on_cuda_f32};

/// Snake `x + inv_alpha · sin(alpha · x)²` for `x` `(1, c, t)` contiguous, `alpha` and
/// `inv_alpha` `(c,)`.
pub fn snake(x: &Tensor, alpha: &Tensor, inv_alpha: &Tensor) -> candle::Result<Option<Tensor>> {
    let Ok((1, c, _)) = x.dims3() else { return Ok(None) };
    if !applies(x) || !is_f32_vector(alpha, c) || !is_f32_vector(inv_alpha, c) {
        return Ok(None);
    }
    imp::snake(x, alpha, inv_alpha)
}

/// A stride-1 conv with its zero padding: `x` `(1, in, t)` contiguous, `stacked` the tap
/// weights `(k·out, in)` (tap-major), `bias` `(out,)`, `residual` `(1, out, t_out)`, where
/// `t_out = pad_left + t + pad_right − (k − 1)·dilation` → `(1, out, t_out)`.
pub fn conv1d(
    x: &Tensor,
    stacked: &Tensor,
    bias: &Tensor,
    geometry: ConvGeometry,
    residual: Option<&Tensor>,
) -> candle::Result<Option<Tensor>> {
    let (Ok((1, c_in, t)), Ok((rows, w_in))) = (x.dims3(), stacked.dims2()) else {
        return Ok(None);
    };
    let ConvGeometry { k, dilation, pad_left, pad_right } = geometry;
    let out = rows / k.max(1);
    let span = (k.max(1) - 1) * dilation;
    let Some(t_out) = (pad_left + t + pad_right).checked_sub(span) else { return Ok(None) };
    if !applies(x)
        || !imp::available()
        || rows != k * out
        || w_in != c_in
        || !stacked.is_contiguous()
        || !is_f32_vector(bias, out)
        || residual.is_some_and(|r| r.dims() != [1, out, t_out] || !r.is_contiguous())
    {
        return Ok(None);
    }
    let taps = stacked.matmul(&x.squeeze(0)?)?; // (k·out, t): W_j · x for every tap
    imp::tap_sum(&taps, bias, geometry, t_out, residual)
}

/// Taps, dilation and zero padding of a stride-1 conv.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConvGeometry {
    pub k: usize,
    pub dilation: usize,
    pub pad_left: usize,
    pub pad_right: usize,
}

fn applies(x: &Tensor) -> bool {
    on_cuda_f32(x) && x.is_contiguous()
}

#[cfg(not(feature = "cuda"))]
mod imp {
    use candle::Tensor;

    use super::ConvGeometry;

    pub fn snake(_x: &Tensor, _a: &Tensor, _inv: &Tensor) -> candle::Result<Option<Tensor>> {
        Ok(None)
    }

    pub fn available() -> bool {
        false
    }

    pub fn tap_sum(
        _taps: &Tensor,
        _bias: &Tensor,
        _geometry: ConvGeometry,
        _t_out: usize,
        _residual: Option<&Tensor>,
    ) -> candle::Result<Option<Tensor>> {
        Ok(None)
    }
}

#[cfg(feature = "cuda")]
pub(crate) use imp::KERNELS;

#[cfg(feature = "cuda")]
mod imp {
    use candle::backend::BackendStorage;
    use candle::cuda_backend::cudarc::driver::PushKernelArg;
    use candle::cuda_backend::{CudaStorage, WrapErr};
    use candle::{Layout, Shape, Tensor};

    use super::ConvGeometry;
    use crate::cuda::nvrtc::{
        CudaOp, Module, Op, aligned_contiguous, elementwise_grid, output, view,
    };

    pub static KERNELS: Module = Module::new("lectern_hift_kernels", include_str!("hift.cu"));
    /// Inputs: x `(1, c, t)`, alpha and inv_alpha `(c,)`.
    struct Snake;

    impl CudaOp for Snake {
        const NAME: &'static str = "hift-snake";

        fn launch(
            &self,
            inputs: &[(&CudaStorage, &Layout)],
        ) -> candle::Result<(CudaStorage, Shape)> {
            let &[(xs, xl), (a_s, al), (is, il)] = inputs else {
                candle::bail!("{}: x, alpha and inv_alpha", Self::NAME)
            };
            let (_, _, t) = xl.shape().dims3()?;
            let x = view(Self::NAME, xs, xl)?;
            let (alpha, inv) = (view(Self::NAME, a_s, al)?, view(Self::NAME, is, il)?);
            let dev = xs.device();
            let func = KERNELS.function(dev, "snake_f32")?;
            let n = xl.shape().elem_count();
            let out = output(dev, n)?;
            let (t_i, n_i) = (t as i32, n as i64);
            let stream = dev.cuda_stream();
            let mut builder = stream.launch_builder(&func);
            builder.arg(&x).arg(&alpha).arg(&inv).arg(&out).arg(&t_i).arg(&n_i);
            // SAFETY: six arguments in the order and types of `snake_f32(const float* x,
            // const float* alpha, const float* inv_alpha, float* y, int t, long long n)`. Its
            // grid-stride loop touches i < n = c·t of x and of `out` (n long), and alpha and
            // inv_alpha at i / t < c: both c-vectors (checked by `snake`).
            unsafe { builder.launch(elementwise_grid(n)) }.w()?;
            Ok((CudaStorage::wrap_cuda_slice(out, dev.clone()), xl.shape().clone()))
        }
    }

    pub fn snake(x: &Tensor, alpha: &Tensor, inv: &Tensor) -> candle::Result<Option<Tensor>> {
        if !KERNELS.available() || ![x, alpha, inv].iter().all(|t| aligned_contiguous(t)) {
            return Ok(None);
        }
        Ok(Some(x.apply_op3_no_bwd(alpha, inv, &Op(Snake))?))
    }

    /// Inputs: the taps `(k·out, t_in)`, the bias `(out,)`, the residual `(1, out, t_out)`
    /// (without one, the taps again, not read).
    struct TapSum {
        geometry: ConvGeometry,
        t_out: usize,
        has_residual: bool,
    }

    impl CudaOp for TapSum {
        const NAME: &'static str = "hift-tap-sum";

        fn launch(
            &self,
            inputs: &[(&CudaStorage, &Layout)],
        ) -> candle::Result<(CudaStorage, Shape)> {
            let &[(ts, tl), (bs, bl), (rs, rl)] = inputs else {
                candle::bail!("{}: taps, bias and residual", Self::NAME)
            };
            let (rows, t_in) = tl.shape().dims2()?;
            let out = bl.shape().elem_count();
            let ConvGeometry { k, dilation, pad_left, .. } = self.geometry;
            if rows != k * out {
                candle::bail!("{}: {rows} tap rows for {k} taps of {out}", Self::NAME)
            }
            let (taps, bias) = (view(Self::NAME, ts, tl)?, view(Self::NAME, bs, bl)?);
            let residual = view(Self::NAME, rs, rl)?;
            let dev = ts.device();
            let func = KERNELS.function(dev, "tap_sum_f32")?;
            let n = out * self.t_out;
            let y = output(dev, n)?;
            let ints = [k, out, t_in, self.t_out, dilation, pad_left].map(|v| v as i32);
            let has_residual = i32::from(self.has_residual);
            let stream = dev.cuda_stream();
            let mut builder = stream.launch_builder(&func);
            builder.arg(&taps).arg(&bias).arg(&residual).arg(&y);
            for v in &ints {
                builder.arg(v);
            }
            builder.arg(&has_residual);
            // SAFETY: eleven arguments in the order and types of `tap_sum_f32(const float* taps,
            // const float* bias, const float* residual, float* y, int k, int out, int t_in,
            // int t_out, int dilation, int pad_left, int has_residual)`. For i < n = out·t_out it
            // reads taps[(j·out + o)·t_in + src] only for 0 ≤ src < t_in (rows = k·out, checked
            // above), bias[o] for o < out (bias's length), and residual[i] only when has_residual
            // (`conv1d` checked it (1, out, t_out), contiguous); it writes y[i], and `y` holds n.
            unsafe { builder.launch(elementwise_grid(n)) }.w()?;
            Ok((CudaStorage::wrap_cuda_slice(y, dev.clone()), Shape::from((1, out, self.t_out))))
        }
    }

    pub fn available() -> bool {
        KERNELS.available()
    }

    pub fn tap_sum(
        taps: &Tensor,
        bias: &Tensor,
        geometry: ConvGeometry,
        t_out: usize,
        residual: Option<&Tensor>,
    ) -> candle::Result<Option<Tensor>> {
        let aligned =
            [Some(taps), Some(bias), residual].into_iter().flatten().all(aligned_contiguous);
        if !KERNELS.available() || !aligned {
            return Ok(None);
        }
        let op = Op(TapSum { geometry, t_out, has_residual: residual.is_some() });
        Ok(Some(taps.apply_op3_no_bwd(bias, residual.unwrap_or(taps), &op)?))
    }
}
