//! The engine: a background thread that owns the model and the device, takes [`protocol::Request`]s
//! and emits [`protocol::EngineEvent`]s.

pub mod protocol;
