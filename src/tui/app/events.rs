//! How messages change the App: engine events, saved and loaded takes, the player's status,
//! the session's answers, the mouse.

use crossterm::event::{MouseEvent, MouseEventKind};
use ratatui::layout::{Position, Rect};

use super::playback::{HEARD_FRACTION, take_mut};
use super::{AUDITION_ID, App, Command, Msg, TakeEntry};
use crate::audio::master;
use crate::audio::player::{NowPlaying, PlayState, PlayerStatus};
use crate::review::Review;
use lectern_engine::protocol::{EngineEvent, RenderParams, SegmentId, SegmentState};

impl App {
    /// Applies one message (see [`App::update`]).
    pub(super) fn on_msg(&mut self, msg: Msg) -> Vec<Command> {
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
                self.queue.drain_loads()
            }
            Msg::Saved { segment, take, restored } => {
                self.on_saved(segment, take, restored);
                self.queue.drain_loads()
            }
            Msg::Loaded { segment, take, samples } => {
                self.queue.load_answered(take);
                self.envelopes.remember(take, &samples);
                if let Some(t) = take_mut(&mut self.rows, segment, take) {
                    t.samples = Some(samples);
                    self.queue.remember_loaded(&mut self.rows, segment, take);
                }
                match self.queue.replay_only() {
                    Some(i) if self.rows.get(i).is_some_and(|r| r.id == segment) => {
                        self.play_only(i);
                    }
                    _ => self.advance_playback(),
                }
                self.queue.drain_loads()
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
                self.queue.refused(segment);
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
                self.queue.play_audition(samples);
                Vec::new()
            }
            Msg::Player(status) => {
                if status.notice.is_some() && status.notice != self.player.notice {
                    self.push_log(format!("audio: {}", status.notice.clone().unwrap_or_default()));
                }
                let mut finished = self.played_through_since(&status);
                self.player = status;
                finished.extend(self.queue.retire_handed(&self.player));
                self.advance_playback();
                self.note_listening();
                let mut out = self.mark_heard(&finished);
                out.extend(self.queue.drain_loads());
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
                self.queue.drain_loads()
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

    /// Marks heard the segments played to their end: those the playhead moved on from by
    /// itself (`finished`), and the one playing once past [`HEARD_FRACTION`] of its take.
    /// A state the narrator set is kept; a segment skipped over, selected or queued is not
    /// heard.
    fn mark_heard(&mut self, finished: &[SegmentId]) -> Vec<Command> {
        let playing = self
            .player
            .now_playing
            .filter(|np| self.player.state == PlayState::Playing && self.played_through(*np));
        let ids = finished.iter().copied().chain(playing.map(|np| np.segment_id));
        let mut out = Vec::new();
        for id in ids.collect::<Vec<_>>() {
            let Some(i) = self.position(id) else { continue };
            let row = &mut self.rows[i];
            if row.review == Review::Unheard && row.has_usable_choice() {
                row.review = Review::Heard;
                out.push(Command::SetReview { segment: row.id, review: Review::Heard });
            }
        }
        out
    }

    /// The segment the player finished since the last status, if it says one did (the
    /// last cue of a stretch ends between two looks of the run loop: nothing else shows it).
    fn played_through_since(&self, status: &PlayerStatus) -> Vec<SegmentId> {
        if status.played_through > self.player.played_through {
            status.last_played_through.into_iter().collect()
        } else {
            Vec::new()
        }
    }

    /// Whether the playhead has passed [`HEARD_FRACTION`] of the take in the cue playing (the
    /// cue is the segment's master: the lead-in before the book's first segment, the take,
    /// its pause).
    fn played_through(&self, np: NowPlaying) -> bool {
        let Some(i) = self.position(np.segment_id) else { return false };
        let lead_in = if i == 0 { self.config.lead_in_samples as u64 } else { 0 };
        let pause = master::ms_to_samples(self.rows[i].pause_after_ms) as u64;
        let take_len = np.len_samples.saturating_sub(lead_in + pause);
        let played = np.pos_samples.saturating_sub(lead_in);
        played as f64 >= HEARD_FRACTION * take_len as f64
    }

    /// Follows the segment the narrator listens to (what plays, auditions aside): the run
    /// loop keeps it in the project, and a reopened book waits there.
    fn note_listening(&mut self) {
        if self.player.state != PlayState::Playing {
            return;
        }
        if let Some(np) = self.player.now_playing
            && self.position(np.segment_id).is_some()
        {
            self.listening = Some(np.segment_id);
        }
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
            EngineEvent::ParamsChanged(p) => self.params_changed(p),
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
        if let Some(samples) = &take.samples {
            self.envelopes.remember(id, samples);
        }
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
            self.queue.remember_loaded(&mut self.rows, segment, id);
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
        let areas = self.areas();
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
            MouseEventKind::ScrollUp if areas.side.contains(at) => {
                self.log_scroll = (self.log_scroll + 1).min(self.log.len().saturating_sub(1));
            }
            MouseEventKind::ScrollDown if areas.side.contains(at) => {
                self.log_scroll = self.log_scroll.saturating_sub(1);
            }
            _ => {}
        }
    }

    /// The engine's parameters. It echoes each change asked of it; while later changes are on
    /// their way the echo is older than what the App shows (taking it would undo key presses
    /// of a burst), so only the echo of the last one is taken.
    fn params_changed(&mut self, p: RenderParams) {
        if self.params_pending > 0 {
            self.params_pending -= 1;
            if self.params_pending > 0 {
                return;
            }
        }
        self.params = p;
    }
}
