//! The DiT's own CUDA kernels for its elementwise work (`kernels.cu`, compiled at run time:
//! [`crate::model::nvrtc`]).
//!
//! Why: on the H200 a DiT block at 1588 frames spends 0.8 of its 4.2 ms in the AdaLN
//! modulation (`bench --stage flow`), which candle runs as nine passes over the
//! `(2, t, 1024)` activations (mean, subtract, square, mean, add, sqrt, divide, multiply,
//! add, most with broadcast index arithmetic). [`modulate`] does it in one pass per row and
//! [`gated_residual`] fuses `x + y·gate`. Plain f32, sums in a fixed order.
//!
//! Each function returns `None` where it does not apply (not CUDA, not f32, other layouts,
//! or switched off with [`set_enabled`]); the caller then runs candle's ops.

use std::sync::atomic::{AtomicBool, Ordering};

use candle::Tensor;

static ENABLED: AtomicBool = AtomicBool::new(true);

/// Switches the kernels on or off for the whole process (benchmarks compare the two).
pub fn set_enabled(on: bool) {
    ENABLED.store(on, Ordering::Relaxed);
}

/// Whether the kernels are used where they apply.
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// `LN(xs)·(1 + scale) + shift` for `xs` `(b, t, dim)` contiguous, `scale` and `shift`
/// `(b, dim)` with unit stride along `dim` (views into the modulation vector are fine).
pub fn modulate(
    xs: &Tensor,
    scale: &Tensor,
    shift: &Tensor,
    eps: f32,
) -> candle::Result<Option<Tensor>> {
    if !applies(xs) || !per_batch_rows(xs, scale) || !per_batch_rows(xs, shift) {
        return Ok(None);
    }
    imp::modulate(xs, scale, shift, eps)
}

/// `x + y·gate` for `x`, `y` `(b, t, dim)` contiguous and `gate` `(b, dim)`.
pub fn gated_residual(x: &Tensor, y: &Tensor, gate: &Tensor) -> candle::Result<Option<Tensor>> {
    if !applies(x) || x.dims() != y.dims() || !y.is_contiguous() || !per_batch_rows(x, gate) {
        return Ok(None);
    }
    imp::gated_residual(x, y, gate)
}

fn applies(x: &Tensor) -> bool {
    enabled() && x.device().is_cuda() && x.dtype() == candle::DType::F32 && x.is_contiguous()
}

/// `v` is `(b, dim)` f32 for `xs` `(b, t, dim)`, unit stride along `dim`.
fn per_batch_rows(xs: &Tensor, v: &Tensor) -> bool {
    let (Ok((b, _, dim)), Ok((vb, vd))) = (xs.dims3(), v.dims2()) else { return false };
    v.dtype() == candle::DType::F32 && vb == b && vd == dim && v.stride()[1] == 1
}

#[cfg(not(feature = "cuda"))]
mod imp {
    use candle::Tensor;

    pub fn modulate(
        _xs: &Tensor,
        _scale: &Tensor,
        _shift: &Tensor,
        _eps: f32,
    ) -> candle::Result<Option<Tensor>> {
        Ok(None)
    }

    pub fn gated_residual(
        _x: &Tensor,
        _y: &Tensor,
        _gate: &Tensor,
    ) -> candle::Result<Option<Tensor>> {
        Ok(None)
    }
}

#[cfg(feature = "cuda")]
pub(crate) use imp::KERNELS;

#[cfg(feature = "cuda")]
mod imp {
    use candle::backend::BackendStorage;
    use candle::cuda_backend::cudarc::driver::{CudaView, LaunchConfig, PushKernelArg};
    use candle::cuda_backend::{CudaStorage, WrapErr};
    use candle::{Layout, Shape, Tensor};

    use crate::model::nvrtc::{CudaOp, Module, Op, output, view};

    pub static KERNELS: Module = Module::new("lectern_flow_kernels", include_str!("kernels.cu"));
    /// Threads per block (`THREADS` in kernels.cu).
    const THREADS: u32 = 256;

