//! The DiT's own CUDA kernels (`kernels.cu`, compiled at run time: `nvrtc`),
//! each where timing a block (`bench --stage flow`, Nsight Compute) showed candle's ops
//! spending the time:
//!
//! * [`modulate`]: LayerNorm and AdaLN modulation in one pass per row, where candle runs nine;
//! * [`gated_residual`]: `x + (y + bias)·gate`, with the bias of the projection that made `y`,
//!   and [`bias_gelu`], [`qkv_bias_rope`]: the projections compute `x·Wᵀ` only and their biases
//!   ride in the next kernel (candle's broadcast adds are a pass each);
//! * [`attention`]: softmax attention flash style (tiles of keys, online softmax, the output
//!   rows in registers); the materialised path writes and re-reads `2 × 16 × t²` scores
//!   (322 MB at 1588 frames); [`attention_tf32x3`] and [`attention_bf16`] the same on tensor
//!   cores (`attention_tc.cu`);
//! * [`GroupConvWeights`]: the position embedding's causal grouped conv in one kernel;
//! * [`tf32x3_lhs`]: the left operand of a 3xTF32 product in one pass.
//!
//! Plain f32, sums in a fixed order. Each function returns `None` where it does not apply (not
//! CUDA, not f32, other layouts); the caller then runs
//! candle's ops. On the CPU, [`modulate`], [`gated_residual`], [`bias_gelu`] and
//! [`qkv_bias_rope`] run [`crate::elementwise`] instead. Callers skip both when the DiT's kernels
//! are off (`lectern_model::flow::dit::DiT::set_kernels`).

// CUDA kernel launches (each with a SAFETY note on its arguments).
#![allow(unsafe_code)]

use candle::{D, Tensor};

use crate::checks::{is_f32_vector, on_cuda_f32};
use crate::elementwise;

/// `LN(xs)·(1 + scale) + shift` for `xs` `(b, t, dim)` contiguous, `scale` and `shift`
/// `(b, dim)` with unit stride along `dim` (views into the modulation vector are fine).
pub fn modulate(
    xs: &Tensor,
    scale: &Tensor,
    shift: &Tensor,
    eps: f32,
) -> candle::Result<Option<Tensor>> {
    if !per_batch_rows(xs, scale) || !per_batch_rows(xs, shift) {
        return Ok(None);
    }
    if elementwise::applies(xs) {
        return elementwise::modulate(xs, scale, shift, eps).map(Some);
    }
    if !applies(xs) {
        return Ok(None);
    }
    imp::modulate(xs, scale, shift, eps)
}

/// `x + (y + bias)·gate` for `x`, `y` `(b, t, dim)` contiguous, `bias` `(dim,)` and `gate`
/// `(b, dim)`: the bias of the projection that made `y` rides along, so that projection can
/// leave it out (candle's broadcast add is a pass of its own).
pub fn gated_residual(
    x: &Tensor,
    y: &Tensor,
    bias: &Tensor,
    gate: &Tensor,
) -> candle::Result<Option<Tensor>> {
    if x.dims() != y.dims()
        || !y.is_contiguous()
        || !is_f32_vector(bias, x.dim(D::Minus1)?)
        || !per_batch_rows(x, gate)
    {
        return Ok(None);
    }
    if elementwise::applies(x) {
        return elementwise::gated_residual(x, y, bias, gate).map(Some);
    }
    if !applies(x) {
        return Ok(None);
    }
    imp::gated_residual(x, y, bias, gate)
}

/// `GELU_tanh(x + bias)` for `x` `(…, dim)` contiguous and `bias` `(dim,)`.
pub fn bias_gelu(x: &Tensor, bias: &Tensor) -> candle::Result<Option<Tensor>> {
    if !is_f32_vector(bias, x.dim(D::Minus1)?) {
        return Ok(None);
    }
    if elementwise::applies(x) {
        return elementwise::bias_gelu(x, bias).map(Some);
    }
    if !applies(x) {
        return Ok(None);
    }
    imp::bias_gelu(x, bias)
}

