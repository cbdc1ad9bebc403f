//! The DiT velocity estimator (`flow.decoder.estimator`, upstream `cosyvoice/flow/DiT/dit.py`
//! with the F5-TTS modules it imports; spec/COSYVOICE3.md §7.6).
//!
//! Shapes: the public entry takes channel-first `x`, `mu`, `cond` `(b, mel, t)`, `spks`
//! `(b, spk)` and `t` `(b,)`, and returns the velocity `(b, mel, t)`. Inside, everything is
//! channel-last `(b, t, dim)` so every projection is one flat `(b·t, in) @ Wᵀ` matmul.
//!
//! Only the non-streaming path exists here: every frame attends to every frame (the upstream
//! mask is all ones). On the CPU and on CUDA attention runs as one fused kernel
//! ([`lectern_kernels::attention`], [`lectern_kernels::cuda::flow::attention`]); otherwise the scores are
//! materialised in query chunks so a long flow group never holds more than
//! [`SCORE_BUDGET_FLOATS`] of them.

use candle::{D, DType, Device, Module, Tensor};

use super::tf32x3::{self, FlowMatmul};
use crate::config::DitConfig;
use crate::error::Result;
use crate::linear::Linear;
use crate::op_clock::step;
use crate::weights::Weights;
use lectern_kernels::conv::grouped::WindowConv;
use lectern_kernels::cuda::flow as kernels;
use lectern_kernels::elementwise;
use lectern_kernels::gemm::bf16_weight;
use lectern_kernels::gemm::sgemm::F32Gemm;

/// Width of the sinusoidal time features (`TimestepEmbedding(freq_embed_dim=256)`).
pub const FREQ_EMBED_DIM: usize = 256;
/// Kernel of the causal convolutional position embedding.
pub const CONV_POS_KERNEL: usize = 31;
/// Groups of the causal convolutional position embedding.
pub const CONV_POS_GROUPS: usize = 16;
/// LayerNorm epsilon of every (affine-free) DiT norm.
pub const LN_EPS: f64 = 1e-6;
/// Most attention-score floats held at once (b × heads × query-chunk × t): 32 Mi = 128 MiB.
pub const SCORE_BUDGET_FLOATS: usize = 32 << 20;

/// A DiT projection: always `Linear` with a bias, loaded as `(out_dim, in_dim)`.
fn linear(w: &Weights, out_dim: usize, in_dim: usize) -> Result<Linear> {
    Linear::load(w, out_dim, in_dim, true)
}

/// The bias of a DiT projection (every one has one: [`linear`]).
fn bias(l: &Linear) -> candle::Result<&Tensor> {
    l.bias().ok_or_else(|| candle::Error::Msg("a DiT projection without a bias".into()))
}

/// Affine-free LayerNorm over the last dim, two-pass (mean, then centred variance) so a large
/// residual-stream mean cannot cancel the variance.
fn layer_norm(xs: &Tensor) -> candle::Result<Tensor> {
    let mean = xs.mean_keepdim(D::Minus1)?;
    let xc = xs.broadcast_sub(&mean)?;
    let var = xc.sqr()?.mean_keepdim(D::Minus1)?;
    xc.broadcast_div(&(var + LN_EPS)?.sqrt()?)
}

/// `LN(x)·(1 + scale) + shift`; `scale`, `shift` are `(b, dim)`. With `use_kernels`, one
/// pass of Lectern's kernel where it applies ([`kernels::modulate`]).
pub fn modulate(
    xs: &Tensor,
    scale: &Tensor,
    shift: &Tensor,
    use_kernels: bool,
) -> candle::Result<Tensor> {
    if use_kernels && let Some(y) = kernels::modulate(xs, scale, shift, LN_EPS as f32)? {
        return Ok(y);
    }
    let scale = (scale + 1.0)?.unsqueeze(1)?;
    layer_norm(xs)?.broadcast_mul(&scale)?.broadcast_add(&shift.unsqueeze(1)?)
}

/// `x + y·gate` with `gate` `(b, dim)` over `(b, t, dim)`: the residual of a block's branch.
/// `x + (y + bias)·gate`: `y` a projection's product without its `bias`.
fn gated_residual(
    x: &Tensor,
    y: &Tensor,
    bias: &Tensor,
    gate: &Tensor,
    use_kernels: bool,
) -> candle::Result<Tensor> {
    if use_kernels && let Some(out) = kernels::gated_residual(x, y, bias, gate)? {
        return Ok(out);
    }
    x + y.broadcast_add(bias)?.broadcast_mul(&gate.unsqueeze(1)?)?
}

/// `Mish(z) = z·tanh(ln(1 + eᶻ))`.
pub(crate) fn mish(xs: &Tensor) -> candle::Result<Tensor> {
    xs * (xs.exp()? + 1.0)?.log()?.tanh()?
}

/// `time_embed`: sinusoidal features of `1000·t`, then Linear–SiLU–Linear.
#[derive(Debug, Clone)]
pub struct TimestepEmbedding {
    freqs: Tensor, // (1, FREQ_EMBED_DIM / 2)
    time_mlp_0: Linear,
    time_mlp_2: Linear,
}

