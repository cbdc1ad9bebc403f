//! The speech-token LM of CosyVoice3 (`CosyVoice3LM` on a Qwen2 backbone, spec §6, §1.1, §2.2).
//!
//! * Input is a sequence of *embeddings* (§6.3): `[sos, prompt_text ++ text, task_id,
//!   prompt_speech_tokens]`; the text head `lm_head` is never used, the speech head is
//!   `llm_decoder`; log-softmax in float32.
//! * Every lane (segment being decoded) owns a [`KvCache`] preallocated to its capacity; new
//!   keys/values are written in place (`slice_set`), attention reads a `narrow`ed view.
//! * Lanes: [`LaneMode::Batched`] (default) stacks one row per lane into each projection/MLP
//!   matmul, with each lane's own RoPE positions starting at 0. [`SpeechLm::generate`] joins the
//!   lanes' caches into one [`LaneBatch`] and runs each layer's attention for all lanes in one
//!   call: one write of every lane's new k|v (a scatter at each lane's own position), one
//!   q·kᵀ, one softmax and one p·v over the longest lane's length, the positions a shorter lane
//!   has not reached masked to −∞ (their probabilities are exactly 0). The CPU gemm may round a
//!   row of a batched product differently from a 1-row product (last bits only); the tests
//!   measure it and require identical sampled tokens. [`LaneMode::Solo`] runs every lane on its
//!   own and is bit-identical to solo decoding by construction; so is a batch of one lane.
//!   On CUDA a joined step is captured as a CUDA graph and replayed ([`graph`]): one launch
//!   instead of ~500.
//! * Weights: f32 (default), f16/bf16 projections (activations cast per matmul, results back to
//!   f32), or q8_0 projections (`QMatMul`; needs every inner dim divisible by 32). Embedding
//!   tables, norms, biases and the KV cache stay f32.
//! * Decode is launch-bound on a GPU (one row per lane, tiny kernels), so the per-layer path
//!   is kept short: q/k/v and gate/up are each one stacked projection (`narrow`ed views of the
//!   output), the attention scale 1/√d lives in the q rows, RoPE runs once per layer over the
//!   whole q|k|v output of every lane (identity tables for v), k and v share one cache tensor
//!   (one write per lane), and single-row reshapes stay views.

use std::sync::Arc;

use candle::quantized::{GgmlDType, QMatMul, QTensor};
use candle::{D, DType, Device, Module, Tensor};

mod graph;
pub mod kernels;
pub use graph::{GraphSlot, GraphStats, graph_stats};

use super::config::{LmConfig, ModelConfig, ModelFiles};
use super::sampling::{SamplingConfig, SilentFilter, sampling_ids, segment_rng};
use super::weights::{Checkpoint, ModelError, Result, Weights};

/// `<|endofprompt|>`: upstream asserts it occurs in `prompt_text ++ text`.
pub const END_OF_PROMPT_ID: u32 = 151_646;
/// Default number of lanes decoded together.
pub const DEFAULT_MAX_LANES: usize = 8;

/// Storage precision of the projection weights (and the speech head).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LmPrecision {
    #[default]
    F32,
    F16,
    Bf16,
    /// GGML q8_0 blocks of 32 along the inner dimension.
    Q8_0,
}

impl LmPrecision {
    pub fn name(self) -> &'static str {
        match self {
            Self::F32 => "f32",
            Self::F16 => "f16",
            Self::Bf16 => "bf16",
            Self::Q8_0 => "q8_0",
        }
    }
}

/// How lanes share the work of one decode step (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LaneMode {
    #[default]
    Batched,
    Solo,
}

/// A linear layer `y = x·Wᵀ (+ b)` on rows `x: (n, in)` in f32.
#[derive(Debug, Clone)]
enum Linear {
    Dense { weight: Tensor, bias: Option<Tensor> },
    Quant { weight: QMatMul, bias: Option<Tensor> },
}

/// The f32 weight `(out, in)` and optional bias `(out,)` of one checkpoint projection, before
/// any fusion or precision cast.
struct Rows {
    weight: Tensor,
    bias: Option<Tensor>,
}

impl Rows {
    /// Loads `weight` (and `bias`) under `w`; shape errors name the checkpoint tensor.
    fn load(w: &Weights, out_dim: usize, in_dim: usize, bias: bool) -> Result<Self> {
        let weight = w.get("weight", &[out_dim, in_dim])?;
        let bias = if bias { Some(w.get("bias", &[out_dim])?) } else { None };
        Ok(Self { weight, bias })
    }

    /// `y = s·(x·Wᵀ + b)`, by scaling the f32 weight and bias (before any cast or quantization).
    fn scaled(self, s: f64) -> Result<Self> {
        Ok(Self { weight: (self.weight * s)?, bias: self.bias.map(|b| b * s).transpose()? })
    }
}

impl Linear {
    fn load(
        w: &Weights,
        out_dim: usize,
        in_dim: usize,
        bias: bool,
        prec: LmPrecision,
    ) -> Result<Self> {
        Self::stacked(vec![Rows::load(w, out_dim, in_dim, bias)?], prec)
    }

    /// One layer whose output columns are the outputs of `parts` in order (they must share the
    /// input width, and all or none have a bias): one matmul and one bias add instead of one per
    /// part, the point on a GPU where every kernel launch counts. Callers `narrow` the columns.
    /// q8_0 blocks run along the inner dimension, so stacking rows does not change them.
    fn stacked(parts: Vec<Rows>, prec: LmPrecision) -> Result<Self> {
        let weights: Vec<&Tensor> = parts.iter().map(|p| &p.weight).collect();
        let biases: Vec<&Tensor> = parts.iter().filter_map(|p| p.bias.as_ref()).collect();
        let bias = match biases.len() {
            0 => None,
            n if n == parts.len() => Some(Tensor::cat(&biases, 0)?),
            _ => {
                return Err(ModelError::InvalidInput(
                    "stacked projections must all have a bias or none".into(),
                ));
            }
        };
        Self::from_tensor(Tensor::cat(&weights, 0)?, bias, prec)
    }

    fn from_tensor(weight: Tensor, bias: Option<Tensor>, prec: LmPrecision) -> Result<Self> {
        Ok(match prec {
            LmPrecision::F32 => Self::Dense { weight, bias },
            LmPrecision::F16 => Self::Dense { weight: weight.to_dtype(DType::F16)?, bias },
            LmPrecision::Bf16 => Self::Dense { weight: weight.to_dtype(DType::BF16)?, bias },
            LmPrecision::Q8_0 => {
                let in_dim = weight.dim(1)?;
                if in_dim % 32 != 0 {
                    return Err(ModelError::InvalidInput(format!(
                        "q8_0 needs inner dimensions divisible by 32, got {in_dim}"
                    )));
                }
                let q = QTensor::quantize(&weight, GgmlDType::Q8_0)?;
                Self::Quant { weight: QMatMul::from_qtensor(q)?, bias }
            }
        })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let (y, bias) = match self {
            Self::Dense { weight, bias } => {
                if weight.dtype() == DType::F32
                    && let Some(y) = kernels::rows_matmul(x, weight, bias.as_ref())?
                {
                    return Ok(y);
                }
                let y = if weight.dtype() == DType::F32 {
                    match few_rows_product(x, weight)? {
                        Some(y) => y,
                        None => x.matmul(&weight.t()?)?,
                    }
                } else {
                    x.to_dtype(weight.dtype())?.matmul(&weight.t()?)?.to_dtype(DType::F32)?
                };
                (y, bias)
            }
            Self::Quant { weight, bias } => (weight.forward(x)?, bias),
        };
        Ok(match bias {
            Some(b) => y.broadcast_add(b)?,
            None => y,
        })
    }

