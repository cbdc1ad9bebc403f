//! Voice prompt extraction: a reference recording and its transcript in, a [`Voice`] out.
//!
//! This is upstream's `CosyVoiceFrontEnd.frontend_zero_shot` (CosyVoice3, 24 kHz) in pure Rust:
//!
//! 1. **Prompt mel**: the recording resampled to 24 kHz → the flow's 80-bin log-mel
//!    ([`lectern_model::mel::log_mel_24k`]), transposed to upstream's (1, T_mel, 80).
//! 2. **Prompt speech tokens**: resampled to 16 kHz → whisper's 128-bin log-mel
//!    ([`crate::dsp::whisper::log_mel_128`]) → `speech_tokenizer_v3.onnx`.
//! 3. **Speaker embedding**: the same 16 kHz audio → Kaldi fbank, 80 bins, minus the per-bin mean
//!    over frames ([`crate::dsp::kaldi`]) → `campplus.onnx` → 192 values, not normalised (upstream
//!    does not normalise either).
//! 4. **Alignment**: P = min(⌊T_mel/2⌋, P0) tokens and 2P mel frames ([`Voice::from_prompt`]).
//!
//! The ONNX models live in the model directory under upstream's names. The math here is free
//! of I/O: [`PromptModels::load`] and [`crate::reference::load_reference`] read the files.

use std::path::{Path, PathBuf};

use candle::{Device, Tensor};

use super::dsp::{kaldi, whisper};
use super::onnx::{OnnxError, SpeakerEncoder, SpeechTokenizer};
use super::reference::Reference;
use super::{FORMAT_VERSION, Manifest, ModelSignature, Voice, VoiceError};
use lectern_model::mel::log_mel_24k;

/// The speech tokenizer's file name in an upstream model directory.
pub const TOKENIZER_ONNX: &str = "speech_tokenizer_v3.onnx";
/// The speaker encoder's file name in an upstream model directory.
pub const CAMPPLUS_ONNX: &str = "campplus.onnx";
/// Rate of the speech tokenizer's and the speaker encoder's input audio.
pub const FEATURE_RATE_HZ: u32 = 16_000;
/// Rate of the flow's prompt mel.
pub const MEL_RATE_HZ: u32 = 24_000;
/// Mel bins of the flow's prompt mel.
const MEL_BINS: usize = 80;

#[derive(Debug, thiserror::Error)]
pub enum ExtractError {
    #[error("model directory {dir}: {file} is missing (CosyVoice3 ships it next to llm.pt)")]
    MissingModel { dir: PathBuf, file: &'static str },
    #[error(transparent)]
    Onnx(#[from] OnnxError),
    #[error("{source_wav}: {reason}")]
    Features { source_wav: PathBuf, reason: String },
    #[error(transparent)]
    Voice(#[from] VoiceError),
}

pub type Result<T> = std::result::Result<T, ExtractError>;

/// The two ONNX models of a CosyVoice3 model directory.
pub struct PromptModels {
    pub tokenizer: SpeechTokenizer,
    pub speaker: SpeakerEncoder,
}

impl PromptModels {
    /// Loads `speech_tokenizer_v3.onnx` and `campplus.onnx` from `model_dir`.
    pub fn load(model_dir: &Path) -> Result<Self> {
        let path = |file: &'static str| {
            let p = model_dir.join(file);
            if p.is_file() {
                Ok(p)
            } else {
                Err(ExtractError::MissingModel { dir: model_dir.into(), file })
            }
        };
        Ok(Self {
            tokenizer: SpeechTokenizer::load(&path(TOKENIZER_ONNX)?)?,
            speaker: SpeakerEncoder::load(&path(CAMPPLUS_ONNX)?)?,
        })
    }
}

/// Everything upstream's frontend computes from the reference, before the alignment cut.
#[derive(Debug, Clone)]
pub struct PromptFeatures {
    /// The tokenizer's output, P0 ids.
    pub speech_tokens: Vec<i64>,
    /// The 24 kHz log-mel, (80, T_mel) row-major, as [`log_mel_24k`] returns it.
    pub mel: Vec<f32>,
    pub mel_frames: usize,
    /// CAM++ output, 192 values.
    pub speaker_embedding: Vec<f32>,
}

/// Runs steps 1–3 on a loaded reference.
pub fn extract_features(reference: &Reference, models: &PromptModels) -> Result<PromptFeatures> {
    let bad =
        |reason: String| ExtractError::Features { source_wav: reference.source.clone(), reason };
    let wav24 = reference.resampled(MEL_RATE_HZ);
    let (mel, mel_frames) = log_mel_24k(&wav24).map_err(|e| bad(e.to_string()))?;

    let wav16 = reference.resampled(FEATURE_RATE_HZ);
    let (logmel, frames) = whisper::log_mel_128(&wav16);
    let speech_tokens = models.tokenizer.tokens(&logmel, frames)?;
    if speech_tokens.is_empty() {
        return Err(bad("the speech tokenizer returned no tokens".into()));
    }

    let (mut fbank, fbank_frames) = kaldi::fbank_80(&wav16);
    kaldi::subtract_column_mean(&mut fbank, MEL_BINS);
    let speaker_embedding = models.speaker.embed(&fbank, fbank_frames)?;
    Ok(PromptFeatures { speech_tokens, mel, mel_frames, speaker_embedding })
}

/// What to record in the new voice's manifest besides the features.
#[derive(Debug, Clone)]
pub struct VoiceInfo {
    pub name: String,
    /// Transcript of the reference (without the `…<|endofprompt|>` prefix).
    pub prompt_text: String,
    pub model: ModelSignature,
    /// RFC 3339 creation time.
    pub created: String,
}

/// Step 4 and the voice: aligns tokens and mel (P = min(⌊T_mel/2⌋, P0)) and builds the voice.
pub fn build_voice(
    features: &PromptFeatures,
    reference: &Reference,
    info: VoiceInfo,
) -> Result<Voice> {
    let bad = |e: candle::Error| ExtractError::Features {
        source_wav: reference.source.clone(),
        reason: e.to_string(),
    };
    let dev = Device::Cpu;
    let p0 = features.speech_tokens.len();
    let tokens = Tensor::from_slice(&features.speech_tokens, (1, p0), &dev).map_err(bad)?;
    // (80, T) → upstream's prompt_speech_feat layout (1, T, 80).
    let mel = Tensor::from_slice(&features.mel, (MEL_BINS, features.mel_frames), &dev)
        .and_then(|m| m.t()?.contiguous()?.unsqueeze(0))
        .map_err(bad)?;
    let spk = Tensor::new(features.speaker_embedding.as_slice(), &dev).map_err(bad)?;
    let manifest = Manifest {
        format_version: FORMAT_VERSION,
        name: info.name,
        prompt_text: info.prompt_text,
        model: info.model,
        source_wav: reference.source.display().to_string(),
        sample_rate_hz: reference.sample_rate_hz,
        created: info.created,
        prompt_tokens: 0,
        prompt_mel_frames: 0,
        reference_seconds: Some(reference.seconds()),
    };
    Ok(Voice::from_prompt(manifest, &tokens, &mel, &spk)?)
}
