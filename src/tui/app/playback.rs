//! The playback queue: what the App has handed the player, in order, and what it waits for.
//! Rows play as the master of their auditioned take ([`master::segment_master`]: the take,
//! faded at its edges, and its pause — what `render` and `export` write); segments are handed
//! over up to [`PLAY_AHEAD_SAMPLES`] ahead of the playhead as they become ready, stored takes
//! are read on demand and at most [`LOADED_TAKES_MAX`] keep their samples.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use super::messages::{AUDITION_ID, Command};
use super::row::{Row, TakeEntry};
use crate::audio::master;
use crate::audio::player::{AudioCommand, Cue, PlayerStatus};
use lectern_engine::protocol::{SegmentId, SegmentState, TakeId};

/// Audio handed to the player ahead of the playhead, 24 kHz samples (20 s): enough to ride
/// over a slow read, bounded so that a book rendering faster than it plays is not queued
/// whole in memory.
pub const PLAY_AHEAD_SAMPLES: u64 = 20 * 24_000;

/// Takes that keep their samples in memory; older ones are read again from the project when
/// they play. Bounds the workstation's memory over a book of any length.
pub const LOADED_TAKES_MAX: usize = 32;

/// The part of a take the playhead must pass for the take to count as heard: the narrator
/// listened to it to its end, give or take a trailing breath. Skipping over a take, selecting
/// or queueing it never marks it heard.
pub const HEARD_FRACTION: f64 = 0.9;

/// What was handed to the player and what is still to hand it.
#[derive(Debug, Clone, Default)]
pub struct PlayQueue {
    /// Next row to hand to the player when it is ready (playing in order).
    pub cursor: Option<usize>,
    /// Player commands for the run loop to send.
    out: Vec<AudioCommand>,
    /// Loads asked for and not answered yet (a segment of `SegmentId::MAX`: asked already).
    loading: HashMap<TakeId, SegmentId>,
    /// Row whose take plays alone once its samples are loaded.
    replay_only: Option<usize>,
    /// Cues handed to the player in order and not yet finished: (segment, length in samples).
    handed: VecDeque<(SegmentId, u64)>,
    /// Takes whose samples are loaded, least recently loaded first ([`LOADED_TAKES_MAX`]).
    loaded: VecDeque<(SegmentId, TakeId)>,
    /// Silence before the manuscript's first segment, 24 kHz samples.
    lead_in: usize,
}

impl PlayQueue {
    /// An empty queue; the first row's master starts with `lead_in` samples of silence.
    #[must_use]
    pub fn new(lead_in: usize) -> Self {
        Self { lead_in, ..Self::default() }
    }

    /// Player commands queued since the last drain.
    pub fn drain_audio(&mut self) -> Vec<AudioCommand> {
        std::mem::take(&mut self.out)
    }

    /// Queues a player command as it is (pause, resume, volume).
    pub fn send(&mut self, cmd: AudioCommand) {
        self.out.push(cmd);
    }

    /// The row whose take waits to play alone, if any.
    #[must_use]
    pub fn replay_only(&self) -> Option<usize> {
        self.replay_only
    }

    /// The master stretch of row `i`'s auditioned take (take, fade, pause; the lead-in before
    /// the manuscript's first segment), or `None` while its samples are not loaded.
    fn cue(&self, rows: &[Row], i: usize) -> Option<Cue> {
        let row = rows.get(i)?;
        let take = row.current()?;
        let samples = take.samples.as_ref()?;
        let lead_in = if i == 0 { self.lead_in } else { 0 };
        let pause = master::ms_to_samples(row.pause_after_ms);
        Some(Cue {
            take_id: take.id,
            segment_id: row.id,
            samples: Arc::new(master::segment_master(samples, lead_in, pause)),
        })
    }

    /// Asks for the samples of row `i`'s auditioned take if they are not loaded.
    pub fn want_samples(&mut self, rows: &[Row], i: usize) {
        let Some(row) = rows.get(i) else { return };
        if let Some(t) = row.current()
            && t.samples.is_none()
        {
            self.loading.entry(t.id).or_insert(row.id);
        }
    }

    /// Load commands for the takes the queue is waiting for (asked once each).
    pub fn drain_loads(&mut self) -> Vec<Command> {
        let mut out = Vec::new();
        for (take, segment) in &mut self.loading {
            if *segment != SegmentId::MAX {
                out.push(Command::Load { segment: *segment, take: *take });
                *segment = SegmentId::MAX; // asked; the answer removes the entry
            }
        }
        out
    }

    /// A load was answered (with samples or a refusal).
    pub fn load_answered(&mut self, take: TakeId) {
        self.loading.remove(&take);
    }

    /// The session refused something for `segment`: its loads are not coming.
    pub fn refused(&mut self, segment: SegmentId) {
        self.loading.retain(|_, s| *s != segment);
    }

