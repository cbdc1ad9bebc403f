//! Lectern: a terminal narration workstation.
//!
//! Modules, with dependencies pointing down the list:
//! - `cli`: subcommands (the binary's edge);
//! - `bench`: `lectern bench`, stage benchmarks on full-size random weights;
//! - `parity`: `lectern parity`, model stages against reference fixtures;
//! - `tui`: the workstation front end (state, keys, themes, panels, event loop);
//! - `engine`: background synthesis thread, scheduler, telemetry, takes;
//! - `deliver`: delivery files (ACX MP3s, M4B) mastered from the 24 kHz master, and `check`;
//! - `store`: project database, take files, export;
//! - `audio`: playback (cpal + ring buffer, file sink), WAV I/O;
//! - `model`: CosyVoice3 in candle — pure math, no threads, no I/O beyond loading;
//! - `assets`: what the binary carries (sample, demo model) and the platform directories;
//! - `quality`: per-take quality figures (speaker similarity, speaking rate, loudness);
//! - `limits`: the accepted ranges of numeric settings (CLI, workstation, config files);
//! - `hashing`: the one stable hash and mixing function (stored hashes, seeds).

pub mod assets;
pub mod audio;
pub mod bench;
pub mod cli;
pub mod config;
pub mod deliver;
pub mod engine;
pub mod hashing;
pub mod limits;
pub mod model;
pub mod parity;
pub mod quality;
pub mod render;
pub mod session;
pub mod store;
pub mod text;
pub mod tui;
pub mod voice;
pub mod workstation;
