//! lectern-engine's integration tests, one module per area, in one test binary: the engine
//! thread on the deterministic fake backend, and voice files and voice making against the
//! upstream frontend's outputs (`fixtures/voice-prompt`).

mod casting;
mod common;

mod overlap;
mod render;
mod telemetry;
mod voice_extract;
mod voice_features;
mod voice_files;
mod voice_onnx;
mod voice_speech;