/// The attention's q|k|v projection `(b, t, 3·h·dh)` contiguous, without its bias → q, k, v
/// `(b, h, t, dh)` each: the bias added and head 0 of q and k rotated (`cos_sin` `(2, t,
/// dh / 2)`: the rotary tables), as `Attention::qkv` computes it with candle's ops.
pub fn qkv_bias_rope(
    qkv: &Tensor,
    bias: &Tensor,
    cos_sin: &Tensor,
    heads: usize,
) -> candle::Result<Option<(Tensor, Tensor, Tensor)>> {
    let (Ok((b, t, width)), Ok((two, rt, half))) = (qkv.dims3(), cos_sin.dims3()) else {
        return Ok(None);
    };
    let dh = width / (3 * heads).max(1);
    let fits = width == 3 * heads * dh && dh % 2 == 0 && two == 2 && rt == t && half == dh / 2;
    if !fits || !is_f32_vector(bias, width) || !cos_sin.is_contiguous() {
        return Ok(None);
    }
    if elementwise::applies(qkv) {
        return elementwise::qkv_bias_rope(qkv, bias, cos_sin, heads).map(Some);
    }
    if !applies(qkv) {
        return Ok(None);
    }
    let Some(joined) = imp::qkv_bias_rope(qkv, bias, cos_sin, heads)? else { return Ok(None) };
    let joined = joined.reshape((3, b, heads, t, dh))?;
    Ok(Some((joined.get(0)?, joined.get(1)?, joined.get(2)?)))
}

/// `[hi | hi | lo]` of `x` `(…, k)` contiguous over its last dimension: the left operand of a
/// 3xTF32 product (`lectern_model::flow::tf32x3::lhs`), `x = hi + lo` exactly.
pub fn tf32x3_lhs(x: &Tensor) -> candle::Result<Option<Tensor>> {
    if !applies(x) || x.rank() == 0 {
        return Ok(None);
    }
    imp::tf32x3_lhs(x)
}

/// Head widths [`attention`] is compiled for (`flash_attention_f32_d*` in kernels.cu): the
/// real model's 64 and the fixtures' 16.
pub const ATTENTION_HEAD_DIMS: [usize; 3] = [16, 32, 64];

/// Softmax attention over all frames: q (pre-scaled), k, v `(b, h, t, dh)` contiguous →
/// `(b, t, h·dh)`, as `lectern_model::flow::dit::attend_materialised` computes it (the sums in another
/// order: within the f32 gates, checked by `lectern parity` and `bench --stage flow`).
/// CUDA cores, f32 multiply-adds.
pub fn attention(q: &Tensor, k: &Tensor, v: &Tensor) -> candle::Result<Option<Tensor>> {
    if !attention_applies(q, k, v) {
        return Ok(None);
    }
    imp::attention(q, k, v, Cores::Simt)
}

/// [`attention`] with both products on tensor cores in 3xTF32 (f32-accurate, as the flow's
/// 3xTF32 projections are), on GPUs of compute capability 8.0 and later; `None` elsewhere and
/// when [`TENSOR_CORE_ATTENTION_ENV`] is `0`.
pub fn attention_tf32x3(q: &Tensor, k: &Tensor, v: &Tensor) -> candle::Result<Option<Tensor>> {
    if !tensor_core_attention() || !attention_applies(q, k, v) {
        return Ok(None);
    }
    imp::attention(q, k, v, Cores::TensorTf32x3)
}

/// [`attention`] on tensor cores in bf16: q, k, v and the probabilities rounded to bf16, the
/// sums in f32 (the flow's `--flow-matmul bf16`, a recorded reduced precision), on GPUs of
/// compute capability 8.0 and later; `None` elsewhere.
pub fn attention_bf16(q: &Tensor, k: &Tensor, v: &Tensor) -> candle::Result<Option<Tensor>> {
    if !attention_applies(q, k, v) {
        return Ok(None);
    }
    imp::attention(q, k, v, Cores::TensorBf16)
}

/// `LECTERN_TC_ATTENTION=0` keeps the 3xTF32 flow's attention on the f32 kernel, for a
/// same-binary comparison; the take records it (`FlowMatmul::label`: `tf32x3+f32-attention`).
pub const TENSOR_CORE_ATTENTION_ENV: &str = "LECTERN_TC_ATTENTION";

