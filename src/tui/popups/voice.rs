//! The voice picker (`v`): the selected segment's voice among the session's, `as written`
//! first (the manuscript and the cast decide). Enter applies it (a new take).

use crossterm::event::KeyCode;
use ratatui::text::{Line, Span};

use super::{PickerKey, picker_common, step};
use crate::tui::theme::Theme;

/// The voice picker's cursor into the choices the App gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VoicePicker {
    pub at: usize,
}

impl VoicePicker {
    /// ↑/↓ (←/→, j/k, tab, `v` again) move over `n` choices, enter picks, esc closes.
    pub fn key(&mut self, code: KeyCode, n: usize) -> PickerKey {
        if let Some(done) = picker_common(code, self.at) {
            return done;
        }
        match code {
            KeyCode::Down | KeyCode::Right | KeyCode::Tab | KeyCode::Char('j' | 'l' | 'v') => {
                self.at = step(self.at, n, true);
            }
            KeyCode::Up | KeyCode::Left | KeyCode::BackTab | KeyCode::Char('k' | 'h') => {
                self.at = step(self.at, n, false);
            }
            _ => {}
        }
        PickerKey::Moved
    }

    /// The hint bar: the voices in a row, the one under the cursor highlighted.
    #[must_use]
    pub fn line<'a>(&self, choices: &[String], theme: &Theme) -> Line<'a> {
        let mut spans = vec![Span::styled("voice: ", theme.hint_text)];
        for (i, name) in choices.iter().enumerate() {
            let style = if i == self.at { theme.selection } else { theme.search };
            spans.push(Span::styled(format!(" {name} "), style));
        }
        spans.push(Span::styled(
            "  ←/→ pick · enter apply (new take) · esc cancel",
            theme.hint_text,
        ));
        Line::from(spans)
    }
}
