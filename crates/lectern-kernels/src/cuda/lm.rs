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
//! A step is bound by its kernels' count more than by their work (each costs a few
//! microseconds however little it does), so [`rows_matmul_fused`] folds the projections'
//! neighbours into them ([`Fused`]): the RMSNorm before q|k|v, gate|up and the speech head, the
//! SwiGLU before the down projection, the residual adds after it and the output projection,
//! six kernels fewer per layer, each computed as the separate kernels did (the same bits).
//!
//! Each function returns `None` where it does not apply (not CUDA, not f32, more than
//! [`MAX_ROWS`] rows, unaligned or strided inputs); the caller then runs candle's op, as it
//! does when the LM's kernels are off (`lectern_model::lm::SpeechLm::set_kernels`).

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

/// What [`rows_matmul_fused`] folds into the product: the kernels that would run before or after
/// it in a decode step, computed inside it with the same operations in the same order, so the
/// result has the same bits as the separate kernels' and the step launches fewer of them.
#[derive(Debug, Clone, Copy)]
pub enum Fused<'a> {
    /// `RMSNorm(x)·Wᵀ (+ bias)` as [`rms_norm`] then [`rows_matmul`] compute it:
    /// `alpha_bias` is the norm's `alpha` (k), followed by the bias (n) when `has_bias`.
    Normed { alpha_bias: &'a Tensor, has_bias: bool, eps: f32 },
    /// `residual + (silu(gate)·up)·Wᵀ` for `x` = `[gate | up]` `(rows, 2k)`: the MLP's
    /// SwiGLU (candle's silu, then the product) and the residual add after its down projection.
    SwigluAdded { residual: &'a Tensor },
    /// `residual + x·Wᵀ`: a projection and the residual add after it.
    Added { residual: &'a Tensor },
}

/// [`rows_matmul`] with `fused`'s neighbours inside it (see [`Fused`]); `None` where it does
/// not apply (then the caller runs them apart). `w` `(n, k)` f32 or bf16.
pub fn rows_matmul_fused(x: &Tensor, w: &Tensor, fused: Fused) -> candle::Result<Option<Tensor>> {
    let chunk = match w.dtype() {
        DType::F32 => 4,
        DType::BF16 => 8,
        _ => return Ok(None),
    };
    let (Ok((rows, x_cols)), Ok((n, k))) = (x.dims2(), w.dims2()) else { return Ok(None) };
    let f32_shaped = |t: &Tensor, dims: &[usize]| on_cuda_f32(t) && t.dims() == dims;
    let fits = match fused {
        Fused::Normed { alpha_bias, has_bias, .. } => {
            x_cols == k && f32_shaped(alpha_bias, &[k + if has_bias { n } else { 0 }])
        }
        Fused::SwigluAdded { residual } => x_cols == 2 * k && f32_shaped(residual, &[rows, n]),
        Fused::Added { residual } => x_cols == k && f32_shaped(residual, &[rows, n]),
    };
    if !applies(x) || !fits || !(1..=MAX_ROWS).contains(&rows) || k % chunk != 0 {
        return Ok(None);
    }
    imp::rows_matmul_fused(x, w, fused)
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

    pub fn rows_matmul_fused(
        _x: &Tensor,
        _w: &Tensor,
        _fused: super::Fused,
    ) -> candle::Result<Option<Tensor>> {
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

    /// What a [`RowsMatmul`] launch folds in (the tensor operands are the op's inputs).
    #[derive(Debug, Clone, Copy)]
    enum Folded {
        /// Inputs: x `(rows, k)`, w `(n, k)`, optionally bias `(n,)`.
        Nothing,
        /// Inputs: x `(rows, k)`, w, `[alpha (k) | bias (n) when has_bias]`.
        Norm { has_bias: bool, eps: f32 },
        /// Inputs: gate|up `(rows, 2k)`, w, the residual `(rows, n)`.
        SwigluResidual,
        /// Inputs: x `(rows, k)`, w, the residual `(rows, n)`.
        Residual,
    }

    impl Folded {
        /// The kernel family's name (`rows_matmul[_norm|_swiglu|_residual]_T_R` in lm.cu).
        fn family(self) -> &'static str {
            match self {
                Self::Nothing => "rows_matmul",
                Self::Norm { .. } => "rows_matmul_norm",
                Self::SwigluResidual => "rows_matmul_swiglu",
                Self::Residual => "rows_matmul_residual",
            }
        }
    }

    struct RowsMatmul {
        folded: Folded,
    }

    impl CudaOp for RowsMatmul {
        const NAME: &'static str = "lm-rows-matmul";

        fn launch(
            &self,
            inputs: &[(&CudaStorage, &Layout)],
        ) -> candle::Result<(CudaStorage, Shape)> {
            let (&(xs, xl), &(ws, wl), third) = match inputs {
                [x, w] => (x, w, None),
                [x, w, t] => (x, w, Some(t)),
                _ => candle::bail!("{}: x, w and an optional third operand", Self::NAME),
            };
            let (rows, x_cols) = xl.shape().dims2()?;
            let (n, k) = wl.shape().dims2()?;
            let (want_cols, third_len) = match self.folded {
                Folded::Nothing => (k, third.map(|_| n)),
                Folded::Norm { has_bias, .. } => (k, Some(k + if has_bias { n } else { 0 })),
                Folded::SwigluResidual => (2 * k, Some(rows * n)),
                Folded::Residual => (k, Some(rows * n)),
            };
            if x_cols != want_cols {
                candle::bail!("{}: x has {x_cols} columns for a weight of {k}", Self::NAME);
            }
            let x = view(Self::NAME, xs, xl)?;
            let w = WeightView::of(Self::NAME, ws, wl)?;
            let third = third.map(|&(s, l)| view(Self::NAME, s, l)).transpose()?;
            if third.as_ref().map(|t| t.len()) != third_len {
                candle::bail!("{}: the third operand must hold {third_len:?} values", Self::NAME);
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
            let name = format!("{}_{}_{rows}", self.folded.family(), w.name());
            let func = KERNELS.function(dev, &name)?;
            let out = output(dev, rows * n)?;
            let (n_i, k_i, ks_i, null) = (n as i32, k as i32, ksplit as i32, 0u64);
            let stream = dev.cuda_stream();
            let mut b = stream.launch_builder(&func);
            b.arg(&x);
            match &w {
                WeightView::F32(v) => b.arg(v),
                WeightView::Bf16(v) => b.arg(v),
            };
            match &third {
                Some(v) => b.arg(v),
                None => b.arg(&null),
            };
            // The norm family's two extra arguments: has_bias after the third operand, eps last.
            let norm = match self.folded {
                Folded::Norm { has_bias, eps } => Some((i32::from(has_bias), eps)),
                _ => None,
            };
            if let Some((has_bias, _)) = &norm {
                b.arg(has_bias);
            }
            b.arg(&out).arg(&n_i).arg(&k_i).arg(&ks_i);
            if let Some((_, eps)) = &norm {
                b.arg(eps);
            }
            // SAFETY: the arguments in the order and types of lm.cu's family (`Folded::family`)
            // for weight type T (float for an f32 view, unsigned short for a bf16 one: the kernel
            // named after the view) and R = rows (1..=MAX_ROWS, checked by the public functions;
            // another name fails to load):
            //   rows_matmul_T_R(const float* x, const T* w, const float* bias, float* y, int n,
            //     int k, int ksplit), the bias a null pointer (`0u64`) when absent;
            //   rows_matmul_norm_T_R(const float* x, const T* w, const float* alpha_bias,
            //     int has_bias, float* y, int n, int k, int ksplit, float eps);
            //   rows_matmul_swiglu_T_R / rows_matmul_residual_T_R(const float* x, const T* w,
            //     const float* residual, float* y, int n, int k, int ksplit).
            // The instance reads 16-byte chunks of w rows c < n up to column k and of the x rows
            // r < rows up to their width (k, or 2k for gate|up: checked above), all views
            // contiguous and 16-byte aligned (`view`, `WeightView::of`), k a whole number of
            // chunks (4 f32 or 8 bf16: the public functions); the third operand holds what its
            // family reads (checked above: the bias at c < n; alpha at [0, k) and the bias at
            // k + c; the residual at r·n + c); it writes y[r·n + c] for r < rows, c < n: `out`
            // holds rows·n. 256 threads are the WARPS = 8 warps its shared arrays are sized
            // for (and rms_norm_f32's reduction, which the norm family repeats), and ksplit
            // (1, 2, 4 or 8) divides WARPS.
            unsafe { b.launch(cfg) }.w()?;
            Ok((CudaStorage::wrap_cuda_slice(out, dev.clone()), Shape::from((rows, n))))
        }
    }

    /// The checks every rows kernel needs of its weight and input: 16-byte chunks.
    fn rows_operands_fit(x: &Tensor, w: &Tensor) -> bool {
        // A bf16 weight's 16-byte chunks start at multiples of 8 elements.
        let w_aligned = aligned_contiguous(w)
            && (w.dtype() != DType::BF16 || w.layout().start_offset() % 8 == 0);
        KERNELS.available() && aligned_contiguous(x) && w_aligned && w.rank() == 2
    }

    pub fn rows_matmul(
        x: &Tensor,
        w: &Tensor,
        bias: Option<&Tensor>,
    ) -> candle::Result<Option<Tensor>> {
        if !rows_operands_fit(x, w) {
            return Ok(None);
        }
        let op = Op(RowsMatmul { folded: Folded::Nothing });
        Ok(Some(match bias {
            Some(b) if aligned_contiguous(b) => x.apply_op3_no_bwd(w, b, &op)?,
            Some(_) => return Ok(None),
            None => x.apply_op2_no_bwd(w, &op)?,
        }))
    }

    pub fn rows_matmul_fused(
        x: &Tensor,
        w: &Tensor,
        fused: super::Fused,
    ) -> candle::Result<Option<Tensor>> {
        use super::Fused;
        let (third, folded) = match fused {
            Fused::Normed { alpha_bias, has_bias, eps } => {
                (alpha_bias, Folded::Norm { has_bias, eps })
            }
            Fused::SwigluAdded { residual } => (residual, Folded::SwigluResidual),
            Fused::Added { residual } => (residual, Folded::Residual),
        };
        if !rows_operands_fit(x, w) || !aligned_contiguous(third) {
            return Ok(None);
        }
        Ok(Some(x.apply_op3_no_bwd(w, third, &Op(RowsMatmul { folded }))?))
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
