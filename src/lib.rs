//! Lectern: a terminal narration workstation — the app crate.
//!
//! The model, the text frontend and the engine are library crates of their own (`crates/`):
//! `lectern-model` (CosyVoice3 in candle), `lectern-text` (manuscripts, normalisation,
//! segmentation, tokenizer, stable hashing) and `lectern-engine` (the engine thread, scheduler,
//! telemetry, take records, voice making); `lectern-parity` runs model stages on reference
//! fixture cases (`lectern parity`). This crate is what a narrator runs on top of them.
//!
//! Modules, with dependencies pointing down the list:
//! - `cli`: subcommands (the binary's edge);
//! - `bench`: `lectern bench --workload`, the standard workloads through the engine (the stage
//!   benchmarks are `lectern-bench`);
//! - `workstation`, `render`: the two ways a session runs (live, or a whole book to files);
//! - `dry_run`: what `render --dry-run` says of a book (its versioned JSON schema and table);
//! - `tui`: the workstation front end (state, keys, themes, panels, event loop);
//! - `session`: manuscript + model + voice → the project's segments and takes;
//! - `deliver`: delivery files (ACX MP3s, M4B) mastered from the 24 kHz master, and `check`;
//! - `quality`: per-take quality figures (speaker similarity, speaking rate, loudness);
//! - `store`: project database, take files, export;
//! - `review`: what the narrator reviews and the store keeps of it (review states, casting
//!   overrides, stored takes), plain values the store, the session and the TUI share;
//! - `reading`: manuscripts and EPUB books (read by `lectern_text::epub`) as the project reads them;
//! - `audio`: playback (cpal + ring buffer, file sink), WAV I/O, the 24 kHz master's joins and
//!   loudness;
//! - `config`, `voices`, `assets`: the installation (config file, voices directory, what the
//!   binary carries and the platform directories);
//! - `model_download`, `hub`, `model_dir`: the real model: fetched from the Hugging Face hub
//!   (`lectern model download`), and the check of a model directory every `--model` gets;
//! - `limits`: the accepted ranges of numeric settings (CLI, workstation, config files).

pub mod assets;
pub mod audio;
pub mod bench;
pub mod cast;
pub mod cli;
pub mod config;
pub mod deliver;
pub mod dry_run;
pub mod hub;
pub mod limits;
pub mod memory;
pub mod model_dir;
pub mod model_download;
pub mod output;
pub mod quality;
pub mod reading;
pub mod render;
pub mod review;
pub mod say;
pub mod session;
pub mod shards;
pub mod store;
pub mod synth;
pub mod tui;
pub mod voices;
pub mod workstation;