    /// Bytes held by the weight (for telemetry).
    fn weight_bytes(&self) -> usize {
        match self {
            Self::Dense { weight, .. } => weight.elem_count() * weight.dtype().size_in_bytes(),
            Self::Quant { weight, .. } => match weight {
                QMatMul::QTensor(q) => q.storage_size_in_bytes(),
                QMatMul::Tensor(t) | QMatMul::TensorF16(t) => {
                    t.elem_count() * t.dtype().size_in_bytes()
                }
            },
        }
    }
}

/// Most rows [`few_rows_product`] serves: the decode steps of up to 16 lanes.
const FEW_ROWS: usize = 16;

/// On the CPU, `x·Wᵀ` for 2 to [`FEW_ROWS`] rows (the joined decode steps) computed as
/// `(W·xᵀ)ᵀ`. With its AVX-512 kernels (`x86-v4`) the `gemm` crate tiles the left operand's
/// rows 48 at a time, so 2–8 rows of `x·Wᵀ` ran 1.5× slower than on its AVX2 kernels
/// (`bench --stage lm --lanes 2`: 370 against 250 ms a step); as `W·xᵀ` the weight's rows
/// fill the tiles. One row keeps the matrix–vector path, more than [`FEW_ROWS`] the plain one.
fn few_rows_product(x: &Tensor, weight: &Tensor) -> Result<Option<Tensor>> {
    let in_dim = x.dim(D::Minus1)?;
    let rows = x.elem_count() / in_dim.max(1);
    if !x.device().is_cpu() || !(2..=FEW_ROWS).contains(&rows) {
        return Ok(None);
    }
    let flat = x.reshape((rows, in_dim))?;
    let y_t = weight.matmul(&flat.t()?)?; // (out, rows)
    let mut dims = x.dims().to_vec();
    *dims.last_mut().expect("rank ≥ 1") = weight.dim(0)?;
    Ok(Some(y_t.t()?.contiguous()?.reshape(dims)?))
}

#[derive(Debug, Clone)]
struct Attention {
    /// `q_proj`, `k_proj`, `v_proj` stacked: output columns `[q (heads·d) | k (kv·d) | v (kv·d)]`.
    /// The q rows (weight and bias) are pre-multiplied by the attention scale 1/√d: RoPE is
    /// linear, so rope(s·q)·kᵀ = s·(rope(q)·kᵀ), and the scores need no separate scaling op.
    qkv_proj: Linear,
    o_proj: Linear,
}

#[derive(Debug, Clone)]
struct Mlp {
    /// `gate_proj` and `up_proj` stacked: output columns `[gate (I) | up (I)]`.
    gate_up_proj: Linear,
    down_proj: Linear,
    intermediate: usize,
}

impl Mlp {
    fn forward(&self, h: &Tensor) -> Result<Tensor> {
        let gate_up = self.gate_up_proj.forward(h)?;
        let i = self.intermediate;
        let gate = candle_nn::ops::silu(&gate_up.narrow(1, 0, i)?)?;
        self.down_proj.forward(&(gate * gate_up.narrow(1, i, i)?)?)
    }
}

#[derive(Debug, Clone)]
struct DecoderLayer {
    self_attn: Attention,
    mlp: Mlp,
    input_layernorm: Tensor,
    post_attention_layernorm: Tensor,
}

/// Keys and values of one lane, f32: per layer one `(2, kv_heads, capacity, head_dim)` tensor,
/// k then v, matching the adjacent k and v columns of the fused projection so that one
/// `slice_set` writes both, and laid out like a [`LaneBatch`] of one lane.
#[derive(Debug)]
pub struct KvCache {
    kv: Vec<Tensor>,
    len: usize,
    capacity: usize,
}

/// The caches of several lanes joined for decoding them together ([`SpeechLm::step_batch`]):
/// per layer one `(2, lanes·kv_heads, capacity, head_dim)` tensor — all lanes' k heads, then all
/// their v heads, lane-major — so that the k (and the v) of every lane is one evenly strided
/// batch for a single matmul. Each lane keeps its own length.
#[derive(Debug)]
pub struct LaneBatch {
    kv: Vec<Tensor>,
    lens: Vec<usize>,
    capacity: usize,
    kv_heads: usize,
    /// Changes whenever `kv` is replaced (lanes join or leave): a captured decode step is only
    /// valid for the tensors it was captured on.
    generation: u64,
}

/// Lanes decoded together share one capacity.
fn same_capacity(lane: usize, batch: usize) -> Result<()> {
    if lane == batch {
        Ok(())
    } else {
        Err(ModelError::InvalidInput(format!(
            "lanes of a batch share one capacity: {lane} and {batch}"
        )))
    }
}

/// A fresh [`LaneBatch::generation`].
fn next_generation() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

impl LaneBatch {
    /// Joins prefilled lanes (all of one capacity), in order.
    pub fn join(caches: Vec<KvCache>) -> Result<Self> {
        let first = caches
            .first()
            .ok_or_else(|| ModelError::InvalidInput("a lane batch needs a lane".into()))?;
        let (capacity, kv_heads) = (first.capacity, first.kv[0].dim(1)?);
        for c in &caches {
            same_capacity(c.capacity, capacity)?;
        }
        let layers = first.kv.len();
        let kv = (0..layers)
            .map(|l| {
                let parts: Vec<&Tensor> = caches.iter().map(|c| &c.kv[l]).collect();
                Tensor::cat(&parts, 1)
            })
            .collect::<candle::Result<Vec<_>>>()?;
        let lens = caches.iter().map(|c| c.len).collect();
        Ok(Self { kv, lens, capacity, kv_heads, generation: next_generation() })
    }

    pub fn lanes(&self) -> usize {
        self.lens.len()
    }

    /// Positions written so far, per lane.
    pub fn lens(&self) -> &[usize] {
        &self.lens
    }

    /// Adds a prefilled lane at the end.
    pub fn push(&mut self, cache: KvCache) -> Result<()> {
        same_capacity(cache.capacity, self.capacity)?;
        for (t, new) in self.kv.iter_mut().zip(&cache.kv) {
            *t = Tensor::cat(&[&*t, new], 1)?;
        }
        self.lens.push(cache.len);
        self.generation = next_generation();
        Ok(())
    }

