//! The real backend: CosyVoice3 (LM, flow, HiFT) behind [`SynthBackend`], with one voice
//! prompt and the text tokenizer.
//!
//! The voice prompt is prepared once at load (prompt text ids, prompt speech tokens, prompt mel,
//! speaker embedding); every LM lane and every flow group reuses it.

use std::path::Path;

use candle::{DType, Device, Tensor};

use super::backend::{BackendInfo, LmJob, Mel, SynthBackend};
use super::protocol::{LaneMemory, MinLenRule, Precision};
use super::{EngineError, Result};
use crate::model::config::{ModelConfig, ModelFiles, N_MELS};
use crate::model::flow::{CausalMaskedDiffWithDiT, FlowPrompt, NoiseSource};
use crate::model::hift::Hift;
use crate::model::lm::{GenerateOptions, LaneRequest, LmPrecision, SpeechLm};
use crate::model::sampling::{self, SamplingConfig};
use crate::text::Tokenizer;
use crate::voice::{ModelSignature, Voice};

/// The three stages of one model on one device, and one voice.
pub struct CosyVoiceBackend {
    info: BackendInfo,
    device: Device,
    lm: SpeechLm,
    flow: CausalMaskedDiffWithDiT,
    hift: Hift,
    tokenizer: Tokenizer,
    voice: PreparedVoice,
    lanes: Vec<LaneMemory>,
}

/// A voice prompt in the form the stages consume.
pub struct PreparedVoice {
    pub name: String,
    pub prompt_text_ids: Vec<u32>,
    pub prompt_speech_tokens: Vec<u32>,
    pub flow_prompt: FlowPrompt,
}

impl PreparedVoice {
    /// Tokenises the transcript and moves the prompt tensors to `device`.
    pub fn new(voice: &Voice, tokenizer: &Tokenizer, device: &Device) -> Result<Self> {
        let prompt_text_ids = tokenizer
            .prompt_ids(&voice.manifest.prompt_text)
            .map_err(|e| EngineError::InvalidInput(format!("voice transcript: {e}")))?;
        let prompt_speech_tokens: Vec<u32> = voice
            .prompt_speech_tokens
            .flatten_all()?
            .to_dtype(DType::I64)?
            .to_vec1::<i64>()?
            .into_iter()
            .map(|t| t as u32)
            .collect();
        let embedding = voice.speaker_embedding.reshape((1, ()))?.to_device(device)?;
        let prompt_feat = voice.prompt_mel.to_device(device)?;
        Ok(Self {
            name: voice.manifest.name.clone(),
            prompt_text_ids,
            prompt_speech_tokens: prompt_speech_tokens.clone(),
            flow_prompt: FlowPrompt { prompt_token: prompt_speech_tokens, prompt_feat, embedding },
        })
    }
}

impl From<candle::Error> for EngineError {
    fn from(e: candle::Error) -> Self {
        EngineError::Model(e.into())
    }
}

/// Maps the engine's precision to the LM's.
pub fn lm_precision(p: Precision) -> LmPrecision {
    match p {
        Precision::F32 => LmPrecision::F32,
        Precision::F16 => LmPrecision::F16,
        Precision::Bf16 => LmPrecision::Bf16,
        Precision::Q8_0 => LmPrecision::Q8_0,
    }
}

/// Device memory in use, bytes: on CUDA, total minus free as the driver reports it
/// (`cuMemGetInfo`) — what the process holds, including candle's cached allocations and the
/// CUDA context, i.e. the figure that sees pressure. `None` on the CPU (process memory covers
/// it) and on Metal (not wired).
pub fn device_memory_used(device: &Device) -> Option<u64> {
    match device {
        #[cfg(feature = "cuda")]
        Device::Cuda(dev) => {
            let (free, total) = dev.cuda_stream().context().mem_get_info().ok()?;
            Some(total.saturating_sub(free) as u64)
        }
        _ => None,
    }
}

/// A short name of a device for take records ("cpu", "cuda:0", "metal").
pub fn device_name(device: &Device) -> String {
    match device {
        Device::Cpu => "cpu".into(),
        Device::Cuda(_) => "cuda:0".into(),
        Device::Metal(_) => "metal".into(),
    }
}

impl CosyVoiceBackend {
    /// Loads an upstream model directory (`llm.pt`, `flow.pt`, `hift.pt`, `CosyVoice-BlankEN/`,
    /// plus `tiny.json` for a reduced model) and prepares `voice` for it.
    pub fn load(
        model_dir: &Path,
        voice: &Voice,
        device: &Device,
        precision: Precision,
    ) -> Result<Self> {
        let cfg = ModelConfig::from_dir(model_dir)?;
        voice
            .check_model(&ModelSignature::from_model_dir(model_dir).map_err(invalid)?)
            .map_err(invalid)?;
        let files = ModelFiles::in_dir(model_dir);
        let lm = SpeechLm::from_dir(model_dir, lm_precision(precision), device)?;
        let flow =
            CausalMaskedDiffWithDiT::load(&cfg.flow, &files.flow, device, &NoiseSource::Rebuilt)?;
        let hift = Hift::load(&files.hift, &cfg, device)?;
        let tokenizer = Tokenizer::from_model_dir(model_dir).map_err(invalid)?;
        let is_tiny = model_dir.join("tiny.json").exists();
        let model_id = format!("{} ({})", cfg.name, model_dir.display());
        let prepared = PreparedVoice::new(voice, &tokenizer, device)?;
        Ok(Self::with_prepared_voice(
            model_id, is_tiny, device, precision, lm, flow, hift, tokenizer, prepared,
        ))
    }

