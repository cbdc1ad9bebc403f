//! The workstation front end: ratatui + crossterm.
//!
//! - [`app`]: all UI state and `update(Msg) -> Vec<Request>`; no I/O;
//! - [`action`], [`keymap`]: what keys do (defaults in code, optional TOML patch);
//! - [`theme`]: style roles, `themes/*.toml` patches, hot reload;
//! - [`view`]: draw `&App` into a frame, one module per panel;
//! - [`run`]: terminal setup/restore and the event loop;
//! - [`demo`]: a scripted fake engine for tests and demos;
//! - [`watch`]: manuscript hot reload (debounced re-parse on save).
//!
//! The UI imports only `engine::protocol` and `audio`, never the model; it runs against any
//! `Sender<Request>` / `Receiver<EngineEvent>` pair.

pub mod action;
pub mod app;
pub mod demo;
pub mod keymap;
pub mod run;
pub mod theme;
pub mod view;
pub mod watch;

pub use app::{App, AppConfig, Msg};
pub use run::{RunConfig, TuiError, run};