/// Whether [`attention_tf32x3`] may run (read once per process).
pub fn tensor_core_attention() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var(TENSOR_CORE_ATTENTION_ENV).map_or(true, |v| v != "0"))
}

fn attention_applies(q: &Tensor, k: &Tensor, v: &Tensor) -> bool {
    let Ok((_, _, _, dh)) = q.dims4() else { return false };
    let same = |x: &Tensor| x.dims() == q.dims() && x.dtype() == q.dtype();
    applies(q)
        && ATTENTION_HEAD_DIMS.contains(&dh)
        && [k, v].iter().all(|x| same(x) && x.is_contiguous())
}

/// Which units an attention kernel computes its products on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cores {
    /// `flash_attention_f32_d*` (flow.cu): f32 fused multiply-adds.
    Simt,
    /// `flash_attention_tc_f32_d*` (attention_tc.cu): `mma.sync` m16n8k8 TF32, three per product.
    TensorTf32x3,
    /// `flash_attention_tc_bf16_d*` (attention_tc.cu): `mma.sync` m16n8k16 bf16, one per product.
    TensorBf16,
}

/// Output channels and frames per block of `causal_group_conv_mish_f32`.
const CONV_TILE: usize = 64;
/// Taps the conv kernel is compiled for (`CV_K`).
const CONV_TAPS: usize = 31;

/// One causal grouped conv of the position embedding, laid out for
/// `causal_group_conv_mish_f32`: the weight tap-major `(cg, k, dim)` (torch's is
/// `(dim, cg, k)`, `cg = dim / groups`) with the bias appended as one more row, because a
/// candle op takes at most three tensors (x, these, the residual).
#[derive(Debug, Clone)]
pub struct GroupConvWeights {
    joined: Tensor, // (cg·k + 1, dim)
    cg: usize,
}

impl GroupConvWeights {
    /// `None` where the kernel does not apply (not CUDA, not f32, or a shape it does not
    /// tile); the conv then runs on candle's ops.
    pub fn new(weight: &Tensor, bias: &Tensor) -> candle::Result<Option<Self>> {
        let (dim, cg, k) = weight.dims3()?;
        let fits = dim % CONV_TILE == 0 && cg > 0 && CONV_TILE % cg == 0 && k == CONV_TAPS;
        if !cfg!(feature = "cuda")
            || !weight.device().is_cuda()
            || weight.dtype() != candle::DType::F32
            || !fits
        {
            return Ok(None);
        }
        let tap_major = weight.permute((1, 2, 0))?.reshape((cg * k, dim))?;
        let joined = Tensor::cat(&[tap_major, bias.reshape((1, dim))?], 0)?.contiguous()?;
        Ok(Some(Self { joined, cg }))
    }

    /// `Mish(conv(xs) + bias) (+ residual)`, channel-last: `xs` `(b, t, dim)` contiguous,
    /// `residual` the same shape. candle's path pads, transposes to channel-first and runs an
    /// im2col and a GEMM per group.
    pub fn forward(
        &self,
        xs: &Tensor,
        residual: Option<&Tensor>,
    ) -> candle::Result<Option<Tensor>> {
        let Ok((_, _, dim)) = xs.dims3() else { return Ok(None) };
        if !applies(xs)
            || dim != self.joined.dim(1)?
            || residual.is_some_and(|r| r.dims() != xs.dims() || !r.is_contiguous())
        {
            return Ok(None);
        }
        imp::causal_group_conv_mish(xs, &self.joined, self.cg, residual)
    }
}

