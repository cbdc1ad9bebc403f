//! CosyVoice3 in candle: pure math, no threads, no I/O beyond loading checkpoints.
//!
//! Three stages joined by simple data: speech tokens (25 Hz) from the LM to the flow,
//! 80-bin mel frames (50 Hz) from the flow to the vocoder, 24 kHz samples out.

pub mod config;
pub mod flow;
pub mod hift;
pub mod kernel_switch;
pub mod lm;
pub mod mel;
pub mod noise;
#[cfg(feature = "cuda")]
pub mod nvrtc;
pub mod pt;
pub mod sampling;
pub mod weights;

pub use weights::{Checkpoint, ModelError, Result, Weights};
