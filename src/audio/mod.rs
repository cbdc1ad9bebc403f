//! Playback: WAV I/O, the real-time state behind the output callback, and the player (cpal
//! output stream or a file sink when there is no device); and the 24 kHz master's signal
//! definitions ([`master`], [`loudness`]).
//!
//! Threads: the caller talks to a [`player::Player`] handle; an `audio-mgr` thread owns the sink
//! and the producer half of a wait-free ring (rtrb); the device callback (or the `audio-file`
//! thread of the file sink) owns the consumer half through a [`callback::Renderer`]. The only
//! state shared with the callback is atomics in [`callback::Shared`]. Nothing here imports the
//! model or the TUI.

pub mod callback;
pub mod flac;
pub mod loudness;
pub mod master;
pub mod player;
pub mod resample;
pub mod tags;
pub mod wav;

pub use player::{AudioCommand, Cue, DeviceChoice, PlayState, Player, PlayerConfig, PlayerStatus};

/// Sample rate of everything the engine produces, Hz (1 speech token = 960 samples).
pub use lectern_model::config::SAMPLE_RATE_HZ;

/// Errors of the audio module.
#[derive(Debug, thiserror::Error)]
pub enum AudioError {
    // Converted by hand rather than `#[from]`, which would also make the cause the error's
    // source, and `{:#}` would print it twice (see `text::TextError::Io`).
    #[error("wav: {0}")]
    Wav(hound::Error),
    #[error("io: {0}")]
    Io(std::io::Error),
    #[error("unsupported wav: {0}")]
    Unsupported(String),
    #[error("audio device: {0}")]
    Device(String),
}

impl From<hound::Error> for AudioError {
    fn from(e: hound::Error) -> Self {
        Self::Wav(e)
    }
}

impl From<std::io::Error> for AudioError {
    fn from(e: std::io::Error) -> Self {
        Self::Io(e)
    }
}

pub type Result<T> = std::result::Result<T, AudioError>;
