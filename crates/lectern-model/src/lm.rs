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
//!   On CUDA a joined step is captured as a CUDA graph and replayed (`graph`): one launch
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

use candle::{D, DType, Device, Module, Tensor};

mod cache;
mod generate;
mod graph;
use crate::linear::Linear;
pub use crate::precision::LmPrecision;
pub use cache::{KvCache, LaneBatch};
pub use generate::{GenerateOptions, Generated, LaneRequest, StopReason};
pub use graph::{GraphSlot, GraphStats, graph_stats};
use lectern_kernels::cuda::lm as kernels;

use super::config::{LmConfig, ModelConfig, ModelFiles};
use super::weights::{Checkpoint, Weights};
use crate::error::{ModelError, Result};

/// `<|endofprompt|>`: upstream asserts it occurs in `prompt_text ++ text`.
pub const END_OF_PROMPT_ID: u32 = 151_646;
/// Default number of lanes decoded together.
pub const DEFAULT_MAX_LANES: usize = 8;

/// How lanes share the work of one decode step (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LaneMode {
    #[default]
    Batched,
    Solo,
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
    /// `residual + down(silu(gate)·up)` of `gate_up` = `[gate | up]` (the projection of the
    /// normed rows): in one kernel where Lectern's decode rows kernel runs the down projection
    /// ([`kernels::Fused::SwigluAdded`], the same bits), else SwiGLU, projection and add apart.
    fn down_added(&self, gate_up: &Tensor, residual: &Tensor) -> Result<Tensor> {
        let fused = kernels::Fused::SwigluAdded { residual };
        if let Some(w) = self.down_proj.decode_kernel_weight()
            && let Some(y) = kernels::rows_matmul_fused(gate_up, w, fused)?
        {
            return Ok(y);
        }
        let i = self.intermediate;
        let gate = candle_nn::ops::silu(&gate_up.narrow(1, 0, i)?)?;
        Ok((residual + self.down_proj.forward(&(gate * gate_up.narrow(1, i, i)?)?)?)?)
    }
}

/// An RMSNorm and the projection of its output: the norm's weight, and for the fused decode
/// kernel ([`kernels::Fused::Normed`]) that weight followed by the projection's bias.
#[derive(Debug, Clone)]
struct NormedProjection {
    alpha: Tensor,
    alpha_bias: Tensor,
    has_bias: bool,
}

impl NormedProjection {
    fn new(alpha: Tensor, projection: &Linear) -> Result<Self> {
        let (alpha_bias, has_bias) = match projection.bias() {
            Some(b) => (Tensor::cat(&[&alpha, b], 0)?, true),
            None => (alpha.clone(), false),
        };
        Ok(Self { alpha, alpha_bias, has_bias })
    }

    /// `projection(RMSNorm(x))`: in one kernel where Lectern's decode rows kernel runs the
    /// projection (the same bits as the two apart), else the norm then the projection.
    fn apply(&self, x: &Tensor, projection: &Linear, eps: f32, kernels: bool) -> Result<Tensor> {
        let fused =
            kernels::Fused::Normed { alpha_bias: &self.alpha_bias, has_bias: self.has_bias, eps };
        if let Some(w) = projection.decode_kernel_weight()
            && let Some(y) = kernels::rows_matmul_fused(x, w, fused)?
        {
            return Ok(y);
        }
        Ok(projection.forward(&rms_norm(x, &self.alpha, eps, kernels)?)?)
    }
}

/// `residual + projection(x)`: in one kernel where Lectern's decode rows kernel runs the
/// projection (the same bits), else the projection then the add.
fn projection_added(projection: &Linear, x: &Tensor, residual: &Tensor) -> Result<Tensor> {
    if let Some(w) = projection.decode_kernel_weight()
        && let Some(y) = kernels::rows_matmul_fused(x, w, kernels::Fused::Added { residual })?
    {
        return Ok(y);
    }
    Ok((residual + projection.forward(x)?)?)
}

#[derive(Debug, Clone)]
struct DecoderLayer {
    self_attn: Attention,
    mlp: Mlp,
    /// `input_layernorm` before the q|k|v projection.
    input_norm: NormedProjection,
    /// `post_attention_layernorm` before the gate|up projection.
    post_attention_norm: NormedProjection,
}

/// One lane of a decode step: its cache and the number of new rows it contributes.
struct LaneRows<'a> {
    cache: &'a mut KvCache,
    rows: usize,
}