fn applies(x: &Tensor) -> bool {
    on_cuda_f32(x) && x.is_contiguous()
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
        _bias: &Tensor,
        _gate: &Tensor,
    ) -> candle::Result<Option<Tensor>> {
        Ok(None)
    }

    pub fn bias_gelu(_x: &Tensor, _bias: &Tensor) -> candle::Result<Option<Tensor>> {
        Ok(None)
    }

    pub fn tf32x3_lhs(_x: &Tensor) -> candle::Result<Option<Tensor>> {
        Ok(None)
    }

    pub fn qkv_bias_rope(
        _qkv: &Tensor,
        _bias: &Tensor,
        _cos_sin: &Tensor,
        _heads: usize,
    ) -> candle::Result<Option<Tensor>> {
        Ok(None)
    }

    pub fn attention(
        _q: &Tensor,
        _k: &Tensor,
        _v: &Tensor,
        _cores: super::Cores,
    ) -> candle::Result<Option<Tensor>> {
        Ok(None)
    }

    pub fn causal_group_conv_mish(
        _xs: &Tensor,
        _joined: &Tensor,
        _cg: usize,
        _residual: Option<&Tensor>,
    ) -> candle::Result<Option<Tensor>> {
        Ok(None)
    }
}

#[cfg(feature = "cuda")]
pub(crate) use imp::{KERNELS, TENSOR_CORE_KERNELS};

#[cfg(feature = "cuda")]
mod imp {
    use candle::backend::BackendStorage;
    use candle::cuda_backend::cudarc::driver::{CudaView, LaunchConfig, PushKernelArg};
    use candle::cuda_backend::{CudaStorage, WrapErr};
    use candle::{Layout, Shape, Tensor};

    use super::Cores;
    use crate::cuda::nvrtc::{
        CudaOp, Module, Op, aligned_contiguous, compute_capability, elementwise_grid, output, view,
        with_dynamic_shared,
    };

    pub static KERNELS: Module = Module::new("lectern_flow_kernels", include_str!("flow.cu"));
    /// The tensor-core attention: `mma.sync` with TF32 operands needs compute_80.
    pub static TENSOR_CORE_KERNELS: Module =
        Module::for_arch("lectern_flow_tc_kernels", include_str!("attention_tc.cu"), "compute_80");
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
            // SAFETY: nine arguments in the order and types of `modulate_f32(const float* x,
            // const float* scale, int scale_stride, const float* shift, int shift_stride, float* y,
            // int t, int dim, float eps)`. Block row < b·t reads and writes row `row` (dim values)
            // of x (contiguous: `modulate`) and y (`out` holds b·t·dim), and reads dim values of
            // scale and shift at (row / t)·stride: inside `rows_view`'s slices, which end at
            // (b − 1)·stride + dim (`modulate` checked both (b, dim) with unit inner stride).
            // THREADS = 256 threads, the block size its `red` and `block_sum` assume.
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

