//! What the keymap's actions do: movement, playback, takes and review, live parameters,
//! panels; and the App's side of the playback queue.

use super::{
    App, Command, GROUP_MAX_FRAMES, GROUP_STEP_FRAMES, LANES_MAX, Mode, NFE_MAX, VOLUME_STEP,
};
use crate::audio::player::{AudioCommand, PlayState};
use crate::review::Review;
use crate::tui::action::Action;
use crate::tui::popups::note::NotePrompt;
use crate::tui::popups::search::SearchPrompt;
use lectern_engine::protocol::{Request, SegmentId, SegmentState};

impl App {
    pub(super) fn on_action(&mut self, a: Action) -> Vec<Command> {
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
                    self.queue.send(AudioCommand::Pause);
                    self.player.state = PlayState::Paused;
                }
                PlayState::Paused => {
                    self.queue.send(AudioCommand::Resume);
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
                    self.mode = Mode::Note(NotePrompt::new(&row.note, &self.history.note));
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
            Action::ToggleDetails => {
                self.show_details = !self.show_details;
                self.ensure_visible();
            }
            Action::PickVoice => self.open_voice_picker(),
            Action::EditStyle => self.open_style_prompt(),
            Action::ToggleVoices => {
                self.mode =
                    if matches!(self.mode, Mode::Voices) { Mode::Normal } else { Mode::Voices };
            }
            Action::Search => {
                self.search.clear();
                self.mode = Mode::Search(SearchPrompt::new(self.selected, &self.history.search));
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
                self.mode = if matches!(self.mode, Mode::Help) { Mode::Normal } else { Mode::Help };
            }
            Action::ScrollLogUp => {
                self.log_scroll = (self.log_scroll + 1).min(self.log.len().saturating_sub(1));
            }
            Action::ScrollLogDown => self.log_scroll = self.log_scroll.saturating_sub(1),
            Action::Quit => {
                self.quit = true;
                self.queue.stop();
                return vec![Command::Engine(Request::Shutdown)];
            }
        }
        Vec::new()
    }

    /// Plays the selected segment's auditioned take again (alone).
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

    /// Sets `review` on the selected segment, or takes it back to heard if it has it (an
    /// edited-since-approval segment takes `review`: the narrator has decided on it).
    /// Approving chooses the auditioned take first when it is not the chosen one.
    fn toggle_review(&mut self, review: Review) -> Vec<Command> {
        let i = self.selected;
        let mut out = Vec::new();
        let Some(row) = self.rows.get(i) else { return out };
        // An edited segment reads as a pickup without being one: either key sets its state.
        let same = row.review == review && !row.edited_since_approval;
        let next = if same { Review::Heard } else { review };
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
        row.edited_since_approval = false;
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
        self.params_pending += 1;
        vec![Command::Engine(Request::SetNfe(nfe))]
    }

    fn set_group(&mut self, frames: usize) -> Vec<Command> {
        let frames = frames.min(GROUP_MAX_FRAMES);
        if frames == self.params.group_target_frames {
            return Vec::new();
        }
        self.params.group_target_frames = frames;
        self.params_pending += 1;
        vec![Command::Engine(Request::SetGroupTarget(frames))]
    }

    fn set_lanes(&mut self, lanes: usize) -> Vec<Command> {
        let lanes = lanes.clamp(1, LANES_MAX);
        if lanes == self.params.lanes {
            return Vec::new();
        }
        self.params.lanes = lanes;
        self.params_pending += 1;
        vec![Command::Engine(Request::SetLanes(lanes))]
    }

    fn set_volume(&mut self, v: f32) {
        self.volume = (v.clamp(0.0, 1.5) * 10.0).round() / 10.0;
        self.queue.send(AudioCommand::SetVolume(self.volume));
    }

    /// Hands the player what is ready at the play cursor.
    pub(super) fn advance_playback(&mut self) {
        self.queue.advance(&self.rows, &self.player);
    }

    /// Plays row `i`'s auditioned take alone (loading it first if needed).
    pub(super) fn play_only(&mut self, i: usize) {
        self.queue.play_only(&self.rows, i);
    }

    /// Stops what plays and plays from row `i` on, each segment as soon as it is ready.
    fn play_from(&mut self, i: usize) {
        if self.rows.is_empty() {
            return;
        }
        self.queue.play_from(&self.rows, &self.player, i);
        if self.rows.get(i).is_some_and(|r| r.current().is_none()) {
            self.push_log(format!("segment {} not rendered yet: plays when ready", i + 1));
        }
    }
}
