//! The pause pass: a block's text split into runs at its `[pause…]` and `[break]` markup
//! (from [`crate::markup::lex`]), each run with the pause after it.

use std::ops::Range;

use super::{PauseDefaults, Voicing};
use crate::markup::{Markup, Token};

/// A stretch of block text between pause markups (and, after
/// [`super::voicing::voicing_runs`], voicing changes), and the pause after it.
pub(super) struct Run {
    pub range: Range<usize>,
    pub pause_ms: u32,
    pub is_break: bool,
    /// Its voicing (from [`super::voicing::voicing_runs`]).
    pub voicing: Voicing,
    /// It ends where the voicing changes.
    pub voicing_ends: bool,
    /// Voicing markup inside it that changed nothing (skipped, not read).
    pub unchanged: Vec<Range<usize>>,
}

impl Run {
    /// A run as pause markup ends it; the voicing pass fills in the voicing.
    fn paused(range: Range<usize>, pause_ms: u32, is_break: bool) -> Self {
        let voicing = Voicing::default();
        Self { range, pause_ms, is_break, voicing, voicing_ends: false, unchanged: Vec::new() }
    }
}

/// Splits block text (`len` bytes, lexed into `tokens`) at its pause markup; a bare `[pause]`
/// lasts [`PauseDefaults::pause_ms`].
pub(super) fn pause_runs(tokens: &[Token], len: usize, p: &PauseDefaults) -> Vec<Run> {
    let mut runs = Vec::new();
    let mut start = 0;
    for token in tokens {
        let (pause_ms, is_break) = match token.markup {
            Markup::Pause { ms } => (ms.unwrap_or(p.pause_ms), false),
            Markup::Break => (0, true),
            _ => continue,
        };
        runs.push(Run::paused(start..token.range.start, pause_ms, is_break));
        start = token.range.end;
    }
    runs.push(Run::paused(start..len, 0, false));
    runs
}