    /// One position more for every lane (after a step wrote them).
    fn advance(&mut self) {
        for len in &mut self.lens {
            *len += 1;
        }
    }

    /// `(2·lanes·kv, 1, d)`: the position each cache row is written at this step (all k rows,
    /// then all v rows, lane-major, as the cache holds them) — a scatter's indices.
    fn write_rows(&self) -> Result<Tensor> {
        let (rows, d) = (2 * self.lanes() * self.kv_heads, self.kv[0].dim(3)?);
        let at: Vec<u32> = (0..2)
            .flat_map(|_| self.lens.iter())
            .flat_map(|&pos| std::iter::repeat_n(pos as u32, self.kv_heads * d))
            .collect();
        Ok(Tensor::from_vec(at, (rows, 1, d), self.kv[0].device())?)
    }

    /// `(lanes, 1, 1, len)`: 0 up to each lane's position of this step, −∞ beyond it.
    fn mask(&self, len: usize) -> Result<Tensor> {
        let m: Vec<f32> = self
            .lens
            .iter()
            .flat_map(|&pos| (0..len).map(move |j| if j <= pos { 0.0 } else { f32::NEG_INFINITY }))
            .collect();
        Ok(Tensor::from_vec(m, (self.lanes(), 1, 1, len), self.kv[0].device())?)
    }

    /// Keeps the lanes whose `keep` entry is true, in order.
    pub fn retain(&mut self, keep: &[bool]) -> Result<()> {
        if keep.len() != self.lanes() {
            return Err(ModelError::InvalidInput(format!(
                "{} flags for {} lanes",
                keep.len(),
                self.lanes()
            )));
        }
        if keep.iter().all(|&k| k) {
            return Ok(());
        }
        let n = self.kv_heads;
        let rows: Vec<u32> = keep
            .iter()
            .enumerate()
            .filter(|(_, k)| **k)
            .flat_map(|(lane, _)| (lane * n..(lane + 1) * n).map(|r| r as u32))
            .collect();
        let rows = Tensor::new(rows.as_slice(), self.kv[0].device())?;
        for t in &mut self.kv {
            *t = t.index_select(&rows, 1)?;
        }
        self.lens = self.lens.iter().zip(keep).filter(|(_, k)| **k).map(|(l, _)| *l).collect();
        self.generation = next_generation();
        Ok(())
    }
}

impl KvCache {
    /// Positions written so far (= the RoPE position of the next row).
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub fn capacity(&self) -> usize {
        self.capacity
    }
    /// A deep copy (new storage: the original is written in place, so a shallow clone would
    /// alias it). Used to fork one prefilled prompt into several lanes.
    pub fn duplicate(&self) -> Result<Self> {
        let kv = self.kv.iter().map(Tensor::copy).collect::<candle::Result<Vec<_>>>()?;
        Ok(Self { kv, len: self.len, capacity: self.capacity })
    }

    /// Bytes actually allocated by this cache's tensors.
    pub fn allocated_bytes(&self) -> usize {
        self.kv.iter().map(|t| t.elem_count() * t.dtype().size_in_bytes()).sum()
    }
}

/// One lane of a decode step: its cache and the number of new rows it contributes.
struct LaneRows<'a> {
    cache: &'a mut KvCache,
    rows: usize,
}

/// The CosyVoice3 speech LM with its Qwen2 backbone.
#[derive(Debug)]
pub struct SpeechLm {
    cfg: LmConfig,
    precision: LmPrecision,
    device: Device,
    embed_tokens: Tensor,     // (vocab, H)
    speech_embedding: Tensor, // (6761, H)
    layers: Vec<DecoderLayer>,
    norm: Tensor,
    llm_decoder: Linear,
    inv_freq: Vec<f32>,
    /// Joined decode steps through CUDA graphs (see [`graph`]); only on CUDA.
    decode_graphs: bool,
}

impl SpeechLm {
    /// Loads `llm.pt` (or a `.safetensors` with the same keys) of a model directory.
    pub fn from_dir(
        dir: &std::path::Path,
        precision: LmPrecision,
        device: &Device,
    ) -> Result<Self> {
        let cfg = ModelConfig::from_dir(dir)?;
        let files = ModelFiles::in_dir(dir);
        let ckpt = Arc::new(Checkpoint::load(&files.llm, device)?);
        Self::new(&cfg.lm, &Weights::root(ckpt), precision)
    }

    /// Builds the LM from the `llm.pt` keys under `w` (§1.1); every shape is checked.
    pub fn new(cfg: &LmConfig, w: &Weights, precision: LmPrecision) -> Result<Self> {
        let q = &cfg.qwen;
        let (h, hd) = (q.hidden_size, q.head_dim());
        if q.num_attention_heads % q.num_key_value_heads != 0 || h % q.num_attention_heads != 0 {
            return Err(ModelError::InvalidInput(format!(
                "Qwen2 config: {} heads, {} kv heads, hidden {h} are inconsistent",
                q.num_attention_heads, q.num_key_value_heads
            )));
        }
        let w = w.with_dtype(DType::F32);
        let m = w.pp("llm.model.model");
        let kv_dim = q.num_key_value_heads * hd;
        // Folded into the q rows (see `Attention::qkv_proj`).
        let attn_scale = 1.0 / (hd as f64).sqrt();
        let inter = q.intermediate_size;
        let mut layers = Vec::with_capacity(q.num_hidden_layers);
        for i in 0..q.num_hidden_layers {
            let l = m.pp(format!("layers.{i}"));
            let a = l.pp("self_attn");
            let p = l.pp("mlp");
            let qkv = vec![
                Rows::load(&a.pp("q_proj"), h, h, true)?.scaled(attn_scale)?,
                Rows::load(&a.pp("k_proj"), kv_dim, h, true)?,
                Rows::load(&a.pp("v_proj"), kv_dim, h, true)?,
            ];
            let gate_up = vec![
                Rows::load(&p.pp("gate_proj"), inter, h, false)?,
                Rows::load(&p.pp("up_proj"), inter, h, false)?,
            ];
            layers.push(DecoderLayer {
                self_attn: Attention {
                    qkv_proj: Linear::stacked(qkv, precision)?,
                    o_proj: Linear::load(&a.pp("o_proj"), h, h, false, precision)?,
                },
                mlp: Mlp {
                    gate_up_proj: Linear::stacked(gate_up, precision)?,
                    down_proj: Linear::load(&p.pp("down_proj"), h, inter, false, precision)?,
                    intermediate: inter,
                },
                input_layernorm: l.get("input_layernorm.weight", &[h])?,
                post_attention_layernorm: l.get("post_attention_layernorm.weight", &[h])?,
            });
        }
        let sv = cfg.speech_vocab();
        let inv_freq = (0..hd / 2)
            .map(|i| 1.0 / (q.rope_theta as f32).powf((2 * i) as f32 / hd as f32))
            .collect();
        Ok(Self {
            cfg: cfg.clone(),
            precision,
            device: w.device(),
            embed_tokens: m.get("embed_tokens.weight", &[q.vocab_size, h])?,
            speech_embedding: w.get("speech_embedding.weight", &[sv, h])?,
            layers,
            norm: m.get("norm.weight", &[h])?,
            llm_decoder: Linear::load(&w.pp("llm_decoder"), sv, h, false, precision)?,
            inv_freq,
            decode_graphs: true,
        })
    }