    /// Stops what plays and plays from row `i` on, each segment as soon as it is ready.
    pub fn play_from(&mut self, rows: &[Row], player: &PlayerStatus, i: usize) {
        self.stop();
        self.out.push(AudioCommand::Resume);
        self.replay_only = None;
        self.cursor = Some(i);
        self.advance(rows, player);
    }

    /// Stops the player and forgets what it was handed.
    pub fn stop(&mut self) {
        self.out.push(AudioCommand::Stop);
        self.handed.clear();
    }

    /// Drops the handed cues the player has finished: those before the one it plays, or all
    /// when it has stopped with nothing queued. Returns the segments whose cues the playhead
    /// moved on from by itself (played to their end); cues dropped by a stop or a skip are
    /// cleared by [`Self::stop`] and [`Self::play_only`] before, so they are never among them.
    pub fn retire_handed(&mut self, player: &PlayerStatus) -> Vec<SegmentId> {
        let mut finished = Vec::new();
        match player.now_playing {
            Some(np) if self.handed.iter().any(|(s, _)| *s == np.segment_id) => {
                while let Some(&(s, _)) = self.handed.front().filter(|(s, _)| *s != np.segment_id) {
                    finished.push(s);
                    self.handed.pop_front();
                }
            }
            // A stopped player may not have started the cues just handed: what it finished
            // is judged by the playhead (see `HEARD_FRACTION`), not by this.
            None if player.queued == 0 => self.handed.clear(),
            _ => {}
        }
        finished
    }

    /// Audio handed to the player and not played yet, samples.
    fn handed_ahead(&self, player: &PlayerStatus) -> u64 {
        let total: u64 = self.handed.iter().map(|(_, n)| n).sum();
        let played = player
            .now_playing
            .filter(|np| self.handed.front().is_some_and(|(s, _)| *s == np.segment_id));
        total.saturating_sub(played.map_or(0, |np| np.pos_samples))
    }

    /// Remembers that a take's samples are loaded; unloads the least recent beyond
    /// [`LOADED_TAKES_MAX`] (they are read again from the project when they play).
    pub fn remember_loaded(&mut self, rows: &mut [Row], segment: SegmentId, take: TakeId) {
        self.loaded.retain(|&(_, t)| t != take);
        self.loaded.push_back((segment, take));
        while self.loaded.len() > LOADED_TAKES_MAX {
            let Some((s, t)) = self.loaded.pop_front() else { break };
            if let Some(entry) = take_mut(rows, s, t) {
                entry.samples = None;
            }
        }
    }

    /// Hands ready segments at the play cursor to the player, in order, up to
    /// [`PLAY_AHEAD_SAMPLES`] ahead of the playhead.
    pub fn advance(&mut self, rows: &[Row], player: &PlayerStatus) {
        while let Some(i) = self.cursor {
            if self.handed_ahead(player) >= PLAY_AHEAD_SAMPLES {
                break;
            }
            let Some(row) = rows.get(i) else {
                self.cursor = None;
                break;
            };
            if let Some(cue) = self.cue(rows, i) {
                self.handed.push_back((cue.segment_id, cue.samples.len() as u64));
                self.out.push(AudioCommand::Enqueue(cue));
            } else if row.current().is_some() {
                // Stored, not loaded yet: ask, and wait for it.
                self.want_samples(rows, i);
                break;
            } else if !matches!(row.state, SegmentState::Failed(_) | SegmentState::Cancelled) {
                // Not rendered yet: wait for it.
                break;
            }
            self.cursor = Some(i + 1);
        }
    }

    /// Plays row `i`'s auditioned take alone (loading it first if needed).
    pub fn play_only(&mut self, rows: &[Row], i: usize) {
        self.replay_only = Some(i);
        match self.cue(rows, i) {
            Some(cue) => {
                self.replay_only = None;
                self.cursor = None;
                self.handed.clear();
                self.handed.push_back((cue.segment_id, cue.samples.len() as u64));
                self.out.push(AudioCommand::Play(cue));
            }
            None => {
                self.stop();
                self.cursor = None;
                self.want_samples(rows, i);
            }
        }
    }

    /// Plays an audition alone, stopping what played.
    pub fn play_audition(&mut self, samples: Arc<Vec<f32>>) {
        self.stop();
        self.cursor = None;
        self.replay_only = None;
        self.handed.push_back((AUDITION_ID, samples.len() as u64));
        self.out.push(AudioCommand::Play(Cue { take_id: 0, segment_id: AUDITION_ID, samples }));
    }
}

/// The take `take` of segment `segment`, if the rows have it.
pub fn take_mut(rows: &mut [Row], segment: SegmentId, take: TakeId) -> Option<&mut TakeEntry> {
    let row = rows.iter_mut().find(|r| r.id == segment)?;
    row.takes.iter_mut().find(|t| t.id == take)
}
