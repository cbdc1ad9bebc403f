//! The search prompt (`/`): the selection follows the first match as the query is typed; esc
//! and enter both leave it (the query stays for `n`).

use crossterm::event::KeyEvent;
use ratatui::text::Line;

use super::note::prompt_line;
use super::prompt::{InputHistory, Prompt, PromptKey};
use crate::tui::theme::Theme;

/// The query being typed and the row the search started from.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchPrompt {
    pub input: Prompt,
    /// The selected row when the search opened: matches are looked for from there.
    pub origin: usize,
}

impl SearchPrompt {
    /// An empty query from row `origin`.
    #[must_use]
    pub fn new(origin: usize, history: &InputHistory) -> Self {
        Self { input: Prompt::new("", history), origin }
    }

    /// Edits with one key ([`Prompt::key`]).
    pub fn key(&mut self, k: &KeyEvent) -> PromptKey {
        self.input.key(k)
    }

    /// The hint bar: `/QUERY` and its count of matches, in `width` columns.
    #[must_use]
    pub fn line(&self, matches: usize, theme: &Theme, width: usize) -> Line<'static> {
        let hint = format!(" {matches} match(es) · enter done · esc cancel");
        prompt_line("/", &self.input, hint, theme, width)
    }
}