    pub fn config(&self) -> &LmConfig {
        &self.cfg
    }
    pub fn precision(&self) -> LmPrecision {
        self.precision
    }
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Whether batched decoding replays each step as a CUDA graph (on by default; only CUDA
    /// devices have them). Off, every step launches its ~500 kernels one by one.
    pub fn set_decode_graphs(&mut self, on: bool) {
        self.decode_graphs = on;
    }

    /// Bytes of the projection weights and the speech head as stored (telemetry).
    pub fn projection_bytes(&self) -> usize {
        let per_layer = |l: &DecoderLayer| {
            let a = &l.self_attn;
            [&a.qkv_proj, &a.o_proj, &l.mlp.gate_up_proj, &l.mlp.down_proj]
                .iter()
                .map(|p| p.weight_bytes())
                .sum::<usize>()
        };
        self.layers.iter().map(per_layer).sum::<usize>() + self.llm_decoder.weight_bytes()
    }

    /// KV bytes of a lane of `capacity` positions by arithmetic:
    /// 2 × kv_heads × capacity × head_dim × 4 bytes (f32) × layers.
    pub fn kv_bytes_per_lane(&self, capacity: usize) -> usize {
        let q = &self.cfg.qwen;
        2 * q.num_key_value_heads
            * capacity
            * q.head_dim()
            * DType::F32.size_in_bytes()
            * q.num_hidden_layers
    }

    /// A zeroed cache for `capacity` positions.
    pub fn new_cache(&self, capacity: usize) -> Result<KvCache> {
        let q = &self.cfg.qwen;
        let shape = (2, q.num_key_value_heads, capacity, q.head_dim());
        let kv = (0..q.num_hidden_layers)
            .map(|_| Tensor::zeros(shape, DType::F32, &self.device))
            .collect::<candle::Result<_>>()?;
        Ok(KvCache { kv, len: 0, capacity })
    }

    /// Positions of a request's prompt (§6.3): sos, prompt text + text, task id, prompt speech.
    pub fn prompt_len(&self, req: &LaneRequest) -> usize {
        1 + req.prompt_text_ids.len() + req.text_ids.len() + 1 + req.prompt_speech_tokens.len()
    }

    /// The prompt embeddings of §6.3, `(L0, H)`, after checking the inputs.
    pub fn lm_input(
        &self,
        prompt_text_ids: &[u32],
        text_ids: &[u32],
        prompt_speech_tokens: &[u32],
    ) -> Result<Tensor> {
        if text_ids.is_empty() {
            return Err(ModelError::InvalidInput(
                "the text to speak is empty (no text ids)".into(),
            ));
        }
        let all_text: Vec<u32> = prompt_text_ids.iter().chain(text_ids).copied().collect();
        if !all_text.contains(&END_OF_PROMPT_ID) {
            return Err(ModelError::InvalidInput(format!(
                "prompt text + text must contain <|endofprompt|> (id {END_OF_PROMPT_ID})"
            )));
        }
        let vocab = self.cfg.qwen.vocab_size;
        if let Some(bad) = all_text.iter().find(|&&t| t as usize >= vocab) {
            return Err(ModelError::InvalidInput(format!(
                "text id {bad} is outside the vocabulary of {vocab}"
            )));
        }
        let sts = self.cfg.speech_token_size;
        if let Some(bad) = prompt_speech_tokens.iter().find(|&&t| t as usize >= sts) {
            return Err(ModelError::InvalidInput(format!(
                "prompt speech token {bad} is not below {sts}"
            )));
        }
        let text =
            self.embed_tokens.index_select(&Tensor::new(all_text.as_slice(), &self.device)?, 0)?;
        let mut speech_ids = vec![self.cfg.sos()];
        speech_ids.push(self.cfg.task_id());
        speech_ids.extend_from_slice(prompt_speech_tokens);
        let speech = self
            .speech_embedding
            .index_select(&Tensor::new(speech_ids.as_slice(), &self.device)?, 0)?;
        let sos = speech.narrow(0, 0, 1)?;
        let rest = speech.narrow(0, 1, speech_ids.len() - 1)?; // task_id, prompt speech
        Ok(Tensor::cat(&[&sos, &text, &rest], 0)?)
    }

    /// Runs the prompt of one lane through the backbone, filling `cache` from position 0;
    /// returns the log-probs at the last position, `(speech_vocab,)`.
    pub fn prefill(&self, lm_input: &Tensor, cache: &mut KvCache) -> Result<Tensor> {
        if !cache.is_empty() {
            return Err(ModelError::InvalidInput("prefill needs an empty cache".into()));
        }
        let rows = lm_input.dim(0)?;
        let logp = self.forward(lm_input, &mut [LaneRows { cache, rows }])?;
        Ok(logp.squeeze(0)?)
    }

    /// Feeds one speech token per lane; returns `(lanes, speech_vocab)` log-probs.
    /// `mode` decides whether the lanes' matmuls are stacked (see the module doc).
    pub fn step(
        &self,
        caches: &mut [&mut KvCache],
        tokens: &[u32],
        mode: LaneMode,
    ) -> Result<Tensor> {
        if caches.len() != tokens.len() {
            return Err(ModelError::InvalidInput(format!(
                "{} caches but {} tokens",
                caches.len(),
                tokens.len()
            )));
        }
        self.check_speech_tokens(tokens)?;
        let ids = Tensor::new(tokens, &self.device)?;
        let x = self.speech_embedding.index_select(&ids, 0)?; // (n, H)
        match mode {
            LaneMode::Batched => {
                let mut lanes: Vec<LaneRows> =
                    caches.iter_mut().map(|c| LaneRows { cache: c, rows: 1 }).collect();
                self.forward(&x, &mut lanes)
            }
            LaneMode::Solo => {
                let mut rows = Vec::with_capacity(tokens.len());
                for (i, c) in caches.iter_mut().enumerate() {
                    let xi = x.narrow(0, i, 1)?;
                    rows.push(self.forward(&xi, &mut [LaneRows { cache: c, rows: 1 }])?);
                }
                Ok(Tensor::cat(&rows, 0)?)
            }
        }
    }

    /// The backbone over the stacked new rows of several lanes `x: (Σ rows, H)`; returns the
    /// log-probs of each lane's last row, `(lanes, speech_vocab)`.
    fn forward(&self, x: &Tensor, lanes: &mut [LaneRows]) -> Result<Tensor> {
        for lane in lanes.iter() {
            if lane.cache.len + lane.rows > lane.cache.capacity {
                return Err(ModelError::InvalidInput(format!(
                    "KV cache full: {} + {} positions exceed its capacity of {}",
                    lane.cache.len, lane.rows, lane.cache.capacity
                )));
            }
        }
        let positions: Vec<usize> =
            lanes.iter().flat_map(|l| l.cache.len..l.cache.len + l.rows).collect();
        // One causal mask per lane with several new rows (a prefill), shared by all layers.
        let masks = lanes
            .iter()
            .map(|l| {
                (l.rows > 1).then(|| causal_mask(l.rows, l.cache.len, &self.device)).transpose()
            })
            .collect::<Result<Vec<Option<Tensor>>>>()?;
        let x = self.layers_over(x, &positions, &mut |li, qkv| {
            let mut outs = Vec::with_capacity(lanes.len());
            let mut row = 0;
            for (lane, mask) in lanes.iter_mut().zip(&masks) {
                let n = lane.rows;
                outs.push(self.attend(&qkv.narrow(0, row, n)?, lane.cache, li, mask.as_ref())?);
                row += n;
            }
            Ok(Tensor::cat(&outs, 0)?) // no copy for one lane
        })?;
        let y = last_rows(&x, lanes)?;
        for lane in lanes.iter_mut() {
            lane.cache.len += lane.rows;
        }
        self.head(&y)
    }

    /// One decode step of a joined batch: `tokens` holds one speech token per lane, in the
    /// batch's order; returns `(lanes, speech_vocab)` log-probs. Same arithmetic as
    /// [`Self::step`] per lane, except that attention runs for all lanes at once (see the
    /// module doc).
    pub fn step_batch(&self, batch: &mut LaneBatch, tokens: &[u32]) -> Result<Tensor> {
        self.check_batch_step(batch, tokens)?;
        let x = self.speech_embedding.index_select(&Tensor::new(tokens, &self.device)?, 0)?;
        let step = JoinedStep::new(batch)?;
        let x = self.layers_over(&x, &batch.lens, &mut |li, qkv| {
            self.attend_joined(qkv, batch, li, &step)
        })?;
        batch.advance();
        self.head(&x)
    }

    /// One joined decode step as [`Self::generate`] runs it: replayed from a CUDA graph where
    /// one can be used ([`graph`]), else [`Self::step_batch`]. `slot` holds the batch's graph
    /// from step to step. `(lanes, speech_vocab)` log-probs.
    pub fn decode_step(
        &self,
        batch: &mut LaneBatch,
        tokens: &[u32],
        slot: &mut graph::GraphSlot,
    ) -> Result<Tensor> {
        match self.step_graphed(batch, tokens, slot)? {
            Some(logp) => Ok(logp),
            None => self.step_batch(batch, tokens),
        }
    }

    /// Every token is a speech token (an id of the speech embedding).
    fn check_speech_tokens(&self, tokens: &[u32]) -> Result<()> {
        let sv = self.cfg.speech_vocab();
        match tokens.iter().find(|&&t| t as usize >= sv) {
            Some(bad) => {
                Err(ModelError::InvalidInput(format!("speech token {bad} is not below {sv}")))
            }
            None => Ok(()),
        }
    }

    /// The checks of one joined step: a token per lane, each a speech token, room in the cache.
    fn check_batch_step(&self, batch: &LaneBatch, tokens: &[u32]) -> Result<()> {
        let lanes = batch.lanes();
        if tokens.len() != lanes {
            return Err(ModelError::InvalidInput(format!(
                "{lanes} lanes but {} tokens",
                tokens.len()
            )));
        }
        self.check_speech_tokens(tokens)?;
        if let Some(len) = batch.lens.iter().find(|&&l| l + 1 > batch.capacity) {
            return Err(ModelError::InvalidInput(format!(
                "KV cache full: {len} + 1 positions exceed its capacity of {}",
                batch.capacity
            )));
        }
        Ok(())
    }

    /// The decoder layers over new rows `x: (rows, H)` at RoPE `positions` (one per row);
    /// `attend(layer, qkv)` turns the layer's post-RoPE `(rows, heads + 2·kv, d)` into its
    /// attention output `(rows, heads·d)`, reading and writing the caches.
    fn layers_over(
        &self,
        x: &Tensor,
        positions: &[usize],
        attend: &mut dyn FnMut(usize, &Tensor) -> Result<Tensor>,
    ) -> Result<Tensor> {
        let (cos, sin) = self.rope_tables(positions)?;
        self.layers_with_tables(x, &cos, &sin, attend)
    }

    /// [`Self::layers_over`] with the RoPE tables given (a captured step reads them from
    /// device buffers it does not reallocate).
    fn layers_with_tables(
        &self,
        x: &Tensor,
        cos: &Tensor,
        sin: &Tensor,
        attend: &mut dyn FnMut(usize, &Tensor) -> Result<Tensor>,
    ) -> Result<Tensor> {
        let eps = self.cfg.qwen.rms_norm_eps as f32;
        let qc = &self.cfg.qwen;
        let (nh, nkv, d) = (qc.num_attention_heads, qc.num_key_value_heads, qc.head_dim());
        let (cos, sin) = (cos.clone(), sin.clone());
        let mut x = x.clone();
        let _params_on_device = cache_layout_params(&self.device);
        for (li, layer) in self.layers.iter().enumerate() {
            let h = rms_norm(&x, &layer.input_layernorm, eps)?;
            let a = &layer.self_attn;
            let qkv = a.qkv_proj.forward(&h)?; // (rows, (nh + 2·nkv)·d)
            let qkv = rope_heads(&qkv, nh + 2 * nkv, d, &cos, &sin)?; // (rows, nh + 2·nkv, d)
            let attn = attend(li, &qkv)?;
            x = (x + a.o_proj.forward(&attn)?)?;
            let h = rms_norm(&x, &layer.post_attention_layernorm, eps)?;
            x = (&x + layer.mlp.forward(&h)?)?;
        }
        Ok(x)
    }

    /// Final norm, speech head and log-softmax of one row per lane `(lanes, H)`.
    fn head(&self, y: &Tensor) -> Result<Tensor> {
        let eps = self.cfg.qwen.rms_norm_eps as f32;
        let y = rms_norm(y, &self.norm, eps)?; // (lanes, H)
        let logits = self.llm_decoder.forward(&y)?; // (lanes, V)
        log_softmax_rows(&logits)
    }

    /// RoPE tables for rows at `positions`: cos and sin `(rows, heads + 2·kv, head_dim/2)`, one
    /// entry per head of the fused q|k|v output (see [`rope_heads`]). q and k heads get their
    /// row's angles `p·θ_i` (f32, as HF computes them); v heads get cos 1, sin 0, which leaves
    /// them exactly as they are (x·1 − y·0 = x, x·0 + y·1 = y).
    fn rope_tables(&self, positions: &[usize]) -> Result<(Tensor, Tensor)> {
        let (cos, sin, shape) = self.rope_host(positions);
        Ok((
            Tensor::from_vec(cos, shape, &self.device)?,
            Tensor::from_vec(sin, shape, &self.device)?,
        ))
    }

    /// [`Self::rope_tables`] on the host: cos, sin and their shape.
    fn rope_host(&self, positions: &[usize]) -> (Vec<f32>, Vec<f32>, (usize, usize, usize)) {
        let qc = &self.cfg.qwen;
        let (rotated, kept) =
            (qc.num_attention_heads + qc.num_key_value_heads, qc.num_key_value_heads);
        let half = self.inv_freq.len();
        let per_row = (rotated + kept) * half;
        let mut cos = Vec::with_capacity(positions.len() * per_row);
        let mut sin = Vec::with_capacity(positions.len() * per_row);
        for &p in positions {
            let angles: Vec<f32> = self.inv_freq.iter().map(|&f| p as f32 * f).collect();
            let (c, s): (Vec<f32>, Vec<f32>) = angles.iter().map(|a| (a.cos(), a.sin())).unzip();
            for _ in 0..rotated {
                cos.extend_from_slice(&c);
                sin.extend_from_slice(&s);
            }
            cos.extend(std::iter::repeat_n(1f32, kept * half));
            sin.extend(std::iter::repeat_n(0f32, kept * half));
        }
        (cos, sin, (positions.len(), rotated + kept, half))
    }

    /// Attention of a joined batch, one new row per lane: `qkv` `(lanes, heads + 2·kv, d)`
    /// post-RoPE (q scaled) → `(lanes, heads·d)`. Writes every lane's k|v at its own position
    /// in one op, then attends over the longest lane's length, masked per lane.
    fn attend_joined(
        &self,
        qkv: &Tensor,
        batch: &LaneBatch,
        layer: usize,
        step: &JoinedStep,
    ) -> Result<Tensor> {
        let qc = &self.cfg.qwen;
        let (nh, nkv, d) = (qc.num_attention_heads, qc.num_key_value_heads, qc.head_dim());
        let groups = nh / nkv;
        let lanes = batch.lanes();
        let new_kv = qkv.narrow(1, nh, 2 * nkv)?; // (lanes, 2·nkv, d)
        let cache = &batch.kv[layer]; // (2, lanes·nkv, capacity, d)
        match &step.write_rows {
            // One lane (not captured): (1, 2·nkv, d) is contiguous; write it at its position.
            None => cache.slice_set(&new_kv.reshape((2, nkv, 1, d))?, 2, batch.lens[0])?,
            // All k rows then all v rows, lane-major, as the cache holds them.
            Some(rows) => {
                let src = new_kv
                    .reshape((lanes, 2, nkv, d))?
                    .transpose(0, 1)?
                    .contiguous()?
                    .reshape((2 * lanes * nkv, 1, d))?;
                cache.reshape((2 * lanes * nkv, batch.capacity, d))?.scatter_set(rows, &src, 1)?;
            }
        }
        let cached = cache.narrow(2, 0, step.len)?; // (2, lanes·nkv, len, d)
        let kc = cached.get(0)?; // (lanes·nkv, len, d)
        let q = qkv.narrow(1, 0, nh)?; // (lanes, nh, d), a view for one lane
        let q = if lanes == 1 { q } else { q.contiguous()? };
        // Query head h of a lane uses the lane's KV head h / groups (heads grouped contiguously).
        let q = q.reshape((lanes * nkv, groups, d))?;
        let mut scores = q.matmul(&kc.t()?)?; // (lanes·nkv, groups, len), scaled via q
        if let Some(mask) = &step.mask {
            scores = scores
                .reshape((lanes, nkv, groups, step.len))?
                .broadcast_add(mask)?
                .reshape((lanes * nkv, groups, step.len))?;
        }
        let out = match kernels::softmax_values(&scores, cache)? {
            Some(out) => out, // step.len ≤ capacity: the kernel reads the first len values
            None => candle_nn::ops::softmax_last_dim(&scores)?.matmul(&cached.get(1)?)?,
        }; // (lanes·nkv, groups, d)
        Ok(out.reshape((lanes, nh * d))?)
    }

    /// GQA attention of one lane's `t` new rows over its cache (k and v are written here).
    /// qkv: `(t, heads + 2·kv, d)` with q and k post-RoPE (q already scaled by 1/√d)
    /// → `(t, heads·d)`. `mask`: the lane's [`causal_mask`] when `t > 1`.
    fn attend(
        &self,
        qkv: &Tensor,
        cache: &mut KvCache,
        layer: usize,
        mask: Option<&Tensor>,
    ) -> Result<Tensor> {
        let qc = &self.cfg.qwen;
        let (nh, nkv, d) = (qc.num_attention_heads, qc.num_key_value_heads, qc.head_dim());
        let groups = nh / nkv;
        let t = qkv.dim(0)?;
        let pos = cache.len;
        // (t, n, d) → (n, t, d). candle's contiguity test ignores size-1 dims, so at t = 1
        // (decode) this is a view, not a copy.
        let heads = |x: &Tensor| x.transpose(0, 1)?.contiguous();
        let q = heads(&qkv.narrow(1, 0, nh)?)?; // (nh, t, d)
        // (2·nkv, t, d): k heads, then v heads
        let kv = heads(&qkv.narrow(1, nh, 2 * nkv)?)?.reshape((2, nkv, t, d))?;
        cache.kv[layer].slice_set(&kv, 2, pos)?;
        let len = pos + t;
        let cached = cache.kv[layer].narrow(2, 0, len)?; // (2, nkv, len, d)
        let (kc, vc) = (cached.get(0)?, cached.get(1)?); // (nkv, len, d)
        // Query head h uses KV head h / groups: heads are grouped contiguously.
        let q = q.reshape((nkv, groups * t, d))?;
        let mut scores = q.matmul(&kc.t()?)?; // (nkv, groups·t, len), already scaled via q
        if let Some(mask) = mask {
            // (t, len)
            scores = scores.reshape((nkv, groups, t, len))?.broadcast_add(mask)?.reshape((
                nkv,
                groups * t,
                len,
            ))?;
        }
        let probs = candle_nn::ops::softmax_last_dim(&scores)?;
        let out = probs.matmul(&vc)?; // (nkv, groups·t, d)
        // Views (no copy) at t = 1, like `heads`.
        Ok(out.reshape((nh, t, d))?.transpose(0, 1)?.reshape((t, nh * d))?)
    }

    /// Decodes several segments together (at most `opts.max_lanes` at a time; a finished lane's
    /// slot is refilled from the queue). Results are in request order.
    pub fn generate(
        &self,
        requests: &[LaneRequest],
        opts: &GenerateOptions,
    ) -> Result<Vec<Generated>> {
        self.generate_streaming(requests, opts, &mut |_, _| {})
    }

    /// [`Self::generate`], calling `on_done(request index, result)` the moment each lane
    /// finishes (its tokens are final then), so a caller can use them while the other lanes
    /// are still decoding.
    pub fn generate_streaming(
        &self,
        requests: &[LaneRequest],
        opts: &GenerateOptions,
        on_done: &mut dyn FnMut(usize, &Generated),
    ) -> Result<Vec<Generated>> {
        let max_lanes = opts.max_lanes.max(1);
        let mut results: Vec<Option<Generated>> = (0..requests.len()).map(|_| None).collect();
        let mut queue = 0usize;
        let mut active: Vec<LaneState> = Vec::new();
        // Batched: the active lanes' caches joined, in `active` order (request indices in
        // `joined_ids`); lanes join once prefilled and leave when they finish.
        let capacity = requests.iter().map(|r| self.prompt_len(r) + r.max_len).max().unwrap_or(1);
        let mut joined: Option<LaneBatch> = None;
        let mut joined_ids: Vec<usize> = Vec::new();
        let mut graph = graph::GraphSlot::default();
        loop {
            while active.len() < max_lanes && queue < requests.len() {
                active.push(LaneState::start(self, queue, &requests[queue], capacity)?);
                queue += 1;
            }
            if active.is_empty() {
                break;
            }
            // Sample every lane from its pending log-probs; finished lanes leave.
            let mut tokens = Vec::with_capacity(active.len());
            let mut i = 0;
            while i < active.len() {
                let req = &requests[active[i].index];
                match active[i].sample(self, req) {
                    Some(tok) if active[i].out.step_choice.len() < req.max_len => {
                        tokens.push(tok);
                        i += 1;
                    }
                    _ => {
                        let done = active.remove(i);
                        let index = done.index;
                        let generated = done.finish();
                        on_done(index, &generated);
                        results[index] = Some(generated);
                    }
                }
            }
            if active.is_empty() {
                continue;
            }
            let logp = match opts.mode {
                LaneMode::Batched => {
                    let batch = sync_joined(&mut joined, &mut joined_ids, &mut active)?;
                    self.decode_step(batch, &tokens, &mut graph)?
                }
                LaneMode::Solo => {
                    let mut caches: Vec<&mut KvCache> =
                        active.iter_mut().filter_map(|l| l.cache.as_mut()).collect();
                    self.step(&mut caches, &tokens, opts.mode)?
                }
            };
            let rows = logp.to_vec2::<f32>()?; // the one device→host move per step
            for (lane, row) in active.iter_mut().zip(rows) {
                lane.logp = row;
            }
        }
        results
            .into_iter()
            .enumerate()
            .map(|(i, r)| {
                r.ok_or_else(|| ModelError::InvalidInput(format!("lane {i} did not finish")))
            })
            .collect()
    }
}

/// Brings the joined batch in line with `active` (lanes only ever leave from anywhere and join
/// at the end): finished lanes are dropped from it, newly prefilled ones moved into it.
fn sync_joined<'a>(
    joined: &'a mut Option<LaneBatch>,
    ids: &mut Vec<usize>,
    active: &mut [LaneState],
) -> Result<&'a mut LaneBatch> {
    let keep: Vec<bool> = ids.iter().map(|id| active.iter().any(|l| l.index == *id)).collect();
    if let Some(batch) = joined.as_mut() {
        batch.retain(&keep)?;
    }
    ids.retain(|id| active.iter().any(|l| l.index == *id));
    for lane in active.iter_mut() {
        if let Some(cache) = lane.cache.take() {
            match joined.as_mut() {
                Some(batch) => batch.push(cache)?,
                None => *joined = Some(LaneBatch::join(vec![cache])?),
            }
            ids.push(lane.index);
        }
    }
    let order: Vec<usize> = active.iter().map(|l| l.index).collect();
    if *ids != order {
        return Err(ModelError::InvalidInput(format!(
            "joined lanes {ids:?} out of step with the active lanes {order:?}"
        )));
    }
    joined.as_mut().ok_or_else(|| ModelError::InvalidInput("no lane to decode".into()))
}