    /// Inputs: x and y `(b, t, dim)`, gate `(b, dim)`; the bias `(dim,)` is held by the op
    /// (candle's custom ops take at most three tensors).
    struct GatedResidual {
        bias: Tensor,
    }

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
            let (bias_storage, bias_layout) = self.bias.storage_and_layout();
            let candle::Storage::Cuda(bias_storage) = &*bias_storage else {
                candle::bail!("{}: the bias is not on CUDA", Self::NAME)
            };
            let bias = view(Self::NAME, bias_storage, bias_layout)?;
            let dev = xs.device();
            let func = KERNELS.function(dev, "gated_residual_f32")?;
            let n = b * t * dim;
            let out = output(dev, n)?;
            let (t_i, dim_i, n_i) = (t as i32, dim as i32, n as i64);
            let stream = dev.cuda_stream();
            let mut builder = stream.launch_builder(&func);
            builder.arg(&x).arg(&y).arg(&bias).arg(&gate).arg(&gate_stride);
            builder.arg(&out).arg(&t_i).arg(&dim_i).arg(&n_i);
            // SAFETY: nine arguments in the order and types of `gated_residual_f32(const float* x,
            // const float* y, const float* bias, const float* gate, int gate_stride, float* out,
            // int t, int dim, long long n)`. Its grid-stride loop touches i < n = b·t·dim of x and
            // y (one shape, contiguous: checked by `gated_residual`) and of `out` (n long),
            // bias[i % dim] (a dim-vector, checked there) and gate[(i / dim / t)·stride + i % dim],
            // inside `rows_view`'s slice.
            unsafe { builder.launch(elementwise_grid(n)) }.w()?;
            Ok((CudaStorage::wrap_cuda_slice(out, dev.clone()), xl.shape().clone()))
        }
    }

    pub fn gated_residual(
        x: &Tensor,
        y: &Tensor,
        bias: &Tensor,
        gate: &Tensor,
    ) -> candle::Result<Option<Tensor>> {
        if !KERNELS.available() || !aligned_contiguous(bias) {
            return Ok(None);
        }
        Ok(Some(x.apply_op3_no_bwd(y, gate, &Op(GatedResidual { bias: bias.clone() }))?))
    }

    /// Inputs: x `(…, dim)`, bias `(dim,)`.
    struct BiasGelu;

    impl CudaOp for BiasGelu {
        const NAME: &'static str = "dit-bias-gelu";

        fn launch(
            &self,
            inputs: &[(&CudaStorage, &Layout)],
        ) -> candle::Result<(CudaStorage, Shape)> {
            let &[(xs, xl), (bs, bl)] = inputs else { candle::bail!("{}: x and bias", Self::NAME) };
            let (x, bias) = (view(Self::NAME, xs, xl)?, view(Self::NAME, bs, bl)?);
            let dev = xs.device();
            let func = KERNELS.function(dev, "bias_gelu_f32")?;
            let n = xl.shape().elem_count();
            let dim = bl.shape().elem_count();
            let out = output(dev, n)?;
            let (dim_i, n_i) = (dim as i32, n as i64);
            let stream = dev.cuda_stream();
            let mut builder = stream.launch_builder(&func);
            builder.arg(&x).arg(&bias).arg(&out).arg(&dim_i).arg(&n_i);
            // SAFETY: five arguments in the order and types of `bias_gelu_f32(const float* x,
            // const float* bias, float* y, int dim, long long n)`. Its grid-stride loop touches
            // i < n of x and of `out` (n long) and bias[i % dim], dim being bias's length, which
            // `bias_gelu` checked is x's last dimension.
            unsafe { builder.launch(elementwise_grid(n)) }.w()?;
            Ok((CudaStorage::wrap_cuda_slice(out, dev.clone()), xl.shape().clone()))
        }
    }

    pub fn bias_gelu(x: &Tensor, bias: &Tensor) -> candle::Result<Option<Tensor>> {
        if !KERNELS.available() || !aligned_contiguous(bias) {
            return Ok(None);
        }
        Ok(Some(x.apply_op2_no_bwd(bias, &Op(BiasGelu))?))
    }

    /// Input: x `(…, k)`; output `(…, 3k)`.
    struct Tf32x3Lhs;

    impl CudaOp for Tf32x3Lhs {
        const NAME: &'static str = "dit-tf32x3-lhs";

        fn launch(
            &self,
            inputs: &[(&CudaStorage, &Layout)],
        ) -> candle::Result<(CudaStorage, Shape)> {
            let &[(xs, xl)] = inputs else { candle::bail!("{}: x", Self::NAME) };
            let x = view(Self::NAME, xs, xl)?;
            let dims = xl.shape().dims();
            let k = dims[dims.len() - 1];
            let n = xl.shape().elem_count();
            let dev = xs.device();
            let func = KERNELS.function(dev, "tf32x3_lhs_f32")?;
            let out = output(dev, 3 * n)?;
            let (k_i, n_i) = (k as i32, n as i64);
            let stream = dev.cuda_stream();
            let mut builder = stream.launch_builder(&func);
            builder.arg(&x).arg(&out).arg(&k_i).arg(&n_i);
            // SAFETY: four arguments in the order and types of `tf32x3_lhs_f32(const float* x,
            // float* out, int k, long long n)`. Its grid-stride loop reads x[i], i < n, and writes
            // out[(i / k)·3k + i % k + {0, k, 2k}] < 3n: k is x's last dimension, so it divides n,
            // and `out` holds 3n.
            unsafe { builder.launch(elementwise_grid(n)) }.w()?;
            let mut out_dims = dims.to_vec();
            out_dims[dims.len() - 1] = 3 * k;
            Ok((CudaStorage::wrap_cuda_slice(out, dev.clone()), Shape::from(out_dims)))
        }
    }

    pub fn tf32x3_lhs(x: &Tensor) -> candle::Result<Option<Tensor>> {
        if !KERNELS.available() || !aligned_contiguous(x) {
            return Ok(None);
        }
        Ok(Some(x.apply_op1_no_bwd(&Op(Tf32x3Lhs))?))
    }

    /// Inputs: the q|k|v projection `(b, t, 3·h·dh)`, its bias, the rotary tables `(2, t,
    /// dh / 2)`; output `(3, b, h, t, dh)` flattened.
    struct QkvBiasRope {
        heads: usize,
    }

    impl CudaOp for QkvBiasRope {
        const NAME: &'static str = "dit-qkv-bias-rope";

        fn launch(
            &self,
            inputs: &[(&CudaStorage, &Layout)],
        ) -> candle::Result<(CudaStorage, Shape)> {
            let &[(qs, ql), (bs, bl), (rs, rl)] = inputs else {
                candle::bail!("{}: qkv, bias and rotary tables", Self::NAME)
            };
            let (b, t, width) = ql.shape().dims3()?;
            let (_, _, half) = rl.shape().dims3()?;
            let dh = 2 * half;
            let (qkv, bias) = (view(Self::NAME, qs, ql)?, view(Self::NAME, bs, bl)?);
            let tables = view(Self::NAME, rs, rl)?;
            let (cos, sin) = (tables.slice(..t * half), tables.slice(t * half..));
            let dev = qs.device();
            let func = KERNELS.function(dev, "qkv_bias_rope_f32")?;
            let n = b * t * width;
            let out = output(dev, n)?;
            let (b_i, t_i, h_i, dh_i) = (b as i32, t as i32, self.heads as i32, dh as i32);
            let stream = dev.cuda_stream();
            let mut builder = stream.launch_builder(&func);
            builder.arg(&qkv).arg(&bias).arg(&cos).arg(&sin).arg(&out);
            builder.arg(&b_i).arg(&t_i).arg(&h_i).arg(&dh_i);
            // SAFETY: nine arguments in the order and types of `qkv_bias_rope_f32(const float* qkv,
            // const float* bias, const float* cos_t, const float* sin_t, float* out, int b, int t,
            // int h, int dh)`. `qkv_bias_rope` checked width = 3·h·dh with dh even, the bias
            // `width` long and the tables (2, t, dh / 2) contiguous: each of the n / 2 pairs (the
            // grid's items) reads a float2 of qkv at an even offset (8-byte aligned: `view` starts
            // 16-byte aligned), bias[col..col + 2] and cos/sin at tt·dh/2 + d/2 < t·dh/2, and
            // writes a float2 of `out` (n long) at an even (3, b, h, t, dh) index.
            unsafe { builder.launch(elementwise_grid(n / 2)) }.w()?;
            Ok((CudaStorage::wrap_cuda_slice(out, dev.clone()), Shape::from(n)))
        }
    }

    pub fn qkv_bias_rope(
        qkv: &Tensor,
        bias: &Tensor,
        cos_sin: &Tensor,
        heads: usize,
    ) -> candle::Result<Option<Tensor>> {
        if !KERNELS.available() || !aligned_contiguous(qkv) || !aligned_contiguous(bias) {
            return Ok(None);
        }
        Ok(Some(qkv.apply_op3_no_bwd(bias, cos_sin, &Op(QkvBiasRope { heads }))?))
    }

    /// Inputs: q, k, v `(b, h, t, dh)`; output `(b, t, h·dh)`.
    struct Attention {
        cores: Cores,
    }

    /// Query rows and keys per tile, threads per block (`FA_BR`, `FA_BC`, `FA_THREADS` in
    /// flow.cu; `TC_BR`, `TC_BC`, `TC_THREADS` in attention_tc.cu).
    const FA_ROWS: usize = 64;
    const FA_THREADS: u32 = 128;

    impl Attention {
        /// The kernel's module and name, and the bytes of shared memory it lays out.
        fn kernel(&self, dh: usize) -> (&'static Module, String, usize) {
            match self.cores {
                // q and k tiles transposed, the v tile, the probabilities (rows padded by 4).
                Cores::Simt => (
                    &KERNELS,
                    format!("flash_attention_f32_d{dh}"),
                    4 * (3 * dh * FA_ROWS + FA_ROWS * (FA_ROWS + 4)),
                ),
                // The k tile (rows padded by 4), the v tile (by 8), each of the 4 warps' 16
                // rows of probabilities (by 4).
                Cores::TensorTf32x3 => (
                    &TENSOR_CORE_KERNELS,
                    format!("flash_attention_tc_f32_d{dh}"),
                    4 * (FA_ROWS * (dh + 4) + FA_ROWS * (dh + 8) + 4 * 16 * (FA_ROWS + 4)),
                ),
                // bf16: the k tile (rows padded by 8) and the v tile transposed (by 8).
                Cores::TensorBf16 => (
                    &TENSOR_CORE_KERNELS,
                    format!("flash_attention_tc_bf16_d{dh}"),
                    2 * (FA_ROWS * (dh + 8) + dh * (FA_ROWS + 8)),
                ),
            }
        }
    }

    impl CudaOp for Attention {
        const NAME: &'static str = "dit-attention";

        fn launch(
            &self,
            inputs: &[(&CudaStorage, &Layout)],
        ) -> candle::Result<(CudaStorage, Shape)> {
            let &[(qs, ql), (ks, kl), (vs, vl)] = inputs else {
                candle::bail!("{}: q, k and v", Self::NAME)
            };
            let (b, h, t, dh) = ql.shape().dims4()?;
            let (q, k, v) =
                (view(Self::NAME, qs, ql)?, view(Self::NAME, ks, kl)?, view(Self::NAME, vs, vl)?);
            let dev = qs.device();
            let (module, name, shared) = self.kernel(dh);
            let func = module.function(dev, &name)?;
            let grid = (t.div_ceil(FA_ROWS) as u32, h as u32, b as u32);
            let cfg = with_dynamic_shared(&func, grid, (FA_THREADS, 1, 1), shared)?;
            let out = output(dev, b * t * h * dh)?;
            let (t_i, h_i) = (t as i32, h as i32);
            let stream = dev.cuda_stream();
            let mut builder = stream.launch_builder(&func);
            builder.arg(&q).arg(&k).arg(&v).arg(&out).arg(&t_i).arg(&h_i);
            // SAFETY: six arguments in the order and types of both kernels' `(const float* q,
            // const float* k, const float* v, float* out, int t, int heads)`; dh is one of
            // ATTENTION_HEAD_DIMS (checked by `attention_applies`; another name fails to load).
            // q, k and v are (b, h, t, dh), contiguous and 16-byte aligned (`attention`,
            // `view`): the block of head (bi, hi) reads that head's rows < t only (float4s of k
            // and v, floats of q) and writes rows < t of its dh columns of `out` (b·t·h·dh).
            // 128 threads = FA_THREADS = TC_THREADS, the launch bound of both; `shared` is the
            // memory the chosen kernel lays out (`Attention::kernel`), allowed by
            // `with_dynamic_shared`. The tensor-core kernels run only on compute capability
            // 8.0 or later (`attention`), which their `mma.sync` TF32 and bf16 need.
            unsafe { builder.launch(cfg) }.w()?;
            Ok((CudaStorage::wrap_cuda_slice(out, dev.clone()), Shape::from((b, t, h * dh))))
        }
    }

    pub fn attention(
        q: &Tensor,
        k: &Tensor,
        v: &Tensor,
        cores: Cores,
    ) -> candle::Result<Option<Tensor>> {
        let module = match cores {
            Cores::Simt => &KERNELS,
            Cores::TensorTf32x3 | Cores::TensorBf16 => {
                let candle::Device::Cuda(dev) = q.device() else { return Ok(None) };
                if compute_capability(dev)?.0 < 8 {
                    return Ok(None);
                }
                &TENSOR_CORE_KERNELS
            }
        };
        if !module.available()
            || !aligned_contiguous(q)
            || !aligned_contiguous(k)
            || !aligned_contiguous(v)
        {
            return Ok(None);
        }
        Ok(Some(q.apply_op3_no_bwd(k, v, &Op(Attention { cores }))?))
    }

    /// Inputs: x `(b, t, dim)`, the joined tap-major weight and bias `(cg·k + 1, dim)`, and
    /// the residual `(b, t, dim)` (without one, x again, not read).
    struct CausalGroupConvMish {
        cg: usize,
        has_residual: bool,
    }

    /// Frames per block, input channels per weight load, threads (`CV_T`, `CV_CI`,
    /// `CV_THREADS` in kernels.cu).
    const CV_T: usize = 64;
    const CV_CI: usize = 4;
    const CV_THREADS: u32 = 128;

    impl CudaOp for CausalGroupConvMish {
        const NAME: &'static str = "dit-causal-group-conv";

        fn launch(
            &self,
            inputs: &[(&CudaStorage, &Layout)],
        ) -> candle::Result<(CudaStorage, Shape)> {
            let &[(xs, xl), (ws, wl), (rs, rl)] = inputs else {
                candle::bail!("{}: x, weight⧺bias and residual", Self::NAME)
            };
            let (b, t, dim) = xl.shape().dims3()?;
            let (rows, _) = wl.shape().dims2()?;
            let (k, tile) = (super::CONV_TAPS, super::CONV_TILE);
            if rows != self.cg * k + 1 {
                candle::bail!(
                    "{}: {rows} weight rows for {} channels per group",
                    Self::NAME,
                    self.cg
                )
            }
            let joined = view(Self::NAME, ws, wl)?;
            let (weight, bias) =
                (joined.slice(..rows * dim - dim), joined.slice(rows * dim - dim..));
            let (x, residual) = (view(Self::NAME, xs, xl)?, view(Self::NAME, rs, rl)?);
            let dev = xs.device();
            let func = KERNELS.function(dev, "causal_group_conv_mish_f32")?;
            // The input window (64 channels × 64 + 30 frames) and CV_CI channels' weights.
            let shared = 4 * (tile * (CV_T + k - 1) + CV_CI * k * tile);
            let grid = (t.div_ceil(CV_T) as u32, (dim / tile) as u32, b as u32);
            let cfg = with_dynamic_shared(&func, grid, (CV_THREADS, 1, 1), shared)?;
            let out = output(dev, b * t * dim)?;
            let (t_i, dim_i, cg_i) = (t as i32, dim as i32, self.cg as i32);
            let has_residual = i32::from(self.has_residual);
            let stream = dev.cuda_stream();
            let mut builder = stream.launch_builder(&func);
            builder.arg(&x).arg(&weight).arg(&bias).arg(&residual).arg(&out);
            builder.arg(&t_i).arg(&dim_i).arg(&cg_i).arg(&has_residual);
            // SAFETY: nine arguments in the order and types of `causal_group_conv_mish_f32(const
            // float* x, const float* w, const float* bias, const float* residual, float* y, int t,
            // int dim, int cg, int has_residual)`. `GroupConvWeights` checked dim % 64 == 0,
            // 64 % cg == 0, k = 31 = CV_K and x (b, t, dim) contiguous, and rows = cg·31 + 1 is
            // checked above: block (bx, by, bz) reads frames < t of channels 64·by..64·by + 64
            // ≤ dim of x, weight rows below cg·31 (its steps of min(cg, 4) channels divide cg;
            // `weight` holds cg·31·dim), bias[c] for c < dim, and the residual (checked (b, t,
            // dim), contiguous) only when has_residual; it writes frames < t of `out` (b·t·dim).
            // 128 threads = CV_THREADS; `shared` is the 64·94 + 4·31·64 floats it lays out,
            // allowed by `with_dynamic_shared`.
            unsafe { builder.launch(cfg) }.w()?;
            Ok((CudaStorage::wrap_cuda_slice(out, dev.clone()), xl.shape().clone()))
        }
    }

    pub fn causal_group_conv_mish(
        xs: &Tensor,
        joined: &Tensor,
        cg: usize,
        residual: Option<&Tensor>,
    ) -> candle::Result<Option<Tensor>> {
        if !KERNELS.available() {
            return Ok(None);
        }
        let op = Op(CausalGroupConvMish { cg, has_residual: residual.is_some() });
        Ok(Some(xs.apply_op3_no_bwd(joined, residual.unwrap_or(xs), &op)?))
    }
}