impl TimestepEmbedding {
    pub fn new(dim: usize, w: &Weights) -> Result<Self> {
        let half = FREQ_EMBED_DIM / 2;
        // Upstream: exp(arange(half) · −(ln 10000 / (half − 1))), all in f32.
        let step = -((10000f64).ln() / (half - 1) as f64) as f32;
        let freqs: Vec<f32> = (0..half).map(|i| (i as f32 * step).exp()).collect();
        let freqs = Tensor::from_vec(freqs, (1, half), &w.device())?;
        Ok(Self {
            freqs,
            time_mlp_0: linear(&w.pp("time_mlp.0"), dim, FREQ_EMBED_DIM)?,
            time_mlp_2: linear(&w.pp("time_mlp.2"), dim, dim)?,
        })
    }

    /// `t` (b,) → (b, dim).
    pub fn forward(&self, t: &Tensor) -> candle::Result<Tensor> {
        let args = (t * 1000.0)?.unsqueeze(1)?.broadcast_mul(&self.freqs)?; // (b, half)
        let feats = Tensor::cat(&[args.sin()?, args.cos()?], 1)?; // sin block first
        self.time_mlp_2.forward(&self.time_mlp_0.forward(&feats)?.silu()?)
    }
}

/// One grouped causal convolution of the position embedding: left pad k−1, conv, Mish.
#[derive(Debug, Clone)]
pub struct CausalGroupConv {
    weight: Tensor, // (dim, dim / groups, k)
    bias: Tensor,   // (1, dim, 1)
    /// The same laid out for Lectern's CUDA kernel (CUDA only).
    kernel: Option<kernels::GroupConvWeights>,
    /// On the CPU in f32: the groups as window products ([`WindowConv`]).
    cpu_windows: Option<WindowConv>,
    /// `--flow-matmul bf16` where a bf16 kernel runs: the groups as window products
    /// ([`bf16_weight::GroupConvWindows`]).
    windows: Option<bf16_weight::GroupConvWindows>,
}

impl CausalGroupConv {
    fn new(dim: usize, w: &Weights) -> Result<Self> {
        let weight = w.get("weight", &[dim, dim / CONV_POS_GROUPS, CONV_POS_KERNEL])?;
        let bias = w.get("bias", &[dim])?;
        Ok(Self::from_tensors(weight, &bias)?)
    }

    /// This conv for `--flow-matmul bf16`: the weight rounded to bf16 (its inputs are rounded
    /// by [`InputEmbedding::position_embedded`]), as window products where a bf16 kernel runs.
    fn as_bf16(&self) -> candle::Result<Self> {
        let bias = self.bias.flatten_all()?;
        let mut conv = Self::from_tensors(bf16_weight::round(&self.weight)?, &bias)?;
        conv.windows = bf16_weight::GroupConvWindows::new(&conv.weight, &bias, CONV_POS_GROUPS)?;
        if conv.windows.is_some() {
            conv.cpu_windows = None; // the bf16 kernel's windows run instead: no f32 copy kept
        }
        Ok(conv)
    }

    fn from_tensors(weight: Tensor, bias: &Tensor) -> candle::Result<Self> {
        let dim = weight.dim(0)?;
        let kernel = kernels::GroupConvWeights::new(&weight, bias)?;
        let cpu_windows = WindowConv::new(&weight, bias, CONV_POS_GROUPS)?;
        let bias = bias.reshape((1, dim, 1))?;
        Ok(Self { weight, bias, kernel, cpu_windows, windows: None })
    }

    /// (b, dim, t) → (b, dim, t).
    fn forward(&self, xs: &Tensor) -> candle::Result<Tensor> {
        let xs = xs.pad_with_zeros(2, CONV_POS_KERNEL - 1, 0)?;
        mish(&xs.conv1d(&self.weight, 0, 1, 1, CONV_POS_GROUPS)?.broadcast_add(&self.bias)?)
    }
}

/// `input_embed`: proj(concat(x, cond, mu, spks)) plus its causal conv position embedding.
#[derive(Debug, Clone)]
pub struct InputEmbedding {
    proj: Linear,
    conv1: CausalGroupConv, // conv_pos_embed.conv1.0
    conv2: CausalGroupConv, // conv_pos_embed.conv2.0
    /// `--flow-matmul bf16`: both convs with their weights rounded to bf16 and their inputs
    /// rounded too (as PyTorch's CPU bf16 autocast runs them), on a bf16 kernel where the CPU
    /// has one. The f32 convs above stay, for a later switch back to f32.
    bf16_convs: Option<Box<(CausalGroupConv, CausalGroupConv)>>,
    use_kernels: bool,
}

