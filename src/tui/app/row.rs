//! The manuscript's rows as the UI keeps them: each segment with its takes and the
//! narrator's state, and the telemetry history the charts draw.

use std::collections::VecDeque;
use std::sync::Arc;

use super::HISTORY_LEN;
use crate::review::Review;
use crate::tui::casting::RowCasting;
use lectern_engine::protocol::{SegmentId, SegmentState, TakeId, TakeRecord, TelemetrySample};

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
    /// Approved, then its text changed in the manuscript: it needs listening again (its
    /// review reads as a pickup until the narrator approves it or sets another state).
    pub edited_since_approval: bool,
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
    pub(super) fn in_flight(&self) -> bool {
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
    /// Approved, then its text changed in the manuscript (see [`Row::edited_since_approval`]).
    pub edited_since_approval: bool,
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

/// A row from the session, keeping what the UI already knew of the same segment: loaded
/// samples, the engine's state (while rendering), the auditioned take and a pending new take.
pub(super) fn merge_row(init: RowInit, prev: Option<Row>) -> Row {
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
        edited_since_approval: init.edited_since_approval,
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
