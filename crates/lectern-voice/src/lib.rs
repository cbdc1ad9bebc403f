//! Voice files: a cloned voice prompt on disk, ready for the engine.
//!
//! A voice is a directory (by convention `voices/<name>/`) holding:
//! * `voice.json` — the manifest: format version, name, prompt text (the transcript of the
//!   prompt audio), the model it was made for ([`ModelSignature`]: LM hidden size, mel bins,
//!   speaker-embedding size), source wav, sample rate, creation time, token and frame counts;
//! * `prompt.safetensors` — `prompt_speech_tokens` i64 (1, P), `prompt_mel` f32 (1, 2P, 80),
//!   `speaker_embedding` f32 (192).
//!
//! [`Voice::load_dir`] enforces the alignment rule of spec §5.7 (mel frames = 2 × tokens), the
//! value ranges, and agreement between manifest and tensors; [`Voice::check_model`] refuses a
//! voice made for another model size. Every error names the file.
//!
//! ```no_run
//! use lectern_voice::{ModelSignature, Voice};
//! let voice = Voice::load_dir("voices/tiny-demo".as_ref())?;
//! voice.check_model(&ModelSignature::from_model_dir("fixtures/cosyvoice3-tiny-a/model".as_ref())?)?;
//! let (tokens, mel, spk) = (&voice.prompt_speech_tokens, &voice.prompt_mel, &voice.speaker_embedding);
//! # let _ = (tokens, mel, spk);
//! # Ok::<(), lectern_voice::VoiceError>(())
//! ```

#![forbid(unsafe_code)]

pub mod add;
pub mod dsp;
pub mod extract;
pub mod onnx;
pub mod reference;
pub mod speech;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use candle::{DType, Device, Tensor};
use serde::{Deserialize, Serialize};

/// Manifest file name inside a voice directory.
pub const MANIFEST: &str = "voice.json";
/// Tensor file name inside a voice directory.
pub const TENSORS: &str = "prompt.safetensors";
/// The manifest format this build writes and reads.
pub const FORMAT_VERSION: u32 = 1;
/// Mel frames per speech token (spec §5.7).
pub const MEL_FRAMES_PER_TOKEN: usize = 2;
/// Speech tokens per second of prompt audio.
pub const TOKENS_PER_SECOND: f64 = 25.0;
/// Speech token ids are below this (the FSQ codebook size).
pub const SPEECH_TOKEN_SIZE: i64 = 6561;

#[derive(Debug, thiserror::Error)]
pub enum VoiceError {
    #[error("voice `{name}` not found (looked for {looked})")]
    Missing { name: String, looked: String },
    #[error("{path}: {reason}")]
    Corrupt { path: PathBuf, reason: String },
    #[error(
        "voice `{name}` was made for model `{made_for}` (LM hidden {voice_hidden}, mel {voice_mel}, \
         speaker {voice_spk}) but the model is `{model}` (LM hidden {model_hidden}, mel {model_mel}, \
         speaker {model_spk}); make the voice again for this model"
    )]
    ModelMismatch {
        name: String,
        made_for: String,
        voice_hidden: usize,
        voice_mel: usize,
        voice_spk: usize,
        model: String,
        model_hidden: usize,
        model_mel: usize,
        model_spk: usize,
    },
    #[error("cannot write {path}: {reason}")]
    Write { path: PathBuf, reason: String },
}

pub type Result<T> = std::result::Result<T, VoiceError>;

/// What a voice is tied to: the sizes of the model that will consume it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelSignature {
    /// e.g. `cosyvoice3-0.5b` or `cosyvoice3-tiny-a`.
    pub name: String,
    /// LM (Qwen2) hidden size: 896 full size.
    pub llm_hidden_size: usize,
    /// Flow mel bins: 80.
    pub mel_bins: usize,
    /// Speaker embedding size: 192.
    pub spk_embed_dim: usize,
}

impl ModelSignature {
    /// The real CosyVoice3-0.5B.
    pub fn full_size() -> Self {
        Self {
            name: "cosyvoice3-0.5b".into(),
            llm_hidden_size: 896,
            mel_bins: 80,
            spk_embed_dim: 192,
        }
    }

