//! What the workspace's tests share, so no crate's tests carry a copy of another's helpers:
//! the fixtures' paths and golden cases ([`fixtures`]), generated test signals ([`signals`])
//! and EPUB books ([`epub`]), the skip-or-fail rule for optional system libraries ([`optional`]). A
//! dev-dependency only; nothing here ships.

#![forbid(unsafe_code)]

pub mod docx;
pub mod epub;
pub mod fixtures;
pub mod optional;
pub mod signals;
pub mod tensors;
