//! The LM's own CUDA kernels for decode steps (`kernels.cu`, compiled at run time:
//! [`crate::model::nvrtc`]).
//!
//! Why: a decode step multiplies a few rows (one per lane) by every weight, and cuBLAS picks
//! a kernel for that shape (`gemmSN`) that reads the weights at ~0.6 TB/s on the H200, an
//! eighth of its bandwidth; candle's RMSNorm gives a row of 896 one warp (~15 µs a call).
//! Profiled with Nsight Compute over 3-lane decode steps: those two were 62 % of the GPU time,
//! the attention's probabilities·values another 11 % (docs/benchmarks.md). [`rows_matmul`]
//! streams each weight row once with 16-byte loads, [`rms_norm`] gives each row a block and
//! [`softmax_values`] fuses the softmax with the product by the values. All plain f32 with
//! sums in a fixed order.
//!
//! Each function returns `None` where it does not apply (not CUDA, not f32, more than
//! [`MAX_ROWS`] rows, unaligned or strided inputs, or switched off with [`set_enabled`]); the
//! caller then runs candle's op.

use std::sync::atomic::{AtomicBool, Ordering};

use candle::Tensor;

/// Most rows [`rows_matmul`] takes (lanes of a decode step); `MAX_ROWS` in kernels.cu.
pub const MAX_ROWS: usize = 8;

static ENABLED: AtomicBool = AtomicBool::new(true);

/// Switches the kernels on or off for the whole process (benchmarks compare the two).
pub fn set_enabled(on: bool) {
    ENABLED.store(on, Ordering::Relaxed);
}

/// Whether the kernels are used where they apply.
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// Lectern's CUDA kernel modules (the LM's and the DiT's) that failed to compile in this
/// process, with NVRTC's message: their callers run candle's ops instead. Empty without CUDA.
pub fn compile_failures() -> Vec<String> {
    #[cfg(feature = "cuda")]
    {
        crate::model::nvrtc::failures()
    }
    #[cfg(not(feature = "cuda"))]
    {
        Vec::new()
    }
}

/// `x · wᵀ (+ bias)` for `x` `(rows ≤ MAX_ROWS, k)` and `w` `(n, k)`, both contiguous f32.
pub fn rows_matmul(
    x: &Tensor,
    w: &Tensor,
    bias: Option<&Tensor>,
) -> candle::Result<Option<Tensor>> {
    if !applies(x) || x.rank() != 2 || !(1..=MAX_ROWS).contains(&x.dim(0)?) || x.dim(1)? % 4 != 0 {
        return Ok(None);
    }
    imp::rows_matmul(x, w, bias)
}

/// RMSNorm over the last dimension of a contiguous f32 `x`, scaled by `alpha`.
pub fn rms_norm(x: &Tensor, alpha: &Tensor, eps: f32) -> candle::Result<Option<Tensor>> {
    if !applies(x) {
        return Ok(None);
    }
    imp::rms_norm(x, alpha, eps)
}

/// Softmax over the last dimension of `scores` `(batch, groups, len)` (post-mask, −∞ = not
/// attended) times the cached values of a joined batch's layer: `cache`
/// `(2, batch, capacity, 64)` holds keys then values. Returns `(batch, groups, 64)`: the
/// second half of a decode step's attention in one kernel, where cuBLAS and candle's softmax
/// took ~30 µs a layer on the H200 at 3 lanes.
pub fn softmax_values(scores: &Tensor, cache: &Tensor) -> candle::Result<Option<Tensor>> {
    if !applies(scores) || scores.rank() != 3 || cache.rank() != 4 {
        return Ok(None);
    }
    let (batch, _groups, len) = scores.dims3()?;
    let (two, cb, cap, d) = cache.dims4()?;
    if two != 2 || cb != batch || d != HEAD_DIM || len == 0 || len > cap {
        return Ok(None);
    }
    imp::softmax_values(scores, cache)
}

/// The head size [`softmax_values`] takes (`HEAD_DIM` in kernels.cu).
pub const HEAD_DIM: usize = 64;

fn applies(x: &Tensor) -> bool {
    enabled() && x.device().is_cuda() && x.dtype() == candle::DType::F32
}

#[cfg(not(feature = "cuda"))]
mod imp {
    use candle::Tensor;

    pub fn rows_matmul(
        _x: &Tensor,
        _w: &Tensor,
        _bias: Option<&Tensor>,
    ) -> candle::Result<Option<Tensor>> {
        Ok(None)
    }

    pub fn rms_norm(_x: &Tensor, _alpha: &Tensor, _eps: f32) -> candle::Result<Option<Tensor>> {
        Ok(None)
    }

    pub fn softmax_values(_scores: &Tensor, _cache: &Tensor) -> candle::Result<Option<Tensor>> {
        Ok(None)
    }
}

#[cfg(feature = "cuda")]
mod imp {
    use candle::backend::BackendStorage;
    use candle::cuda_backend::cudarc::driver::{LaunchConfig, PushKernelArg};
    use candle::cuda_backend::{CudaDevice, CudaStorage, WrapErr};
    use candle::{CpuStorage, Layout, Shape, Tensor};

