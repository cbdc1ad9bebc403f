//! lectern-model's integration tests, one module per stage, in one test binary: every stage
//! against the golden upstream outputs in `fixtures/` (PARITY.md tolerances), plus its errors.
//!
//! Run one stage with `cargo test -p lectern-model --test it flow::`.

mod flow;
mod hift;
mod lm;
mod mel;
mod noise;
mod sampling;
