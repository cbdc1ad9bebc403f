//! Lectern's integration tests, one module per area, in one test binary: one link instead of
//! one per file (CI time and `target/` size). `tests/audio_alloc.rs` stays a binary of its own:
//! it installs a counting global allocator.
//!
//! Run one area with `cargo test --test it AREA::`, e.g. `cargo test --test it store_export::`.

mod deliver_common;
mod engine_common;
mod session_common;
mod store_common;

mod audio_alsa;
mod audio_filesink;
mod audio_render;
mod bench_workload;
mod checkpoint_integrity;
mod cli_limits;
mod deliver_check;
mod deliver_export;
mod e2e_fixtures;
mod e2e_tmux;
mod engine_overlap;
mod engine_render;
mod engine_telemetry;
mod flow_fixtures;
mod hift_fixtures;
mod install;
mod lm_fixtures;
mod mel_fixtures;
mod noise_fixtures;
mod props;
mod render_cli;
mod sampling_fixtures;
mod session_pipeline;
mod store_bad_input;
mod store_export;
mod store_kill;
mod store_project;
mod text_manuscript;
mod text_normalize;
mod tui_app;
mod tui_loop;
mod tui_view;
mod voice_add_cli;
mod voice_extract;
mod voice_features;
mod voice_files;
mod voice_onnx;
mod voice_speech;
