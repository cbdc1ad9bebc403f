//! Lectern: a terminal narration workstation.
//!
//! Modules, with dependencies pointing down the list:
//! - `cli`: subcommands (the binary's edge);
//! - `bench`: `lectern bench`, stage benchmarks on full-size random weights;
//! - `parity`: `lectern parity`, model stages against reference fixtures;
//! - `model`: CosyVoice3 in candle — pure math, no threads, no I/O beyond loading.

pub mod bench;
pub mod cli;
pub mod model;
pub mod parity;
pub mod text;
pub mod voice;