    /// Reads a model directory: `CosyVoice-BlankEN/config.json` (hidden size) and, when present,
    /// `tiny.json` (name and flow sizes).
    pub fn from_model_dir(dir: &Path) -> Result<Self> {
        let cfg_path = dir.join("CosyVoice-BlankEN").join("config.json");
        let cfg = read_json(&cfg_path)?;
        let hidden =
            cfg.get("hidden_size").and_then(serde_json::Value::as_u64).ok_or_else(|| {
                VoiceError::Corrupt { path: cfg_path.clone(), reason: "no hidden_size".into() }
            })? as usize;
        let mut sig = Self { llm_hidden_size: hidden, ..Self::full_size() };
        if hidden != 896 {
            sig.name =
                dir.file_name().map_or("unknown".into(), |n| n.to_string_lossy().into_owned());
        }
        let tiny = dir.join("tiny.json");
        if tiny.is_file() {
            let t = read_json(&tiny)?;
            if let Some(n) = t.get("name").and_then(serde_json::Value::as_str) {
                sig.name = n.to_string();
            }
            let flow = &t["flow"];
            if let Some(m) = flow.get("output_size").and_then(serde_json::Value::as_u64) {
                sig.mel_bins = m as usize;
            }
            if let Some(s) = flow.get("spk_embed_dim").and_then(serde_json::Value::as_u64) {
                sig.spk_embed_dim = s as usize;
            }
        }
        Ok(sig)
    }

    fn same_sizes(&self, other: &Self) -> bool {
        self.llm_hidden_size == other.llm_hidden_size
            && self.mel_bins == other.mel_bins
            && self.spk_embed_dim == other.spk_embed_dim
    }
}

/// `unix_seconds` as an RFC 3339 UTC timestamp, e.g. `2026-11-29T16:58:03Z`.
pub fn rfc3339_utc(unix_seconds: u64) -> String {
    let (days, secs) = (unix_seconds / 86_400, unix_seconds % 86_400);
    // Howard Hinnant's civil-from-days, for days since 1970-01-01.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

fn read_json(path: &Path) -> Result<serde_json::Value> {
    let s = std::fs::read_to_string(path)
        .map_err(|e| VoiceError::Corrupt { path: path.into(), reason: e.to_string() })?;
    serde_json::from_str(&s)
        .map_err(|e| VoiceError::Corrupt { path: path.into(), reason: e.to_string() })
}

/// The manifest (`voice.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub format_version: u32,
    pub name: String,
    /// Transcript of the prompt audio (without the `…<|endofprompt|>` prefix).
    pub prompt_text: String,
    pub model: ModelSignature,
    /// Where the prompt audio came from (informational).
    pub source_wav: String,
    /// Sample rate of the source audio, Hz.
    pub sample_rate_hz: u32,
    /// Creation time, RFC 3339.
    pub created: String,
    pub prompt_tokens: usize,
    pub prompt_mel_frames: usize,
    /// Length of the reference recording, seconds (voices made by `lectern voice add`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference_seconds: Option<f64>,
}

/// A loaded voice.
#[derive(Debug, Clone)]
pub struct Voice {
    pub dir: PathBuf,
    pub manifest: Manifest,
    /// (1, P) i64.
    pub prompt_speech_tokens: Tensor,
    /// (1, 2P, 80) f32.
    pub prompt_mel: Tensor,
    /// (192,) f32.
    pub speaker_embedding: Tensor,
}

/// Finds a voice: an existing directory path, or a name under `voices_dir`.
pub fn resolve_in(dir_or_name: &str, voices_dir: &Path) -> Result<PathBuf> {
    let direct = PathBuf::from(dir_or_name);
    if direct.join(MANIFEST).is_file() {
        return Ok(direct);
    }
    let named = voices_dir.join(dir_or_name);
    if named.join(MANIFEST).is_file() {
        return Ok(named);
    }
    Err(VoiceError::Missing {
        name: dir_or_name.into(),
        looked: format!(
            "{} and {}",
            direct.join(MANIFEST).display(),
            named.join(MANIFEST).display()
        ),
    })
}

