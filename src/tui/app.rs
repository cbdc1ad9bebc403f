//! The workstation's state and its update function. No I/O: [`App::update`] turns one
//! [`Msg`] (key, mouse, resize, engine event, saved take, player status) into [`Command`]s for
//! the session and the engine, and queues player commands for the run loop to send
//! ([`App::drain_audio`]).
//!
//! Rows are the project's segments, identified by the store's key (which is also the engine's
//! segment id); their takes are the project's takes. What plays is the master of each segment
//! ([`crate::audio::master::segment_master`]): the take, faded at its edges, and its pause —
//! exactly what `render` and `export` write.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseEvent, MouseEventKind};
use ratatui::layout::{Position, Rect};

use super::action::Action;
use super::casting::{CastView, RowCasting};
use super::keymap::KeyMap;
use super::layout::layout;
use crate::audio::master;
use crate::audio::player::{AudioCommand, Cue, PlayState, PlayerStatus};
use crate::review::{CastingOverride, Review};
use lectern_engine::protocol::{
    EngineEvent, RenderParams, Request, SegmentId, SegmentState, TakeId, TakeRecord,
    TelemetrySample,
};

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

/// What the workstation was opened with.
#[derive(Debug, Clone, PartialEq)]
pub struct AppConfig {
    /// Manuscript name for the title bar.
    pub manuscript: String,
    pub voice: String,
    pub model: String,
    /// The bundled tiny random-weight model is loaded: say so in the title bar.
    pub tiny_model: bool,
    /// e.g. "cpu", "cuda:0"; replaced by the backend of the latest take.
    pub backend: String,
    /// The project directory, or `None` for a scratch session (`--no-project`).
    pub project: Option<String>,
    /// Play segments in order as soon as they are ready, from the first, on load.
    pub autoplay: bool,
    pub theme: String,
    /// Themes the theme key cycles through.
    pub themes: Vec<String>,
    pub params: RenderParams,
    /// Silence before the manuscript's first segment, 24 kHz samples.
    pub lead_in_samples: usize,
    /// Problems with the configuration files: a banner in the title bar, each line in the log.
    pub banner: Vec<String>,
    /// Lines for the log when the workstation opens.
    pub log: Vec<String>,
}

impl Default for AppConfig {
    fn default() -> Self {
        Self {
            manuscript: "untitled".into(),
            voice: "default".into(),
            model: "CosyVoice3-0.5B".into(),
            tiny_model: false,
            backend: "cpu".into(),
            project: None,
            autoplay: true,
            theme: "dark".into(),
            themes: vec!["dark".into(), "light".into()],
            params: RenderParams::default(),
            lead_in_samples: 0,
            banner: Vec::new(),
            log: Vec::new(),
        }
    }
}

/// One input to [`App::update`].
#[derive(Debug, Clone)]
pub enum Msg {
    Key(KeyEvent),
    Mouse(MouseEvent),
    Resize(u16, u16),
    Action(Action),
    Engine(EngineEvent),
    /// A take the session has saved in the project (or restored from its record).
    Saved {
        segment: SegmentId,
        take: Box<TakeEntry>,
        restored: bool,
    },
    /// A stored take's samples, read for playback.
    Loaded {
        segment: SegmentId,
        take: TakeId,
        samples: Arc<Vec<f32>>,
    },
    /// A chapter's ACX status changed (None: not all its takes are chosen).
    ChapterStatus {
        /// 0-based, in reading order.
        chapter: usize,
        status: Option<ChapterAcx>,
    },
    /// The session could not do what a command asked.
    Refused {
        segment: SegmentId,
        why: String,
    },
    /// The seed the session gave a new take of a segment.
    Seeded {
        segment: SegmentId,
        seed: u64,
    },
    Player(PlayerStatus),
    /// What the selected segment offers to audition (answer to [`Command::AuditionChoices`]).
    AuditionChoices {
        segment: SegmentId,
        choices: Vec<AuditionChoice>,
    },
    /// An audition's audio (not a take: never stored).
    Auditioned(Arc<Vec<f32>>),
    /// The session planned the manuscript again (after a segment was recast): its rows, and
    /// the segments it asked the engine to render.
    Replanned {
        rows: Vec<RowInit>,
        queued: Vec<SegmentId>,
    },
    /// The engine's event channel closed.
    EngineGone,
    Log(String),
}

/// A word of a segment, or a pronunciation entry matching it, to hear on its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditionChoice {
    /// As the picker shows it: `Nguyen` or `Nguyen → [N][W][IY1][N]`.
    pub label: String,
    /// The text spoken (read as a manuscript line: pronunciations and normalisation apply).
    pub text: String,
}

/// The voice picker's first choice: the voice the manuscript and the cast give.
pub const AS_WRITTEN: &str = "as written";

/// The segment id of auditions: no store key is this large, so they never meet a segment.
pub const AUDITION_ID: SegmentId = SegmentId::MAX;

/// What the App asks of the session (and, through it, the engine).
#[derive(Debug, Clone)]
pub enum Command {
    /// The words and matching pronunciation entries of a segment (answered by
    /// [`Msg::AuditionChoices`]).
    AuditionChoices(SegmentId),
    /// Speak a line in the current voice as [`AUDITION_ID`] (answered by
    /// [`Msg::Auditioned`] once the engine has it).
    Audition {
        segment: SegmentId,
        text: String,
    },
    /// Straight to the engine.
    Engine(Request),
    /// A new take with the segment's next seed.
    Reseed(SegmentId),
    /// A new take with the chosen take's seed and the current settings.
    Rerender(SegmentId),
    /// Make a take the segment's chosen take.
    Choose {
        segment: SegmentId,
        take: TakeId,
    },
    SetReview {
        segment: SegmentId,
        review: Review,
    },
    SetNote {
        segment: SegmentId,
        note: String,
    },
    /// The narrator's casting of a segment (its voice and style; empty: as written), kept in
    /// the project; the session makes a new take with it (answered by [`Msg::Replanned`]).
    Recast {
        segment: SegmentId,
        over: CastingOverride,
    },
    /// Read a stored take's samples (answered by [`Msg::Loaded`] or [`Msg::Refused`]).
    Load {
        segment: SegmentId,
        take: TakeId,
    },
}

