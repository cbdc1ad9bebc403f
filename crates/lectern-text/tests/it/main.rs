//! lectern-text's integration tests, one module per area, in one test binary.

mod manuscript;
mod normalize;