impl InputEmbedding {
    /// `u` plus its causal conv position embedding, channel-last: (b, t, dim) → (b, t, dim).
    /// On CUDA both convs (with their Mish, the second with the residual) are Lectern's
    /// kernel, on the CPU window products: in bf16 on a bf16 kernel
    /// [`bf16_weight::GroupConvWindows`], else f32 ones ([`WindowConv`], on rounded operands under
    /// bf16); elsewhere
    /// [`Self::position_embedded_by_candle`].
    pub fn position_embedded(&self, u: &Tensor) -> candle::Result<Tensor> {
        let (conv1, conv2) = self.convs();
        if self.use_kernels
            && let (Some(c1), Some(c2)) = (&conv1.windows, &conv2.windows)
            && elementwise::applies(u)
        {
            let h = elementwise::mish(&c1.forward(u)?)?;
            return elementwise::mish(&c2.forward(&h)?)? + u;
        }
        if self.use_kernels
            && let (Some(c1), Some(c2)) = (&conv1.kernel, &conv2.kernel)
            && let Some(h) = c1.forward(&self.conv_input(u)?, None)?
            && let Some(out) = c2.forward(&self.conv_input(&h)?, Some(u))?
        {
            return Ok(out);
        }
        if self.use_kernels
            && let (Some(c1), Some(c2)) = (&conv1.cpu_windows, &conv2.cpu_windows)
            && elementwise::applies(u)
        {
            // In bf16 without a bf16 kernel: the rounded weights, the inputs rounded here.
            let h = elementwise::mish(&c1.forward(&self.conv_input(u)?)?)?;
            return elementwise::mish(&c2.forward(&self.conv_input(&h)?)?)? + u;
        }
        self.position_embedded_by_candle(u)
    }

    /// [`Self::position_embedded`] with candle's ops (channel-first convs).
    pub fn position_embedded_by_candle(&self, u: &Tensor) -> candle::Result<Tensor> {
        let (conv1, conv2) = self.convs();
        let u_cf = self.conv_input(u)?.transpose(1, 2)?; // (b, dim, t)
        let h = self.conv_input(&conv1.forward(&u_cf)?)?;
        let pos = conv2.forward(&h)?;
        pos.transpose(1, 2)? + u
    }

    /// The convs that run: the bf16 ones under `--flow-matmul bf16`, else the f32 ones.
    fn convs(&self) -> (&CausalGroupConv, &CausalGroupConv) {
        match &self.bf16_convs {
            Some(convs) => (&convs.0, &convs.1),
            None => (&self.conv1, &self.conv2),
        }
    }

    /// A conv's input: rounded to bf16 under `--flow-matmul bf16`, as it is otherwise.
    fn conv_input(&self, x: &Tensor) -> candle::Result<Tensor> {
        match self.bf16_convs {
            Some(_) => bf16_weight::round(x),
            None => Ok(x.clone()),
        }
    }

    /// This embedding with its convs as `matmul` says: bf16 rounds their inputs and weights
    /// (the projection `proj` stays f32, as everything outside the blocks).
    fn with_matmul(&self, matmul: FlowMatmul) -> candle::Result<Self> {
        let bf16_convs = match matmul {
            FlowMatmul::Bf16 => Some(Box::new((self.conv1.as_bf16()?, self.conv2.as_bf16()?))),
            FlowMatmul::F32 | FlowMatmul::Tf32x3 => None,
        };
        Ok(Self { bf16_convs, ..self.clone() })
    }

    pub fn new(cfg: &DitConfig, w: &Weights) -> Result<Self> {
        let in_dim = cfg.mel_dim * 2 + cfg.mu_dim + cfg.spk_dim;
        let pos = w.pp("conv_pos_embed");
        Ok(Self {
            proj: linear(&w.pp("proj"), cfg.dim, in_dim)?,
            conv1: CausalGroupConv::new(cfg.dim, &pos.pp("conv1.0"))?,
            conv2: CausalGroupConv::new(cfg.dim, &pos.pp("conv2.0"))?,
            bf16_convs: None,
            use_kernels: true,
        })
    }

    /// Channel-last `x`, `cond`, `mu` (b, t, 80), `spks` (b, 80) → (b, t, dim).
    pub fn forward(
        &self,
        x: &Tensor,
        cond: &Tensor,
        mu: &Tensor,
        spks: &Tensor,
    ) -> candle::Result<Tensor> {
        let (b, t, _) = x.dims3()?;
        let spks = spks.unsqueeze(1)?.broadcast_as((b, t, spks.dim(1)?))?;
        let u = self.proj.forward(&Tensor::cat(&[x, cond, mu, &spks], 2)?)?; // (b, t, dim)
        self.position_embedded(&u)
    }
}

/// Interleaved-pair rotary tables for `t` positions: cos then sin, `(2, t, dim_head / 2)` in
/// one tensor (the CUDA q|k|v kernel reads both; [`Self::cos`] and [`Self::sin`] are views).
#[derive(Debug, Clone)]
pub struct Rope {
    pub cos_sin: Tensor,
}

