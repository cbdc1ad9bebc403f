//! The flow: speech tokens → 80-bin mel (`CausalMaskedDiffWithDiT.inference`, upstream
//! `cosyvoice/flow/flow.py`; spec/COSYVOICE3.md §7, §13).
//!
//! Pipeline of one call: speaker vector (L2-normalised, `spk_embed_affine_layer`) → token
//! embedding of `prompt ⧺ target` → pre-lookahead layer (3-token look-ahead) → ×2 frame repeat
//! (`mu`) → `cond` holding the prompt mel in the first 2P frames → Euler/CFG over the DiT
//! ([`cfm`], [`dit`]) starting from a fixed noise prefix → the 2N target frames.
//!
//! # Flow groups
//!
//! [`CausalMaskedDiffWithDiT::decode_group`] runs **one** flow call over several segments'
//! tokens concatenated after one prompt and cuts the mel at exact `2·n_k` frame boundaries.
//! This saves re-encoding the prompt per segment, but **the composition of the group changes
//! every segment's result** (spec §13):
//! * non-streaming DiT attention is global, so frames attend across segment boundaries;
//! * the noise is sliced positionally from the fixed buffer, so a segment's frames take the
//!   noise at its offset inside the group, not from index 0;
//! * the pre-lookahead layer sees the next segment's first 3 tokens instead of zero padding.
//!
//! A group of one segment is exactly upstream's per-segment call. To regenerate a take bit for
//! bit, record its [`GroupRecord`] (all segment token counts of the group, the segment's place
//! in it, NFE, noise source and CFG rate) alongside the tokens and the voice prompt.

pub mod cfm;
pub mod dit;
#[cfg(test)]
mod kernel_agreement;
pub mod tf32x3;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use candle::{DType, Device, Module, Tensor};

use self::cfm::{FlowCond, cosine_schedule, solve_euler};
use self::dit::DiT;
pub use self::tf32x3::FlowMatmul;
use super::config::{FlowConfig, MAX_FLOW_FRAMES, N_MELS};
use super::noise::flow_noise;
use super::weights::{Checkpoint, Weights};
use crate::error::{ModelError, Result};
use crate::linear::Linear;

/// NFE upstream hard-codes in `flow.inference`.
pub const DEFAULT_NFE: usize = 10;
/// Floor of the speaker-vector L2 norm (`F.normalize` eps).
const SPK_NORM_EPS: f64 = 1e-12;
/// Negative slope of the pre-lookahead layer's leaky ReLU.
const PRE_LOOKAHEAD_SLOPE: f64 = 0.01;

/// Where the fixed flow noise `(1, 80, 15000)` comes from.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum NoiseSource {
    /// PyTorch's seed-0 `randn` rebuilt from MT19937 ([`flow_noise`]; ≤ 1e-5 from upstream).
    Rebuilt,
    /// An exact dump (a safetensors file whose only or `rand_noise` tensor is `(1, 80, 15000)`).
    File(PathBuf),
}

impl NoiseSource {
    /// The buffer `(1, 80, 15000)` on `device`.
    pub fn load(&self, device: &Device) -> Result<Tensor> {
        let shape = [1, N_MELS, MAX_FLOW_FRAMES];
        match self {
            Self::Rebuilt => {
                Ok(Tensor::from_vec(flow_noise(), (1, N_MELS, MAX_FLOW_FRAMES), device)?)
            }
            Self::File(path) => {
                let ckpt = Checkpoint::load(path, device)?;
                let name = if ckpt.contains("rand_noise") {
                    "rand_noise".to_string()
                } else {
                    let names: Vec<&str> = ckpt.names().collect();
                    match names.as_slice() {
                        [one] => (*one).to_string(),
                        _ => {
                            return Err(ModelError::CorruptFile {
                                path: path.clone(),
                                reason: "expected a tensor named `rand_noise`".into(),
                            });
                        }
                    }
                };
                Weights::root(Arc::new(ckpt)).get(&name, &shape)
            }
        }
    }
}

/// The voice prompt as the flow sees it.
#[derive(Debug, Clone)]
pub struct FlowPrompt {
    /// Prompt speech tokens (P).
    pub prompt_token: Vec<u32>,
    /// Prompt mel, channel-last `(1, 2P, 80)` as the frontend hands it over.
    pub prompt_feat: Tensor,
    /// Raw speaker embedding `(1, 192)` (the flow normalises it).
    pub embedding: Tensor,
}

/// Solver settings of one flow call.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SolverOptions {
    /// Euler steps (estimator calls, each a CFG batch of two).
    pub nfe: usize,
    /// Guidance rate (`inference_cfg_rate`, 0.7).
    pub cfg_rate: f64,
}

