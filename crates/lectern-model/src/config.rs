//! Hyper-parameters of CosyVoice3 (spec/COSYVOICE3.md §2).
//!
//! The Qwen2 backbone is read from `CosyVoice-BlankEN/config.json` exactly as upstream does.
//! Flow and HiFT dimensions are fixed by `cosyvoice3.yaml` for the released 0.5B model
//! ([`ModelConfig::full_size`]); a reduced test model ships a `tiny.json` that lists every
//! hyper-parameter and overrides them.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use crate::error::{ModelError, Result};

/// Output sample rate of the vocoder, Hz.
pub const SAMPLE_RATE_HZ: u32 = 24_000;
/// Speech tokens per second of audio.
pub const TOKEN_RATE_HZ: u32 = 25;
/// Mel frames per speech token.
pub const TOKEN_MEL_RATIO: usize = 2;
/// Output samples per mel frame (24 kHz / 50 Hz).
pub const SAMPLES_PER_FRAME: usize = 480;
/// Output samples per speech token.
pub const SAMPLES_PER_TOKEN: usize = SAMPLES_PER_FRAME * TOKEN_MEL_RATIO;
/// Mel bins everywhere (prompt mel, flow output, vocoder input).
pub const N_MELS: usize = 80;
/// Speech-token alphabet (FSQ codes, 3^8).
pub const SPEECH_TOKEN_SIZE: usize = 6561;
/// Longest flow input (prompt + generated frames) the fixed noise buffer covers.
pub const MAX_FLOW_FRAMES: usize = 15_000;
/// Longest vocoder call the fixed source-noise buffer covers, samples.
pub const MAX_VOCODER_SAMPLES: usize = 7_200_000;

/// Qwen2 `config.json`, with upstream field names.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct QwenConfig {
    pub hidden_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub num_key_value_heads: usize,
    pub intermediate_size: usize,
    pub vocab_size: usize,
    pub rope_theta: f64,
    pub rms_norm_eps: f64,
    #[serde(default = "default_max_positions")]
    pub max_position_embeddings: usize,
}

fn default_max_positions() -> usize {
    32_768
}

impl QwenConfig {
    pub fn head_dim(&self) -> usize {
        self.hidden_size / self.num_attention_heads
    }

    /// Qwen2-0.5B as shipped in `CosyVoice-BlankEN`.
    pub fn qwen2_0_5b() -> Self {
        Self {
            hidden_size: 896,
            num_hidden_layers: 24,
            num_attention_heads: 14,
            num_key_value_heads: 2,
            intermediate_size: 4864,
            vocab_size: 151_936,
            rope_theta: 1_000_000.0,
            rms_norm_eps: 1e-6,
            max_position_embeddings: 32_768,
        }
    }

    pub fn from_file(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => ModelError::MissingFile { path: path.to_path_buf() },
            _ => ModelError::CorruptFile { path: path.to_path_buf(), reason: e.to_string() },
        })?;
        serde_json::from_str(&text)
            .map_err(|e| ModelError::BadConfig { path: path.to_path_buf(), reason: e.to_string() })
    }
}

/// The speech-token LM around the backbone.
#[derive(Debug, Clone, PartialEq)]
pub struct LmConfig {
    pub qwen: QwenConfig,
    /// Speech tokens proper; ids `speech_token_size..speech_token_size+200` are special.
    pub speech_token_size: usize,
}

impl LmConfig {
    /// Rows of `speech_embedding` and outputs of `llm_decoder` (6561 + 200).
    pub fn speech_vocab(&self) -> usize {
        self.speech_token_size + 200
    }
    pub fn sos(&self) -> u32 {
        self.speech_token_size as u32
    }
    pub fn eos(&self) -> u32 {
        self.speech_token_size as u32 + 1
    }
    pub fn task_id(&self) -> u32 {
        self.speech_token_size as u32 + 2
    }
    /// Any id in this range ends generation.
    pub fn is_stop(&self, id: u32) -> bool {
        (id as usize) >= self.speech_token_size && (id as usize) < self.speech_vocab()
    }
}

/// DiT estimator (`flow.decoder.estimator`).
#[derive(Debug, Clone, PartialEq)]
pub struct DitConfig {
    pub dim: usize,
    pub depth: usize,
    pub heads: usize,
    pub dim_head: usize,
    pub ff_mult: usize,
    pub mel_dim: usize,
    pub mu_dim: usize,
    pub spk_dim: usize,
    pub out_channels: usize,
}

/// Flow (`CausalMaskedDiffWithDiT`).
#[derive(Debug, Clone, PartialEq)]
pub struct FlowConfig {
    pub input_size: usize,
    pub output_size: usize,
    pub spk_embed_dim: usize,
    pub vocab_size: usize,
    pub token_mel_ratio: usize,
    pub pre_lookahead_len: usize,
    pub pre_lookahead_channels: usize,
    pub inference_cfg_rate: f64,
    pub n_timesteps: usize,
    pub dit: DitConfig,
}