/// RoPE over every head of every row at once: `qkv` `(rows, n_heads·d)` is viewed as
/// `(rows, 1, n_heads, d)`, so that rope's per-batch-entry, per-"position" tables run over
/// (row, head) and each head gets its own entry of `cos`/`sin` `(rows, n_heads, d/2)` (see
/// `SpeechLm::rope_tables`: identity for the v heads). One kernel and no copy for every lane's
/// q and k, with the same per-element arithmetic as rotating each lane's q and k separately.
/// Returns `(rows, n_heads, d)`.
fn rope_heads(
    qkv: &Tensor,
    n_heads: usize,
    d: usize,
    cos: &Tensor,
    sin: &Tensor,
) -> Result<Tensor> {
    let rows = qkv.dim(0)?;
    let x = qkv.reshape((rows, 1, n_heads, d))?;
    Ok(candle_nn::rotary_emb::rope(&x, cos, sin)?.squeeze(1)?)
}

/// What one step of a joined batch shares across its layers.
struct JoinedStep {
    /// Positions attended: the longest lane's, after this step's write.
    len: usize,
    /// For more than one lane: the position each cache row is written at, `(2·lanes·kv, 1, d)`.
    write_rows: Option<Tensor>,
    /// When the lanes' lengths differ: `(lanes, 1, 1, len)`, 0 up to each lane's new position
    /// and −∞ beyond it.
    mask: Option<Tensor>,
}