/// A chapter's ACX check, once all its takes are chosen ([`super::checks`]).
#[derive(Debug, Clone, PartialEq)]
pub enum ChapterAcx {
    Checking,
    Checked(Box<crate::deliver::check::FileCheck>),
    /// The check itself could not run (a take file unreadable, say).
    Failed(String),
}

impl ChapterAcx {
    /// One line for the segment panel: `ACX ✓ RMS -20.0 dB · peak -4.0 dB · floor -70.0 dB ·
    /// 1:02`, or `ACX ✗` with the failing figures.
    #[must_use]
    pub fn label(&self) -> String {
        match self {
            Self::Checking => "ACX: checking…".into(),
            Self::Failed(why) => format!("ACX: not checked ({why})"),
            Self::Checked(c) if c.passes() => {
                let s = c.duration_s.round() as u64;
                format!(
                    "ACX ✓ RMS {:.1} dB · peak {:.1} dB · floor {:.1} dB · {}:{:02}",
                    c.rms_db,
                    c.peak_db,
                    c.noise_floor_db,
                    s / 60,
                    s % 60
                )
            }
            Self::Checked(c) => {
                let failing: Vec<&str> = c.failures.iter().map(|f| f.detail.as_str()).collect();
                format!("ACX ✗ {}", failing.join(" · "))
            }
        }
    }

    #[must_use]
    pub fn passes(&self) -> Option<bool> {
        match self {
            Self::Checked(c) => Some(c.passes()),
            _ => None,
        }
    }
}

/// One take of a segment as the UI keeps it.
#[derive(Debug, Clone)]
pub struct TakeEntry {
    /// The store's id of the take.
    pub id: TakeId,
    /// Loaded on demand (a long book's takes do not all fit in memory).
    pub samples: Option<Arc<Vec<f32>>>,
    pub record: TakeRecord,
    /// Made for other text, voice or model than the segment's now: history, not exported.
    pub stale: bool,
    /// Its own quality figures, as stored with it (None: not measured).
    pub figures: Option<crate::quality::TakeFigures>,
}

impl TakeEntry {
    /// Samples of the take (from its record: tokens × 960 at pace 1, whether loaded or not).
    #[must_use]
    pub fn len_samples(&self) -> u64 {
        self.record.sample_count() as u64
    }
}

/// One manuscript segment.
#[derive(Debug, Clone)]
pub struct Row {
    /// The store's key of the segment (the engine's segment id).
    pub id: SegmentId,
    /// Its chapter, 0-based in reading order.
    pub chapter: usize,
    /// Normalised text, what the model reads.
    pub text: String,
    /// The manuscript's text of it, as the narrator wrote it (what the list shows and search
    /// looks at first).
    pub source: String,
    /// Silence after it in the master, milliseconds.
    pub pause_after_ms: u32,
    pub state: SegmentState,
    /// Seed of the take being rendered, or of the first take while there is none.
    pub seed: u64,
    pub takes: Vec<TakeEntry>,
    /// Index into `takes` of the take that plays (auditioned).
    pub current_take: usize,
    /// Index into `takes` of the chosen take (what render and export use).
    pub chosen: Option<usize>,
    pub review: Review,
    pub note: String,
    /// Who speaks it and how.
    pub cast: RowCasting,
    /// Play the next take of this row as soon as it is saved (after `s` or `R`).
    pub play_when_ready: bool,
}

impl Row {
    #[must_use]
    pub fn current(&self) -> Option<&TakeEntry> {
        self.takes.get(self.current_take)
    }
    /// The source text, or the spoken text where a row has none.
    #[must_use]
    pub fn shown_source(&self) -> &str {
        if self.source.is_empty() { &self.text } else { &self.source }
    }
    /// The seed shown: the auditioned take's, or the pending one's.
    #[must_use]
    pub fn shown_seed(&self) -> u64 {
        if self.in_flight() {
            return self.seed;
        }
        self.current().map_or(self.seed, |t| t.record.seed)
    }
    fn in_flight(&self) -> bool {
        matches!(
            self.state,
            SegmentState::Queued | SegmentState::Lm | SegmentState::Flow | SegmentState::Vocoder
        )
    }
    /// Has a chosen take for its current content.
    #[must_use]
    pub fn has_usable_choice(&self) -> bool {
        self.chosen.and_then(|i| self.takes.get(i)).is_some_and(|t| !t.stale)
    }
    /// Why the auditioned take looks wrong for its text, if it does.
    #[must_use]
    pub fn flag(&self) -> Option<String> {
        let t = self.current()?;
        crate::session::implausible(&self.text, t.record.tokens.len())
    }
    /// The auditioned take's quality figures against the book's `norms`, if it was measured.
    #[must_use]
    pub fn quality(
        &self,
        norms: &crate::quality::BookNorms,
    ) -> Option<crate::quality::TakeQuality> {
        Some(norms.judge(self.current()?.figures.as_ref()?))
    }
    /// Listed in the pickups view: marked for a pickup, flagged, failed, or without a usable
    /// chosen take.
    #[must_use]
    pub fn needs_work(&self) -> bool {
        self.review == Review::Pickup
            || matches!(self.state, SegmentState::Failed(_))
            || (!self.in_flight() && !self.has_usable_choice())
            || self.flag().is_some()
    }
}

