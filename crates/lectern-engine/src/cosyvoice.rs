//! The real backend: CosyVoice3 (LM, flow, HiFT) behind [`SynthBackend`], with the voices of
//! a cast and the text tokenizer.
//!
//! Each voice prompt is prepared once at load (prompt text ids, prompt speech tokens, prompt
//! mel, speaker embedding); every LM lane and flow group of that voice reuses it. A lane's LM
//! input is assembled per its mode as upstream's frontends do ([`lm_prompt`]).

use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use candle::{DType, Device, Tensor};

use super::backend::{BackendInfo, LmJob, LmStage, Mel, SynthBackend};
use super::protocol::{LaneMemory, MinLenRule, Mode, Precision};
use super::{EngineError, Result};
use lectern_model::config::{ModelConfig, ModelFiles, N_MELS};
use lectern_model::flow::{CausalMaskedDiffWithDiT, FlowMatmul, FlowPrompt, NoiseSource};
use lectern_model::hift::Hift;
use lectern_model::lm::{GenerateOptions, LaneRequest, SpeechLm};
use lectern_model::sampling::{self, SamplingConfig};
use lectern_text::Tokenizer;
use lectern_text::tokenizer::{END_OF_PROMPT, PROMPT_PREFIX};
use lectern_voice::{ModelSignature, Voice};

/// The three stages of one model, and the voices of a cast. The flow and the vocoder run on `device`;
/// the LM runs on its own [`lm_device`] behind an [`LmHandle`], so that it can decode on
/// another thread while the flow runs (`SynthBackend::lm_stage`).
pub struct CosyVoiceBackend {
    info: BackendInfo,
    device: Device,
    lm: LmHandle,
    flow: CausalMaskedDiffWithDiT,
    hift: Hift,
    /// The default voice first.
    voices: Vec<PreparedVoice>,
}

/// What an LM lane needs of a voice.
#[derive(Debug, Clone)]
struct LmVoice {
    name: String,
    prompt_text_ids: Vec<u32>,
    prompt_speech_tokens: Vec<u32>,
}

/// The LM and what turns jobs into its lane requests.
struct LmSide {
    lm: SpeechLm,
    tokenizer: Tokenizer,
    voices: Vec<LmVoice>,
    lanes: Vec<LaneMemory>,
}

/// A shared handle on the LM of a [`CosyVoiceBackend`]: the engine's LM thread holds one, the
/// backend another. The lock is held for a whole batch; the flow and the vocoder never take
/// it, so they run while it is held.
#[derive(Clone)]
pub struct LmHandle(Arc<Mutex<LmSide>>);