/// The CosyVoice3 speech LM with its Qwen2 backbone.
#[derive(Debug, Clone)]
pub struct SpeechLm {
    cfg: LmConfig,
    precision: LmPrecision,
    device: Device,
    embed_tokens: Tensor,     // (vocab, H)
    speech_embedding: Tensor, // (6761, H)
    layers: Vec<DecoderLayer>,
    /// The final norm before the speech head.
    norm: NormedProjection,
    llm_decoder: Linear,
    inv_freq: Vec<f32>,
    /// Joined decode steps through CUDA graphs (see [`graph`]); only on CUDA.
    decode_graphs: bool,
    /// Lectern's own kernels where they apply ([`SpeechLm::set_kernels`]).
    kernels: bool,
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
                Linear::load(&a.pp("q_proj"), h, h, true)?.scaled(attn_scale)?,
                Linear::load(&a.pp("k_proj"), kv_dim, h, true)?,
                Linear::load(&a.pp("v_proj"), kv_dim, h, true)?,
            ];
            let gate_up = vec![
                Linear::load(&p.pp("gate_proj"), inter, h, false)?,
                Linear::load(&p.pp("up_proj"), inter, h, false)?,
            ];
            let qkv_proj = Linear::stacked(&qkv)?.for_lm(precision)?;
            let gate_up_proj = Linear::stacked(&gate_up)?.for_lm(precision)?;
            layers.push(DecoderLayer {
                input_norm: NormedProjection::new(
                    l.get("input_layernorm.weight", &[h])?,
                    &qkv_proj,
                )?,
                post_attention_norm: NormedProjection::new(
                    l.get("post_attention_layernorm.weight", &[h])?,
                    &gate_up_proj,
                )?,
                self_attn: Attention {
                    qkv_proj,
                    o_proj: Linear::load(&a.pp("o_proj"), h, h, false)?.for_lm(precision)?,
                },
                mlp: Mlp {
                    gate_up_proj,
                    down_proj: Linear::load(&p.pp("down_proj"), h, inter, false)?
                        .for_lm(precision)?,
                    intermediate: inter,
                },
            });
        }
        let sv = cfg.speech_vocab();
        let inv_freq = (0..hd / 2)
            .map(|i| 1.0 / (q.rope_theta as f32).powf((2 * i) as f32 / hd as f32))
            .collect();
        let llm_decoder = Linear::load(&w.pp("llm_decoder"), sv, h, false)?.for_lm(precision)?;
        Ok(Self {
            cfg: cfg.clone(),
            precision,
            device: w.device(),
            embed_tokens: m.get("embed_tokens.weight", &[q.vocab_size, h])?,
            speech_embedding: w.get("speech_embedding.weight", &[sv, h])?,
            layers,
            norm: NormedProjection::new(m.get("norm.weight", &[h])?, &llm_decoder)?,
            llm_decoder,
            inv_freq,
            decode_graphs: true,
            kernels: true,
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

    /// Runs Lectern's own CUDA kernels ([`kernels`]) where they apply (`on`, the default), or
    /// candle's ops only (benchmarks compare the two; within the fixture gates either way).
    pub fn set_kernels(&mut self, on: bool) {
        self.kernels = on;
        for layer in &mut self.layers {
            layer.self_attn.qkv_proj.set_kernels(on);
            layer.self_attn.o_proj.set_kernels(on);
            layer.mlp.gate_up_proj.set_kernels(on);
            layer.mlp.down_proj.set_kernels(on);
        }
        self.llm_decoder.set_kernels(on);
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
    /// one can be used (`graph`), else [`Self::step_batch`]. `slot` holds the batch's graph
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
            let a = &layer.self_attn;
            // (rows, (nh + 2·nkv)·d)
            let qkv = layer.input_norm.apply(&x, &a.qkv_proj, eps, self.kernels)?;
            let qkv = rope_heads(&qkv, nh + 2 * nkv, d, &cos, &sin)?; // (rows, nh + 2·nkv, d)
            let attn = attend(li, &qkv)?;
            x = projection_added(&a.o_proj, &attn, &x)?;
            let gate_up =
                layer.post_attention_norm.apply(&x, &layer.mlp.gate_up_proj, eps, self.kernels)?;
            x = layer.mlp.down_added(&gate_up, &x)?;
        }
        Ok(x)
    }

    /// Final norm, speech head and log-softmax of one row per lane `(lanes, H)`.
    fn head(&self, y: &Tensor) -> Result<Tensor> {
        let eps = self.cfg.qwen.rms_norm_eps as f32;
        let logits = self.norm.apply(y, &self.llm_decoder, eps, self.kernels)?; // (lanes, V)
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
        let fused = match self.kernels {
            true => kernels::softmax_values(&scores, cache)?,
            false => None,
        };
        let out = match fused {
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

/// RMSNorm over the last dimension: with `use_kernels` the LM's own kernel on CUDA
/// ([`kernels::rms_norm`]), candle's elsewhere.
fn rms_norm(x: &Tensor, alpha: &Tensor, eps: f32, use_kernels: bool) -> candle::Result<Tensor> {
    if use_kernels && let Some(y) = kernels::rms_norm(x, alpha, eps)? {
        return Ok(y);
    }
    candle_nn::ops::rms_norm(x, alpha, eps)
}

/// Row-wise log-softmax in f32: `x − max − log Σ exp(x − max)`.
fn log_softmax_rows(x: &Tensor) -> Result<Tensor> {
    let shifted = x.broadcast_sub(&x.max_keepdim(D::Minus1)?)?;
    let lse = shifted.exp()?.sum_keepdim(D::Minus1)?.log()?;
    Ok(shifted.broadcast_sub(&lse)?)
}
