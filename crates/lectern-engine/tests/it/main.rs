//! lectern-engine's integration tests, one module per area, in one test binary: the engine
//! thread on the deterministic fake backend.

mod casting;
mod common;

mod overlap;
mod render;
mod telemetry;