/// The device the LM runs on. On CUDA: a device of its own stream on the same GPU, at the
/// highest stream priority, so the LM's small launch-bound kernels are scheduled ahead of the
/// flow's large grids instead of queueing behind them; its cuBLAS handle is its own too.
/// Elsewhere: `device` itself.
#[allow(unsafe_code)] // cudarc event tracking off (SAFETY note below)
pub fn lm_device(device: &Device) -> Result<Device> {
    match device {
        #[cfg(feature = "cuda")]
        Device::Cuda(dev) => {
            let ordinal = dev.cuda_stream().context().ordinal();
            let (_least, greatest) = dev.stream_priority_range()?;
            let lm = candle::CudaDevice::new_with_stream_priority(ordinal, greatest)?;
            // SAFETY: cudarc's cross-stream event tracking is for buffers that move between
            // streams. Every tensor of this device is made, used and freed on its one stream
            // (the LM's): candle refuses ops that mix devices, and only host data (token ids)
            // crosses to the flow. Tracking would cost two driver calls per kernel argument.
            unsafe { lm.disable_event_tracking() };
            Ok(Device::Cuda(lm))
        }
        _ => Ok(device.clone()),
    }
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
    /// plus `tiny.json` for a reduced model) and prepares `voices` for it (the first is the
    /// default; names must differ). The LM goes to [`lm_device`]`(device)`.
    pub fn load(
        model_dir: &Path,
        voices: &[&Voice],
        device: &Device,
        precision: Precision,
        flow_matmul: FlowMatmul,
    ) -> Result<Self> {
        let cfg = ModelConfig::from_dir(model_dir)?;
        let signature = ModelSignature::from_model_dir(model_dir).map_err(invalid)?;
        for voice in voices {
            voice.check_model(&signature).map_err(invalid)?;
        }
        let files = ModelFiles::in_dir(model_dir);
        let lm = SpeechLm::from_dir(model_dir, precision, &lm_device(device)?)?;
        let mut flow =
            CausalMaskedDiffWithDiT::load(&cfg.flow, &files.flow, device, &NoiseSource::Rebuilt)?;
        flow.set_matmul(flow_matmul)?;
        let hift = Hift::load(&files.hift, &cfg, device)?;
        let tokenizer = Tokenizer::from_model_dir(model_dir).map_err(invalid)?;
        let is_tiny = model_dir.join("tiny.json").exists();
        let model_id = format!("{} ({})", cfg.name, model_dir.display());
        let prepared = voices
            .iter()
            .map(|v| PreparedVoice::new(v, &tokenizer, device))
            .collect::<Result<Vec<_>>>()?;
        Self::with_prepared_voices(
            model_id, is_tiny, device, precision, lm, flow, hift, tokenizer, prepared,
        )
    }

    /// Assembles a backend from loaded stages and prepared voice prompts, the default first
    /// (benchmarks build the stages from random weights). The flow and HiFT are on `device`,
    /// the LM on its own device (see [`lm_device`]); both devices are synchronised here, so
    /// that weights uploaded on one stream are complete before another stream reads them.
    #[allow(clippy::too_many_arguments)]
    pub fn with_prepared_voices(
        model_id: String,
        is_tiny_random: bool,
        device: &Device,
        precision: Precision,
        lm: SpeechLm,
        flow: CausalMaskedDiffWithDiT,
        hift: Hift,
        tokenizer: Tokenizer,
        voices: Vec<PreparedVoice>,
    ) -> Result<Self> {
        let names: Vec<String> = voices.iter().map(|v| v.name.clone()).collect();
        if voices.is_empty() {
            return Err(EngineError::InvalidInput("a backend needs at least one voice".into()));
        }
        if let Some(dup) = names.iter().enumerate().find(|(i, n)| names[..*i].contains(n)) {
            return Err(EngineError::InvalidInput(format!("voice `{}` given twice", dup.1)));
        }
        device.synchronize()?;
        lm.device().synchronize()?;
        let info = BackendInfo {
            model_id,
            backend: device_name(device),
            is_tiny_random,
            noise_source: noise_name(flow.noise_source()),
            cfg_rate: flow.config().inference_cfg_rate,
            precision,
            flow_matmul: flow.estimator().matmul_label(),
            voices: names,
        };
        let lm_voices = voices
            .iter()
            .map(|v| LmVoice {
                name: v.name.clone(),
                prompt_text_ids: v.prompt_text_ids.clone(),
                prompt_speech_tokens: v.prompt_speech_tokens.clone(),
            })
            .collect();
        let side = LmSide { lm, tokenizer, voices: lm_voices, lanes: Vec::new() };
        let lm = LmHandle(Arc::new(Mutex::new(side)));
        let mut backend = Self { info, device: device.clone(), lm, flow, hift, voices };
        if device.is_cuda() {
            backend.warm_up()?;
        }
        Ok(backend)
    }

    /// Runs every stage once on a few tokens, so that a GPU's one-time costs — the driver
    /// compiling candle's kernels for this GPU, NVRTC compiling Lectern's, cuBLAS choosing its
    /// algorithms — are paid while the model loads and not by the narrator's first take.
    /// Nothing it computes is kept, and no stage keeps state from it.
    fn warm_up(&mut self) -> Result<()> {
        let side = self.lm.side();
        let voice = &side.voices[0];
        let text: Vec<u32> = voice.prompt_text_ids.iter().take(2).copied().collect();
        let mut req = LaneRequest::new(
            voice.prompt_text_ids.clone(),
            text,
            voice.prompt_speech_tokens.clone(),
            0,
        );
        (req.min_len, req.max_len, req.ignore_stop) = (0, 3, true);
        side.lm.generate(&[req], &GenerateOptions::default())?;
        side.lm.device().synchronize()?;
        drop(side);
        let mels = self.flow.decode_group(&self.voices[0].flow_prompt, &[&[1, 2, 3, 4]], 1)?;
        self.hift.forward(&mels[0])?;
        self.device.synchronize()?;
        Ok(())
    }

    /// The LM (shared with the engine's LM thread).
    pub fn lm_handle(&self) -> LmHandle {
        self.lm.clone()
    }
}

