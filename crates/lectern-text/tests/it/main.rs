//! lectern-text's integration tests, one module per area, in one test binary.

mod corpus;
mod docx;
mod epub;
mod language;
mod manuscript;
mod markdown;
mod normalize;
mod segment;
mod voicing;
