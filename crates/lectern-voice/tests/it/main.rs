//! lectern-voice's integration tests, one module per area, in one test binary: voice files, and
//! voice making against the upstream frontend's outputs (`fixtures/voice-prompt`).

mod extract;
mod features;
mod files;
mod onnx;
mod speech;