impl LmHandle {
    fn side(&self) -> MutexGuard<'_, LmSide> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Decodes prepared lane requests (benchmarks force their lengths), calling
    /// `done(request index, tokens)` as each lane finishes.
    pub fn generate_requests(
        &self,
        reqs: &[LaneRequest],
        done: &mut dyn FnMut(usize, &[u32]),
    ) -> Result<Vec<Vec<u32>>> {
        self.side().generate(reqs, done)
    }
}

/// The LM input of a lane, as upstream's frontends assemble it (spec §5.3, §6.3): the prompt
/// text's ids, the text's ids and the prompt speech tokens, in the order the LM reads them
/// (between them sit only the sos and task embeddings). Upstream's length rule (min 2·N, max
/// 20·N tokens) counts N = the text's ids, so where the text ids sit matters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LmPrompt {
    pub prompt_text_ids: Vec<u32>,
    pub text_ids: Vec<u32>,
    pub prompt_speech_tokens: Vec<u32>,
}

/// [`LmPrompt`] for `mode`:
/// - zero-shot (`frontend_zero_shot`): the voice's prompt text ids (`You are a helpful
///   assistant.<|endofprompt|>` + transcript), the text, the voice's prompt speech tokens;
/// - instruct (`frontend_instruct2`): `You are a helpful assistant. <instruction><|endofprompt|>`
///   as the prompt text, the text, and no prompt speech tokens;
/// - cross-lingual (`frontend_cross_lingual`): no prompt text and no prompt speech tokens; the
///   text is led by `You are a helpful assistant.<|endofprompt|>` (upstream's CosyVoice3
///   usage), so those ids count towards the length rule, as upstream's do.
///
/// The voice's transcript ids and tokens come as prepared ([`PreparedVoice`]).
pub fn lm_prompt(
    tokenizer: &Tokenizer,
    mode: &Mode,
    voice_text_ids: &[u32],
    voice_speech_tokens: &[u32],
    text: &str,
) -> lectern_text::Result<LmPrompt> {
    let text_ids = tokenizer.encode(text)?;
    Ok(match mode {
        Mode::ZeroShot => LmPrompt {
            prompt_text_ids: voice_text_ids.to_vec(),
            text_ids,
            prompt_speech_tokens: voice_speech_tokens.to_vec(),
        },
        Mode::Instruct(instruction) => LmPrompt {
            prompt_text_ids: tokenizer.encode(&instruct_prompt(instruction))?,
            text_ids,
            prompt_speech_tokens: Vec::new(),
        },
        Mode::CrossLingual => {
            let mut ids = tokenizer.encode(PROMPT_PREFIX)?;
            ids.extend(text_ids);
            LmPrompt {
                prompt_text_ids: Vec::new(),
                text_ids: ids,
                prompt_speech_tokens: Vec::new(),
            }
        }
    })
}

/// The prompt text of instruct mode: `You are a helpful assistant. <instruction><|endofprompt|>`
/// (upstream's CosyVoice3 examples write the instruction after one space, end marker last).
pub fn instruct_prompt(instruction: &str) -> String {
    let system = PROMPT_PREFIX.strip_suffix(END_OF_PROMPT).unwrap_or(PROMPT_PREFIX);
    format!("{system} {}{END_OF_PROMPT}", instruction.trim())
}