/// A row as the session hands it over: the segment, its takes and the narrator's state.
#[derive(Debug, Clone)]
pub struct RowInit {
    pub id: SegmentId,
    /// 0-based, in reading order.
    pub chapter: usize,
    pub text: String,
    pub source: String,
    pub pause_after_ms: u32,
    /// The seed of its first take.
    pub default_seed: u64,
    pub takes: Vec<TakeEntry>,
    pub chosen: Option<usize>,
    pub review: Review,
    pub note: String,
    /// Who speaks it and how.
    pub cast: RowCasting,
}

/// A segment's displayed state: the engine's state, or playing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RowStatus {
    Engine(SegmentState),
    Playing,
}

/// Telemetry samples, oldest first, capped at [`HISTORY_LEN`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct History {
    pub samples: VecDeque<TelemetrySample>,
}

impl History {
    pub fn push(&mut self, s: TelemetrySample) {
        if self.samples.len() == HISTORY_LEN {
            self.samples.pop_front();
        }
        self.samples.push_back(s);
    }
    #[must_use]
    pub fn latest(&self) -> Option<&TelemetrySample> {
        self.samples.back()
    }
    /// The last `n` values of a series.
    pub fn series(&self, n: usize, f: impl Fn(&TelemetrySample) -> f64) -> Vec<f64> {
        let skip = self.samples.len().saturating_sub(n);
        self.samples.iter().skip(skip).map(f).collect()
    }
}

/// Input mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Normal,
    Help,
    Search,
    /// Typing the selected segment's note.
    Note,
    /// Picking a word or pronunciation entry to hear ([`App::audition`]).
    Audition,
    /// Picking the selected segment's voice ([`App::voice_choices`]).
    Voice,
    /// Typing the selected segment's instruction ([`App::style_draft`]).
    Style,
    /// The voices panel (any key closes it).
    Voices,
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
    /// The note being typed ([`Mode::Note`]).
    pub note_draft: String,
    /// The picker's choices ([`Mode::Audition`]) and the one under the cursor.
    pub audition: Vec<AuditionChoice>,
    pub audition_at: usize,
    /// The session's voices and the cast (the voices panel, the voice picker).
    pub cast: CastView,
    /// The voice picker's cursor ([`Mode::Voice`]) into [`App::voice_choices`].
    pub voice_at: usize,
    /// The instruction being typed ([`Mode::Style`]).
    pub style_draft: String,
    /// Frames drawn by the run loop (it draws only when something changed).
    pub redraws: u64,
    /// Next row to hand to the player when it is ready (playing in order).
    play_cursor: Option<usize>,
    audio_out: Vec<AudioCommand>,
    search_origin: usize,
    /// Loads asked for and not answered yet.
    loading: HashMap<TakeId, SegmentId>,
    /// Row whose take plays alone once its samples are loaded.
    replay_only: Option<usize>,
    /// Cues handed to the player in order and not yet finished: (segment, length in samples).
    handed: VecDeque<(SegmentId, u64)>,
    /// Takes whose samples are loaded, least recently loaded first ([`LOADED_TAKES_MAX`]).
    loaded: VecDeque<(SegmentId, TakeId)>,
}

/// Audio handed to the player ahead of the playhead, 24 kHz samples (20 s): enough to ride
/// over a slow read, bounded so that a book rendering faster than it plays is not queued
/// whole in memory.
const PLAY_AHEAD_SAMPLES: u64 = 20 * 24_000;