impl Rope {
    /// Angles `p · inv_freq[j]` in f32, as x-transformers computes them.
    pub fn new(inv_freq: &[f32], t: usize, device: &Device) -> candle::Result<Self> {
        let mut angles = Vec::with_capacity(t * inv_freq.len());
        for p in 0..t {
            angles.extend(inv_freq.iter().map(|f| p as f32 * f));
        }
        let angles = Tensor::from_vec(angles, (t, inv_freq.len()), device)?;
        Ok(Self { cos_sin: Tensor::stack(&[angles.cos()?, angles.sin()?], 0)? })
    }

    /// `(t, dim_head / 2)`.
    pub fn cos(&self) -> candle::Result<Tensor> {
        self.cos_sin.get(0)
    }

    /// `(t, dim_head / 2)`.
    pub fn sin(&self) -> candle::Result<Tensor> {
        self.cos_sin.get(1)
    }
}

/// Multi-head self-attention with q/k/v fused into one projection.
#[derive(Debug, Clone)]
pub struct Attention {
    to_qkv: Linear, // to_q ⧺ to_k ⧺ to_v, q rows pre-scaled by 1/√dim_head
    to_out: Linear, // to_out.0
    heads: usize,
    dim_head: usize,
    matmul: FlowMatmul,
    use_kernels: bool,
}

impl Attention {
    fn new(cfg: &DitConfig, w: &Weights) -> Result<Self> {
        let inner = cfg.heads * cfg.dim_head;
        let lin = |name: &str| linear(&w.pp(name), inner, cfg.dim);
        let (q, k, v) = (lin("to_q")?, lin("to_k")?, lin("to_v")?);
        // The softmax scale folded into q: exact when dim_head is a power of four (16, 64),
        // because scaling by a power of two commutes with rounding; rotary is linear.
        let scale = 1.0 / (cfg.dim_head as f64).sqrt();
        Ok(Self {
            to_qkv: Linear::stacked(&[q.scaled(scale)?, k, v])?,
            to_out: linear(&w.pp("to_out.0"), cfg.dim, inner)?,
            heads: cfg.heads,
            dim_head: cfg.dim_head,
            matmul: FlowMatmul::F32,
            use_kernels: true,
        })
    }

    fn with_matmul(&self, matmul: FlowMatmul) -> candle::Result<Self> {
        Ok(Self {
            to_qkv: self.to_qkv.with_flow_matmul(matmul)?,
            to_out: self.to_out.with_flow_matmul(matmul)?,
            matmul,
            ..self.clone()
        })
    }

    /// `xs` (b, t, dim) → q, k, v (b, h, t, dh) each, rotary applied to the first
    /// `dim_head` channels of q and k (q carries the softmax scale).
    pub fn qkv(&self, xs: &Tensor, rope: &Rope) -> candle::Result<(Tensor, Tensor, Tensor)> {
        let (b, t, _) = xs.dims3()?;
        let (h, dh) = (self.heads, self.dim_head);
        let qkv = step("q|k|v projection", || self.to_qkv.product(xs))?; // (b, t, 3·h·dh)
        if self.use_kernels
            && let Some(qkv) = step("q|k|v bias, rotary, heads", || {
                kernels::qkv_bias_rope(&qkv, bias(&self.to_qkv)?, &rope.cos_sin, h)
            })?
        {
            return Ok(qkv);
        }
        let qkv = qkv.broadcast_add(bias(&self.to_qkv)?)?;
        let qkv = qkv.reshape((b, t, 3, h, dh))?.permute((2, 0, 3, 1, 4))?.contiguous()?;
        let (q, k, v) = (qkv.get(0)?, qkv.get(1)?, qkv.get(2)?); // (b, h, t, dh) each
        // Upstream rotates channels 0..dh of the un-split projection, i.e. head 0 only:
        // rotate that head and write it back in place, leaving the other heads untouched.
        for xs in [&q, &k] {
            let head0 = xs.narrow(1, 0, 1)?.contiguous()?; // (b, 1, t, dh)
            let rotated = candle_nn::rotary_emb::rope_i(&head0, &rope.cos()?, &rope.sin()?)?;
            xs.slice_set(&rotated, 1, 0)?;
        }
        Ok((q, k, v))
    }

    /// `xs` (b, t, dim) → (b, t, dim).
    pub fn forward(&self, xs: &Tensor, rope: &Rope) -> candle::Result<Tensor> {
        self.product(xs, rope)?.broadcast_add(bias(&self.to_out)?)
    }

    /// [`Self::forward`] without the output projection's bias ([`Self::out_bias`]).
    fn product(&self, xs: &Tensor, rope: &Rope) -> candle::Result<Tensor> {
        let (q, k, v) = self.qkv(xs, rope)?;
        let o = step("attention core", || attend(&q, &k, &v, self.matmul, self.use_kernels))?;
        step("out projection", || self.to_out.product(&o))
    }

    fn out_bias(&self) -> candle::Result<&Tensor> {
        bias(&self.to_out)
    }
}

