//! The workstation's state and its update function. No I/O: [`App::update`] turns one
//! [`Msg`] (key, mouse, resize, engine event, saved take, player status) into [`Command`]s for
//! the session and the engine, and queues player commands for the run loop to send
//! ([`App::drain_audio`]).
//!
//! Rows are the project's segments, identified by the store's key (which is also the engine's
//! segment id); their takes are the project's takes. What plays is the master of each segment
//! ([`crate::audio::master::segment_master`]): the take, faded at its edges, and its pause —
//! exactly what `render` and `export` write.
//!
//! - [`messages`]: what goes in ([`Msg`], [`AppConfig`]) and out ([`Command`]);
//! - [`row`]: the rows and takes as the UI keeps them, the telemetry history;
//! - [`playback`]: the playback queue ([`PlayQueue`]);
//! - [`waveform`]: each take's level envelope, made once when its samples arrive;
//! - `events`, `actions`, `modes`: how messages, actions and the modals' keys change the state.

mod actions;
mod events;
pub mod messages;
mod modes;
pub mod playback;
pub mod row;
pub mod waveform;

use std::collections::{HashMap, VecDeque};

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui::layout::Rect;

pub use self::messages::{
    AS_WRITTEN, AUDITION_ID, AppConfig, AuditionChoice, ChapterAcx, Command, Msg,
};
pub use self::playback::{HEARD_FRACTION, LOADED_TAKES_MAX, PLAY_AHEAD_SAMPLES, PlayQueue};
pub use self::row::{History, Row, RowInit, RowStatus, TakeEntry};
pub use self::waveform::{Envelope, Envelopes};
use super::action::Action;
use super::casting::CastView;
use super::keymap::KeyMap;
use super::layout::{Areas, Want, arrange};
use super::popups::audition::AuditionPicker;
use super::popups::note::NotePrompt;
use super::popups::prompt::InputHistory;
use super::popups::search::SearchPrompt;
use super::popups::style::StylePrompt;
use super::popups::voice::VoicePicker;
use crate::audio::player::{AudioCommand, PlayState, PlayerStatus};
use crate::review::Review;
use lectern_engine::protocol::{RenderParams, SegmentId, SegmentState};

/// Shown in the title bar when the bundled tiny model is loaded.
pub const TINY_MODEL_NOTICE: &str = "tiny random-weight model — proves the pipeline, not the voice";

/// Bounds of the live parameters: the same as the CLI's (`crate::limits`).
pub use crate::limits::{GROUP_MAX_FRAMES, LANES_MAX, NFE_MAX};
pub const GROUP_STEP_FRAMES: usize = 250;
/// Telemetry samples kept for the charts.
pub const HISTORY_LEN: usize = 240;
/// Log lines kept.
pub const LOG_LEN: usize = 1000;
/// Volume step per key press (linear gain).
pub const VOLUME_STEP: f32 = 0.1;
/// Audio seconds per character assumed for a segment's estimate until takes measure it.
pub const DEFAULT_S_PER_CHAR: f64 = 0.065;

/// Input mode: each modal's state lives in its variant, and goes when it closes.
#[derive(Debug, Clone, PartialEq)]
pub enum Mode {
    Normal,
    Help,
    /// Typing a search over segment texts.
    Search(SearchPrompt),
    /// Typing the selected segment's note.
    Note(NotePrompt),
    /// Picking a word or pronunciation entry to hear.
    Audition(AuditionPicker),
    /// Picking the selected segment's voice ([`App::voice_choices`]).
    Voice(VoicePicker),
    /// Typing the selected segment's instruction.
    Style(StylePrompt),
    /// The voices panel (any key closes it).
    Voices,
}

/// What was typed in each prompt before, for ↑/↓ in the next.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PromptHistories {
    pub note: InputHistory,
    pub style: InputHistory,
    pub search: InputHistory,
}

