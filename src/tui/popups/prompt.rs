//! The line editor of every typed prompt: `tui-input`'s buffer and its readline keys (←/→,
//! Home/End, Ctrl-A/E, Ctrl-U clears, Ctrl-W deletes a word, Ctrl-K to the end, Alt-B/F by
//! word), and ↑/↓ through what was entered before in the same prompt.

use crossterm::event::{Event, KeyCode, KeyEvent};
use ratatui::style::Style;
use ratatui::text::Span;
use tui_input::Input;
use tui_input::backend::crossterm::to_input_request;
use unicode_width::UnicodeWidthChar;

/// Entries a prompt's history keeps.
pub const HISTORY_MAX: usize = 50;

/// What a prompt made of a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PromptKey {
    /// The text changed.
    Edited,
    /// The cursor moved, or the key meant nothing here.
    Unchanged,
    Cancel,
    /// Enter: the text as typed.
    Submit(String),
}

/// What was entered in one prompt, oldest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InputHistory {
    entries: Vec<String>,
}

impl InputHistory {
    /// Remembers an entry (not an empty one, nor the same as the last), forgetting the oldest
    /// beyond [`HISTORY_MAX`].
    pub fn push(&mut self, entry: &str) {
        if entry.is_empty() || self.entries.last().is_some_and(|e| e == entry) {
            return;
        }
        self.entries.push(entry.to_string());
        if self.entries.len() > HISTORY_MAX {
            self.entries.remove(0);
        }
    }

    /// The entries, oldest first.
    #[must_use]
    pub fn entries(&self) -> &[String] {
        &self.entries
    }
}

/// A one-line editor with its history.
#[derive(Debug, Clone)]
pub struct Prompt {
    input: Input,
    history: Vec<String>,
    /// The history entry shown while walking it with ↑/↓; `None` while editing the draft.
    recalled: Option<usize>,
    /// What was typed before ↑ recalled an entry, given back by ↓ past the newest.
    draft: String,
}

impl Prompt {
    /// An editor holding `text`, the cursor at its end.
    #[must_use]
    pub fn new(text: &str, history: &InputHistory) -> Self {
        Self {
            input: Input::new(text.to_string()),
            history: history.entries().to_vec(),
            recalled: None,
            draft: String::new(),
        }
    }

    /// The text typed so far.
    #[must_use]
    pub fn value(&self) -> &str {
        self.input.value()
    }

    /// Edits with one key: enter submits, esc cancels, ↑/↓ walk the history, the rest edit.
    pub fn key(&mut self, k: &KeyEvent) -> PromptKey {
        match k.code {
            KeyCode::Enter => PromptKey::Submit(self.value().to_string()),
            KeyCode::Esc => PromptKey::Cancel,
            KeyCode::Up => self.recall(true),
            KeyCode::Down => self.recall(false),
            _ => match to_input_request(&Event::Key(*k)).and_then(|r| self.input.handle(r)) {
                Some(changed) if changed.value => PromptKey::Edited,
                _ => PromptKey::Unchanged,
            },
        }
    }

    /// Shows the previous (`older`) or next history entry; past the newest, the draft again.
    fn recall(&mut self, older: bool) -> PromptKey {
        let n = self.history.len();
        let next = match (self.recalled, older) {
            (None, true) if n > 0 => Some(n - 1),
            (Some(i), true) => Some(i.saturating_sub(1)),
            (Some(i), false) if i + 1 < n => Some(i + 1),
            (Some(_), false) => None,
            (None, _) => return PromptKey::Unchanged,
        };
        if self.recalled.is_none() {
            self.draft = self.value().to_string();
        }
        self.recalled = next;
        let text = next.map_or_else(|| self.draft.clone(), |i| self.history[i].clone());
        self.input = Input::new(text);
        PromptKey::Edited
    }

    /// The text as spans fitting `width` columns, the cursor's cell in `cursor` style; scrolled
    /// so the cursor stays in view.
    #[must_use]
    pub fn spans(&self, width: usize, text: Style, cursor: Style) -> Vec<Span<'static>> {
        let width = width.max(1);
        let skip = self.input.visual_scroll(width.saturating_sub(1));
        let at = self.input.cursor();
        let (mut before, mut under, mut after) = (String::new(), None, String::new());
        let mut col = 0;
        for (i, c) in self.value().chars().enumerate() {
            let w = c.width().unwrap_or(0);
            if col < skip {
                col += w;
                continue;
            }
            if col + w > skip + width {
                break;
            }
            col += w;
            match i.cmp(&at) {
                std::cmp::Ordering::Less => before.push(c),
                std::cmp::Ordering::Equal => under = Some(c),
                std::cmp::Ordering::Greater => after.push(c),
            }
        }
        let under = under.map_or_else(|| " ".to_string(), String::from);
        vec![Span::styled(before, text), Span::styled(under, cursor), Span::styled(after, text)]
    }
}

/// Two prompts are equal when they hold the same text, cursor and history position.
impl PartialEq for Prompt {
    fn eq(&self, other: &Self) -> bool {
        self.value() == other.value()
            && self.input.cursor() == other.input.cursor()
            && self.history == other.history
            && self.recalled == other.recalled
            && self.draft == other.draft
    }
}
