//! The style prompt (`i`): the selected segment's instruction; enter applies it (a new take),
//! an empty one goes back to the casting as written.

use crossterm::event::KeyEvent;
use ratatui::text::Line;

use super::note::prompt_line;
use super::prompt::{InputHistory, Prompt, PromptKey};
use crate::tui::theme::Theme;

/// The instruction being typed.
#[derive(Debug, Clone, PartialEq)]
pub struct StylePrompt {
    pub input: Prompt,
}

const HINT: &str = " enter apply (new take; empty: as written) · esc cancel";

impl StylePrompt {
    /// The prompt on a segment's instruction as it is (empty for none).
    #[must_use]
    pub fn new(style: &str, history: &InputHistory) -> Self {
        Self { input: Prompt::new(style, history) }
    }

    /// Edits with one key ([`Prompt::key`]).
    pub fn key(&mut self, k: &KeyEvent) -> PromptKey {
        self.input.key(k)
    }

    /// The hint bar: `style: TEXT` and what enter and esc do, in `width` columns.
    #[must_use]
    pub fn line(&self, theme: &Theme, width: usize) -> Line<'static> {
        prompt_line("style: ", &self.input, HINT.to_string(), theme, width)
    }
}