    /// Assembles a backend from loaded stages and a prepared voice prompt (benchmarks build
    /// the stages from random weights).
    #[allow(clippy::too_many_arguments)]
    pub fn with_prepared_voice(
        model_id: String,
        is_tiny_random: bool,
        device: &Device,
        precision: Precision,
        lm: SpeechLm,
        flow: CausalMaskedDiffWithDiT,
        hift: Hift,
        tokenizer: Tokenizer,
        voice: PreparedVoice,
    ) -> Self {
        let info = BackendInfo {
            model_id,
            backend: device_name(device),
            is_tiny_random,
            noise_source: noise_name(flow.noise_source()),
            cfg_rate: flow.config().inference_cfg_rate,
            precision,
        };
        Self { info, device: device.clone(), lm, flow, hift, tokenizer, voice, lanes: Vec::new() }
    }

    pub fn tokenizer(&self) -> &Tokenizer {
        &self.tokenizer
    }

    pub fn lm(&self) -> &SpeechLm {
        &self.lm
    }

    /// Builds one lane request for a job (upstream length rule: min 2·N, max 20·N tokens).
    fn lane_request(&self, job: &LmJob) -> Result<LaneRequest> {
        let text_ids = self
            .tokenizer
            .encode(&job.text)
            .map_err(|e| EngineError::InvalidInput(format!("segment {}: {e}", job.segment_id)))?;
        let mut req = LaneRequest::new(
            self.voice.prompt_text_ids.clone(),
            text_ids,
            self.voice.prompt_speech_tokens.clone(),
            job.seed,
        );
        req.sampling = SamplingConfig {
            min_len_rule: match job.min_len_rule {
                MinLenRule::Upstream => sampling::MinLenRule::SosOnly,
                MinLenRule::AllStopIds => sampling::MinLenRule::AllStopIds,
            },
            ..SamplingConfig::default()
        };
        Ok(req)
    }

    /// Decodes prepared lane requests (benchmarks force their lengths).
    pub fn generate_requests(&mut self, reqs: &[LaneRequest]) -> Result<Vec<Vec<u32>>> {
        let opts = GenerateOptions { max_lanes: reqs.len().max(1), ..GenerateOptions::default() };
        let generated = self.lm.generate(reqs, &opts)?;
        self.lanes = generated
            .iter()
            .enumerate()
            .map(|(lane, g)| LaneMemory {
                lane,
                used_bytes: self.lm.kv_bytes_per_lane(g.prompt_len + g.lm_tokens.len()) as u64,
                capacity_bytes: g.kv_allocated_bytes as u64,
            })
            .collect();
        Ok(generated.into_iter().map(|g| g.tokens).collect())
    }

    /// Builds the lane requests of `jobs` (exposed for benchmarks that force lengths).
    pub fn lane_requests(&self, jobs: &[LmJob]) -> Result<Vec<LaneRequest>> {
        jobs.iter().map(|j| self.lane_request(j)).collect()
    }
}

fn invalid(e: impl std::fmt::Display) -> EngineError {
    EngineError::InvalidInput(e.to_string())
}

/// The record name of a noise source.
pub fn noise_name(noise: &NoiseSource) -> String {
    match noise {
        NoiseSource::Rebuilt => "mt19937-seed0".into(),
        NoiseSource::File(p) => p.display().to_string(),
    }
}

impl SynthBackend for CosyVoiceBackend {
    fn lm_generate(&mut self, voice: &str, jobs: &[LmJob]) -> Result<Vec<Vec<u32>>> {
        self.check_voice(voice)?;
        let reqs = self.lane_requests(jobs)?;
        self.generate_requests(&reqs)
    }

    fn flow_group(&mut self, voice: &str, tokens: &[Vec<u32>], nfe: usize) -> Result<Mel> {
        self.check_voice(voice)?;
        let segments: Vec<&[u32]> = tokens.iter().map(Vec::as_slice).collect();
        // An empty segment (the LM stopped at once) contributes no frames; the flow cannot take
        // it, so it is left out of the call and gets 0 frames.
        let non_empty: Vec<&[u32]> = segments.iter().copied().filter(|s| !s.is_empty()).collect();
        if non_empty.is_empty() {
            return Mel::new(0, Vec::new());
        }
        let mels = self.flow.decode_group(&self.voice.flow_prompt, &non_empty, nfe)?;
        let mel = Tensor::cat(&mels, 2)?; // (1, 80, frames)
        let frames = mel.dim(2)?;
        let data = mel.squeeze(0)?.t()?.contiguous()?.flatten_all()?.to_vec1::<f32>()?;
        Mel::new(frames, data)
    }

    fn vocode(&mut self, mel: &Mel) -> Result<Vec<f32>> {
        if mel.frames == 0 {
            return Ok(Vec::new());
        }
        let t = Tensor::from_slice(&mel.data, (mel.frames, N_MELS), &self.device)?
            .t()?
            .contiguous()?
            .unsqueeze(0)?; // (1, 80, frames)
        Ok(self.hift.forward(&t)?)
    }

    fn synchronize(&self) -> Result<()> {
        Ok(self.device.synchronize()?)
    }

    fn kv_lane_memory(&self) -> Vec<LaneMemory> {
        self.lanes.clone()
    }

    fn device_memory_bytes(&self) -> Option<u64> {
        device_memory_used(&self.device)
    }

    fn describe(&self) -> BackendInfo {
        self.info.clone()
    }
}

impl CosyVoiceBackend {
    fn check_voice(&self, voice: &str) -> Result<()> {
        if voice == self.voice.name {
            Ok(())
        } else {
            Err(EngineError::InvalidInput(format!(
                "this backend holds voice `{}`, not `{voice}`",
                self.voice.name
            )))
        }
    }
}