/// HiFT vocoder (`CausalHiFTGenerator`).
#[derive(Debug, Clone, PartialEq)]
pub struct HiftConfig {
    pub in_channels: usize,
    pub base_channels: usize,
    pub nb_harmonics: usize,
    pub sampling_rate: usize,
    pub nsf_alpha: f64,
    pub nsf_sigma: f64,
    pub nsf_voiced_threshold: f64,
    pub upsample_rates: Vec<usize>,
    pub upsample_kernel_sizes: Vec<usize>,
    pub n_fft: usize,
    pub hop_len: usize,
    pub resblock_kernel_sizes: Vec<usize>,
    pub resblock_dilation_sizes: Vec<Vec<usize>>,
    pub source_resblock_kernel_sizes: Vec<usize>,
    pub source_resblock_dilation_sizes: Vec<Vec<usize>>,
    pub lrelu_slope: f64,
    pub audio_limit: f64,
    pub conv_pre_look_right: usize,
    pub f0_cond_channels: usize,
}

impl HiftConfig {
    /// Output samples per input mel frame (product of upsample rates × hop).
    pub fn upsample_scale(&self) -> usize {
        self.upsample_rates.iter().product::<usize>() * self.hop_len
    }
}

/// Every hyper-parameter of one CosyVoice3 model.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelConfig {
    pub name: String,
    pub lm: LmConfig,
    pub flow: FlowConfig,
    pub hift: HiftConfig,
}

/// The files of an upstream model directory.
#[derive(Debug, Clone)]
pub struct ModelFiles {
    pub dir: PathBuf,
    pub llm: PathBuf,
    pub flow: PathBuf,
    pub hift: PathBuf,
    pub qwen_config: PathBuf,
}

impl ModelFiles {
    pub fn in_dir(dir: &Path) -> Self {
        Self {
            dir: dir.to_path_buf(),
            llm: dir.join("llm.pt"),
            flow: dir.join("flow.pt"),
            hift: dir.join("hift.pt"),
            qwen_config: dir.join("CosyVoice-BlankEN").join("config.json"),
        }
    }
}

impl ModelConfig {
    /// CosyVoice3-0.5B (`cosyvoice3.yaml`).
    pub fn full_size() -> Self {
        Self {
            name: "cosyvoice3-0.5b".into(),
            lm: LmConfig { qwen: QwenConfig::qwen2_0_5b(), speech_token_size: SPEECH_TOKEN_SIZE },
            flow: FlowConfig {
                input_size: 80,
                output_size: 80,
                spk_embed_dim: 192,
                vocab_size: SPEECH_TOKEN_SIZE,
                token_mel_ratio: TOKEN_MEL_RATIO,
                pre_lookahead_len: 3,
                pre_lookahead_channels: 1024,
                inference_cfg_rate: 0.7,
                n_timesteps: 10,
                dit: DitConfig {
                    dim: 1024,
                    depth: 22,
                    heads: 16,
                    dim_head: 64,
                    ff_mult: 2,
                    mel_dim: 80,
                    mu_dim: 80,
                    spk_dim: 80,
                    out_channels: 80,
                },
            },
            hift: HiftConfig {
                in_channels: 80,
                base_channels: 512,
                nb_harmonics: 8,
                sampling_rate: 24_000,
                nsf_alpha: 0.1,
                nsf_sigma: 0.003,
                nsf_voiced_threshold: 10.0,
                upsample_rates: vec![8, 5, 3],
                upsample_kernel_sizes: vec![16, 11, 7],
                n_fft: 16,
                hop_len: 4,
                resblock_kernel_sizes: vec![3, 7, 11],
                resblock_dilation_sizes: vec![vec![1, 3, 5]; 3],
                source_resblock_kernel_sizes: vec![7, 7, 11],
                source_resblock_dilation_sizes: vec![vec![1, 3, 5]; 3],
                lrelu_slope: 0.1,
                audio_limit: 0.99,
                conv_pre_look_right: 4,
                f0_cond_channels: 512,
            },
        }
    }

    /// Reads a model directory: Qwen2 dims from `CosyVoice-BlankEN/config.json`, everything
    /// else from `tiny.json` when present, else the 0.5B values.
    pub fn from_dir(dir: &Path) -> Result<Self> {
        let files = ModelFiles::in_dir(dir);
        let qwen = QwenConfig::from_file(&files.qwen_config)?;
        let tiny = dir.join("tiny.json");
        let mut cfg = if tiny.exists() { Self::from_tiny_json(&tiny)? } else { Self::full_size() };
        cfg.lm.qwen = qwen;
        Ok(cfg)
    }

