//! Lectern: a terminal narration workstation.
pub mod model;