/// The whole UI state; the view draws from `&App`.
#[derive(Debug, Clone)]
pub struct App {
    pub config: AppConfig,
    pub keymap: KeyMap,
    pub rows: Vec<Row>,
    /// Each chapter's ACX status, once all its takes are chosen (by chapter, 0-based).
    pub chapter_acx: HashMap<usize, ChapterAcx>,
    pub selected: usize,
    /// First visible row of the segment list.
    pub list_offset: usize,
    pub params: RenderParams,
    pub backend: String,
    pub telemetry: History,
    /// Set while panels are frozen: what they show.
    pub frozen: Option<History>,
    pub log: VecDeque<String>,
    /// Lines scrolled up from the log's tail.
    pub log_scroll: usize,
    pub mode: Mode,
    /// The last search typed (kept after the prompt closes, for `n` and the list's marks).
    pub search: String,
    pub player: PlayerStatus,
    pub volume: f32,
    /// Terminal size, from the last resize.
    pub size: Rect,
    pub theme_name: String,
    pub engine_idle: bool,
    pub engine_gone: bool,
    pub quit: bool,
    /// Only segments that need work are listed (the pickups view).
    pub pickups_only: bool,
    /// The segment panel is toggled on (where it does not fit beside the charts).
    pub show_details: bool,
    /// The session's voices and the cast (the voices panel, the voice picker).
    pub cast: CastView,
    /// Frames drawn by the run loop (it draws only when something changed).
    pub redraws: u64,
    /// What the prompts were given before.
    pub history: PromptHistories,
    /// What the player was handed and what waits to play.
    queue: PlayQueue,
    /// Parameter changes sent to the engine and not yet echoed back by it.
    params_pending: usize,
    /// Each take's level envelope, for the segment panel's waveform.
    pub envelopes: Envelopes,
    /// The segment the narrator listens to, or last listened to (kept in the project).
    listening: Option<SegmentId>,
}

impl App {
    #[must_use]
    pub fn new(config: AppConfig, keymap: KeyMap) -> Self {
        let log = config
            .log
            .iter()
            .cloned()
            .chain(config.banner.iter().map(|b| format!("config: {b}")))
            .collect();
        Self {
            params: config.params.clone(),
            backend: config.backend.clone(),
            theme_name: config.theme.clone(),
            queue: PlayQueue::new(config.lead_in_samples),
            config,
            keymap,
            rows: Vec::new(),
            chapter_acx: HashMap::new(),
            selected: 0,
            list_offset: 0,
            telemetry: History::default(),
            frozen: None,
            log,
            log_scroll: 0,
            mode: Mode::Normal,
            search: String::new(),
            player: PlayerStatus::default(),
            volume: 1.0,
            size: Rect::default(),
            engine_idle: true,
            engine_gone: false,
            quit: false,
            pickups_only: false,
            show_details: false,
            redraws: 0,
            cast: CastView::default(),
            history: PromptHistories::default(),
            params_pending: 0,
            envelopes: Envelopes::default(),
            listening: None,
        }
    }

    /// The segment the narrator listens to, or last listened to: where a reopened book waits.
    #[must_use]
    pub fn listening(&self) -> Option<SegmentId> {
        self.listening
    }

    /// A book reopened with takes in it waits, paused, at the segment last listened to
    /// (`at`, else the first): it is selected, nothing plays and nothing is marked heard until
    /// the narrator presses play. A book with nothing rendered yet plays as it renders, if
    /// autoplay is on.
    pub fn wait_at(&mut self, at: Option<SegmentId>) {
        if !self.rows.iter().any(|r| !r.takes.is_empty()) {
            return;
        }
        self.queue.cursor = None;
        let i = at.and_then(|id| self.position(id)).unwrap_or(0);
        self.listening = self.rows.get(i).map(|r| r.id);
        self.select(i);
        let key = self.keymap.keys_for(Action::TogglePlay).into_iter().next();
        let key = key.unwrap_or_else(|| "play".into());
        self.push_log(format!("listening: paused at segment {} ({key} plays from there)", i + 1));
    }

    /// Player commands queued by the last updates, for the run loop to send.
    pub fn drain_audio(&mut self) -> Vec<AudioCommand> {
        self.queue.drain_audio()
    }

    /// The telemetry the panels show (the frozen copy while frozen).
    #[must_use]
    pub fn shown_telemetry(&self) -> &History {
        self.frozen.as_ref().unwrap_or(&self.telemetry)
    }

    /// A row's displayed state.
    #[must_use]
    pub fn row_status(&self, row: &Row) -> RowStatus {
        let playing = self.player.now_playing.is_some_and(|np| np.segment_id == row.id)
            && self.player.state != PlayState::Idle;
        if playing { RowStatus::Playing } else { RowStatus::Engine(row.state.clone()) }
    }