    /// Parses the fixture generator's `tiny.json` (every hyper-parameter of a reduced model).
    pub fn from_tiny_json(path: &Path) -> Result<Self> {
        let bad = |reason: String| ModelError::BadConfig { path: path.to_path_buf(), reason };
        let text = std::fs::read_to_string(path).map_err(|e| ModelError::CorruptFile {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
        let v: Value = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
        let get = |ptr: &str| v.pointer(ptr).ok_or_else(|| bad(format!("missing field {ptr}")));
        let usize_at = |ptr: &str| {
            get(ptr)?
                .as_u64()
                .map(|x| x as usize)
                .ok_or_else(|| bad(format!("{ptr}: not an integer")))
        };
        let f64_at =
            |ptr: &str| get(ptr)?.as_f64().ok_or_else(|| bad(format!("{ptr}: not a number")));
        let vec_at = |ptr: &str| -> Result<Vec<usize>> {
            serde_json::from_value(get(ptr)?.clone()).map_err(|e| bad(format!("{ptr}: {e}")))
        };
        let vec2_at = |ptr: &str| -> Result<Vec<Vec<usize>>> {
            serde_json::from_value(get(ptr)?.clone()).map_err(|e| bad(format!("{ptr}: {e}")))
        };
        let qwen: QwenConfig = serde_json::from_value(get("/llm/qwen2")?.clone())
            .map_err(|e| bad(format!("/llm/qwen2: {e}")))?;
        let e = "/flow/decoder/estimator";
        Ok(Self {
            name: get("/name")?.as_str().unwrap_or("tiny").to_string(),
            lm: LmConfig { qwen, speech_token_size: usize_at("/llm/speech_token_size")? },
            flow: FlowConfig {
                input_size: usize_at("/flow/input_size")?,
                output_size: usize_at("/flow/output_size")?,
                spk_embed_dim: usize_at("/flow/spk_embed_dim")?,
                vocab_size: usize_at("/flow/vocab_size")?,
                token_mel_ratio: usize_at("/flow/token_mel_ratio")?,
                pre_lookahead_len: usize_at("/flow/pre_lookahead_len")?,
                pre_lookahead_channels: usize_at("/flow/pre_lookahead_layer/channels")?,
                inference_cfg_rate: f64_at("/flow/decoder/cfm_params/inference_cfg_rate")?,
                n_timesteps: usize_at("/flow/decoder/n_timesteps_used_by_flow_inference")?,
                dit: DitConfig {
                    dim: usize_at(&format!("{e}/dim"))?,
                    depth: usize_at(&format!("{e}/depth"))?,
                    heads: usize_at(&format!("{e}/heads"))?,
                    dim_head: usize_at(&format!("{e}/dim_head"))?,
                    ff_mult: usize_at(&format!("{e}/ff_mult"))?,
                    mel_dim: usize_at(&format!("{e}/mel_dim"))?,
                    mu_dim: usize_at(&format!("{e}/mu_dim"))?,
                    spk_dim: usize_at(&format!("{e}/spk_dim"))?,
                    out_channels: usize_at(&format!("{e}/out_channels"))?,
                },
            },
            hift: HiftConfig {
                in_channels: usize_at("/hift/in_channels")?,
                base_channels: usize_at("/hift/base_channels")?,
                nb_harmonics: usize_at("/hift/nb_harmonics")?,
                sampling_rate: usize_at("/hift/sampling_rate")?,
                nsf_alpha: f64_at("/hift/nsf_alpha")?,
                nsf_sigma: f64_at("/hift/nsf_sigma")?,
                nsf_voiced_threshold: f64_at("/hift/nsf_voiced_threshold")?,
                upsample_rates: vec_at("/hift/upsample_rates")?,
                upsample_kernel_sizes: vec_at("/hift/upsample_kernel_sizes")?,
                n_fft: usize_at("/hift/istft_params/n_fft")?,
                hop_len: usize_at("/hift/istft_params/hop_len")?,
                resblock_kernel_sizes: vec_at("/hift/resblock_kernel_sizes")?,
                resblock_dilation_sizes: vec2_at("/hift/resblock_dilation_sizes")?,
                source_resblock_kernel_sizes: vec_at("/hift/source_resblock_kernel_sizes")?,
                source_resblock_dilation_sizes: vec2_at("/hift/source_resblock_dilation_sizes")?,
                lrelu_slope: f64_at("/hift/lrelu_slope")?,
                audio_limit: f64_at("/hift/audio_limit")?,
                conv_pre_look_right: usize_at("/hift/conv_pre_look_right")?,
                f0_cond_channels: usize_at("/hift/f0_predictor/cond_channels")?,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiny_fixture_config_parses() {
        let dir =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/cosyvoice3-tiny-a/model");
        let cfg = ModelConfig::from_dir(&dir).unwrap();
        assert_eq!(cfg.lm.qwen.hidden_size, 32);
        assert_eq!(cfg.lm.qwen.head_dim(), 8);
        assert_eq!(cfg.flow.dit.dim_head, 16);
        assert_eq!(cfg.hift.base_channels, 32);
        assert_eq!(cfg.hift.upsample_scale(), 480);
    }

    #[test]
    fn missing_qwen_config_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let err = ModelConfig::from_dir(dir.path()).unwrap_err().to_string();
        assert!(err.contains("config.json"), "{err}");
    }

    #[test]
    fn full_size_samples_per_token() {
        assert_eq!(SAMPLES_PER_TOKEN, 960);
        assert_eq!(ModelConfig::full_size().hift.upsample_scale(), 480);
    }
}