impl JoinedStep {
    /// A plain joined step: attends up to the longest lane; a scatter only for several lanes,
    /// a mask only when their lengths differ.
    fn new(batch: &LaneBatch) -> Result<Self> {
        let len = batch.lens.iter().max().map_or(1, |l| l + 1);
        let write_rows = (batch.lanes() > 1).then(|| batch.write_rows()).transpose()?;
        let ragged = batch.lens.iter().any(|&l| l + 1 != len);
        let mask = ragged.then(|| batch.mask(len)).transpose()?;
        Ok(Self { len, write_rows, mask })
    }
}

/// On CUDA, candle uploads the dims and strides of every op on a strided view (a bias
/// broadcast, the `narrow`ed gate and up halves: ~3 per layer) with a pageable host→device copy
/// per op. While the returned guard lives, candle keeps those parameter vectors on the device,
/// keyed by value, and reuses them: the layer loop then uploads nothing per op. Only the layer
/// loop holds it: every host→device upload inside it is such a parameter vector (masks and RoPE
/// tables are uploaded before), so the cache is bounded by the distinct shapes, and the values
/// computed are the same. The cache is per device and thread (the LM's).
fn cache_layout_params(device: &Device) -> Option<Box<dyn std::any::Any>> {
    match device {
        #[cfg(feature = "cuda")]
        Device::Cuda(dev) => Some(Box::new(dev.enable_cuda_graph_htod_cache())),
        _ => None,
    }
}

