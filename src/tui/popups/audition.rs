//! The audition picker (`w`): the selected segment's words and matching pronunciation entries,
//! one to hear in the current voice (never kept as a take). It stays open to try another.

use crossterm::event::KeyCode;
use ratatui::text::{Line, Span};

use super::{PickerKey, picker_common, step};
use crate::tui::theme::Theme;

/// A word of a segment, or a pronunciation entry matching it, to hear on its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditionChoice {
    /// As the picker shows it: `Nguyen` or `Nguyen → [N][W][IY1][N]`.
    pub label: String,
    /// The text spoken (read as a manuscript line: pronunciations and normalisation apply).
    pub text: String,
}

/// The picker's choices and the one under the cursor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditionPicker {
    pub choices: Vec<AuditionChoice>,
    pub at: usize,
}

impl AuditionPicker {
    /// The picker at its first choice.
    #[must_use]
    pub fn new(choices: Vec<AuditionChoice>) -> Self {
        Self { choices, at: 0 }
    }

    /// ←/→ (h/l, tab) move, enter picks, esc closes.
    pub fn key(&mut self, code: KeyCode) -> PickerKey {
        if let Some(done) = picker_common(code, self.at) {
            return done;
        }
        let n = self.choices.len();
        match code {
            KeyCode::Right | KeyCode::Tab | KeyCode::Char('l') => self.at = step(self.at, n, true),
            KeyCode::Left | KeyCode::BackTab | KeyCode::Char('h') => {
                self.at = step(self.at, n, false);
            }
            _ => {}
        }
        PickerKey::Moved
    }

    /// The hint bar: the choice under the cursor highlighted among its neighbours.
    #[must_use]
    pub fn line(&self, theme: &Theme) -> Line<'_> {
        let mut spans = vec![Span::styled("hear: ", theme.hint_text)];
        // From two before the cursor, so it stays on screen in a long segment.
        let first = self.at.saturating_sub(2);
        if first > 0 {
            spans.push(Span::styled("… ", theme.hint_text));
        }
        for (i, c) in self.choices.iter().enumerate().skip(first) {
            let style = if i == self.at { theme.selection } else { theme.search };
            spans.push(Span::styled(format!(" {} ", c.label), style));
        }
        spans.push(Span::styled("  ←/→ pick · enter hear · esc done", theme.hint_text));
        Line::from(spans)
    }
}
