//! lectern-text's integration tests, one module per area, in one test binary.

mod corpus;
mod docx;
mod english;
mod epub;
mod golden_languages;
mod hostile;
mod language;
mod manuscript;
mod markdown;
mod normalize;
mod pronunciation;
mod read_along;
mod segment;
mod spoken_languages;
mod voicing;