/// The decoder inputs of one flow call (spec §7.1–7.4); also the parity taps.
#[derive(Debug, Clone)]
pub struct FlowInputs {
    /// Pre-lookahead output `(1, M, 80)`, M = P + N.
    pub h: Tensor,
    /// `(1, 80)`.
    pub spks: Tensor,
    /// `(1, 80, 2M)`.
    pub mu: Tensor,
    /// `(1, 80, 2M)`: prompt mel in the first 2P frames, zeros after.
    pub cond: Tensor,
    /// 2P.
    pub prompt_frames: usize,
}

/// What a take must record to regenerate one segment's mel bit for bit from a flow group
/// (besides the tokens and the voice prompt).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GroupRecord {
    /// Token counts of every segment in the group, in order.
    pub segment_tokens: Vec<usize>,
    /// Index of this segment within the group.
    pub segment_index: usize,
    /// Offset of this segment's first token inside the group's target tokens.
    pub offset_tokens: usize,
    /// Euler steps.
    pub nfe: usize,
    /// Fixed-noise buffer used.
    pub noise: NoiseSource,
    /// CFG rate, as the bits of the f64 (so the record is `Eq`).
    pub cfg_rate_bits: u64,
}

impl GroupRecord {
    /// The records of every segment of a group.
    pub fn for_group(
        segment_tokens: &[usize],
        opts: SolverOptions,
        noise: &NoiseSource,
    ) -> Vec<Self> {
        let mut offset_tokens = 0;
        segment_tokens
            .iter()
            .enumerate()
            .map(|(segment_index, n)| {
                let rec = Self {
                    segment_tokens: segment_tokens.to_vec(),
                    segment_index,
                    offset_tokens,
                    nfe: opts.nfe,
                    noise: noise.clone(),
                    cfg_rate_bits: opts.cfg_rate.to_bits(),
                };
                offset_tokens += n;
                rec
            })
            .collect()
    }

    pub fn cfg_rate(&self) -> f64 {
        f64::from_bits(self.cfg_rate_bits)
    }

    /// Frames of this segment's mel (2 per token).
    pub fn frames(&self, token_mel_ratio: usize) -> usize {
        self.segment_tokens[self.segment_index] * token_mel_ratio
    }
}

/// `PreLookaheadLayer` (finalize = true): right pad 3, conv1 k4, leaky ReLU 0.01, left pad 2,
/// conv2 k3, residual.
#[derive(Debug, Clone)]
struct PreLookaheadLayer {
    conv1_weight: Tensor, // (channels, 80, pre_lookahead_len + 1)
    conv1_bias: Tensor,   // (1, channels, 1)
    conv2_weight: Tensor, // (80, channels, 3)
    conv2_bias: Tensor,   // (1, 80, 1)
    pre_lookahead_len: usize,
}

impl PreLookaheadLayer {
    fn new(cfg: &FlowConfig, w: &Weights) -> Result<Self> {
        let (c, d, k1) = (cfg.pre_lookahead_channels, cfg.input_size, cfg.pre_lookahead_len + 1);
        Ok(Self {
            conv1_weight: w.get("conv1.weight", &[c, d, k1])?,
            conv1_bias: w.get("conv1.bias", &[c])?.reshape((1, c, 1))?,
            conv2_weight: w.get("conv2.weight", &[d, c, 3])?,
            conv2_bias: w.get("conv2.bias", &[d])?.reshape((1, d, 1))?,
            pre_lookahead_len: cfg.pre_lookahead_len,
        })
    }

    /// `xs` (1, m, 80) → (1, m, 80).
    fn forward(&self, xs: &Tensor) -> candle::Result<Tensor> {
        let z = xs.transpose(1, 2)?.pad_with_zeros(2, 0, self.pre_lookahead_len)?; // (1, 80, m+3)
        let z = z.conv1d(&self.conv1_weight, 0, 1, 1, 1)?.broadcast_add(&self.conv1_bias)?;
        let z = candle_nn::ops::leaky_relu(&z, PRE_LOOKAHEAD_SLOPE)?;
        let k2 = self.conv2_weight.dim(2)?;
        let z = z.pad_with_zeros(2, k2 - 1, 0)?;
        let z = z.conv1d(&self.conv2_weight, 0, 1, 1, 1)?.broadcast_add(&self.conv2_bias)?;
        z.transpose(1, 2)? + xs
    }
}