impl LmSide {
    fn voice(&self, name: &str) -> Result<&LmVoice> {
        self.voices
            .iter()
            .find(|v| v.name == name)
            .ok_or_else(|| unknown_voice(&self.names(), name))
    }

    fn names(&self) -> Vec<String> {
        self.voices.iter().map(|v| v.name.clone()).collect()
    }

    /// One lane's request (upstream length rule: min 2·N, max 20·N tokens).
    fn lane_request(&self, job: &LmJob) -> Result<LaneRequest> {
        let voice = self.voice(&job.voice)?;
        let prompt = lm_prompt(
            &self.tokenizer,
            &job.mode,
            &voice.prompt_text_ids,
            &voice.prompt_speech_tokens,
            &job.text,
        )
        .map_err(|e| EngineError::InvalidInput(format!("segment {}: {e}", job.segment_id)))?;
        let mut req = LaneRequest::new(
            prompt.prompt_text_ids,
            prompt.text_ids,
            prompt.prompt_speech_tokens,
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

    fn generate(
        &mut self,
        reqs: &[LaneRequest],
        done: &mut dyn FnMut(usize, &[u32]),
    ) -> Result<Vec<Vec<u32>>> {
        let opts = GenerateOptions { max_lanes: reqs.len().max(1), ..GenerateOptions::default() };
        let generated = self.lm.generate_streaming(reqs, &opts, &mut |i, g| done(i, &g.tokens))?;
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
}

impl LmStage for LmHandle {
    fn lm_generate_streaming(
        &mut self,
        jobs: &[LmJob],
        done: &mut dyn FnMut(usize, &[u32]),
    ) -> Result<Vec<Vec<u32>>> {
        let mut side = self.side();
        let reqs: Vec<LaneRequest> =
            jobs.iter().map(|j| side.lane_request(j)).collect::<Result<_>>()?;
        side.generate(&reqs, done)
    }

    fn synchronize(&self) -> Result<()> {
        Ok(self.side().lm.device().synchronize()?)
    }

    fn kv_lane_memory(&self) -> Vec<LaneMemory> {
        self.side().lanes.clone()
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
    fn lm_generate(&mut self, jobs: &[LmJob]) -> Result<Vec<Vec<u32>>> {
        self.lm.lm_generate_streaming(jobs, &mut |_, _| {})
    }

    fn flow_group(&mut self, voice: &str, tokens: &[Vec<u32>], nfe: usize) -> Result<Mel> {
        let names = &self.info.voices;
        let Some(voice) = self.voices.iter().find(|v| v.name == voice) else {
            return Err(unknown_voice(names, voice));
        };
        let segments: Vec<&[u32]> = tokens.iter().map(Vec::as_slice).collect();
        // An empty segment (the LM stopped at once) contributes no frames; the flow cannot take
        // it, so it is left out of the call and gets 0 frames.
        let non_empty: Vec<&[u32]> = segments.iter().copied().filter(|s| !s.is_empty()).collect();
        if non_empty.is_empty() {
            return Mel::new(0, Vec::new());
        }
        let mels = self.flow.decode_group(&voice.flow_prompt, &non_empty, nfe)?;
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

    /// The flow and vocoder's device (the LM's is synchronised by its own stage).
    fn synchronize(&self) -> Result<()> {
        Ok(self.device.synchronize()?)
    }

    fn kv_lane_memory(&self) -> Vec<LaneMemory> {
        self.lm.kv_lane_memory()
    }

    fn device_memory_bytes(&self) -> Option<u64> {
        device_memory_used(&self.device)
    }

    fn describe(&self) -> BackendInfo {
        self.info.clone()
    }

    fn lm_stage(&mut self) -> Option<Box<dyn LmStage + Send>> {
        Some(Box::new(self.lm.clone()))
    }
}

fn unknown_voice(held: &[String], asked: &str) -> EngineError {
    let held = held.join("`, `");
    EngineError::InvalidInput(format!("this backend holds voice `{held}`, not `{asked}`"))
}