/// Softmax attention over all frames: q (pre-scaled), k, v (b, h, t, dh) → (b, t, h·dh).
/// A fused kernel on CUDA ([`kernels::attention`], [`kernels::attention_tf32x3`],
/// [`kernels::attention_bf16`]) and, in plain f32, on the CPU
/// ([`lectern_kernels::attention`]); elsewhere, or on CUDA without `use_kernels`,
/// [`attend_materialised`].
pub fn attend(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    matmul: FlowMatmul,
    use_kernels: bool,
) -> candle::Result<Tensor> {
    if lectern_kernels::attention::applies(q) {
        match matmul {
            FlowMatmul::F32 => return lectern_kernels::attention::attend(q, k, v),
            // On the CPU bf16 covers the attention core too (AMX where the CPU has it).
            FlowMatmul::Bf16 => return lectern_kernels::attention::attend_bf16(q, k, v),
            FlowMatmul::Tf32x3 => {}
        }
    }
    // On CUDA the attention's products run as the projections' do, on tensor cores where the
    // GPU has them (compute capability 8.0 on): 3xTF32 (the default there) or bf16. Otherwise
    // the f32 kernel, whatever `matmul` says.
    if use_kernels {
        let tensor_cores = match matmul {
            FlowMatmul::Tf32x3 => kernels::attention_tf32x3(q, k, v)?,
            // bf16 products: the attention's too, on tensor cores (a recorded reduced precision).
            FlowMatmul::Bf16 => kernels::attention_bf16(q, k, v)?,
            FlowMatmul::F32 => None,
        };
        if let Some(o) = tensor_cores {
            return Ok(o);
        }
    }
    if use_kernels && let Some(o) = kernels::attention(q, k, v)? {
        return Ok(o);
    }
    attend_materialised(q, k, v, matmul, use_kernels)
}

/// [`attend`] with candle ops: scores materialised in query chunks of at most
/// [`SCORE_BUDGET_FLOATS`]. With 3xTF32 the scores `q·kᵀ` are split products (over
/// `3·dh`); `probs·v` stays f32 (splitting the probabilities would triple the largest tensor).
pub fn attend_materialised(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    matmul: FlowMatmul,
    use_kernels: bool,
) -> candle::Result<Tensor> {
    let (b, h, t, dh) = q.dims4()?;
    let (q, k) = match matmul {
        FlowMatmul::F32 | FlowMatmul::Bf16 => (q.clone(), k.clone()),
        FlowMatmul::Tf32x3 => (tf32x3::lhs(q, use_kernels)?, tf32x3::rhs(k)?),
    };
    let k_t = k.t()?; // (b, h, dh, t), a view
    let chunk = (SCORE_BUDGET_FLOATS / (b * h * t).max(1)).clamp(1, t.max(1));
    let mut outs = Vec::with_capacity(t.div_ceil(chunk));
    for start in (0..t).step_by(chunk) {
        let len = chunk.min(t - start);
        let q = q.narrow(2, start, len)?;
        let scores = match matmul {
            FlowMatmul::F32 | FlowMatmul::Bf16 => q.matmul(&k_t)?,
            FlowMatmul::Tf32x3 => tf32x3::on_tensor_cores(|| q.matmul(&k_t))?,
        }; // (b, h, len, t)
        let probs = candle_nn::ops::softmax_last_dim(&scores)?;
        outs.push(probs.matmul(v)?.transpose(1, 2)?); // (b, len, h, dh)
    }
    let o = if outs.len() == 1 { outs.remove(0).contiguous()? } else { Tensor::cat(&outs, 1)? };
    o.reshape((b, t, h * dh))
}

/// Feed-forward `ff.ff.2(GELU_tanh(ff.ff.0.0(x)))`.
#[derive(Debug, Clone)]
pub struct FeedForward {
    ff_0_0: Linear,
    ff_2: Linear,
    use_kernels: bool,
}

impl FeedForward {
    fn new(cfg: &DitConfig, w: &Weights) -> Result<Self> {
        let inner = cfg.dim * cfg.ff_mult;
        Ok(Self {
            ff_0_0: linear(&w.pp("ff.0.0"), inner, cfg.dim)?,
            ff_2: linear(&w.pp("ff.2"), cfg.dim, inner)?,
            use_kernels: true,
        })
    }

    pub fn forward(&self, xs: &Tensor) -> candle::Result<Tensor> {
        self.product(xs)?.broadcast_add(bias(&self.ff_2)?)
    }

    /// [`Self::forward`] without the last projection's bias ([`Self::out_bias`]).
    fn product(&self, xs: &Tensor) -> candle::Result<Tensor> {
        let h = step("feed-forward in projection", || self.ff_0_0.product(xs))?;
        let h = step("feed-forward bias + GELU", || {
            let fused = match self.use_kernels {
                true => kernels::bias_gelu(&h, bias(&self.ff_0_0)?)?,
                false => None,
            };
            match fused {
                Some(h) => Ok(h),
                None => h.broadcast_add(bias(&self.ff_0_0)?)?.gelu(),
            }
        })?;
        step("feed-forward out projection", || self.ff_2.product(&h))
    }

    fn out_bias(&self) -> candle::Result<&Tensor> {
        bias(&self.ff_2)
    }