/// The voices under `dir` (directories holding a manifest), sorted by name.
pub fn list(dir: &Path) -> Result<Vec<Manifest>> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Ok(Vec::new()) };
    let mut out = Vec::new();
    for e in entries.flatten() {
        let m = e.path().join(MANIFEST);
        if m.is_file() {
            out.push(read_manifest(&m)?);
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

fn read_manifest(path: &Path) -> Result<Manifest> {
    let m: Manifest = serde_json::from_value(read_json(path)?)
        .map_err(|e| VoiceError::Corrupt { path: path.into(), reason: e.to_string() })?;
    if m.format_version != FORMAT_VERSION {
        return Err(VoiceError::Corrupt {
            path: path.into(),
            reason: format!(
                "format_version {} (this build reads {FORMAT_VERSION})",
                m.format_version
            ),
        });
    }
    Ok(m)
}

impl Voice {
    /// Builds a voice in memory from prompt features, applying the alignment rule of spec §5.7
    /// (keep P = min(tokens, frames / 2) tokens and 2P frames). `mel` is (1, T, bins).
    pub fn from_prompt(
        manifest_base: Manifest,
        tokens: &Tensor,
        mel: &Tensor,
        speaker_embedding: &Tensor,
    ) -> Result<Self> {
        let bad = |reason: String| VoiceError::Corrupt { path: "<prompt>".into(), reason };
        let tokens = tokens.to_dtype(DType::I64).map_err(|e| bad(e.to_string()))?;
        let (_, p0) = tokens.dims2().map_err(|e| bad(format!("prompt tokens: {e}")))?;
        let (_, t0, _) = mel.dims3().map_err(|e| bad(format!("prompt mel: {e}")))?;
        let p = p0.min(t0 / MEL_FRAMES_PER_TOKEN);
        let tokens = tokens.narrow(1, 0, p).map_err(|e| bad(e.to_string()))?;
        let mel = mel
            .to_dtype(DType::F32)
            .and_then(|m| m.narrow(1, 0, p * MEL_FRAMES_PER_TOKEN))
            .map_err(|e| bad(e.to_string()))?;
        let spk = speaker_embedding
            .to_dtype(DType::F32)
            .and_then(|s| s.flatten_all())
            .map_err(|e| bad(e.to_string()))?;
        let manifest = Manifest {
            prompt_tokens: p,
            prompt_mel_frames: p * MEL_FRAMES_PER_TOKEN,
            ..manifest_base
        };
        let v = Self {
            dir: PathBuf::new(),
            manifest,
            prompt_speech_tokens: tokens,
            prompt_mel: mel,
            speaker_embedding: spk,
        };
        v.validate(Path::new("<prompt>"))?;
        Ok(v)
    }

    /// Loads the voice in `dir`.
    pub fn load_dir(dir: &Path) -> Result<Self> {
        let manifest = read_manifest(&dir.join(MANIFEST))?;
        let tpath = dir.join(TENSORS);
        let corrupt = |reason: String| VoiceError::Corrupt { path: tpath.clone(), reason };
        if !tpath.is_file() {
            return Err(corrupt("missing (the voice's tensors)".into()));
        }
        let mut ts: HashMap<String, Tensor> =
            candle::safetensors::load(&tpath, &Device::Cpu).map_err(|e| corrupt(e.to_string()))?;
        let mut take = |name: &str| {
            ts.remove(name).ok_or_else(|| corrupt(format!("tensor `{name}` is missing")))
        };
        let v = Self {
            dir: dir.to_path_buf(),
            manifest,
            prompt_speech_tokens: take("prompt_speech_tokens")?,
            prompt_mel: take("prompt_mel")?,
            speaker_embedding: take("speaker_embedding")?,
        };
        v.validate(&tpath)?;
        Ok(v)
    }

    /// Shapes, dtypes, alignment, value ranges, agreement with the manifest.
    fn validate(&self, path: &Path) -> Result<()> {
        let corrupt = |reason: String| VoiceError::Corrupt { path: path.into(), reason };
        let m = &self.manifest;
        let check_dtype = |t: &Tensor, name: &str, want: DType| {
            if t.dtype() == want {
                Ok(())
            } else {
                Err(corrupt(format!("`{name}` is {:?}, expected {want:?}", t.dtype())))
            }
        };
        check_dtype(&self.prompt_speech_tokens, "prompt_speech_tokens", DType::I64)?;
        check_dtype(&self.prompt_mel, "prompt_mel", DType::F32)?;
        check_dtype(&self.speaker_embedding, "speaker_embedding", DType::F32)?;
        let tok = self.prompt_speech_tokens.dims();
        let mel = self.prompt_mel.dims();
        let spk = self.speaker_embedding.dims();
        if tok.len() != 2 || tok[0] != 1 || tok[1] == 0 {
            return Err(corrupt(format!(
                "`prompt_speech_tokens` has shape {tok:?}, expected (1, P>0)"
            )));
        }
        let p = tok[1];
        if mel.len() != 3 || mel[0] != 1 || mel[2] != m.model.mel_bins {
            return Err(corrupt(format!(
                "`prompt_mel` has shape {mel:?}, expected (1, {}, {})",
                MEL_FRAMES_PER_TOKEN * p,
                m.model.mel_bins
            )));
        }
        if mel[1] != MEL_FRAMES_PER_TOKEN * p {
            return Err(corrupt(format!(
                "alignment rule broken: {} mel frames for {p} speech tokens (must be exactly {})",
                mel[1],
                MEL_FRAMES_PER_TOKEN * p
            )));
        }
        if spk != [m.model.spk_embed_dim] {
            return Err(corrupt(format!(
                "`speaker_embedding` has shape {spk:?}, expected ({})",
                m.model.spk_embed_dim
            )));
        }
        if m.prompt_tokens != p || m.prompt_mel_frames != mel[1] {
            return Err(corrupt(format!(
                "manifest says {} tokens / {} frames, tensors hold {p} / {}",
                m.prompt_tokens, m.prompt_mel_frames, mel[1]
            )));
        }
        let ids: Vec<i64> = self
            .prompt_speech_tokens
            .flatten_all()
            .and_then(|t| t.to_vec1())
            .map_err(|e| corrupt(e.to_string()))?;
        if let Some(bad) = ids.iter().find(|&&t| !(0..SPEECH_TOKEN_SIZE).contains(&t)) {
            return Err(corrupt(format!("speech token {bad} outside 0..{SPEECH_TOKEN_SIZE}")));
        }
        let finite = |t: &Tensor| -> Result<bool> {
            let v: Vec<f32> =
                t.flatten_all().and_then(|t| t.to_vec1()).map_err(|e| corrupt(e.to_string()))?;
            Ok(v.iter().all(|x| x.is_finite()))
        };
        if !finite(&self.prompt_mel)? || !finite(&self.speaker_embedding)? {
            return Err(corrupt("non-finite values in the prompt mel or speaker embedding".into()));
        }
        Ok(())
    }

    /// Refuses a voice made for another model size.
    pub fn check_model(&self, model: &ModelSignature) -> Result<()> {
        let v = &self.manifest.model;
        if v.same_sizes(model) {
            return Ok(());
        }
        Err(VoiceError::ModelMismatch {
            name: self.manifest.name.clone(),
            made_for: v.name.clone(),
            voice_hidden: v.llm_hidden_size,
            voice_mel: v.mel_bins,
            voice_spk: v.spk_embed_dim,
            model: model.name.clone(),
            model_hidden: model.llm_hidden_size,
            model_mel: model.mel_bins,
            model_spk: model.spk_embed_dim,
        })
    }

    /// Writes `voice.json` and `prompt.safetensors` into `dir` (created if needed).
    pub fn save(&self, dir: &Path) -> Result<()> {
        let werr = |path: &Path, e: &dyn std::fmt::Display| VoiceError::Write {
            path: path.into(),
            reason: e.to_string(),
        };
        std::fs::create_dir_all(dir).map_err(|e| werr(dir, &e))?;
        let tpath = dir.join(TENSORS);
        let tensors: HashMap<String, Tensor> = [
            ("prompt_speech_tokens", &self.prompt_speech_tokens),
            ("prompt_mel", &self.prompt_mel),
            ("speaker_embedding", &self.speaker_embedding),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
        candle::safetensors::save(&tensors, &tpath).map_err(|e| werr(&tpath, &e))?;
        let mpath = dir.join(MANIFEST);
        let json = serde_json::to_string_pretty(&self.manifest).map_err(|e| werr(&mpath, &e))?;
        std::fs::write(&mpath, json + "\n").map_err(|e| werr(&mpath, &e))?;
        Ok(())
    }

    /// Prompt audio duration, seconds (tokens at 25 per second).
    pub fn duration_s(&self) -> f64 {
        self.manifest.prompt_tokens as f64 / TOKENS_PER_SECOND
    }

    /// A multi-line description for `lectern voice show`.
    pub fn describe(&self) -> String {
        let m = &self.manifest;
        let reference =
            m.reference_seconds.map_or(String::new(), |s| format!(" (reference {s:.2} s)"));
        format!(
            "voice:        {}\ndirectory:    {}\nprompt text:  {}\nduration:     {:.2} s{reference}\ntokens:       {}\nmel frames:   {}\nmodel:        {} (LM hidden {}, mel {}, speaker {})\nsource:       {} ({} Hz)\ncreated:      {}",
            m.name,
            self.dir.display(),
            m.prompt_text,
            self.duration_s(),
            m.prompt_tokens,
            m.prompt_mel_frames,
            m.model.name,
            m.model.llm_hidden_size,
            m.model.mel_bins,
            m.model.spk_embed_dim,
            m.source_wav,
            m.sample_rate_hz,
            m.created
        )
    }
}