/// The last row of each lane, `(lanes, H)`; `x` itself when every lane has one row (decode).
fn last_rows(x: &Tensor, lanes: &[LaneRows]) -> Result<Tensor> {
    if lanes.iter().all(|l| l.rows == 1) {
        return Ok(x.clone());
    }
    let mut last = Vec::with_capacity(lanes.len());
    let mut row = 0;
    for lane in lanes {
        row += lane.rows;
        last.push(x.narrow(0, row - 1, 1)?);
    }
    Ok(Tensor::cat(&last, 0)?)
}

/// `(t, pos + t)` additive causal mask: row i sees keys `0..=pos+i`.
fn causal_mask(t: usize, pos: usize, device: &Device) -> Result<Tensor> {
    let len = pos + t;
    let data: Vec<f32> = (0..t)
        .flat_map(|i| (0..len).map(move |j| if j <= pos + i { 0.0 } else { f32::NEG_INFINITY }))
        .collect();
    Ok(Tensor::from_vec(data, (t, len), device)?)
}

/// RMSNorm over the last dimension: the LM's own kernel on CUDA ([`kernels::rms_norm`]),
/// candle's elsewhere.
fn rms_norm(x: &Tensor, alpha: &Tensor, eps: f32) -> candle::Result<Tensor> {
    match kernels::rms_norm(x, alpha, eps)? {
        Some(y) => Ok(y),
        None => candle_nn::ops::rms_norm(x, alpha, eps),
    }
}