    fn with_matmul(&self, matmul: FlowMatmul) -> candle::Result<Self> {
        Ok(Self {
            ff_0_0: self.ff_0_0.with_flow_matmul(matmul)?,
            ff_2: self.ff_2.with_flow_matmul(matmul)?,
            use_kernels: self.use_kernels,
        })
    }
}

/// Named intermediates of one estimator call (parity taps), in computation order.
pub type Taps = Vec<(String, Tensor)>;

/// One `DiTBlock` with AdaLN-zero modulation.
#[derive(Debug, Clone)]
pub struct DiTBlock {
    attn_norm: Linear, // attn_norm.linear: (6·dim, dim)
    pub attn: Attention,
    pub ff: FeedForward,
    dim: usize,
    use_kernels: bool,
}

impl DiTBlock {
    pub fn new(cfg: &DitConfig, w: &Weights) -> Result<Self> {
        Ok(Self {
            attn_norm: linear(&w.pp("attn_norm.linear"), 6 * cfg.dim, cfg.dim)?,
            attn: Attention::new(cfg, &w.pp("attn"))?,
            ff: FeedForward::new(cfg, &w.pp("ff"))?,
            dim: cfg.dim,
            use_kernels: true,
        })
    }

    /// This block with its projections and attention scores computed as `matmul` says (the
    /// AdaLN projection of the time embedding, one row per call, stays f32).
    fn with_matmul(&self, matmul: FlowMatmul) -> candle::Result<Self> {
        Ok(Self {
            attn: self.attn.with_matmul(matmul)?,
            ff: self.ff.with_matmul(matmul)?,
            ..self.clone()
        })
    }

    /// The six modulation vectors, each `(batch, dim)`: shift, scale, gate (attention), then
    /// shift, scale, gate (MLP). `temb_silu` is `(batch, dim)`, or `(1, dim)` when the batch
    /// shares one time (`shared_time`): then each vector is that row broadcast.
    pub fn modulation(&self, temb_silu: &Tensor, batch: usize) -> candle::Result<Vec<Tensor>> {
        let m = self.attn_norm.forward(temb_silu)?; // (1 or batch, 6·dim)
        (0..6)
            .map(|i| m.narrow(1, i * self.dim, self.dim)?.broadcast_as((batch, self.dim)))
            .collect()
    }

    /// `xs` (b, t, dim), `temb_silu` = SiLU(temb) (b, dim), or (1, dim) for a shared time →
    /// (b, t, dim).
    pub fn forward(
        &self,
        xs: &Tensor,
        temb_silu: &Tensor,
        rope: &Rope,
        taps: Option<&mut Taps>,
    ) -> candle::Result<Tensor> {
        let m = step("AdaLN projection", || self.modulation(temb_silu, xs.dim(0)?))?;
        let (shift_msa, scale_msa, gate_msa) = (&m[0], &m[1], &m[2]);
        let (shift_mlp, scale_mlp, gate_mlp) = (&m[3], &m[4], &m[5]);
        // The attention's and the feed-forward's last biases are added in the gated residuals.
        let k = self.use_kernels;
        let norm = step("LayerNorm + modulate", || modulate(xs, scale_msa, shift_msa, k))?;
        let attn_y = self.attn.product(&norm, rope)?;
        let xs = step("gated residual", || {
            gated_residual(xs, &attn_y, self.attn.out_bias()?, gate_msa, k)
        })?;
        let ff_norm = step("LayerNorm + modulate", || modulate(&xs, scale_mlp, shift_mlp, k))?;
        let ff_y = self.ff.product(&ff_norm)?;
        let out = step("gated residual", || {
            gated_residual(&xs, &ff_y, self.ff.out_bias()?, gate_mlp, k)
        })?;
        if let Some(taps) = taps {
            let attn_out = attn_y.broadcast_add(self.attn.out_bias()?)?;
            let ff_out = ff_y.broadcast_add(self.ff.out_bias()?)?;
            for (name, t) in [
                ("attn_norm_x", &norm),
                ("gate_msa", gate_msa),
                ("shift_mlp", shift_mlp),
                ("scale_mlp", scale_mlp),
                ("gate_mlp", gate_mlp),
                ("attn_out", &attn_out),
                ("ff_out", &ff_out),
            ] {
                taps.push((name.to_string(), t.contiguous()?));
            }
        }
        Ok(out)
    }
}

/// `t` `(b,)` as `(1,)` where every row has the same time, as the CFG batch always does: the
/// time embedding, every block's AdaLN projection and the final norm's then run on one row,
/// broadcast over the batch. Two rows through candle's matmul make the `gemm` crate pack the
/// 25 MB AdaLN weight for its row tiles; one row takes its matrix–vector path.
fn shared_time(t: &Tensor) -> candle::Result<Tensor> {
    if t.elem_count() <= 1 {
        return Ok(t.clone());
    }
    let times = t.to_dtype(DType::F32)?.to_vec1::<f32>()?;
    match times.iter().all(|&x| x == times[0]) {
        true => t.narrow(0, 0, 1),
        false => Ok(t.clone()),
    }
}