    /// A `(b, dim)` view with unit inner stride: the storage from its first element to its
    /// last, and the stride between its rows.
    fn rows_view<'a>(s: &'a CudaStorage, l: &Layout) -> candle::Result<(CudaView<'a, f32>, i32)> {
        let (b, dim) = l.shape().dims2()?;
        let row_stride = l.stride()[0];
        let start = l.start_offset();
        let end = start + (b.max(1) - 1) * row_stride + dim;
        Ok((s.as_cuda_slice::<f32>()?.slice(start..end), row_stride as i32))
    }

    /// Inputs: x `(b, t, dim)`, scale and shift `(b, dim)`.
    struct Modulate {
        eps: f32,
    }

    impl CudaOp for Modulate {
        const NAME: &'static str = "dit-modulate";

        fn launch(
            &self,
            inputs: &[(&CudaStorage, &Layout)],
        ) -> candle::Result<(CudaStorage, Shape)> {
            let &[(xs, xl), (scs, scl), (shs, shl)] = inputs else {
                candle::bail!("{}: x, scale and shift", Self::NAME)
            };
            let (b, t, dim) = xl.shape().dims3()?;
            let x = view(Self::NAME, xs, xl)?;
            let ((scale, scale_stride), (shift, shift_stride)) =
                (rows_view(scs, scl)?, rows_view(shs, shl)?);
            let dev = xs.device();
            let func = KERNELS.function(dev, "modulate_f32")?;
            let out = output(dev, b * t * dim)?;
            let cfg = LaunchConfig {
                grid_dim: ((b * t) as u32, 1, 1),
                block_dim: (THREADS, 1, 1),
                shared_mem_bytes: 0,
            };
            let (t_i, dim_i) = (t as i32, dim as i32);
            let stream = dev.cuda_stream();
            let mut builder = stream.launch_builder(&func);
            builder.arg(&x).arg(&scale).arg(&scale_stride).arg(&shift).arg(&shift_stride);
            builder.arg(&out).arg(&t_i).arg(&dim_i).arg(&self.eps);
            // SAFETY: the arguments match the kernel's signature; shapes checked by the caller.
            unsafe { builder.launch(cfg) }.w()?;
            Ok((CudaStorage::wrap_cuda_slice(out, dev.clone()), xl.shape().clone()))
        }
    }

    pub fn modulate(
        xs: &Tensor,
        scale: &Tensor,
        shift: &Tensor,
        eps: f32,
    ) -> candle::Result<Option<Tensor>> {
        if !KERNELS.available() {
            return Ok(None);
        }
        Ok(Some(xs.apply_op3_no_bwd(scale, shift, &Op(Modulate { eps }))?))
    }

    /// Inputs: x and y `(b, t, dim)`, gate `(b, dim)`.
    struct GatedResidual;

    impl CudaOp for GatedResidual {
        const NAME: &'static str = "dit-gated-residual";

        fn launch(
            &self,
            inputs: &[(&CudaStorage, &Layout)],
        ) -> candle::Result<(CudaStorage, Shape)> {
            let &[(xs, xl), (ys, yl), (gs, gl)] = inputs else {
                candle::bail!("{}: x, y and gate", Self::NAME)
            };
            let (b, t, dim) = xl.shape().dims3()?;
            let (x, y) = (view(Self::NAME, xs, xl)?, view(Self::NAME, ys, yl)?);
            let (gate, gate_stride) = rows_view(gs, gl)?;
            let dev = xs.device();
            let func = KERNELS.function(dev, "gated_residual_f32")?;
            let n = b * t * dim;
            let out = output(dev, n)?;
            let cfg = LaunchConfig {
                grid_dim: (n.div_ceil(THREADS as usize).min(65_535) as u32, 1, 1),
                block_dim: (THREADS, 1, 1),
                shared_mem_bytes: 0,
            };
            let (t_i, dim_i, n_i) = (t as i32, dim as i32, n as i64);
            let stream = dev.cuda_stream();
            let mut builder = stream.launch_builder(&func);
            builder.arg(&x).arg(&y).arg(&gate).arg(&gate_stride);
            builder.arg(&out).arg(&t_i).arg(&dim_i).arg(&n_i);
            // SAFETY: the arguments match the kernel's signature; shapes checked by the caller.
            unsafe { builder.launch(cfg) }.w()?;
            Ok((CudaStorage::wrap_cuda_slice(out, dev.clone()), xl.shape().clone()))
        }
    }

    pub fn gated_residual(x: &Tensor, y: &Tensor, gate: &Tensor) -> candle::Result<Option<Tensor>> {
        if !KERNELS.available() {
            return Ok(None);
        }
        Ok(Some(x.apply_op3_no_bwd(y, gate, &Op(GatedResidual))?))
    }
}
