//! The app's integration tests, one module per area, in one test binary: one link instead of
//! one per file (CI time and `target/` size); each library crate has its own under
//! `crates/*/tests/it`. `tests/audio_alloc.rs` stays a binary of its own:
//! it installs a counting global allocator.
//!
//! Run one area with `cargo test --test it AREA::`, e.g. `cargo test --test it store_export::`.

mod cli_common;
mod deliver_common;
mod session_common;
mod store_common;
mod tmux_common;
mod tui_common;

mod audio_alsa;
mod audio_filesink;
mod audio_render;
mod bench_workload;
mod cast_cli;
mod checkpoint_integrity;
mod cli_limits;
mod cli_small;
mod deliver_check;
mod deliver_export;
mod deliver_presets;
mod deliver_read_along;
mod deliver_stream;
mod doctor_cli;
mod dry_run;
mod dry_run_plan;
mod e2e_fixtures;
mod e2e_tmux;
mod install;
mod model_download;
mod outputs_guard;
mod parity_cli;
mod proof_cli;
mod props;
mod reading_report;
mod render_cli;
mod render_epub;
mod say_cli;
mod session_carry;
mod session_pipeline;
mod session_retry;
mod shards;
mod store_bad_input;
mod store_export;
mod store_kill;
mod store_project;
mod store_recovery;
mod store_recovery_cli;
mod tui_app;
mod tui_cast;
mod tui_loop;
mod tui_screen;
mod tui_view;
mod unspoken_languages;
mod voice_add_cli;
mod voice_speech;
mod voices;
