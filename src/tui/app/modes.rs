//! The App's side of the modals ([`crate::tui::popups`]): opening each on the selected
//! segment, sending it keys, and acting on what it answers.

use crossterm::event::KeyEvent;

use super::{AS_WRITTEN, App, AuditionChoice, Command, Mode};
use crate::review::{CastingOverride, Review};
use crate::tui::popups::PickerKey;
use crate::tui::popups::audition::AuditionPicker;
use crate::tui::popups::prompt::PromptKey;
use crate::tui::popups::style::StylePrompt;
use crate::tui::popups::voice::VoicePicker;
use lectern_engine::protocol::SegmentId;

impl App {
    /// A key for the open modal.
    pub(super) fn on_modal_key(&mut self, k: KeyEvent) -> Vec<Command> {
        let choices = self.voice_choices();
        match &mut self.mode {
            Mode::Note(p) => {
                let out = p.key(&k);
                self.after_note(out)
            }
            Mode::Style(p) => {
                let out = p.key(&k);
                self.after_style(out)
            }
            Mode::Search(p) => {
                let out = p.key(&k);
                let (query, origin) = (p.input.value().to_string(), p.origin);
                self.after_search(out, query, origin);
                Vec::new()
            }
            Mode::Audition(p) => {
                let out = p.key(k.code);
                self.after_audition(out)
            }
            Mode::Voice(p) => {
                let out = p.key(k.code, choices.len());
                self.after_voice(out, &choices)
            }
            Mode::Normal | Mode::Help | Mode::Voices => Vec::new(),
        }
    }

    /// Enter saves the note (trimmed) on the selected segment.
    fn after_note(&mut self, out: PromptKey) -> Vec<Command> {
        match out {
            PromptKey::Cancel => self.mode = Mode::Normal,
            PromptKey::Submit(text) => {
                self.mode = Mode::Normal;
                let note = text.trim().to_string();
                self.history.note.push(&note);
                if let Some(row) = self.rows.get_mut(self.selected) {
                    row.note.clone_from(&note);
                    return vec![Command::SetNote { segment: row.id, note }];
                }
            }
            PromptKey::Edited | PromptKey::Unchanged => {}
        }
        Vec::new()
    }

    /// Enter recasts the selected segment with the instruction (empty: as written).
    fn after_style(&mut self, out: PromptKey) -> Vec<Command> {
        match out {
            PromptKey::Cancel => self.mode = Mode::Normal,
            PromptKey::Submit(text) => {
                self.mode = Mode::Normal;
                let text = text.trim().to_string();
                self.history.style.push(&text);
                let style = (!text.is_empty()).then_some(text);
                return self.recast(|over| over.style = style);
            }
            PromptKey::Edited | PromptKey::Unchanged => {}
        }
        Vec::new()
    }

    /// Each edit selects the first match from where the search began; esc and enter close.
    fn after_search(&mut self, out: PromptKey, query: String, origin: usize) {
        match out {
            PromptKey::Cancel => self.mode = Mode::Normal,
            PromptKey::Submit(_) => {
                self.history.search.push(&query);
                self.mode = Mode::Normal;
            }
            PromptKey::Edited => {
                self.search = query;
                self.jump_to_match(origin);
            }
            PromptKey::Unchanged => {}
        }
    }

    /// Enter speaks the pick (the picker stays open to try another).
    fn after_audition(&mut self, out: PickerKey) -> Vec<Command> {
        let picked = match out {
            PickerKey::Close => {
                self.mode = Mode::Normal;
                return Vec::new();
            }
            PickerKey::Moved => return Vec::new(),
            PickerKey::Pick(i) => i,
        };
        let Mode::Audition(p) = &self.mode else { return Vec::new() };
        let (Some(row), Some(choice)) = (self.rows.get(self.selected), p.choices.get(picked))
        else {
            return Vec::new();
        };
        let (segment, text, label) = (row.id, choice.text.clone(), choice.label.clone());
        self.push_log(format!("audition: {label} (current voice, not kept)"));
        vec![Command::Audition { segment, text }]
    }

    /// Enter recasts the selected segment with the picked voice (the first: as written).
    fn after_voice(&mut self, out: PickerKey, choices: &[String]) -> Vec<Command> {
        match out {
            PickerKey::Close => self.mode = Mode::Normal,
            PickerKey::Moved => {}
            PickerKey::Pick(at) => {
                self.mode = Mode::Normal;
                let voice = (at > 0).then(|| choices[at].clone());
                return self.recast(|over| over.voice = voice);
            }
        }
        Vec::new()
    }