    use crate::model::nvrtc::{self, aligned_contiguous, view};

    const MODULE: &str = "lectern_lm_kernels";
    const SOURCE: &str = include_str!("kernels.cu");
    /// Warps per block of `rows_matmul_f32` (`WARPS` in kernels.cu).
    const WARPS: usize = 8;
    /// Weight rows per warp (`COLS` in kernels.cu).
    const COLS: usize = 4;
    /// Fewest blocks a product should spread over to keep every SM streaming (two per SM of
    /// an H100/H200).
    const MIN_BLOCKS: usize = 264;

    fn ptx() -> candle::Result<&'static str> {
        nvrtc::ptx(MODULE, SOURCE)
    }

    struct RowsMatmul;

    impl RowsMatmul {
        fn launch(
            &self,
            x: (&CudaStorage, &Layout),
            w: (&CudaStorage, &Layout),
            bias: Option<(&CudaStorage, &Layout)>,
        ) -> candle::Result<(CudaStorage, Shape)> {
            let (rows, k) = x.1.shape().dims2()?;
            let (n, wk) = w.1.shape().dims2()?;
            if wk != k {
                candle::bail!("rows_matmul: x has {k} columns, w {wk}");
            }
            let (Some(xv), Some(wv)) = (view(x.0, x.1)?, view(w.0, w.1)?) else {
                candle::bail!("rows_matmul: inputs must be contiguous and aligned");
            };
            let dev: &CudaDevice = x.0.device();
            // Split each weight row over more warps when there are few output columns.
            let cols_per_block = |ksplit: usize| (WARPS / ksplit) * COLS;
            let mut ksplit = 1;
            while ksplit < WARPS && n.div_ceil(cols_per_block(ksplit)) < MIN_BLOCKS {
                ksplit *= 2;
            }
            let cfg = LaunchConfig {
                grid_dim: (n.div_ceil(cols_per_block(ksplit)) as u32, 1, 1),
                block_dim: (32 * WARPS as u32, 1, 1),
                shared_mem_bytes: 0,
            };
            // One instance per row count (1..=MAX_ROWS), so each keeps its rows in registers.
            let name = format!("rows_matmul_f32_{rows}");
            let func = dev.get_or_load_custom_func(&name, MODULE, ptx()?)?;
            // SAFETY: every element is written by the kernel.
            let out = unsafe { dev.alloc::<f32>(rows * n)? };
            let (n_i, k_i, ks_i) = (n as i32, k as i32, ksplit as i32);
            let null: u64 = 0;
            let bias_view = match bias {
                Some((s, l)) => match view(s, l)? {
                    Some(v) if v.len() == n => Some(v),
                    _ => candle::bail!("rows_matmul: bias must be contiguous ({n},)"),
                },
                None => None,
            };
            let mut b = func.builder();
            b.arg(&xv);
            b.arg(&wv);
            match &bias_view {
                Some(v) => b.arg(v),
                None => b.arg(&null),
            };
            b.arg(&out);
            b.arg(&n_i);
            b.arg(&k_i);
            b.arg(&ks_i);
            // SAFETY: the arguments match the kernel's signature; sizes are checked above.
            unsafe { b.launch(cfg) }.w()?;
            Ok((CudaStorage::wrap_cuda_slice(out, dev.clone()), Shape::from((rows, n))))
        }
    }

    impl candle::CustomOp2 for RowsMatmul {
        fn name(&self) -> &'static str {
            "lm-rows-matmul"
        }
        fn cpu_fwd(
            &self,
            _: &CpuStorage,
            _: &Layout,
            _: &CpuStorage,
            _: &Layout,
        ) -> candle::Result<(CpuStorage, Shape)> {
            candle::bail!("lm-rows-matmul runs on CUDA only")
        }
        fn cuda_fwd(
            &self,
            s1: &CudaStorage,
            l1: &Layout,
            s2: &CudaStorage,
            l2: &Layout,
        ) -> candle::Result<(CudaStorage, Shape)> {
            self.launch((s1, l1), (s2, l2), None)
        }
    }

    impl candle::CustomOp3 for RowsMatmul {
        fn name(&self) -> &'static str {
            "lm-rows-matmul-bias"
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
            candle::bail!("lm-rows-matmul runs on CUDA only")
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
            self.launch((s1, l1), (s2, l2), Some((s3, l3)))
        }
    }

    pub fn rows_matmul(
        x: &Tensor,
        w: &Tensor,
        bias: Option<&Tensor>,
    ) -> candle::Result<Option<Tensor>> {
        if !nvrtc::available(MODULE, SOURCE) {
            return Ok(None);
        }
        if !aligned_contiguous(x) || !aligned_contiguous(w) || w.rank() != 2 {
            return Ok(None);
        }
        Ok(Some(match bias {
            Some(b) if aligned_contiguous(b) => x.apply_op3_no_bwd(w, b, &RowsMatmul)?,
            Some(_) => return Ok(None),
            None => x.apply_op2_no_bwd(w, &RowsMatmul)?,
        }))
    }

    struct RmsNorm {
        eps: f32,
    }

    impl candle::CustomOp2 for RmsNorm {
        fn name(&self) -> &'static str {
            "lm-rms-norm"
        }
        fn cpu_fwd(
            &self,
            _: &CpuStorage,
            _: &Layout,
            _: &CpuStorage,
            _: &Layout,
        ) -> candle::Result<(CpuStorage, Shape)> {
            candle::bail!("lm-rms-norm runs on CUDA only")
        }
        fn cuda_fwd(
            &self,
            s1: &CudaStorage,
            l1: &Layout,
            s2: &CudaStorage,
            l2: &Layout,
        ) -> candle::Result<(CudaStorage, Shape)> {
            let (Some(x), Some(alpha)) = (view(s1, l1)?, view(s2, l2)?) else {
                candle::bail!("lm-rms-norm: inputs must be contiguous");
            };
            let cols = *l1.shape().dims().last().unwrap_or(&1);
            if alpha.len() != cols {
                candle::bail!("lm-rms-norm: alpha has {} entries for {cols} columns", alpha.len());
            }
            let rows = l1.shape().elem_count() / cols.max(1);
            let dev = s1.device();
            let cfg = LaunchConfig {
                grid_dim: (rows as u32, 1, 1),
                block_dim: (256, 1, 1),
                shared_mem_bytes: 0,
            };
            let func = dev.get_or_load_custom_func("rms_norm_f32", MODULE, ptx()?)?;
            // SAFETY: every element is written by the kernel.
            let out = unsafe { dev.alloc::<f32>(rows * cols)? };
            let cols_i = cols as i32;
            let mut b = func.builder();
            b.arg(&x);
            b.arg(&alpha);
            b.arg(&out);
            b.arg(&cols_i);
            b.arg(&self.eps);
            // SAFETY: the arguments match the kernel's signature.
            unsafe { b.launch(cfg) }.w()?;
            Ok((CudaStorage::wrap_cuda_slice(out, dev.clone()), l1.shape().clone()))
        }
    }

    pub fn rms_norm(x: &Tensor, alpha: &Tensor, eps: f32) -> candle::Result<Option<Tensor>> {
        if !nvrtc::available(MODULE, SOURCE) {
            return Ok(None);
        }
        if !aligned_contiguous(x) || !aligned_contiguous(alpha) {
            return Ok(None);
        }
        Ok(Some(x.apply_op2_no_bwd(alpha, &RmsNorm { eps })?))
    }

    struct SoftmaxValues;

    impl candle::CustomOp2 for SoftmaxValues {
        fn name(&self) -> &'static str {
            "lm-softmax-values"
        }
        fn cpu_fwd(
            &self,
            _: &CpuStorage,
            _: &Layout,
            _: &CpuStorage,
            _: &Layout,
        ) -> candle::Result<(CpuStorage, Shape)> {
            candle::bail!("lm-softmax-values runs on CUDA only")
        }
        fn cuda_fwd(
            &self,
            s1: &CudaStorage,
            l1: &Layout,
            s2: &CudaStorage,
            l2: &Layout,
        ) -> candle::Result<(CudaStorage, Shape)> {
            let (batch, groups, len) = l1.shape().dims3()?;
            let (_, _, cap, d) = l2.shape().dims4()?;
            let (Some(scores), Some(cache)) = (view(s1, l1)?, view(s2, l2)?) else {
                candle::bail!("lm-softmax-values: inputs must be contiguous and aligned");
            };
            // The values: the second half of the cache.
            let values = cache.slice(batch * cap * d..);
            let dev = s1.device();
            let cfg = LaunchConfig {
                grid_dim: ((batch * groups) as u32, 1, 1),
                block_dim: (1024, 1, 1), // SV_THREADS = PARTS × HEAD_DIM in kernels.cu
                shared_mem_bytes: 0,
            };
            let func = dev.get_or_load_custom_func("softmax_values_f32", MODULE, ptx()?)?;
            // SAFETY: every element is written by the kernel.
            let out = unsafe { dev.alloc::<f32>(batch * groups * d)? };
            let (groups_i, len_i, cap_i) = (groups as i32, len as i32, cap as i32);
            let mut b = func.builder();
            b.arg(&scores);
            b.arg(&values);
            b.arg(&out);
            b.arg(&groups_i);
            b.arg(&len_i);
            b.arg(&cap_i);
            // SAFETY: the arguments match the kernel's signature; shapes checked by the caller.
            unsafe { b.launch(cfg) }.w()?;
            Ok((CudaStorage::wrap_cuda_slice(out, dev.clone()), Shape::from((batch, groups, d))))
        }
    }

    pub fn softmax_values(scores: &Tensor, cache: &Tensor) -> candle::Result<Option<Tensor>> {
        if !nvrtc::available(MODULE, SOURCE) {
            return Ok(None);
        }
        if !aligned_contiguous(scores) || !aligned_contiguous(cache) {
            return Ok(None);
        }
        Ok(Some(scores.apply_op2_no_bwd(cache, &SoftmaxValues)?))
    }
}
