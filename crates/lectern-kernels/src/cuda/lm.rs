//! The LM's own CUDA kernels for decode steps (`kernels.cu`, compiled at run time:
//! `nvrtc`).
//!
//! Why: a decode step multiplies a few rows (one per lane) by every weight, and cuBLAS picks
//! a kernel for that shape (`gemmSN`) that reads the weights far below the GPU's bandwidth;
//! candle's RMSNorm gives a row of 896 one warp. With the attention's probabilities·values those
//! take most of a decode step's GPU time (Nsight Compute). [`rows_matmul`]
//! streams each weight row once with 16-byte loads, [`rms_norm`] gives each row a block and
//! [`softmax_values`] fuses the softmax with the product by the values. All plain f32 with
//! sums in a fixed order.
//!
//! Each function returns `None` where it does not apply (not CUDA, not f32, more than
//! [`MAX_ROWS`] rows, unaligned or strided inputs); the caller then runs candle's op, as it
//! does when the LM's kernels are off ([`super::SpeechLm::set_kernels`]).

// CUDA kernel launches (each with a SAFETY note on its arguments).
#![allow(unsafe_code)]

use candle::{DType, Tensor};

use crate::checks::on_cuda_f32;

/// Most rows [`rows_matmul`] takes (lanes of a decode step): kernels.cu instantiates
/// `rows_matmul_f32_1` … `rows_matmul_f32_8`.
pub const MAX_ROWS: usize = 8;

/// Lectern's CUDA kernel modules (the LM's, the DiT's and the vocoder's) that failed to compile in this
/// process, with NVRTC's message: their callers run candle's ops instead. Empty without CUDA.
pub fn compile_failures() -> Vec<String> {
    #[cfg(feature = "cuda")]
    {
        [
            &imp::KERNELS,
            &crate::cuda::flow::KERNELS,
            &crate::cuda::flow::TENSOR_CORE_KERNELS,
            &crate::cuda::hift::KERNELS,
        ]
        .into_iter()
        .filter_map(|m| m.failure())
        .collect()
    }
    #[cfg(not(feature = "cuda"))]
    {
        Vec::new()
    }
}

