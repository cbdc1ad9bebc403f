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
mod imp {
    use candle::backend::BackendStorage;
    use candle::cuda_backend::cudarc::driver::{CudaView, LaunchConfig, PushKernelArg};
    use candle::cuda_backend::{CudaStorage, WrapErr};
    use candle::{CpuStorage, Layout, Shape, Tensor};

    use crate::model::nvrtc::{self, view};

    const MODULE: &str = "lectern_flow_kernels";
    const SOURCE: &str = include_str!("kernels.cu");
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

    struct Modulate {
        eps: f32,
    }

    impl candle::CustomOp3 for Modulate {
        fn name(&self) -> &'static str {
            "dit-modulate"
        }
        fn cpu_fwd(
            &self,
            _: &CpuStorage,
            _: &Layout,
            _: &CpuStorage,
            _: &Layout,
            _: &CpuStorage,
            _: &Layout,
        ) -> candle::Result<(CpuStorage, Shape)> {
            candle::bail!("dit-modulate runs on CUDA only")
        }
        fn cuda_fwd(
            &self,
            s1: &CudaStorage,
            l1: &Layout,
            s2: &CudaStorage,
            l2: &Layout,
            s3: &CudaStorage,
            l3: &Layout,
        ) -> candle::Result<(CudaStorage, Shape)> {
            let (b, t, dim) = l1.shape().dims3()?;
            let Some(x) = view(s1, l1)? else { candle::bail!("dit-modulate: x not contiguous") };
            let ((scale, scale_stride), (shift, shift_stride)) =
                (rows_view(s2, l2)?, rows_view(s3, l3)?);
            let dev = s1.device();
            let func =
                dev.get_or_load_custom_func("modulate_f32", MODULE, nvrtc::ptx(MODULE, SOURCE)?)?;
            // SAFETY: every element is written by the kernel.
            let out = unsafe { dev.alloc::<f32>(b * t * dim)? };
            let cfg = LaunchConfig {
                grid_dim: ((b * t) as u32, 1, 1),
                block_dim: (THREADS, 1, 1),
                shared_mem_bytes: 0,
            };
            let (t_i, dim_i) = (t as i32, dim as i32);
            let mut builder = func.builder();
            builder.arg(&x);
            builder.arg(&scale);
            builder.arg(&scale_stride);
            builder.arg(&shift);
            builder.arg(&shift_stride);
            builder.arg(&out);
            builder.arg(&t_i);
            builder.arg(&dim_i);
            builder.arg(&self.eps);
            // SAFETY: the arguments match the kernel's signature; shapes checked by the caller.
            unsafe { builder.launch(cfg) }.w()?;
            Ok((CudaStorage::wrap_cuda_slice(out, dev.clone()), l1.shape().clone()))
        }
    }

    pub fn modulate(
        xs: &Tensor,
        scale: &Tensor,
        shift: &Tensor,
        eps: f32,
    ) -> candle::Result<Option<Tensor>> {
        if !nvrtc::available(MODULE, SOURCE) {
            return Ok(None);
        }
        Ok(Some(xs.apply_op3_no_bwd(scale, shift, &Modulate { eps })?))
    }

    struct GatedResidual;

    impl candle::CustomOp3 for GatedResidual {
        fn name(&self) -> &'static str {
            "dit-gated-residual"
        }
        fn cpu_fwd(
            &self,
            _: &CpuStorage,
            _: &Layout,
            _: &CpuStorage,
            _: &Layout,
            _: &CpuStorage,
            _: &Layout,
        ) -> candle::Result<(CpuStorage, Shape)> {
            candle::bail!("dit-gated-residual runs on CUDA only")
        }
        fn cuda_fwd(
            &self,
            s1: &CudaStorage,
            l1: &Layout,
            s2: &CudaStorage,
            l2: &Layout,
            s3: &CudaStorage,
            l3: &Layout,
        ) -> candle::Result<(CudaStorage, Shape)> {
            let (b, t, dim) = l1.shape().dims3()?;
            let (Some(x), Some(y)) = (view(s1, l1)?, view(s2, l2)?) else {
                candle::bail!("dit-gated-residual: x and y must be contiguous");
            };
            let (gate, gate_stride) = rows_view(s3, l3)?;
            let dev = s1.device();
            let func = dev.get_or_load_custom_func(
                "gated_residual_f32",
                MODULE,
                nvrtc::ptx(MODULE, SOURCE)?,
            )?;
            let n = b * t * dim;
            // SAFETY: every element is written by the kernel.
            let out = unsafe { dev.alloc::<f32>(n)? };
            let cfg = LaunchConfig {
                grid_dim: (n.div_ceil(THREADS as usize).min(65_535) as u32, 1, 1),
                block_dim: (THREADS, 1, 1),
                shared_mem_bytes: 0,
            };
            let (t_i, dim_i, n_i) = (t as i32, dim as i32, n as i64);
            let mut builder = func.builder();
            builder.arg(&x);
            builder.arg(&y);
            builder.arg(&gate);
            builder.arg(&gate_stride);
            builder.arg(&out);
            builder.arg(&t_i);
            builder.arg(&dim_i);
            builder.arg(&n_i);
            // SAFETY: the arguments match the kernel's signature; shapes checked by the caller.
            unsafe { builder.launch(cfg) }.w()?;
            Ok((CudaStorage::wrap_cuda_slice(out, dev.clone()), l1.shape().clone()))
        }
    }

    pub fn gated_residual(x: &Tensor, y: &Tensor, gate: &Tensor) -> candle::Result<Option<Tensor>> {
        if !nvrtc::available(MODULE, SOURCE) {
            return Ok(None);
        }
        Ok(Some(x.apply_op3_no_bwd(y, gate, &GatedResidual)?))
    }
}