    pub fn push_log(&mut self, line: impl Into<String>) {
        if self.log.len() == LOG_LEN {
            self.log.pop_front();
        }
        self.log.push_back(line.into());
    }

    /// Replaces the manuscript's rows (on open and after the file changed) with the session's.
    /// Rows keep what the UI knows of them by id — loaded samples, the engine's state, the
    /// auditioned take — and the selection and play cursor stay on the same segments.
    pub fn set_rows(&mut self, rows: Vec<RowInit>) {
        let was_empty = self.rows.is_empty();
        let selected_id = self.rows.get(self.selected).map(|r| r.id);
        let cursor_id = self.queue.cursor.and_then(|i| self.rows.get(i)).map(|r| r.id);
        let mut old: HashMap<SegmentId, Row> = self.rows.drain(..).map(|r| (r.id, r)).collect();
        for init in rows {
            let prev = old.remove(&init.id);
            let row = row::merge_row(init, prev);
            for t in &row.takes {
                if let Some(samples) = &t.samples {
                    self.envelopes.remember(t.id, samples);
                }
            }
            self.rows.push(row);
        }
        self.selected = selected_id
            .and_then(|id| self.rows.iter().position(|r| r.id == id))
            .unwrap_or(self.selected)
            .min(self.rows.len().saturating_sub(1));
        self.queue.cursor = match cursor_id {
            Some(id) => self.rows.iter().position(|r| r.id == id),
            None if was_empty && self.config.autoplay && !self.rows.is_empty() => Some(0),
            None => None,
        };
        self.ensure_visible();
    }

    /// The title bar's progress: what is left to render and about how long it takes at the
    /// measured rate, and what is left to approve.
    #[must_use]
    pub fn progress_line(&self) -> String {
        let to_render: Vec<&Row> = self.rows.iter().filter(|r| r.in_flight()).collect();
        let approved = self.rows.iter().filter(|r| r.review == Review::Approved).count();
        let edited = self.rows.iter().filter(|r| r.edited_since_approval).count();
        let pickups = self
            .rows
            .iter()
            .filter(|r| r.review == Review::Pickup && !r.edited_since_approval)
            .count();
        let mut parts = Vec::new();
        if to_render.is_empty() {
            parts.push("all rendered".to_string());
        } else {
            let chars: usize = to_render.iter().map(|r| r.text.chars().count()).sum();
            let audio_s = chars as f64 * self.seconds_per_char();
            let rtf = self.telemetry.latest().map(|t| t.avg_total_rtf).filter(|r| *r > 0.0);
            let eta = rtf.map_or_else(
                || "rate not measured yet".into(),
                |r| format!("~{} at RTF {r:.2}", duration_label(audio_s * r)),
            );
            parts.push(format!("{} to render ({eta})", to_render.len()));
        }
        parts.push(format!("{approved}/{} approved", self.rows.len()));
        if pickups > 0 {
            parts.push(format!("{pickups} pickup(s)"));
        }
        if edited > 0 {
            parts.push(format!("{edited} edited since approval"));
        }
        parts.join(" · ")
    }

    /// Audio seconds per character of text, measured over the takes so far.
    fn seconds_per_char(&self) -> f64 {
        let (mut chars, mut seconds) = (0usize, 0.0f64);
        for row in &self.rows {
            if let Some(t) = row.current() {
                chars += row.text.chars().count();
                seconds += t.record.tokens.len() as f64 / 25.0;
            }
        }
        if chars == 0 { DEFAULT_S_PER_CHAR } else { seconds / chars as f64 }
    }

    /// Starts autoplay over the rows already rendered (stored takes play without waiting for
    /// the engine); returns the loads it needs.
    pub fn start_playback(&mut self) -> Vec<Command> {
        self.advance_playback();
        self.queue.drain_loads()
    }

    /// Marks the rows the engine was asked to render (their states follow from its events).
    pub fn mark_queued(&mut self, ids: &[SegmentId]) {
        for row in self.rows.iter_mut().filter(|r| ids.contains(&r.id)) {
            row.state = SegmentState::Queued;
        }
        if !ids.is_empty() {
            self.engine_idle = false;
        }
    }

    /// Applies one input; returns what it asks of the session and the engine.
    pub fn update(&mut self, msg: Msg) -> Vec<Command> {
        self.on_msg(msg)
    }

    fn position(&self, id: SegmentId) -> Option<usize> {
        self.rows.iter().position(|r| r.id == id)
    }