/// `x · wᵀ (+ bias)` for `x` `(rows ≤ MAX_ROWS, k)` f32 and `w` `(n, k)` f32 or bf16 (the LM's
/// `--precision bf16`: half the bytes a step reads, each product and sum in f32), contiguous.
pub fn rows_matmul(
    x: &Tensor,
    w: &Tensor,
    bias: Option<&Tensor>,
) -> candle::Result<Option<Tensor>> {
    let chunk = match w.dtype() {
        DType::F32 => 4,
        DType::BF16 => 8,
        _ => return Ok(None),
    };
    if !applies(x)
        || x.rank() != 2
        || !(1..=MAX_ROWS).contains(&x.dim(0)?)
        || x.dim(1)? % chunk != 0
    {
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
/// second half of a decode step's attention in one kernel, where cuBLAS runs the product as one
/// tile per head after candle's separate softmax.
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
    on_cuda_f32(x)
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
    use candle::cuda_backend::CudaStorage;
    use candle::cuda_backend::WrapErr;
    use candle::cuda_backend::cudarc::driver::{CudaView, LaunchConfig, PushKernelArg};
    use candle::{DType, Layout, Shape, Tensor};

    use crate::cuda::nvrtc::{CudaOp, Module, Op, aligned_contiguous, output, view};

    pub static KERNELS: Module = Module::new("lectern_lm_kernels", include_str!("lm.cu"));
    /// Warps per block of `rows_matmul_f32_R` (`WARPS` in kernels.cu).
    const WARPS: usize = 8;
    /// Weight rows per warp (`COLS` in kernels.cu).
    const COLS: usize = 4;
    /// Fewest blocks a product should spread over to keep every SM streaming (two per SM of
    /// an H100/H200).
    const MIN_BLOCKS: usize = 264;

    /// A decode projection's weight on the device, f32 or bf16.
    enum WeightView<'a> {
        F32(CudaView<'a, f32>),
        Bf16(CudaView<'a, half::bf16>),
    }

    impl<'a> WeightView<'a> {
        fn of(op: &str, s: &'a CudaStorage, l: &Layout) -> candle::Result<Self> {
            match s.dtype() {
                DType::BF16 => match l.contiguous_offsets() {
                    // 8 bf16 elements = 16 bytes: the kernel's loads need that alignment.
                    Some((start, end)) if start % 8 == 0 => {
                        Ok(Self::Bf16(s.as_cuda_slice::<half::bf16>()?.slice(start..end)))
                    }
                    _ => candle::bail!("{op}: inputs must be contiguous and 16-byte aligned"),
                },
                _ => Ok(Self::F32(view(op, s, l)?)),
            }
        }

        /// The element type's part of the kernel's name.
        fn name(&self) -> &'static str {
            match self {
                Self::F32(_) => "f32",
                Self::Bf16(_) => "bf16",
            }
        }
    }

    /// Inputs: x `(rows, k)`, w `(n, k)`, optionally bias `(n,)`.
    struct RowsMatmul;

    impl CudaOp for RowsMatmul {
        const NAME: &'static str = "lm-rows-matmul";

        fn launch(
            &self,
            inputs: &[(&CudaStorage, &Layout)],
        ) -> candle::Result<(CudaStorage, Shape)> {
            let (&(xs, xl), &(ws, wl), bias) = match inputs {
                [x, w] => (x, w, None),
                [x, w, b] => (x, w, Some(b)),
                _ => candle::bail!("{}: x, w and an optional bias", Self::NAME),
            };
            let (rows, k) = xl.shape().dims2()?;
            let (n, wk) = wl.shape().dims2()?;
            if wk != k {
                candle::bail!("{}: x has {k} columns, w {wk}", Self::NAME);
            }
            let x = view(Self::NAME, xs, xl)?;
            let w = WeightView::of(Self::NAME, ws, wl)?;
            let bias = bias.map(|&(s, l)| view(Self::NAME, s, l)).transpose()?;
            if bias.as_ref().is_some_and(|b| b.len() != n) {
                candle::bail!("{}: the bias must have {n} entries", Self::NAME);
            }
            let dev = xs.device();
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
            let func = KERNELS.function(dev, &format!("rows_matmul_{}_{rows}", w.name()))?;
            let out = output(dev, rows * n)?;
            let (n_i, k_i, ks_i, null) = (n as i32, k as i32, ksplit as i32, 0u64);
            let stream = dev.cuda_stream();
            let mut b = stream.launch_builder(&func);
            b.arg(&x);
            match &w {
                WeightView::F32(v) => b.arg(v),
                WeightView::Bf16(v) => b.arg(v),
            };
            match &bias {
                Some(v) => b.arg(v),
                None => b.arg(&null),
            };
            b.arg(&out).arg(&n_i).arg(&k_i).arg(&ks_i);
            // SAFETY: seven arguments in the order and types of `rows_matmul_T_R(const float* x,
            // const T* w, const float* bias, float* y, int n, int k, int ksplit)` with T = float
            // for an f32 view and unsigned short for a bf16 one (the kernel named after the
            // view), the bias a null pointer (`0u64`) when absent. The instance R = rows
            // (1..=MAX_ROWS, checked by `rows_matmul`; another name fails to load) reads 16-byte
            // chunks of x rows r < rows and of w rows c < n only, up to column k: both views are
            // contiguous and 16-byte aligned (`view`, `WeightView::of`), w is (n, k) (checked
            // above) and k is a whole number of chunks (4 f32 or 8 bf16: `rows_matmul`); it reads
            // the bias (n long, checked above) at c < n and writes y[r·n + c] for r < rows, c < n:
            // `out` holds rows·n. 256 threads are the WARPS = 8 warps its shared `partial` is
            // sized for, and ksplit (1, 2, 4 or 8) divides WARPS.
            unsafe { b.launch(cfg) }.w()?;
            Ok((CudaStorage::wrap_cuda_slice(out, dev.clone()), Shape::from((rows, n))))
        }
    }

    pub fn rows_matmul(
        x: &Tensor,
        w: &Tensor,
        bias: Option<&Tensor>,
    ) -> candle::Result<Option<Tensor>> {
        // A bf16 weight's 16-byte chunks start at multiples of 8 elements.
        let w_aligned = aligned_contiguous(w)
            && (w.dtype() != DType::BF16 || w.layout().start_offset() % 8 == 0);
        if !KERNELS.available() || !aligned_contiguous(x) || !w_aligned || w.rank() != 2 {
            return Ok(None);
        }
        Ok(Some(match bias {
            Some(b) if aligned_contiguous(b) => x.apply_op3_no_bwd(w, b, &Op(RowsMatmul))?,
            Some(_) => return Ok(None),
            None => x.apply_op2_no_bwd(w, &Op(RowsMatmul))?,
        }))
    }

    /// Inputs: x `(…, cols)`, alpha `(cols,)`.
    struct RmsNorm {
        eps: f32,
    }

    impl CudaOp for RmsNorm {
        const NAME: &'static str = "lm-rms-norm";

        fn launch(
            &self,
            inputs: &[(&CudaStorage, &Layout)],
        ) -> candle::Result<(CudaStorage, Shape)> {
            let &[(xs, xl), (als, all)] = inputs else {
                candle::bail!("{}: x and alpha", Self::NAME)
            };
            let (x, alpha) = (view(Self::NAME, xs, xl)?, view(Self::NAME, als, all)?);
            let cols = *xl.shape().dims().last().unwrap_or(&1);
            if alpha.len() != cols {
                candle::bail!(
                    "{}: alpha has {} entries for {cols} columns",
                    Self::NAME,
                    alpha.len()
                );
            }
            let rows = xl.shape().elem_count() / cols.max(1);
            let dev = xs.device();
            let cfg = LaunchConfig {
                grid_dim: (rows as u32, 1, 1),
                block_dim: (256, 1, 1),
                shared_mem_bytes: 0,
            };
            let func = KERNELS.function(dev, "rms_norm_f32")?;
            let out = output(dev, rows * cols)?;
            let cols_i = cols as i32;
            let stream = dev.cuda_stream();
            let mut b = stream.launch_builder(&func);
            b.arg(&x).arg(&alpha).arg(&out).arg(&cols_i).arg(&self.eps);
            // SAFETY: five arguments in the order and types of `rms_norm_f32(const float* x,
            // const float* alpha, float* y, int cols, float eps)`. Block i < rows =
            // elem_count / cols reads and writes row i (cols values) of x and y (`out` holds
            // rows·cols) and reads alpha[0..cols] (alpha's length checked above); 256 threads are
            // the 8 warps its shared `sums` holds.
            unsafe { b.launch(cfg) }.w()?;
            Ok((CudaStorage::wrap_cuda_slice(out, dev.clone()), xl.shape().clone()))
        }
    }

    pub fn rms_norm(x: &Tensor, alpha: &Tensor, eps: f32) -> candle::Result<Option<Tensor>> {
        if !KERNELS.available() || !aligned_contiguous(x) || !aligned_contiguous(alpha) {
            return Ok(None);
        }
        Ok(Some(x.apply_op2_no_bwd(alpha, &Op(RmsNorm { eps }))?))
    }

    /// Inputs: scores `(batch, groups, len)`, the layer cache `(2, batch, capacity, 64)`.
    struct SoftmaxValues;

    impl CudaOp for SoftmaxValues {
        const NAME: &'static str = "lm-softmax-values";

        fn launch(
            &self,
            inputs: &[(&CudaStorage, &Layout)],
        ) -> candle::Result<(CudaStorage, Shape)> {
            let &[(ss, sl), (cs, cl)] = inputs else {
                candle::bail!("{}: scores and cache", Self::NAME)
            };
            let (batch, groups, len) = sl.shape().dims3()?;
            let (_, _, cap, d) = cl.shape().dims4()?;
            let (scores, cache) = (view(Self::NAME, ss, sl)?, view(Self::NAME, cs, cl)?);
            // The values: the second half of the cache.
            let values = cache.slice(batch * cap * d..);
            let dev = ss.device();
            let cfg = LaunchConfig {
                grid_dim: ((batch * groups) as u32, 1, 1),
                block_dim: (1024, 1, 1), // SV_THREADS = PARTS × HEAD_DIM in kernels.cu
                shared_mem_bytes: 0,
            };
            let func = KERNELS.function(dev, "softmax_values_f32")?;
            let out = output(dev, batch * groups * d)?;
            let (groups_i, len_i, cap_i) = (groups as i32, len as i32, cap as i32);
            let stream = dev.cuda_stream();
            let mut b = stream.launch_builder(&func);
            b.arg(&scores).arg(&values).arg(&out).arg(&groups_i).arg(&len_i).arg(&cap_i);
            // SAFETY: six arguments in the order and types of `softmax_values_f32(const float*
            // scores, const float* values, float* out, int groups, int len, int cap)`.
            // `softmax_values` checked the cache (2, batch, cap, 64) with 0 < len ≤ cap, so
            // `values`, its second half, holds batch·cap·64: block row < batch·groups reads
            // scores[row·len..][..len] and values[(row / groups)·cap·64 + p·64 + d] for p < len and
            // d < 64, and writes out[row·64..][..64] (`out` holds batch·groups·64). 1024 threads =
            // SV_THREADS, the size its shared arrays assume.
            unsafe { b.launch(cfg) }.w()?;
            Ok((CudaStorage::wrap_cuda_slice(out, dev.clone()), Shape::from((batch, groups, d))))
        }
    }

    pub fn softmax_values(scores: &Tensor, cache: &Tensor) -> candle::Result<Option<Tensor>> {
        if !KERNELS.available() || !aligned_contiguous(scores) || !aligned_contiguous(cache) {
            return Ok(None);
        }
        Ok(Some(scores.apply_op2_no_bwd(cache, &Op(SoftmaxValues))?))
    }
}
