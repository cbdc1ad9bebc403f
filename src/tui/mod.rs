//! The workstation front end: ratatui + crossterm.
//!
//! - [`app`]: all UI state and `update(Msg) -> Vec<Command>`; no I/O;
//! - [`action`], [`keymap`]: what keys do (defaults in code, optional TOML patch);
//! - [`theme`]: style roles, `themes/*.toml` patches, hot reload;
//! - [`popups`]: the modals (prompts and pickers), one file each, with their own state;
//! - [`layout`]: where each panel goes, shared by the app (mouse, page size) and the view;
//! - [`view`]: draw `&App` into a frame, one module per panel;
//! - [`mod@run`]: terminal setup/restore and the event loop;
//! - [`desk`]: the session as the run loop drives it (saves takes, choices, manuscript reloads);
//! - [`watch`]: manuscript hot reload (debounced re-parse on save).
//!
//! The UI imports `engine::protocol`, `audio`, the proofing types of [`crate::review`] and the
//! session, never the store or the model; it runs against any `Sender<Request>` / `Receiver<EngineEvent>` pair (tests
//! use the engine's `FakeBackend`).

pub mod action;
pub mod app;
pub mod casting;
pub mod checks;
pub mod desk;
pub mod keymap;
pub mod layout;
pub mod popups;
pub mod run;
pub mod theme;
pub mod view;
pub mod watch;

pub use app::{App, AppConfig, Command, Msg};
pub use run::{RunConfig, TuiError, run};
