//! CosyVoice3 text-to-speech in [candle]: the speech-token LM, the flow-matching decoder and
//! the HiFT vocoder, matching upstream PyTorch (FunAudioLLM/CosyVoice) within the tolerances of
//! Lectern's parity contract on every stage.
//!
//! Pure math: no threads of its own, no I/O beyond loading checkpoints. Three stages joined by
//! simple data:
//!
//! | stage | module | in | out |
//! | --- | --- | --- | --- |
//! | LM (Qwen2 + speech head, KV cache, upstream sampling) | [`lm`], [`sampling`] | text ids, the voice's prompt text ids and speech tokens | speech tokens, 25 Hz |
//! | flow (DiT, conditional flow matching, CFG) | [`flow`] | speech tokens, the voice's prompt mel and speaker embedding | 80-bin mel, 50 Hz |
//! | vocoder (HiFT: F0 predictor, neural source filter, iSTFT) | [`hift`] | mel | 24 kHz samples |
//!
//! The model directory is upstream's download (`llm.pt`, `flow.pt`, `hift.pt`,
//! `CosyVoice-BlankEN/`; [`config::ModelFiles`]); `.pt` checkpoints are read without Python
//! ([`pt`], with the zip CRC-32 of every tensor record checked), safetensors too, and every
//! missing or misshapen tensor is an error naming the file and the key ([`weights`]: candle-nn's
//! `VarBuilder`, wrapped for those errors and for weight-norm folding). Every projection is one
//! [`linear::Linear`] (dense, q8_0, 3xTF32 or bf16 products), a candle `Module`. [`mel`]
//! is the Matcha-TTS mel front end the voice prompt goes through; [`noise`] rebuilds upstream's
//! fixed noise buffers bit for bit (torch's MT19937 `randn`).
//!
//! # Speaking a line
//!
//! ```no_run
//! use candle::Device;
//! use lectern_model::config::{ModelConfig, ModelFiles};
//! use lectern_model::flow::{CausalMaskedDiffWithDiT, FlowPrompt, NoiseSource};
//! use lectern_model::hift::Hift;
//! use lectern_model::lm::{GenerateOptions, LaneRequest, LmPrecision, SpeechLm};
//!
//! # fn speak(dir: &std::path::Path, prompt: FlowPrompt, prompt_text_ids: Vec<u32>,
//! #          text_ids: Vec<u32>) -> lectern_model::Result<Vec<f32>> {
//! let device = Device::Cpu;
//! let (cfg, files) = (ModelConfig::from_dir(dir)?, ModelFiles::in_dir(dir));
//! let lm = SpeechLm::from_dir(dir, LmPrecision::F32, &device)?;
//! let request = LaneRequest::new(prompt_text_ids, text_ids, prompt.prompt_token.clone(), 0);
//! let tokens = lm.generate(&[request], &GenerateOptions::default())?.remove(0).tokens;
//! let flow = CausalMaskedDiffWithDiT::load(&cfg.flow, &files.flow, &device, &NoiseSource::Rebuilt)?;
//! let mel = flow.decode_group(&prompt, &[&tokens], 10)?.remove(0);
//! Hift::load(&files.hift, &cfg, &device)?.forward(&mel)
//! # }
//! ```
//!
//! The runnable version, with the tokenizer and a voice directory, is the `speak` example:
//! `cargo run -p lectern-model --example speak -- MODEL_DIR VOICE_DIR "Text." out.wav`.
//!
//! # Precision and speed options
//!
//! The LM runs in f32, f16, bf16 or GGML q8_0 ([`lm::LmPrecision`]); the flow's matmuls in f32,
//! 3xTF32 on CUDA or bf16 ([`flow::FlowMatmul`]). Reduced precisions are options with measured
//! deviations, never silent defaults. Several decode lanes share one LM batch without changing
//! any lane's tokens ([`lm::GenerateOptions`]); several segments share one flow call
//! ([`flow::CausalMaskedDiffWithDiT::decode_group`]).
//!
//! Lectern's own kernels (fused CPU ops, and on CUDA its NVRTC-compiled kernels) are on by
//! default and are each model's option: `SpeechLm::set_kernels`,
//! `CausalMaskedDiffWithDiT::set_kernels`, `Hift::set_kernels` (off: candle's ops only, within
//! the same fixture gates), so two models in one process may differ.
//!
//! # Features
//!
//! `cuda` (Lectern's own fused kernels, compiled with NVRTC, and CUDA graphs for the LM's
//! decode steps), `metal`, `accelerate`: candle's backends of the same names.

#![forbid(unsafe_code)]

pub mod config;
pub mod error;
pub mod flow;
pub mod hift;
pub mod linear;
pub mod lm;
pub mod mel;
pub mod noise;
pub mod op_clock;
pub mod precision;
pub mod pt;
pub mod sampling;
pub mod weights;

pub use error::{ModelError, Result};
pub use weights::{Checkpoint, Weights};

// The candle this crate is built with, so callers use the same version.
pub use candle;
pub use candle_nn;