    /// "nineteen ninety-nine" — contains the search (case-insensitive).
    #[must_use]
    pub fn search_matches(&self) -> Vec<usize> {
        if self.search.is_empty() {
            return Vec::new();
        }
        let q = self.search.to_lowercase();
        self.rows
            .iter()
            .enumerate()
            .filter(|(_, r)| {
                r.source.to_lowercase().contains(&q) || r.text.to_lowercase().contains(&q)
            })
            .map(|(i, _)| i)
            .collect()
    }

    /// Selects the first match at or after `from` (wrapping).
    pub(super) fn jump_to_match(&mut self, from: usize) {
        let m = self.search_matches();
        if let Some(&i) = m.iter().find(|&&i| i >= from).or_else(|| m.first()) {
            self.selected = i;
            self.ensure_visible();
        }
    }

    /// Opens the picker on a segment's choices (if it is still the selected one).
    pub(super) fn open_audition(&mut self, segment: SegmentId, choices: Vec<AuditionChoice>) {
        if self.rows.get(self.selected).is_none_or(|r| r.id != segment) {
            return;
        }
        if choices.is_empty() {
            self.push_log(format!("segment {}: no word to audition", self.selected + 1));
            return;
        }
        self.mode = Mode::Audition(AuditionPicker::new(choices));
    }

    /// The book's voice: the cast's first, else the one the workstation was opened with.
    #[must_use]
    pub fn book_voice(&self) -> &str {
        self.cast.book_voice().unwrap_or(&self.config.voice)
    }

    /// The voice picker's choices: `as written` (the manuscript and cast decide), then the
    /// session's voices, the book's first.
    #[must_use]
    pub fn voice_choices(&self) -> Vec<String> {
        let mut out = vec![AS_WRITTEN.to_string()];
        if self.cast.voices.is_empty() {
            out.push(self.config.voice.clone());
        }
        out.extend(self.cast.voices.iter().map(|v| v.name.clone()));
        out
    }

    /// The selected row, unless it is approved (its take is locked: said in the log).
    fn recastable(&mut self) -> Option<usize> {
        let i = self.selected;
        let row = self.rows.get(i)?;
        if row.review == Review::Approved {
            self.push_log(format!("segment {}: approved (locked); `a` un-approves it", i + 1));
            return None;
        }
        Some(i)
    }

    /// Opens the voice picker on the selected segment, at the voice that speaks it.
    pub(super) fn open_voice_picker(&mut self) {
        let Some(i) = self.recastable() else { return };
        let row = &self.rows[i];
        let current = row.cast.recast.voice.as_deref();
        let at =
            current.and_then(|v| self.voice_choices().iter().position(|c| c == v)).unwrap_or(0);
        self.mode = Mode::Voice(VoicePicker { at });
    }

    /// Opens the instruction prompt on the selected segment, with its instruction.
    pub(super) fn open_style_prompt(&mut self) {
        let Some(i) = self.recastable() else { return };
        let style = match &self.rows[i].cast.casting.mode {
            lectern_engine::protocol::Mode::Instruct(text) => text.as_str(),
            _ => "",
        };
        self.mode = Mode::Style(StylePrompt::new(style, &self.history.style));
    }

    /// Changes the selected segment's override with `change`; asks the session to keep it and
    /// make the new take (played as soon as it is saved), unless nothing changed.
    fn recast(&mut self, change: impl FnOnce(&mut CastingOverride)) -> Vec<Command> {
        let i = self.selected;
        let Some(row) = self.rows.get_mut(i) else { return Vec::new() };
        let mut over = row.cast.recast.clone();
        change(&mut over);
        if over == row.cast.recast {
            self.push_log(format!("segment {}: casting unchanged", i + 1));
            return Vec::new();
        }
        row.play_when_ready = true;
        let segment = row.id;
        let said = match (&over.voice, &over.style) {
            (None, None) => "as written".to_string(),
            (v, s) => {
                let v = v.as_deref().unwrap_or("voice as written");
                s.as_ref().map_or_else(|| v.to_string(), |s| format!("{v}, “{s}”"))
            }
        };
        self.push_log(format!("segment {}: recast: {said}", i + 1));
        vec![Command::Recast { segment, over }]
    }
}
