//! The engine: a background thread that owns the model and the device, takes [`protocol::Request`]s
//! and emits [`protocol::EngineEvent`]s.
//!
//! - [`protocol`]: the commands, events and take records the UI and the store import;
//! - [`backend`]: the [`SynthBackend`] trait the engine drives (LM, flow, vocoder) and a
//!   deterministic [`FakeBackend`] for tests;
//! - [`scheduler`]: pure queue logic: LM lanes, flow groups, cuts at n × 960 samples;
//! - [`thread`]: the engine thread ([`Engine::spawn`] → [`EngineHandle`]);
//! - [`telemetry`]: stage timers (device synchronised), RTF, KV and process memory probes;
//! - [`takes`]: take records and regeneration plans.
//!
//! An LM batch or a flow group + vocoder is one step, and commands are applied between steps
//! (at the next group boundary). With overlap ([`protocol::RenderParams::overlap`], on by
//! default where the backend offers an [`backend::LmStage`]) the LM runs on a thread of its own
//! and decodes the next batch while the engine thread renders groups; each lane's tokens reach
//! the flow the moment the lane finishes. The takes are the same either way.

pub mod backend;
pub mod cosyvoice;
pub mod protocol;
pub mod scheduler;
pub mod takes;
pub mod telemetry;
pub mod thread;

pub use backend::{BackendInfo, FakeBackend, FakeDelays, LmJob, Mel, SynthBackend};
pub use cosyvoice::CosyVoiceBackend;
pub use thread::{Engine, EngineHandle};

/// Version string written into every take record.
pub const ENGINE_VERSION: &str = concat!("lectern-engine-", env!("CARGO_PKG_VERSION"));

/// Errors of the engine and its backends.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Model(#[from] lectern_model::ModelError),
    /// A backend broke its contract (wrong lengths, wrong counts) or failed in its own terms.
    #[error("backend: {0}")]
    Backend(String),
    #[error("invalid input: {0}")]
    InvalidInput(String),
}

pub type Result<T> = std::result::Result<T, EngineError>;
