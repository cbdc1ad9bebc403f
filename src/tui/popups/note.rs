//! The note prompt (`N`): the selected segment's note, edited in place; enter saves it.

use crossterm::event::KeyEvent;
use ratatui::text::{Line, Span};

use super::prompt::{InputHistory, Prompt, PromptKey};
use crate::tui::theme::Theme;

/// The note being typed.
#[derive(Debug, Clone, PartialEq)]
pub struct NotePrompt {
    pub input: Prompt,
}

const HINT: &str = " enter save · esc cancel";

impl NotePrompt {
    /// The prompt on a segment's note as it is.
    #[must_use]
    pub fn new(note: &str, history: &InputHistory) -> Self {
        Self { input: Prompt::new(note, history) }
    }

    /// Edits with one key ([`Prompt::key`]).
    pub fn key(&mut self, k: &KeyEvent) -> PromptKey {
        self.input.key(k)
    }

    /// The hint bar: `note: TEXT` and what enter and esc do, in `width` columns.
    #[must_use]
    pub fn line(&self, theme: &Theme, width: usize) -> Line<'static> {
        prompt_line("note: ", &self.input, HINT.to_string(), theme, width)
    }
}

/// `LABEL TEXT HINT` (the cursor cell between them): the prompt's text gets the columns the label and hint leave.
pub(super) fn prompt_line(
    label: &'static str,
    input: &Prompt,
    hint: String,
    theme: &Theme,
    width: usize,
) -> Line<'static> {
    let room = width.saturating_sub(label.len() + hint.chars().count()).max(12);
    let mut spans = vec![Span::styled(label, theme.search)];
    spans.extend(input.spans(room, theme.search, theme.selection));
    spans.push(Span::styled(hint, theme.hint_text));
    Line::from(spans)
}