/// `DiT`: the estimator.
#[derive(Debug, Clone)]
pub struct DiT {
    time_embed: TimestepEmbedding,
    input_embed: InputEmbedding,
    inv_freq: Vec<f32>, // rotary_embed.inv_freq, from the checkpoint
    transformer_blocks: Vec<DiTBlock>,
    norm_out: Linear, // norm_out.linear: (2·dim, dim)
    proj_out: Linear,
    cfg: DitConfig,
    use_kernels: bool,
    device: Device,
}

impl DiT {
    pub fn new(cfg: &DitConfig, w: &Weights) -> Result<Self> {
        let inv_freq =
            w.get("rotary_embed.inv_freq", &[cfg.dim_head / 2])?.to_dtype(DType::F32)?.to_vec1()?;
        let transformer_blocks = (0..cfg.depth)
            .map(|i| DiTBlock::new(cfg, &w.pp("transformer_blocks").pp(i)))
            .collect::<Result<Vec<_>>>()?;
        let mut dit = Self {
            time_embed: TimestepEmbedding::new(cfg.dim, &w.pp("time_embed"))?,
            input_embed: InputEmbedding::new(cfg, &w.pp("input_embed"))?,
            inv_freq,
            transformer_blocks,
            norm_out: linear(&w.pp("norm_out.linear"), 2 * cfg.dim, cfg.dim)?,
            proj_out: linear(&w.pp("proj_out"), cfg.out_channels, cfg.dim)?,
            cfg: cfg.clone(),
            use_kernels: true,
            device: w.device(),
        };
        dit.set_f32_gemm(F32Gemm::for_flow());
        Ok(dit)
    }

    /// The blocks' f32 projections on `gemm` ([`F32Gemm`]: the system's OpenBLAS or Lectern's
    /// AVX2 GEMM) or, with `None`, on candle's matmul. Weights not on the CPU, or not f32, stay
    /// as they are.
    pub fn set_f32_gemm(&mut self, gemm: Option<F32Gemm>) {
        for block in &mut self.transformer_blocks {
            for l in [
                &mut block.attn.to_qkv,
                &mut block.attn.to_out,
                &mut block.ff.ff_0_0,
                &mut block.ff.ff_2,
            ] {
                l.set_f32_gemm(gemm);
            }
        }
    }

    /// What a take records for this estimator's matmuls: [`FlowMatmul::label`], or
    /// [`F32Gemm::label`] (`f32+openblas`, `f32+avx2`) where the blocks' f32 projections run
    /// there.
    pub fn matmul_label(&self) -> String {
        match self.transformer_blocks.first().and_then(|b| b.attn.to_qkv.f32_gemm()) {
            Some(gemm) => gemm.label().to_string(),
            None if self.device.is_cuda() => self.matmul().label(&self.device),
            None => self.matmul().name().to_string(),
        }
    }

    pub fn config(&self) -> &DitConfig {
        &self.cfg
    }

    /// This estimator with the blocks' matmuls computed as `matmul` says (see [`tf32x3`]).
    pub fn with_matmul(&self, matmul: FlowMatmul) -> candle::Result<Self> {
        let transformer_blocks = self
            .transformer_blocks
            .iter()
            .map(|b| b.with_matmul(matmul))
            .collect::<candle::Result<_>>()?;
        let input_embed = self.input_embed.with_matmul(matmul)?;
        Ok(Self { transformer_blocks, input_embed, ..self.clone() })
    }

    /// Runs Lectern's own kernels ([`kernels`], [`lectern_kernels::elementwise`]) where they apply (`on`, the
    /// default), or candle's ops only (benchmarks compare the two; the output differs within
    /// the fixture gates).
    pub fn set_kernels(&mut self, on: bool) {
        self.use_kernels = on;
        self.input_embed.use_kernels = on;
        for block in &mut self.transformer_blocks {
            block.use_kernels = on;
            block.attn.use_kernels = on;
            block.ff.use_kernels = on;
            for l in [&mut block.attn.to_qkv, &mut block.attn.to_out, &mut block.ff.ff_0_0] {
                l.set_kernels(on);
            }
            block.ff.ff_2.set_kernels(on);
        }
    }

    /// How the blocks' matmuls are computed.
    pub fn matmul(&self) -> FlowMatmul {
        self.transformer_blocks.first().map_or(FlowMatmul::F32, |b| b.attn.matmul)
    }

    pub fn blocks(&self) -> &[DiTBlock] {
        &self.transformer_blocks
    }

    pub fn time_embed(&self) -> &TimestepEmbedding {
        &self.time_embed
    }

    pub fn input_embed(&self) -> &InputEmbedding {
        &self.input_embed
    }

    /// Rotary tables for `t` frames.
    pub fn rope(&self, t: usize, device: &Device) -> candle::Result<Rope> {
        Rope::new(&self.inv_freq, t, device)
    }

    /// Velocity: `x`, `mu`, `cond` (b, mel, t), `t` (b,) or (1,) when every row has that
    /// time, `spks` (b, spk) → (b, mel, t).
    pub fn forward(
        &self,
        x: &Tensor,
        mu: &Tensor,
        t: &Tensor,
        spks: &Tensor,
        cond: &Tensor,
    ) -> candle::Result<Tensor> {
        self.forward_with_taps(x, mu, t, spks, cond, None)
    }