/// The whole flow module.
#[derive(Debug, Clone)]
pub struct CausalMaskedDiffWithDiT {
    input_embedding: Tensor, // (vocab, 80)
    spk_embed_affine_layer: Linear,
    pre_lookahead_layer: PreLookaheadLayer,
    estimator: Arc<DiT>, // decoder.estimator
    rand_noise: Tensor,  // decoder.rand_noise (1, 80, 15000)
    noise: NoiseSource,
    cfg: FlowConfig,
}

impl CausalMaskedDiffWithDiT {
    /// Builds from the root of a `flow.pt` state dict.
    pub fn new(cfg: &FlowConfig, w: &Weights, noise: &NoiseSource) -> Result<Self> {
        let d = cfg.input_size;
        Ok(Self {
            input_embedding: w.get("input_embedding.weight", &[cfg.vocab_size, d])?,
            spk_embed_affine_layer: Linear::load(
                &w.pp("spk_embed_affine_layer"),
                cfg.output_size,
                cfg.spk_embed_dim,
                true,
            )?,
            pre_lookahead_layer: PreLookaheadLayer::new(cfg, &w.pp("pre_lookahead_layer"))?,
            estimator: Arc::new(DiT::new(&cfg.dit, &w.pp("decoder.estimator"))?),
            rand_noise: noise.load(&w.device())?,
            noise: noise.clone(),
            cfg: cfg.clone(),
        })
    }

    /// Loads `flow.pt` (or `.safetensors`) onto `device`.
    pub fn load(
        cfg: &FlowConfig,
        path: &Path,
        device: &Device,
        noise: &NoiseSource,
    ) -> Result<Self> {
        let ckpt = Arc::new(Checkpoint::load(path, device)?);
        Self::new(cfg, &Weights::root(ckpt), noise)
    }

    pub fn config(&self) -> &FlowConfig {
        &self.cfg
    }

    pub fn estimator(&self) -> &DiT {
        &self.estimator
    }

    /// Computes the estimator's large matmuls as `matmul` says from now on (see
    /// [`tf32x3`]; 3xTF32 keeps a split copy of the blocks' weights, three times their size).
    pub fn set_matmul(&mut self, matmul: FlowMatmul) -> Result<()> {
        if self.estimator.matmul() != matmul {
            self.estimator = Arc::new(self.estimator.with_matmul(matmul)?);
        }
        Ok(())
    }

    /// The estimator's f32 projections on `gemm` (chosen at load where it helps:
    /// [`lectern_kernels::gemm::sgemm::F32Gemm::for_flow`]) or, with `None`, on candle's matmul.
    pub fn set_f32_gemm(&mut self, gemm: Option<lectern_kernels::gemm::sgemm::F32Gemm>) {
        Arc::make_mut(&mut self.estimator).set_f32_gemm(gemm);
    }

    /// Runs the estimator on Lectern's own kernels where they apply (`on`, the default) or on
    /// candle's ops only ([`DiT::set_kernels`]).
    pub fn set_kernels(&mut self, on: bool) {
        Arc::make_mut(&mut self.estimator).set_kernels(on);
    }

    /// How the estimator's large matmuls are computed.
    pub fn matmul(&self) -> FlowMatmul {
        self.estimator.matmul()
    }

    pub fn noise_source(&self) -> &NoiseSource {
        &self.noise
    }

    /// Upstream's solver settings with `nfe` steps.
    pub fn solver_options(&self, nfe: usize) -> SolverOptions {
        SolverOptions { nfe, cfg_rate: self.cfg.inference_cfg_rate }
    }

    fn check_tokens(&self, what: &str, tokens: &[u32]) -> Result<()> {
        if let Some((i, t)) =
            tokens.iter().enumerate().find(|(_, t)| **t as usize >= self.cfg.vocab_size)
        {
            return Err(ModelError::InvalidInput(format!(
                "{what} token {i} is {t}, outside the flow vocabulary 0..{}",
                self.cfg.vocab_size
            )));
        }
        Ok(())
    }