/// Takes that keep their samples in memory; older ones are read again from the project when
/// they play. Bounds the workstation's memory over a book of any length.
const LOADED_TAKES_MAX: usize = 32;

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
            note_draft: String::new(),
            redraws: 0,
            play_cursor: None,
            audio_out: Vec::new(),
            audition: Vec::new(),
            audition_at: 0,
            cast: CastView::default(),
            voice_at: 0,
            style_draft: String::new(),
            search_origin: 0,
            loading: HashMap::new(),
            handed: VecDeque::new(),
            loaded: VecDeque::new(),
            replay_only: None,
        }
    }

    /// Player commands queued by the last updates, for the run loop to send.
    pub fn drain_audio(&mut self) -> Vec<AudioCommand> {
        std::mem::take(&mut self.audio_out)
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
        let cursor_id = self.play_cursor.and_then(|i| self.rows.get(i)).map(|r| r.id);
        let mut old: HashMap<SegmentId, Row> = self.rows.drain(..).map(|r| (r.id, r)).collect();
        for init in rows {
            let prev = old.remove(&init.id);
            self.rows.push(merge_row(init, prev));
        }
        self.selected = selected_id
            .and_then(|id| self.rows.iter().position(|r| r.id == id))
            .unwrap_or(self.selected)
            .min(self.rows.len().saturating_sub(1));
        self.play_cursor = match cursor_id {
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
        let pickups = self.rows.iter().filter(|r| r.review == Review::Pickup).count();
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
        self.drain_loads()
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
        match msg {
            Msg::Key(k) => self.on_key(k),
            Msg::Mouse(m) => {
                self.on_mouse(m);
                Vec::new()
            }
            Msg::Resize(w, h) => {
                self.size = Rect::new(0, 0, w, h);
                self.ensure_visible();
                Vec::new()
            }
            Msg::Action(a) => self.on_action(a),
            Msg::Engine(ev) => {
                self.on_engine(ev);
                self.drain_loads()
            }
            Msg::Saved { segment, take, restored } => {
                self.on_saved(segment, take, restored);
                self.drain_loads()
            }
            Msg::Loaded { segment, take, samples } => {
                self.loading.remove(&take);
                if let Some(t) = self.take_mut(segment, take) {
                    t.samples = Some(samples);
                    self.remember_loaded(segment, take);
                }
                match self.replay_only {
                    Some(i) if self.rows.get(i).is_some_and(|r| r.id == segment) => {
                        self.play_only(i);
                    }
                    _ => self.advance_playback(),
                }
                self.drain_loads()
            }
            Msg::ChapterStatus { chapter, status } => {
                if let Some(s) = &status
                    && s.passes() == Some(false)
                {
                    self.push_log(format!("chapter {}: {}", chapter + 1, s.label()));
                }
                match status {
                    Some(s) => self.chapter_acx.insert(chapter, s),
                    None => self.chapter_acx.remove(&chapter),
                };
                Vec::new()
            }
            Msg::Refused { segment, why } => {
                let n = self.position(segment).map_or(0, |i| i + 1);
                self.loading.retain(|_, s| *s != segment);
                self.push_log(format!("segment {n}: {why}"));
                Vec::new()
            }
            Msg::Seeded { segment, seed } => {
                if let Some(i) = self.position(segment) {
                    self.rows[i].seed = seed;
                    self.push_log(format!("segment {}: new take with seed {seed}", i + 1));
                }
                Vec::new()
            }
            Msg::AuditionChoices { segment, choices } => {
                self.open_audition(segment, choices);
                Vec::new()
            }
            Msg::Auditioned(samples) => {
                self.play_audition(samples);
                Vec::new()
            }
            Msg::Player(status) => {
                if status.notice.is_some() && status.notice != self.player.notice {
                    self.push_log(format!("audio: {}", status.notice.clone().unwrap_or_default()));
                }
                self.player = status;
                self.retire_handed();
                self.advance_playback();
                let mut out = self.mark_heard();
                out.extend(self.drain_loads());
                out
            }
            Msg::Replanned { rows, queued } => {
                self.set_rows(rows);
                for row in self.rows.iter_mut().filter(|r| !r.in_flight()) {
                    if !queued.contains(&row.id) {
                        row.play_when_ready = false;
                    }
                }
                self.mark_queued(&queued);
                self.advance_playback();
                self.drain_loads()
            }
            Msg::EngineGone => {
                if !self.engine_gone {
                    self.push_log("engine stopped");
                }
                self.engine_gone = true;
                Vec::new()
            }
            Msg::Log(line) => {
                self.push_log(line);
                Vec::new()
            }
        }
    }

    fn position(&self, id: SegmentId) -> Option<usize> {
        self.rows.iter().position(|r| r.id == id)
    }

    fn take_mut(&mut self, segment: SegmentId, take: TakeId) -> Option<&mut TakeEntry> {
        let i = self.position(segment)?;
        self.rows[i].takes.iter_mut().find(|t| t.id == take)
    }

    /// A segment heard past its middle is heard (unless the narrator set another state).
    fn mark_heard(&mut self) -> Vec<Command> {
        let Some(np) = self.player.now_playing else { return Vec::new() };
        if self.player.state != PlayState::Playing || np.pos_samples * 2 < np.len_samples {
            return Vec::new();
        }
        let Some(i) = self.position(np.segment_id) else { return Vec::new() };
        let row = &mut self.rows[i];
        if row.review != Review::Unheard || !row.has_usable_choice() {
            return Vec::new();
        }
        row.review = Review::Heard;
        vec![Command::SetReview { segment: row.id, review: Review::Heard }]
    }

    fn on_key(&mut self, k: KeyEvent) -> Vec<Command> {
        if k.kind == KeyEventKind::Release {
            return Vec::new();
        }
        let ctrl_c = k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL);
        match self.mode {
            Mode::Help | Mode::Voices => {
                if ctrl_c {
                    return self.on_action(Action::Quit);
                }
                self.mode = Mode::Normal;
                Vec::new()
            }
            Mode::Note => self.on_note_key(k, ctrl_c),
            Mode::Audition => self.on_audition_key(k, ctrl_c),
            Mode::Voice => self.on_voice_key(k, ctrl_c),
            Mode::Style => self.on_style_key(k, ctrl_c),
            Mode::Search => {
                match k.code {
                    _ if ctrl_c => return self.on_action(Action::Quit),
                    KeyCode::Esc => self.mode = Mode::Normal,
                    KeyCode::Enter => self.mode = Mode::Normal,
                    KeyCode::Backspace => {
                        self.search.pop();
                        self.jump_to_match(self.search_origin);
                    }
                    KeyCode::Char(c) => {
                        self.search.push(c);
                        self.jump_to_match(self.search_origin);
                    }
                    _ => {}
                }
                Vec::new()
            }
            // Ctrl-C quits whatever the keymap says: in raw mode it is the only way out.
            Mode::Normal if ctrl_c => self.on_action(Action::Quit),
            Mode::Normal => match self.keymap.lookup(&k) {
                Some(a) => self.on_action(a),
                None => Vec::new(),
            },
        }
    }

    /// Rows whose source text — what the narrator wrote, `1999` — or spoken text —
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
    fn jump_to_match(&mut self, from: usize) {
        let m = self.search_matches();
        if let Some(&i) = m.iter().find(|&&i| i >= from).or_else(|| m.first()) {
            self.selected = i;
            self.ensure_visible();
        }
    }

    /// The picker: ←/→ (h/l, tab) move, enter speaks the choice (the picker stays open to try
    /// another), esc closes.
    fn on_audition_key(&mut self, k: KeyEvent, ctrl_c: bool) -> Vec<Command> {
        let n = self.audition.len().max(1);
        match k.code {
            _ if ctrl_c => return self.on_action(Action::Quit),
            KeyCode::Esc | KeyCode::Char('q') => self.mode = Mode::Normal,
            KeyCode::Right | KeyCode::Tab | KeyCode::Char('l') => {
                self.audition_at = (self.audition_at + 1) % n;
            }
            KeyCode::Left | KeyCode::BackTab | KeyCode::Char('h') => {
                self.audition_at = (self.audition_at + n - 1) % n;
            }
            KeyCode::Enter => {
                let (Some(row), Some(choice)) =
                    (self.rows.get(self.selected), self.audition.get(self.audition_at))
                else {
                    return Vec::new();
                };
                let (segment, text) = (row.id, choice.text.clone());
                self.push_log(format!("audition: {} (current voice, not kept)", choice.label));
                return vec![Command::Audition { segment, text }];
            }
            _ => {}
        }
        Vec::new()
    }

    /// Opens the picker on a segment's choices (if it is still the selected one).
    fn open_audition(&mut self, segment: SegmentId, choices: Vec<AuditionChoice>) {
        if self.rows.get(self.selected).is_none_or(|r| r.id != segment) {
            return;
        }
        if choices.is_empty() {
            self.push_log(format!("segment {}: no word to audition", self.selected + 1));
            return;
        }
        self.audition = choices;
        self.audition_at = 0;
        self.mode = Mode::Audition;
    }

    /// Plays an audition alone, stopping what played.
    fn play_audition(&mut self, samples: Arc<Vec<f32>>) {
        self.stop_player();
        self.play_cursor = None;
        self.replay_only = None;
        self.handed.push_back((AUDITION_ID, samples.len() as u64));
        self.audio_out.push(AudioCommand::Play(Cue {
            take_id: 0,
            segment_id: AUDITION_ID,
            samples,
        }));
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
    fn open_voice_picker(&mut self) {
        let Some(i) = self.recastable() else { return };
        let row = &self.rows[i];
        let current = row.cast.recast.voice.as_deref();
        self.voice_at =
            current.and_then(|v| self.voice_choices().iter().position(|c| c == v)).unwrap_or(0);
        self.mode = Mode::Voice;
    }

    /// The picker: ↑/↓ (←/→, j/k, tab) move, enter applies, esc closes.
    fn on_voice_key(&mut self, k: KeyEvent, ctrl_c: bool) -> Vec<Command> {
        let choices = self.voice_choices();
        let n = choices.len();
        match k.code {
            _ if ctrl_c => return self.on_action(Action::Quit),
            KeyCode::Esc | KeyCode::Char('q') => self.mode = Mode::Normal,
            KeyCode::Down | KeyCode::Right | KeyCode::Tab | KeyCode::Char('j' | 'l' | 'v') => {
                self.voice_at = (self.voice_at + 1) % n
            }
            KeyCode::Up | KeyCode::Left | KeyCode::BackTab | KeyCode::Char('k' | 'h') => {
                self.voice_at = (self.voice_at + n - 1) % n;
            }
            KeyCode::Enter => {
                self.mode = Mode::Normal;
                let voice = (self.voice_at > 0).then(|| choices[self.voice_at].clone());
                return self.recast(|over| over.voice = voice);
            }
            _ => {}
        }
        Vec::new()
    }

    /// Opens the instruction prompt on the selected segment, with its instruction.
    fn open_style_prompt(&mut self) {
        let Some(i) = self.recastable() else { return };
        self.style_draft = match &self.rows[i].cast.casting.mode {
            lectern_engine::protocol::Mode::Instruct(text) => text.clone(),
            _ => String::new(),
        };
        self.mode = Mode::Style;
    }

    fn on_style_key(&mut self, k: KeyEvent, ctrl_c: bool) -> Vec<Command> {
        match k.code {
            _ if ctrl_c => return self.on_action(Action::Quit),
            KeyCode::Esc => self.mode = Mode::Normal,
            KeyCode::Enter => {
                self.mode = Mode::Normal;
                let text = std::mem::take(&mut self.style_draft).trim().to_string();
                let style = (!text.is_empty()).then_some(text);
                return self.recast(|over| over.style = style);
            }
            KeyCode::Backspace => {
                self.style_draft.pop();
            }
            KeyCode::Char(c) => self.style_draft.push(c),
            _ => {}
        }
        Vec::new()
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

    fn on_note_key(&mut self, k: KeyEvent, ctrl_c: bool) -> Vec<Command> {
        match k.code {
            _ if ctrl_c => return self.on_action(Action::Quit),
            KeyCode::Esc => self.mode = Mode::Normal,
            KeyCode::Enter => {
                self.mode = Mode::Normal;
                let note = std::mem::take(&mut self.note_draft).trim().to_string();
                if let Some(row) = self.rows.get_mut(self.selected) {
                    row.note.clone_from(&note);
                    return vec![Command::SetNote { segment: row.id, note }];
                }
            }
            KeyCode::Backspace => {
                self.note_draft.pop();
            }
            KeyCode::Char(c) => self.note_draft.push(c),
            _ => {}
        }
        Vec::new()
    }

    fn on_action(&mut self, a: Action) -> Vec<Command> {
        let page = self.list_height().max(1);
        match a {
            Action::MoveUp => self.step_selection(-1),
            Action::MoveDown => self.step_selection(1),
            Action::PageUp => self.step_selection(-(page as isize)),
            Action::PageDown => self.step_selection(page as isize),
            Action::Top => self.step_selection(isize::MIN / 2),
            Action::Bottom => self.step_selection(isize::MAX / 2),
            Action::TogglePlay => match self.player.state {
                PlayState::Playing => {
                    self.audio_out.push(AudioCommand::Pause);
                    self.player.state = PlayState::Paused;
                }
                PlayState::Paused => {
                    self.audio_out.push(AudioCommand::Resume);
                    self.player.state = PlayState::Playing;
                }
                PlayState::Idle => self.play_from(self.selected),
            },
            Action::PlayFromSegment => self.play_from(self.selected),
            Action::Replay => self.replay(),
            Action::Reseed => return self.new_take(Command::Reseed),
            Action::Rerender => return self.new_take(Command::Rerender),
            Action::CycleTake => self.cycle_take(),
            Action::ChooseTake => return self.choose(),
            Action::ToggleApproved => return self.toggle_review(Review::Approved),
            Action::TogglePickup => return self.toggle_review(Review::Pickup),
            Action::EditNote => {
                if let Some(row) = self.rows.get(self.selected) {
                    self.note_draft.clone_from(&row.note);
                    self.mode = Mode::Note;
                }
            }
            Action::TogglePickups => {
                self.pickups_only = !self.pickups_only;
                let shown = self.visible_rows();
                if self.pickups_only && shown.is_empty() {
                    self.pickups_only = false;
                    self.push_log("pickups: nothing needs work");
                } else if !shown.contains(&self.selected) {
                    self.selected = shown.first().copied().unwrap_or(0);
                }
                self.list_offset = 0;
                self.ensure_visible();
            }
            Action::NfeDown => return self.set_nfe(self.params.nfe.saturating_sub(1)),
            Action::NfeUp => return self.set_nfe(self.params.nfe + 1),
            Action::GroupDown => {
                return self
                    .set_group(self.params.group_target_frames.saturating_sub(GROUP_STEP_FRAMES));
            }
            Action::GroupUp => {
                return self.set_group(self.params.group_target_frames + GROUP_STEP_FRAMES);
            }
            Action::LanesDown => return self.set_lanes(self.params.lanes.saturating_sub(1)),
            Action::LanesUp => return self.set_lanes(self.params.lanes + 1),
            Action::ToggleFreeze => {
                self.frozen = match self.frozen.take() {
                    Some(_) => None,
                    None => Some(self.telemetry.clone()),
                };
            }
            Action::Audition => {
                if let Some(row) = self.rows.get(self.selected) {
                    return vec![Command::AuditionChoices(row.id)];
                }
            }
            Action::PickVoice => self.open_voice_picker(),
            Action::EditStyle => self.open_style_prompt(),
            Action::ToggleVoices => {
                self.mode = if self.mode == Mode::Voices { Mode::Normal } else { Mode::Voices };
            }
            Action::Search => {
                self.mode = Mode::Search;
                self.search.clear();
                self.search_origin = self.selected;
            }
            Action::SearchNext => self.jump_to_match(self.selected + 1),
            Action::VolumeDown => self.set_volume(self.volume - VOLUME_STEP),
            Action::VolumeUp => self.set_volume(self.volume + VOLUME_STEP),
            Action::CycleTheme => {
                let themes = &self.config.themes;
                if !themes.is_empty() {
                    let i = themes.iter().position(|t| *t == self.theme_name).map_or(0, |i| i + 1);
                    self.theme_name = themes[i % themes.len()].clone();
                }
            }
            Action::ToggleHelp => {
                self.mode = if self.mode == Mode::Help { Mode::Normal } else { Mode::Help };
            }
            Action::ScrollLogUp => {
                self.log_scroll = (self.log_scroll + 1).min(self.log.len().saturating_sub(1));
            }
            Action::ScrollLogDown => self.log_scroll = self.log_scroll.saturating_sub(1),
            Action::Quit => {
                self.quit = true;
                self.stop_player();
                return vec![Command::Engine(Request::Shutdown)];
            }
        }
        Vec::new()
    }

    /// The book's medians the takes are compared with: those of the chosen takes that are
    /// current and measured.
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
        usize::from(layout(self.size, self.lane_count()).list_rows())
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

    /// The master stretch of row `i`'s auditioned take (take, fade, pause; the lead-in before
    /// the manuscript's first segment), or `None` while its samples are not loaded.
    fn cue(&self, i: usize) -> Option<Cue> {
        let row = self.rows.get(i)?;
        let take = row.current()?;
        let samples = take.samples.as_ref()?;
        let lead_in = if i == 0 { self.config.lead_in_samples } else { 0 };
        let pause = master::ms_to_samples(row.pause_after_ms);
        Some(Cue {
            take_id: take.id,
            segment_id: row.id,
            samples: Arc::new(master::segment_master(samples, lead_in, pause)),
        })
    }

    /// Asks for the samples of row `i`'s auditioned take if they are not loaded.
    fn want_samples(&mut self, i: usize) {
        let Some(row) = self.rows.get(i) else { return };
        if let Some(t) = row.current()
            && t.samples.is_none()
        {
            self.loading.entry(t.id).or_insert(row.id);
        }
    }

    /// Load commands for the takes the App is waiting for (asked once each).
    fn drain_loads(&mut self) -> Vec<Command> {
        let mut out = Vec::new();
        for (take, segment) in &mut self.loading {
            if *segment != SegmentId::MAX {
                out.push(Command::Load { segment: *segment, take: *take });
                *segment = SegmentId::MAX; // asked; the answer removes the entry
            }
        }
        out
    }

    /// Stops what plays and plays from row `i` on, each segment as soon as it is ready.
    fn play_from(&mut self, i: usize) {
        if self.rows.is_empty() {
            return;
        }
        self.stop_player();
        self.audio_out.push(AudioCommand::Resume);
        self.replay_only = None;
        self.play_cursor = Some(i);
        self.advance_playback();
        if self.rows.get(i).is_some_and(|r| r.current().is_none()) {
            self.push_log(format!("segment {} not rendered yet: plays when ready", i + 1));
        }
    }

    /// Stops the player and forgets what it was handed.
    fn stop_player(&mut self) {
        self.audio_out.push(AudioCommand::Stop);
        self.handed.clear();
    }

    /// Drops the handed cues the player has finished: those before the one it plays, or all
    /// when it has stopped with nothing queued.
    fn retire_handed(&mut self) {
        match self.player.now_playing {
            Some(np) if self.handed.iter().any(|(s, _)| *s == np.segment_id) => {
                while self.handed.front().is_some_and(|(s, _)| *s != np.segment_id) {
                    self.handed.pop_front();
                }
            }
            None if self.player.queued == 0 => self.handed.clear(),
            _ => {}
        }
    }

    /// Audio handed to the player and not played yet, samples.
    fn handed_ahead(&self) -> u64 {
        let total: u64 = self.handed.iter().map(|(_, n)| n).sum();
        let played = self
            .player
            .now_playing
            .filter(|np| self.handed.front().is_some_and(|(s, _)| *s == np.segment_id));
        total.saturating_sub(played.map_or(0, |np| np.pos_samples))
    }

    /// Remembers that a take's samples are loaded; unloads the least recent beyond
    /// [`LOADED_TAKES_MAX`] (they are read again from the project when they play).
    fn remember_loaded(&mut self, segment: SegmentId, take: TakeId) {
        self.loaded.retain(|&(_, t)| t != take);
        self.loaded.push_back((segment, take));
        while self.loaded.len() > LOADED_TAKES_MAX {
            let Some((s, t)) = self.loaded.pop_front() else { break };
            if let Some(entry) = self.take_mut(s, t) {
                entry.samples = None;
            }
        }
    }

    /// Hands ready segments at the play cursor to the player, in order, up to
    /// [`PLAY_AHEAD_SAMPLES`] ahead of the playhead.
    fn advance_playback(&mut self) {
        while let Some(i) = self.play_cursor {
            if self.handed_ahead() >= PLAY_AHEAD_SAMPLES {
                break;
            }
            let Some(row) = self.rows.get(i) else {
                self.play_cursor = None;
                break;
            };
            if let Some(cue) = self.cue(i) {
                self.handed.push_back((cue.segment_id, cue.samples.len() as u64));
                self.audio_out.push(AudioCommand::Enqueue(cue));
            } else if row.current().is_some() {
                // Stored, not loaded yet: ask, and wait for it.
                self.want_samples(i);
                break;
            } else if !matches!(row.state, SegmentState::Failed(_) | SegmentState::Cancelled) {
                // Not rendered yet: wait for it.
                break;
            }
            self.play_cursor = Some(i + 1);
        }
    }

    fn replay(&mut self) {
        let i = self.selected;
        if self.rows.get(i).is_some_and(|r| r.current().is_some()) {
            self.play_only(i);
        } else {
            self.push_log(format!("segment {} has no take yet", i + 1));
        }
    }

    /// A new take of the selected segment (`s`: next seed; `R`: same seed, current settings),
    /// played as soon as it is saved. An approved segment's take is locked.
    fn new_take(&mut self, make: fn(SegmentId) -> Command) -> Vec<Command> {
        let i = self.selected;
        let Some(row) = self.rows.get_mut(i) else { return Vec::new() };
        if row.review == Review::Approved {
            self.push_log(format!("segment {}: approved (locked); `a` un-approves it", i + 1));
            return Vec::new();
        }
        row.state = SegmentState::Queued;
        row.play_when_ready = true;
        let id = row.id;
        self.engine_idle = false;
        vec![make(id)]
    }

    fn cycle_take(&mut self) {
        let i = self.selected;
        let Some(row) = self.rows.get_mut(i) else { return };
        if row.takes.len() < 2 {
            return;
        }
        row.current_take = (row.current_take + 1) % row.takes.len();
        let t = &row.takes[row.current_take];
        let (k, n, seed) = (row.current_take + 1, row.takes.len(), t.record.seed);
        let mark = if row.chosen == Some(row.current_take) { " · chosen" } else { "" };
        let stale = if t.stale { " · stale" } else { "" };
        self.push_log(format!("segment {}: take {k}/{n} (seed {seed}){mark}{stale}", i + 1));
        self.play_only(i);
    }

    /// Plays row `i`'s auditioned take alone (loading it first if needed).
    fn play_only(&mut self, i: usize) {
        self.replay_only = Some(i);
        match self.cue(i) {
            Some(cue) => {
                self.replay_only = None;
                self.play_cursor = None;
                self.handed.clear();
                self.handed.push_back((cue.segment_id, cue.samples.len() as u64));
                self.audio_out.push(AudioCommand::Play(cue));
            }
            None => {
                self.stop_player();
                self.play_cursor = None;
                self.want_samples(i);
            }
        }
    }

    /// Makes the auditioned take the chosen one.
    fn choose(&mut self) -> Vec<Command> {
        let i = self.selected;
        let Some(row) = self.rows.get_mut(i) else { return Vec::new() };
        let Some(take) = row.current() else { return Vec::new() };
        if take.stale {
            self.push_log(format!(
                "segment {}: that take is stale (made for other text, voice or model)",
                i + 1
            ));
            return Vec::new();
        }
        if row.review == Review::Approved {
            self.push_log(format!("segment {}: approved (locked); `a` un-approves it", i + 1));
            return Vec::new();
        }
        let (id, take_id, k) = (row.id, take.id, row.current_take);
        row.chosen = Some(k);
        self.push_log(format!("segment {}: take {} chosen", i + 1, k + 1));
        vec![Command::Choose { segment: id, take: take_id }]
    }

    /// Sets `review` on the selected segment, or takes it back to heard if it has it.
    /// Approving chooses the auditioned take first when it is not the chosen one.
    fn toggle_review(&mut self, review: Review) -> Vec<Command> {
        let i = self.selected;
        let mut out = Vec::new();
        let Some(row) = self.rows.get(i) else { return out };
        let next = if row.review == review { Review::Heard } else { review };
        if next == Review::Approved {
            if row.chosen != Some(row.current_take) {
                out.extend(self.choose());
            }
            let row = &self.rows[i];
            if !row.has_usable_choice() {
                self.push_log(format!("segment {}: nothing to approve yet", i + 1));
                return Vec::new();
            }
        }
        let row = &mut self.rows[i];
        row.review = next;
        let id = row.id;
        self.push_log(format!("segment {}: {}", i + 1, next.as_str()));
        out.push(Command::SetReview { segment: id, review: next });
        out
    }

    fn set_nfe(&mut self, nfe: usize) -> Vec<Command> {
        let nfe = nfe.clamp(1, NFE_MAX);
        if nfe == self.params.nfe {
            return Vec::new();
        }
        self.params.nfe = nfe;
        vec![Command::Engine(Request::SetNfe(nfe))]
    }

    fn set_group(&mut self, frames: usize) -> Vec<Command> {
        let frames = frames.min(GROUP_MAX_FRAMES);
        if frames == self.params.group_target_frames {
            return Vec::new();
        }
        self.params.group_target_frames = frames;
        vec![Command::Engine(Request::SetGroupTarget(frames))]
    }

    fn set_lanes(&mut self, lanes: usize) -> Vec<Command> {
        let lanes = lanes.clamp(1, LANES_MAX);
        if lanes == self.params.lanes {
            return Vec::new();
        }
        self.params.lanes = lanes;
        vec![Command::Engine(Request::SetLanes(lanes))]
    }

    fn set_volume(&mut self, v: f32) {
        self.volume = (v.clamp(0.0, 1.5) * 10.0).round() / 10.0;
        self.audio_out.push(AudioCommand::SetVolume(self.volume));
    }

    fn on_engine(&mut self, ev: EngineEvent) {
        match ev {
            EngineEvent::SegmentState { id: AUDITION_ID, state: SegmentState::Failed(why) } => {
                self.push_log(format!("audition failed: {why}"));
            }
            EngineEvent::SegmentState { id, state } => {
                if let Some(i) = self.position(id) {
                    if let SegmentState::Failed(why) = &state {
                        self.push_log(format!("segment {} failed: {why}", i + 1));
                    }
                    // A take's Ready arrives after the session saved it; Ready with no take
                    // (a cancelled group) must not hide that it needs work.
                    self.rows[i].state = state;
                    self.engine_idle = false;
                    self.advance_playback();
                }
            }
            // The run loop hands takes to the session, which saves them: see `Msg::Saved`.
            EngineEvent::TakeReady(_) => {}
            EngineEvent::Telemetry(s) => self.telemetry.push(s),
            EngineEvent::ParamsChanged(p) => self.params = p,
            EngineEvent::Idle => self.engine_idle = true,
            EngineEvent::Log(line) => self.push_log(line),
        }
    }

    /// A take saved by the session: added to its row (a restored take's file is back: nothing
    /// new to show), auditioned, chosen if the session chose it, played if asked.
    fn on_saved(&mut self, segment: SegmentId, take: Box<TakeEntry>, restored: bool) {
        let take = *take;
        let Some(i) = self.position(segment) else { return };
        let (id, loaded) = (take.id, take.samples.is_some());
        self.backend.clone_from(&take.record.backend);
        let flag = crate::session::implausible(&self.rows[i].text, take.record.tokens.len());
        let row = &mut self.rows[i];
        row.state = SegmentState::Ready;
        if restored {
            if let Some(t) = row.takes.iter_mut().find(|t| t.id == take.id) {
                t.samples = take.samples;
            }
        } else {
            row.takes.push(take);
            row.current_take = row.takes.len() - 1;
            if !row.has_usable_choice() {
                row.chosen = Some(row.current_take);
            }
        }
        if loaded {
            self.remember_loaded(segment, id);
        }
        if let Some(why) = flag {
            self.push_log(format!("segment {}: {why}", i + 1));
        }
        if std::mem::take(&mut self.rows[i].play_when_ready) {
            self.play_only(i);
        }
        self.advance_playback();
    }

    fn on_mouse(&mut self, m: MouseEvent) {
        let areas = layout(self.size, self.lane_count());
        let at = Position::new(m.column, m.row);
        let list = areas.list_inner();
        match m.kind {
            MouseEventKind::Down(_) if list.contains(at) => {
                let i = self.list_offset + usize::from(m.row - list.y);
                if i < self.rows.len() {
                    self.select(i);
                }
            }
            MouseEventKind::ScrollDown if areas.list.contains(at) => self.select(self.selected + 1),
            MouseEventKind::ScrollUp if areas.list.contains(at) => {
                self.select(self.selected.saturating_sub(1));
            }
            MouseEventKind::ScrollUp if areas.log.contains(at) => {
                self.log_scroll = (self.log_scroll + 1).min(self.log.len().saturating_sub(1));
            }
            MouseEventKind::ScrollDown if areas.log.contains(at) => {
                self.log_scroll = self.log_scroll.saturating_sub(1);
            }
            _ => {}
        }
    }
}

/// A row from the session, keeping what the UI already knew of the same segment: loaded
/// samples, the engine's state (while rendering), the auditioned take and a pending new take.
fn merge_row(init: RowInit, prev: Option<Row>) -> Row {
    let mut row = Row {
        id: init.id,
        chapter: init.chapter,
        text: init.text,
        source: init.source,
        pause_after_ms: init.pause_after_ms,
        state: if init.takes.is_empty() { SegmentState::Queued } else { SegmentState::Ready },
        seed: init.default_seed,
        current_take: init.chosen.unwrap_or(init.takes.len().saturating_sub(1)),
        takes: init.takes,
        chosen: init.chosen,
        review: init.review,
        note: init.note,
        cast: init.cast,
        play_when_ready: false,
    };
    if !row.has_usable_choice() && row.takes.iter().all(|t| t.stale) {
        row.state = SegmentState::Queued;
    }
    let Some(prev) = prev else { return row };
    for t in &mut row.takes {
        if let Some(old) = prev.takes.iter().find(|o| o.id == t.id) {
            t.samples.clone_from(&old.samples);
        }
    }
    if let Some(cur) = prev.current()
        && let Some(k) = row.takes.iter().position(|t| t.id == cur.id)
    {
        row.current_take = k;
    }
    if prev.in_flight() || matches!(prev.state, SegmentState::Failed(_)) {
        row.state = prev.state;
        row.seed = prev.seed;
    }
    row.play_when_ready = prev.play_when_ready;
    row
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