    /// [`Self::forward`], also recording named intermediates when `taps` is given.
    pub fn forward_with_taps(
        &self,
        x: &Tensor,
        mu: &Tensor,
        t: &Tensor,
        spks: &Tensor,
        cond: &Tensor,
        mut taps: Option<&mut Taps>,
    ) -> candle::Result<Tensor> {
        let (batch, n_frames) = (x.dim(0)?, x.dim(2)?);
        let temb = step("time embedding", || self.time_embed.forward(&shared_time(t)?))?;
        let (x_cl, cond_cl, mu_cl) =
            (x.transpose(1, 2)?, cond.transpose(1, 2)?, mu.transpose(1, 2)?);
        let mut xs = step("input embedding (projection, position convs)", || {
            self.input_embed.forward(&x_cl, &cond_cl, &mu_cl, spks)
        })?; // (b, t, dim)
        let rope = self.rope(n_frames, x.device())?;
        let temb_silu = temb.silu()?;
        if let Some(taps) = taps.as_deref_mut() {
            taps.push((
                "time_embed".into(),
                temb.broadcast_as((batch, temb.dim(1)?))?.contiguous()?,
            ));
            taps.push(("input_embed".into(), xs.clone()));
        }
        for (i, block) in self.transformer_blocks.iter().enumerate() {
            let mut block_taps = taps.as_ref().map(|_| Taps::new());
            xs = block.forward(&xs, &temb_silu, &rope, block_taps.as_mut())?;
            if let (Some(taps), Some(bt)) = (taps.as_deref_mut(), block_taps) {
                taps.extend(bt.into_iter().map(|(n, t)| (format!("block{i}.{n}"), t)));
                taps.push((format!("block{i}.out"), xs.clone()));
            }
        }
        let m = self.norm_out.forward(&temb_silu)?; // (1 or b, 2·dim)
        let d = self.cfg.dim;
        // The final norm splits scale first, then shift (the blocks split shift first).
        let (scale, shift) = (
            m.narrow(1, 0, d)?.broadcast_as((batch, d))?,
            m.narrow(1, d, d)?.broadcast_as((batch, d))?,
        );
        let xs =
            step("final LayerNorm + modulate", || modulate(&xs, &scale, &shift, self.use_kernels))?;
        if let Some(taps) = taps {
            taps.push(("norm_out".into(), xs.clone()));
        }
        step("final projection", || self.proj_out.forward(&xs)?.transpose(1, 2)?.contiguous())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lectern_test_support::tensors::seeded;

    fn max_diff(a: &Tensor, b: &Tensor) -> f32 {
        (a - b).unwrap().abs().unwrap().max_all().unwrap().to_scalar().unwrap()
    }

    /// The position embedding on each CPU route agrees with candle's grouped convs on the same
    /// operands: f32 window products; under bf16, window products on a bf16 kernel where the
    /// CPU has one, and without one the f32 window products on rounded operands.
    #[test]
    fn position_embedding_routes_match_candle() {
        let dim = CONV_POS_GROUPS * 4;
        let conv = |seed| {
            let weight = seeded(&[dim, 4, CONV_POS_KERNEL], seed);
            CausalGroupConv::from_tensors(weight, &seeded(&[dim], seed + 1)).unwrap()
        };
        let embedding = InputEmbedding {
            proj: Linear::new(seeded(&[dim, 8], 1), None).unwrap(),
            conv1: conv(2),
            conv2: conv(4),
            bf16_convs: None,
            use_kernels: true,
        };
        let u = seeded(&[2, 40, dim], 6);
        let check = |e: &InputEmbedding, what: &str| {
            let d = max_diff(
                &e.position_embedded(&u).unwrap(),
                &e.position_embedded_by_candle(&u).unwrap(),
            );
            assert!(d < 1e-4, "{what}: max |Δ| {d:e} from candle's convs");
        };
        check(&embedding, "f32");
        let mut bf16 = embedding.with_matmul(FlowMatmul::Bf16).unwrap();
        check(&bf16, "bf16");
        // As `as_bf16` leaves a conv where no bf16 kernel runs: the f32 window products of
        // the rounded weight, no bf16 windows.
        let convs = bf16.bf16_convs.as_mut().expect("bf16 convs");
        for c in [&mut convs.0, &mut convs.1] {
            c.windows = None;
            let bias = c.bias.flatten_all().unwrap();
            c.cpu_windows = WindowConv::new(&c.weight, &bias, CONV_POS_GROUPS).unwrap();
            assert!(c.cpu_windows.is_some());
        }
        check(&bf16, "bf16 without a bf16 kernel");
        // …and that route did round: its output is not the f32 one.
        let f32_out = embedding.position_embedded(&u).unwrap();
        assert!(max_diff(&bf16.position_embedded(&u).unwrap(), &f32_out) > 1e-4);
    }
}
