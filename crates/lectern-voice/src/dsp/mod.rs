//! Pure-Rust signal processing for `lectern voice add`: the features upstream CosyVoice3's
//! `frontend_zero_shot` extracts from a reference recording (fixtures/voice-prompt/README.md).
//!
//! * [`mod@resample`]: torchaudio 2.5.1 `Resample` (the `load_wav` step), bit-exact kernel;
//! * [`whisper`]: the speech tokenizer's input, whisper's 128-bin log-mel at 16 kHz;
//! * [`kaldi`]: CAM++'s input, Kaldi fbank (80 bins, 16 kHz) with per-bin mean removal.
//!
//! The 24 kHz prompt mel lives in [`lectern_model::mel`]. Everything here is math on sample
//! slices: no I/O (reading the file is [`crate::reference`]).

pub mod kaldi;
pub mod resample;
pub mod whisper;

pub use resample::{Kernel, kernel, resample};