    fn on_key(&mut self, k: KeyEvent) -> Vec<Command> {
        if k.kind == KeyEventKind::Release {
            return Vec::new();
        }
        // Ctrl-C quits in every mode, whatever the keymap says: in raw mode it is the only way
        // out.
        if k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL) {
            return self.on_action(Action::Quit);
        }
        match self.mode {
            Mode::Normal => match self.keymap.lookup(&k) {
                Some(a) => self.on_action(a),
                None => Vec::new(),
            },
            Mode::Help | Mode::Voices => {
                self.mode = Mode::Normal;
                Vec::new()
            }
            _ => self.on_modal_key(k),
        }
    }

    #[must_use]
    pub fn quality_norms(&self) -> crate::quality::BookNorms {
        crate::quality::BookNorms::of(
            self.rows
                .iter()
                .filter_map(|r| r.chosen.and_then(|i| r.takes.get(i)))
                .filter(|t| !t.stale)
                .filter_map(|t| t.figures.as_ref()),
        )
    }

    /// Indices of the rows the list shows (all, or those needing work in the pickups view).
    #[must_use]
    pub fn visible_rows(&self) -> Vec<usize> {
        (0..self.rows.len()).filter(|&i| !self.pickups_only || self.rows[i].needs_work()).collect()
    }

    /// Moves the selection by `delta` shown rows (clamped to the list).
    fn step_selection(&mut self, delta: isize) {
        let shown = self.visible_rows();
        if shown.is_empty() {
            return;
        }
        let at = shown.iter().position(|&i| i >= self.selected).unwrap_or(shown.len() - 1);
        let to = (at as isize).saturating_add(delta).clamp(0, shown.len() as isize - 1);
        self.select(shown[to as usize]);
    }

    fn select(&mut self, i: usize) {
        self.selected = i.min(self.rows.len().saturating_sub(1));
        self.ensure_visible();
    }

    fn list_height(&self) -> usize {
        if self.size.width == 0 {
            return usize::MAX / 2;
        }
        usize::from(self.areas().list_rows())
    }

    /// The selected row's auditioned take, its envelope, and where the playhead is in it
    /// (0..=1) while it plays.
    #[must_use]
    pub fn selected_waveform(&self) -> Option<(&Envelope, Option<f64>)> {
        let row = self.rows.get(self.selected)?;
        let take = row.current()?;
        let envelope = self.envelopes.get(take.id)?;
        let playing = self.player.now_playing.filter(|np| {
            np.take_id == take.id && np.segment_id == row.id && self.player.state != PlayState::Idle
        });
        let at = playing.map(|np| {
            // The cue is the master: the lead-in before the book's first segment, the take,
            // its pause; the playhead is placed on the take.
            let lead_in = if self.selected == 0 { self.config.lead_in_samples } else { 0 };
            let pos = np.pos_samples.saturating_sub(lead_in as u64) as f64;
            (pos / envelope.len_samples.max(1) as f64).clamp(0.0, 1.0)
        });
        Some((envelope, at))
    }

    /// Where the panels are, as far as the App needs to know (the list, the log's side).
    fn areas(&self) -> Areas {
        let want = Want { lanes: self.lane_count(), text_rows: 0, details: self.show_details };
        arrange(self.size, want)
    }

    /// Lanes in the shown telemetry (sizes the lanes panel).
    #[must_use]
    pub fn lane_count(&self) -> usize {
        self.shown_telemetry().latest().map_or(0, |t| t.lanes.len())
    }

    /// Keeps the selected row inside the list's window (`list_offset` counts shown rows).
    fn ensure_visible(&mut self) {
        let h = self.list_height().max(1);
        let shown = self.visible_rows();
        let at = shown.iter().position(|&i| i >= self.selected).unwrap_or(0);
        if at < self.list_offset {
            self.list_offset = at;
        } else if at >= self.list_offset + h {
            self.list_offset = at + 1 - h;
        }
        self.list_offset = self.list_offset.min(shown.len().saturating_sub(1));
    }
}

/// `45 s`, `12 min`, `2 h 05 min`.
fn duration_label(seconds: f64) -> String {
    let s = seconds.max(0.0).round() as u64;
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{} min", s.div_ceil(60)),
        _ => format!("{} h {:02} min", s / 3600, (s % 3600) / 60),
    }
}
