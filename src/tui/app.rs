//! The workstation's state and its update function. No I/O: [`App::update`] turns one
//! [`Msg`] (key, mouse, resize, engine event, player status) into engine [`Request`]s, and
//! queues player commands for the run loop to send ([`App::drain_audio`]).

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseEvent, MouseEventKind};
use ratatui::layout::{Position, Rect};

use super::action::Action;
use super::keymap::KeyMap;
use super::view;
use crate::audio::player::{AudioCommand, Cue, PlayState, PlayerStatus};
use crate::engine::protocol::{
    EngineEvent, RenderParams, Request, SegmentId, SegmentSpec, SegmentState, TakeId, TakeRecord,
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
    /// Seeds of new segments and re-seeds come from this.
    pub base_seed: u64,
    /// Play segments in order as soon as they are ready, from the first, on load.
    pub autoplay: bool,
    pub theme: String,
    /// Themes the theme key cycles through.
    pub themes: Vec<String>,
    pub params: RenderParams,
}

impl Default for AppConfig {
    fn default() -> Self {
        Self {
            manuscript: "untitled".into(),
            voice: "default".into(),
            model: "CosyVoice3-0.5B".into(),
            tiny_model: false,
            backend: "cpu".into(),
            base_seed: 1986,
            autoplay: true,
            theme: "dark".into(),
            themes: vec!["dark".into(), "light".into()],
            params: RenderParams::default(),
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
    Player(PlayerStatus),
    /// The engine's event channel closed.
    EngineGone,
    Log(String),
}

/// One take of a segment as the UI keeps it.
#[derive(Debug, Clone)]
pub struct TakeEntry {
    pub id: TakeId,
    pub samples: Arc<Vec<f32>>,
    pub record: TakeRecord,
}

/// One manuscript segment.
#[derive(Debug, Clone)]
pub struct Row {
    pub id: SegmentId,
    pub text: String,
    pub hash: u64,
    pub state: SegmentState,
    /// Seed of the latest requested take.
    pub seed: u64,
    pub takes: Vec<TakeEntry>,
    /// Index into `takes` of the take that plays.
    pub current_take: usize,
}

impl Row {
    #[must_use]
    pub fn current(&self) -> Option<&TakeEntry> {
        self.takes.get(self.current_take)
    }
    fn in_flight(&self) -> bool {
        matches!(
            self.state,
            SegmentState::Queued | SegmentState::Lm | SegmentState::Flow | SegmentState::Vocoder
        )
    }
}

/// A segment's state as displayed: the engine's state, or playing.
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
}

/// The whole UI state; the view draws from `&App`.
#[derive(Debug, Clone)]
pub struct App {
    pub config: AppConfig,
    pub keymap: KeyMap,
    pub rows: Vec<Row>,
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
    /// Next row to hand to the player when it is ready (playing in order).
    play_cursor: Option<usize>,
    audio_out: Vec<AudioCommand>,
    rng: u64,
    next_id: SegmentId,
    search_origin: usize,
}

/// FNV-1a 64 of a segment's text: the identity the manuscript diff uses.
#[must_use]
pub fn segment_hash(text: &str) -> u64 {
    text.bytes()
        .fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

impl App {
    #[must_use]
    pub fn new(config: AppConfig, keymap: KeyMap) -> Self {
        Self {
            params: config.params.clone(),
            backend: config.backend.clone(),
            theme_name: config.theme.clone(),
            rng: config.base_seed,
            config,
            keymap,
            rows: Vec::new(),
            selected: 0,
            list_offset: 0,
            telemetry: History::default(),
            frozen: None,
            log: VecDeque::new(),
            log_scroll: 0,
            mode: Mode::Normal,
            search: String::new(),
            player: PlayerStatus::default(),
            volume: 1.0,
            size: Rect::default(),
            engine_idle: true,
            engine_gone: false,
            quit: false,
            play_cursor: None,
            audio_out: Vec::new(),
            next_id: 1,
            search_origin: 0,
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

    /// A new seed in [0, 1e6) (short enough to read and type), never equal to `avoid`.
    fn next_seed(&mut self, avoid: u64) -> u64 {
        loop {
            // SplitMix64.
            self.rng = self.rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.rng;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            let seed = (z ^ (z >> 31)) % 1_000_000;
            if seed != avoid {
                return seed;
            }
        }
    }

    /// Replaces the manuscript's segments (on load and after the file changed). Rows are matched
    /// by text hash, in order: matched rows keep their id, seed and takes; new texts become new
    /// rows that are enqueued; rows that disappeared are cancelled if still in flight.
    pub fn set_segments(&mut self, texts: &[String]) -> Vec<Request> {
        let was_empty = self.rows.is_empty();
        let selected_id = self.rows.get(self.selected).map(|r| r.id);
        let cursor_id = self.play_cursor.and_then(|i| self.rows.get(i)).map(|r| r.id);
        let mut pool: HashMap<u64, VecDeque<Row>> = HashMap::new();
        for row in self.rows.drain(..) {
            pool.entry(row.hash).or_default().push_back(row);
        }
        let mut enqueue = Vec::new();
        for text in texts {
            let hash = segment_hash(text);
            if let Some(row) = pool.get_mut(&hash).and_then(VecDeque::pop_front) {
                self.rows.push(row);
                continue;
            }
            let id = self.next_id;
            self.next_id += 1;
            let seed = self.next_seed(u64::MAX);
            enqueue.push(SegmentSpec { id, text: text.clone(), seed });
            self.rows.push(Row {
                id,
                text: text.clone(),
                hash,
                state: SegmentState::Queued,
                seed,
                takes: Vec::new(),
                current_take: 0,
            });
        }
        let mut removed: Vec<SegmentId> =
            pool.into_values().flatten().filter(Row::in_flight).map(|r| r.id).collect();
        removed.sort_unstable();
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
        let mut out = Vec::new();
        if !removed.is_empty() {
            self.push_log(format!("manuscript: {} segment(s) removed", removed.len()));
            out.push(Request::Cancel(removed));
        }
        if !enqueue.is_empty() {
            if !was_empty {
                self.push_log(format!("manuscript: {} segment(s) to render", enqueue.len()));
            }
            self.engine_idle = false;
            out.push(Request::Enqueue(enqueue));
        }
        out
    }

    /// Applies one input; returns the engine requests it causes.
    pub fn update(&mut self, msg: Msg) -> Vec<Request> {
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
                Vec::new()
            }
            Msg::Player(status) => {
                if status.notice.is_some() && status.notice != self.player.notice {
                    self.push_log(format!("audio: {}", status.notice.clone().unwrap_or_default()));
                }
                self.player = status;
                Vec::new()
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

    fn on_key(&mut self, k: KeyEvent) -> Vec<Request> {
        if k.kind == KeyEventKind::Release {
            return Vec::new();
        }
        let ctrl_c = k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL);
        match self.mode {
            Mode::Help => {
                if ctrl_c {
                    return self.on_action(Action::Quit);
                }
                self.mode = Mode::Normal;
                Vec::new()
            }
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

    /// Rows whose text contains the search (case-insensitive).
    #[must_use]
    pub fn search_matches(&self) -> Vec<usize> {
        if self.search.is_empty() {
            return Vec::new();
        }
        let q = self.search.to_lowercase();
        self.rows
            .iter()
            .enumerate()
            .filter(|(_, r)| r.text.to_lowercase().contains(&q))
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

    fn on_action(&mut self, a: Action) -> Vec<Request> {
        let n = self.rows.len();
        let page = self.list_height().max(1);
        match a {
            Action::MoveUp => self.select(self.selected.saturating_sub(1)),
            Action::MoveDown => self.select(self.selected + 1),
            Action::PageUp => self.select(self.selected.saturating_sub(page)),
            Action::PageDown => self.select(self.selected + page),
            Action::Top => self.select(0),
            Action::Bottom => self.select(n.saturating_sub(1)),
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
            Action::Reseed => return self.reseed(),
            Action::CycleTake => self.cycle_take(),
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
                self.audio_out.push(AudioCommand::Stop);
                return vec![Request::Shutdown];
            }
        }
        Vec::new()
    }

    fn select(&mut self, i: usize) {
        self.selected = i.min(self.rows.len().saturating_sub(1));
        self.ensure_visible();
    }

    fn list_height(&self) -> usize {
        if self.size.width == 0 {
            return usize::MAX / 2;
        }
        usize::from(view::layout(self.size, self.lane_count()).list_rows())
    }

    /// Lanes in the shown telemetry (sizes the lanes panel).
    #[must_use]
    pub fn lane_count(&self) -> usize {
        self.shown_telemetry().latest().map_or(0, |t| t.lanes.len())
    }

    fn ensure_visible(&mut self) {
        let h = self.list_height().max(1);
        if self.selected < self.list_offset {
            self.list_offset = self.selected;
        } else if self.selected >= self.list_offset + h {
            self.list_offset = self.selected + 1 - h;
        }
        self.list_offset = self.list_offset.min(self.rows.len().saturating_sub(1));
    }

    fn cue(&self, i: usize) -> Option<Cue> {
        let row = self.rows.get(i)?;
        let take = row.current()?;
        Some(Cue { take_id: take.id, segment_id: row.id, samples: Arc::clone(&take.samples) })
    }

    /// Stops what plays and plays from row `i` on, each segment as soon as it is ready.
    fn play_from(&mut self, i: usize) {
        if self.rows.is_empty() {
            return;
        }
        self.audio_out.push(AudioCommand::Stop);
        self.audio_out.push(AudioCommand::Resume);
        self.play_cursor = Some(i);
        self.advance_playback();
        if self.rows.get(i).is_some_and(|r| r.current().is_none()) {
            self.push_log(format!("segment {} not rendered yet: plays when ready", i + 1));
        }
    }

    /// Hands ready segments at the play cursor to the player, in order.
    fn advance_playback(&mut self) {
        while let Some(i) = self.play_cursor {
            let Some(row) = self.rows.get(i) else {
                self.play_cursor = None;
                break;
            };
            if let Some(cue) = self.cue(i) {
                self.audio_out.push(AudioCommand::Enqueue(cue));
            } else if !matches!(row.state, SegmentState::Failed(_) | SegmentState::Cancelled) {
                // Not rendered yet (its take may follow its Ready state): wait for it.
                break;
            }
            self.play_cursor = Some(i + 1);
        }
    }

    fn replay(&mut self) {
        match self.cue(self.selected) {
            Some(cue) => {
                self.play_cursor = None;
                self.audio_out.push(AudioCommand::Play(cue));
            }
            None => self.push_log(format!("segment {} has no take yet", self.selected + 1)),
        }
    }

    fn reseed(&mut self) -> Vec<Request> {
        let Some(old) = self.rows.get(self.selected).map(|r| r.seed) else { return Vec::new() };
        let seed = self.next_seed(old);
        let row = &mut self.rows[self.selected];
        row.seed = seed;
        row.state = SegmentState::Queued;
        let id = row.id;
        self.engine_idle = false;
        self.push_log(format!("segment {}: new take with seed {seed}", self.selected + 1));
        vec![Request::Reseed { id, seed }]
    }

    fn cycle_take(&mut self) {
        let i = self.selected;
        let Some(row) = self.rows.get_mut(i) else { return };
        if row.takes.len() < 2 {
            return;
        }
        row.current_take = (row.current_take + 1) % row.takes.len();
        let (k, n, seed) =
            (row.current_take + 1, row.takes.len(), row.takes[row.current_take].record.seed);
        self.push_log(format!("segment {}: take {k}/{n} (seed {seed})", i + 1));
    }

    fn set_nfe(&mut self, nfe: usize) -> Vec<Request> {
        let nfe = nfe.clamp(1, NFE_MAX);
        if nfe == self.params.nfe {
            return Vec::new();
        }
        self.params.nfe = nfe;
        vec![Request::SetNfe(nfe)]
    }

    fn set_group(&mut self, frames: usize) -> Vec<Request> {
        let frames = frames.min(GROUP_MAX_FRAMES);
        if frames == self.params.group_target_frames {
            return Vec::new();
        }
        self.params.group_target_frames = frames;
        vec![Request::SetGroupTarget(frames)]
    }

    fn set_lanes(&mut self, lanes: usize) -> Vec<Request> {
        let lanes = lanes.clamp(1, LANES_MAX);
        if lanes == self.params.lanes {
            return Vec::new();
        }
        self.params.lanes = lanes;
        vec![Request::SetLanes(lanes)]
    }

    fn set_volume(&mut self, v: f32) {
        self.volume = (v.clamp(0.0, 1.5) * 10.0).round() / 10.0;
        self.audio_out.push(AudioCommand::SetVolume(self.volume));
    }

    fn on_engine(&mut self, ev: EngineEvent) {
        match ev {
            EngineEvent::SegmentState { id, state } => {
                if let Some(i) = self.rows.iter().position(|r| r.id == id) {
                    if let SegmentState::Failed(why) = &state {
                        self.push_log(format!("segment {} failed: {why}", i + 1));
                    }
                    self.rows[i].state = state;
                    self.engine_idle = false;
                    self.advance_playback();
                }
            }
            EngineEvent::TakeReady(take) => {
                let Some(i) = self.rows.iter().position(|r| r.id == take.record.segment_id) else {
                    return;
                };
                self.backend.clone_from(&take.record.backend);
                let row = &mut self.rows[i];
                row.takes.push(TakeEntry {
                    id: take.id,
                    samples: take.samples,
                    record: take.record,
                });
                row.current_take = row.takes.len() - 1;
                row.state = SegmentState::Ready;
                self.advance_playback();
            }
            EngineEvent::Telemetry(s) => self.telemetry.push(s),
            EngineEvent::ParamsChanged(p) => self.params = p,
            EngineEvent::Idle => self.engine_idle = true,
            EngineEvent::Log(line) => self.push_log(line),
        }
    }

    fn on_mouse(&mut self, m: MouseEvent) {
        let areas = view::layout(self.size, self.lane_count());
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