    /// Pre-net (spec §7.1–7.4): speaker vector, token embedding, pre-lookahead, `mu`, `cond`.
    pub fn prepare(&self, prompt: &FlowPrompt, tokens: &[u32]) -> Result<FlowInputs> {
        if tokens.is_empty() {
            return Err(ModelError::InvalidInput("the flow got an empty token list".into()));
        }
        self.check_tokens("prompt", &prompt.prompt_token)?;
        self.check_tokens("target", tokens)?;
        let ratio = self.cfg.token_mel_ratio;
        let p = prompt.prompt_token.len();
        let prompt_frames = p * ratio;
        let mel = self.cfg.output_size;
        if prompt.prompt_feat.dims() != [1, prompt_frames, mel] {
            return Err(ModelError::InvalidInput(format!(
                "prompt mel has shape {:?}, expected [1, {prompt_frames}, {mel}] \
                 ({ratio} frames per prompt token, {mel} bins)",
                prompt.prompt_feat.dims()
            )));
        }
        let spk = self.cfg.spk_embed_dim;
        if prompt.embedding.elem_count() != spk {
            return Err(ModelError::InvalidInput(format!(
                "speaker embedding has shape {:?}, expected [1, {spk}]",
                prompt.embedding.dims()
            )));
        }
        let m = p + tokens.len();
        let n_frames = m * ratio;
        if n_frames > MAX_FLOW_FRAMES {
            return Err(ModelError::InvalidInput(format!(
                "flow call of {n_frames} frames (prompt {prompt_frames} + {} generated) exceeds \
                 the {MAX_FLOW_FRAMES}-frame noise buffer; split the group",
                n_frames - prompt_frames
            )));
        }
        let device = self.input_embedding.device();

        // Speaker: e / max(‖e‖, eps), then the affine layer.
        let e = prompt.embedding.reshape((1, spk))?.to_dtype(DType::F32)?.to_device(device)?;
        let norm = e.sqr()?.sum_keepdim(1)?.sqrt()?.maximum(SPK_NORM_EPS)?;
        let spks = self.spk_embed_affine_layer.forward(&e.broadcast_div(&norm)?)?; // (1, 80)

        let ids: Vec<u32> = prompt.prompt_token.iter().chain(tokens).copied().collect();
        let ids = Tensor::from_vec(ids, m, device)?;
        let xs = self.input_embedding.index_select(&ids, 0)?.unsqueeze(0)?; // (1, m, 80)
        let h = self.pre_lookahead_layer.forward(&xs)?; // (1, m, 80)

        // repeat_interleave ×ratio along time, channel-first.
        let mu = h
            .unsqueeze(2)?
            .broadcast_as((1, m, ratio, mel))?
            .reshape((1, n_frames, mel))?
            .transpose(1, 2)?
            .contiguous()?; // (1, 80, T)
        let feat = prompt.prompt_feat.to_dtype(DType::F32)?.to_device(device)?;
        let cond =
            feat.pad_with_zeros(1, 0, n_frames - prompt_frames)?.transpose(1, 2)?.contiguous()?;
        Ok(FlowInputs { h, spks, mu, cond, prompt_frames })
    }

    /// The CFM decoder (spec §7.5): full mel `(1, 80, T)` including the prompt frames.
    pub fn decode(&self, inputs: &FlowInputs, opts: SolverOptions) -> Result<Tensor> {
        let ts = cosine_schedule(opts.nfe)?;
        let n_frames = inputs.mu.dim(2)?;
        let x0 = self.rand_noise.narrow(2, 0, n_frames)?.contiguous()?;
        let cond = FlowCond::cfg_batch(&inputs.mu, &inputs.spks, &inputs.cond)?;
        solve_euler(self.estimator.as_ref(), x0, &ts, &cond, opts.cfg_rate)
    }

    /// `flow.inference` (non-streaming, finalize): target mel `(1, 80, 2N)`.
    pub fn inference(&self, prompt: &FlowPrompt, tokens: &[u32], nfe: usize) -> Result<Tensor> {
        // Reject NFE 0 before spending the pre-net.
        cosine_schedule(nfe)?;
        let inputs = self.prepare(prompt, tokens)?;
        let full = self.decode(&inputs, self.solver_options(nfe))?;
        let n_frames = full.dim(2)?;
        Ok(full.narrow(2, inputs.prompt_frames, n_frames - inputs.prompt_frames)?.contiguous()?)
    }

    /// One flow call over the concatenated segments; returns each segment's mel
    /// `(1, 80, 2·n_k)`. See the module doc for why the group composition matters.
    pub fn decode_group(
        &self,
        prompt: &FlowPrompt,
        segments: &[&[u32]],
        nfe: usize,
    ) -> Result<Vec<Tensor>> {
        if let Some(k) = segments.iter().position(|s| s.is_empty()) {
            return Err(ModelError::InvalidInput(format!(
                "segment {k} of the flow group has no tokens"
            )));
        }
        let tokens: Vec<u32> = segments.iter().flat_map(|s| s.iter().copied()).collect();
        let mel = self.inference(prompt, &tokens, nfe)?;
        let ratio = self.cfg.token_mel_ratio;
        let mut start = 0;
        segments
            .iter()
            .map(|s| -> Result<Tensor> {
                let frames = s.len() * ratio;
                let cut = mel.narrow(2, start, frames)?.contiguous()?;
                start += frames;
                Ok(cut)
            })
            .collect()
    }
}