/// Row-wise log-softmax in f32: `x − max − log Σ exp(x − max)`.
fn log_softmax_rows(x: &Tensor) -> Result<Tensor> {
    let shifted = x.broadcast_sub(&x.max_keepdim(D::Minus1)?)?;
    let lse = shifted.exp()?.sum_keepdim(D::Minus1)?.log()?;
    Ok(shifted.broadcast_sub(&lse)?)
}

/// One segment to decode.
#[derive(Debug, Clone)]
pub struct LaneRequest {
    pub prompt_text_ids: Vec<u32>,
    pub text_ids: Vec<u32>,
    pub prompt_speech_tokens: Vec<u32>,
    /// Seeds this segment's own random stream (`sampling::segment_rng`).
    pub seed: u64,
    pub sampling: SamplingConfig,
    /// Steps below this mask the min-length ids (upstream `2·N_text`).
    pub min_len: usize,
    /// At most this many decode steps (upstream `20·N_text`).
    pub max_len: usize,
    /// Benchmarks: never stop on a stop id; decode exactly `max_len` tokens (stop ids are fed
    /// back like any other token).
    pub ignore_stop: bool,
    /// Keep every step's unmasked log-prob row in [`Generated::step_logp`] (parity).
    pub record_logp: bool,
}

impl LaneRequest {
    /// A request with upstream's length rule (`min_len = 2·N_text`, `max_len = 20·N_text`).
    pub fn new(
        prompt_text_ids: Vec<u32>,
        text_ids: Vec<u32>,
        prompt_speech_tokens: Vec<u32>,
        seed: u64,
    ) -> Self {
        let n = text_ids.len();
        Self {
            prompt_text_ids,
            text_ids,
            prompt_speech_tokens,
            seed,
            sampling: SamplingConfig::default(),
            min_len: 2 * n,
            max_len: 20 * n,
            ignore_stop: false,
            record_logp: false,
        }
    }
}

/// Options of [`SpeechLm::generate`].
#[derive(Debug, Clone, Copy)]
pub struct GenerateOptions {
    pub max_lanes: usize,
    pub mode: LaneMode,
}

impl Default for GenerateOptions {
    fn default() -> Self {
        Self { max_lanes: DEFAULT_MAX_LANES, mode: LaneMode::Batched }
    }
}

/// Why a lane ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    StopToken(u32),
    MaxLen,
}

/// The result of one segment.
#[derive(Debug, Clone)]
pub struct Generated {
    /// Tokens for the flow: after the silent-run filter (§6.6).
    pub tokens: Vec<u32>,
    /// Every token the LM emitted (its history), stop id excluded.
    pub lm_tokens: Vec<u32>,
    /// The id chosen at each step, including a final stop id.
    pub step_choice: Vec<u32>,
    pub stop: StopReason,
    /// Unmasked log-probs of each step (`record_logp` only).
    pub step_logp: Vec<Vec<f32>>,
    pub prompt_len: usize,
    pub kv_capacity: usize,
    pub kv_allocated_bytes: usize,
}

/// A lane in flight inside [`SpeechLm::generate`].
struct LaneState {
    index: usize,
    /// Its own cache until it joins a [`LaneBatch`] (batched decoding).
    cache: Option<KvCache>,
    logp: Vec<f32>,
    rng: rand_chacha::ChaCha8Rng,
    filter: SilentFilter,
    out: Generated,
}

impl LaneState {
    /// Prefills the lane's prompt into a cache of `capacity` positions (at least its prompt
    /// and `max_len`; lanes decoded together share one capacity).
    fn start(lm: &SpeechLm, index: usize, req: &LaneRequest, capacity: usize) -> Result<Self> {
        let input = lm.lm_input(&req.prompt_text_ids, &req.text_ids, &req.prompt_speech_tokens)?;
        let prompt_len = input.dim(0)?;
        let capacity = capacity.max(prompt_len + req.max_len);
        let mut cache = lm.new_cache(capacity)?;
        let logp = lm.prefill(&input, &mut cache)?.to_vec1::<f32>()?;
        let kv_allocated_bytes = cache.allocated_bytes();
        Ok(Self {
            index,
            cache: Some(cache),
            logp,
            rng: segment_rng(req.seed),
            filter: SilentFilter::default(),
            out: Generated {
                tokens: Vec::new(),
                lm_tokens: Vec::new(),
                step_choice: Vec::new(),
                stop: StopReason::MaxLen,
                step_logp: Vec::new(),
                prompt_len,
                kv_capacity: capacity,
                kv_allocated_bytes,
            },
        })
    }

    /// Chooses this step's token from `self.logp`; `None` when the lane is done.
    fn sample(&mut self, lm: &SpeechLm, req: &LaneRequest) -> Option<u32> {
        let step = self.out.step_choice.len();
        if step >= req.max_len {
            return None; // stop stays MaxLen
        }
        if req.record_logp {
            self.out.step_logp.push(self.logp.clone());
        }
        let ignore_eos = step < req.min_len;
        let tok = sampling_ids(
            &mut self.logp,
            &self.out.lm_tokens,
            &req.sampling,
            ignore_eos,
            lm.cfg.speech_token_size,
            &mut self.rng,
        );
        self.out.step_choice.push(tok);
        if lm.cfg.is_stop(tok) && !req.ignore_stop {
            self.out.stop = StopReason::StopToken(tok);
            return None;
        }
        self.out.lm_tokens.push(tok);
        if self.filter.keep(tok) {
            self.out.tokens.push(tok);
        }
        Some(tok)
    }

    fn finish(self) -> Generated {
        self.out
    }
}
