//! lectern-parity's integration tests: the parity stages' outputs against the fixtures'.

mod lm;
