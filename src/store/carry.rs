//! The narrator's work follows the text. When a manuscript edit replaces segments, the review
//! state, note and pickup flag of each one that is gone move to the segments that took its
//! place: those between the same unchanged neighbours (its position) whose words it shares
//! (text similarity). A split segment carries its work to each half, merged ones bring theirs
//! together; an approved segment whose text changed becomes "edited since approval" (it needs
//! listening again), its approved reading in its note. Work that finds no segment to go to
//! stays on the removed text's row (restoring the text brings it back), and the sync says so.
//!
//! Pure functions of the segments before and after the sync; `db` reads and writes them.

use std::collections::{BTreeMap, HashSet};

use crate::review::Review;
use lectern_engine::protocol::SegmentId;

/// The review text of an approved segment whose text was edited since: read as a pickup by
/// [`Review::parse`] (it is listed for the narrator until approved again), and told apart by
/// [`is_edited_since_approval`].
pub const EDITED_SINCE_APPROVAL: &str = Review::EDITED_SINCE_APPROVAL;

/// Whether a stored review text means "edited since approval".
#[must_use]
pub fn is_edited_since_approval(review: &str) -> bool {
    review == EDITED_SINCE_APPROVAL
}

/// How the note of an edited approved segment names what was approved.
pub const APPROVED_READING: &str = "edited since approval; approved reading:";

/// Between two notes carried into one segment.
const NOTE_JOIN: &str = " · ";

/// Words two segments must share, as a share of the shorter one's words, for work to move
/// between them when more than one segment took the place of the old one.
const SIMILAR: f64 = 0.5;

/// A segment of the manuscript as the sync sees it, before or after.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Side {
    pub key: i64,
    pub id: SegmentId,
    pub text: String,
    pub line: u32,
    /// The stored review text.
    pub review: String,
    pub note: String,
}

impl Side {
    /// Whether the narrator left anything on it a text change must not lose: an approval, a
    /// pickup flag (or an edit since approval), a note.
    fn has_work(&self) -> bool {
        matches!(Review::parse(&self.review), Review::Approved | Review::Pickup)
            || !self.note.trim().is_empty()
    }

    /// The note without the lines the sync wrote itself (the approved reading).
    fn narrator_note(&self) -> String {
        self.note
            .split(NOTE_JOIN)
            .filter(|part| !part.starts_with(APPROVED_READING))
            .collect::<Vec<_>>()
            .join(NOTE_JOIN)
    }
}

/// Where one removed segment's work went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Move {
    /// Index of the removed segment in `before`.
    pub from: usize,
    /// Indices in `after` of the segments it went to (empty: nowhere).
    pub to: Vec<usize>,
}

/// What a segment of the new manuscript receives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Landing {
    /// Index in `after`.
    pub at: usize,
    pub review: String,
    pub note: String,
    /// It became "edited since approval" by this sync (an approved segment's text changed).
    pub newly_edited: bool,
}

/// Where the work of each removed segment goes. `after[i]` with a key of `before` is that
/// segment unchanged; a segment that is neither removed nor new only anchors positions.
#[must_use]
pub fn plan(before: &[Side], after: &[Side]) -> Vec<Move> {
    let after_keys: HashSet<i64> = after.iter().map(|s| s.key).collect();
    let before_keys: HashSet<i64> = before.iter().map(|s| s.key).collect();
    let gaps_before = gaps(before, |s| after_keys.contains(&s.key));
    let gaps_after = gaps(after, |s| before_keys.contains(&s.key));
    let after_words: Vec<HashSet<String>> = after.iter().map(|s| words(&s.text)).collect();
    let mut moves = Vec::new();
    for (i, s) in before.iter().enumerate() {
        if after_keys.contains(&s.key) || !s.has_work() {
            continue;
        }
        let candidates: Vec<usize> = (0..after.len())
            .filter(|&j| !before_keys.contains(&after[j].key) && gaps_after[j] == gaps_before[i])
            .collect();
        let old = words(&s.text);
        let scored: Vec<Scored> = candidates
            .iter()
            .map(|&j| Scored { at: j, similarity: overlap(&old, &after_words[j]) })
            .collect();
        moves.push(Move { from: i, to: targets(i, &scored) });
    }
    moves
}

/// A candidate segment of the new manuscript and how much of a removed text it shares.
#[derive(Debug, Clone, Copy)]
struct Scored {
    /// Index in `after`.
    at: usize,
    similarity: f64,
}

/// Each segment's gap: the key of the last kept segment before it (None: before the first).
fn gaps(side: &[Side], kept: impl Fn(&Side) -> bool) -> Vec<Option<i64>> {
    let mut last = None;
    side.iter()
        .map(|s| {
            let gap = last;
            if kept(s) {
                last = Some(s.key);
            }
            gap
        })
        .collect()
}

/// The candidates the work of the removed segment at `from` goes to: the most similar one
/// (the nearest among equals) with its neighbours that are similar too (the halves of a
/// split); else the one candidate there is (same place, rewritten); else nothing. Only
/// neighbours join, so a short sentence's words found all over a rewritten book do not spread
/// its note.
fn targets(from: usize, scored: &[Scored]) -> Vec<usize> {
    if let [only] = scored {
        return vec![only.at];
    }
    let best = scored.iter().filter(|c| c.similarity > 0.0).max_by(|a, b| {
        a.similarity.total_cmp(&b.similarity).then(b.at.abs_diff(from).cmp(&a.at.abs_diff(from)))
    });
    let Some(best) = best else { return Vec::new() };
    if best.similarity < SIMILAR {
        return vec![best.at];
    }
    let similar: HashSet<usize> =
        scored.iter().filter(|c| c.similarity >= SIMILAR).map(|c| c.at).collect();
    let first = (0..=best.at).rev().take_while(|j| similar.contains(j)).last().unwrap_or(best.at);
    (first..).take_while(|j| similar.contains(j)).collect()
}

/// The share of the shorter text's words that the other has too (0 to 1): 1 for a half of a
/// split sentence or a sentence merged into a longer one, high for a few words changed.
#[must_use]
pub fn similarity(a: &str, b: &str) -> f64 {
    overlap(&words(a), &words(b))
}

/// [`similarity`] of two word sets.
fn overlap(a: &HashSet<String>, b: &HashSet<String>) -> f64 {
    let shorter = a.len().min(b.len());
    if shorter == 0 {
        return 0.0;
    }
    a.intersection(b).count() as f64 / shorter as f64
}

fn words(text: &str) -> HashSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// What each receiving segment of `after` gets from `moves`. A segment that has work of its
/// own (a text restored with its old state) keeps it and receives nothing.
#[must_use]
pub fn landings(before: &[Side], after: &[Side], moves: &[Move]) -> Vec<Landing> {
    let mut into: BTreeMap<usize, Vec<&Side>> = BTreeMap::new();
    for m in moves {
        for &j in &m.to {
            into.entry(j).or_default().push(&before[m.from]);
        }
    }
    into.into_iter()
        .filter(|(j, _)| !after[*j].has_work())
        .map(|(j, sources)| landing(j, &sources))
        .collect()
}

fn landing(at: usize, sources: &[&Side]) -> Landing {
    let approved = sources.iter().any(|s| Review::parse(&s.review) == Review::Approved);
    let edited = approved || sources.iter().any(|s| is_edited_since_approval(&s.review));
    let review = if edited {
        EDITED_SINCE_APPROVAL
    } else if sources.iter().any(|s| Review::parse(&s.review) == Review::Pickup) {
        Review::Pickup.as_str()
    } else {
        Review::Unheard.as_str()
    };
    let mut notes: Vec<String> = Vec::new();
    for s in sources {
        let note = s.note.trim();
        if !note.is_empty() && !notes.iter().any(|n| n == note) {
            notes.push(note.to_string());
        }
    }
    for s in sources.iter().filter(|s| Review::parse(&s.review) == Review::Approved) {
        notes.push(format!("{APPROVED_READING} “{}”", s.text));
    }
    Landing { at, review: review.to_string(), note: notes.join(NOTE_JOIN), newly_edited: approved }
}

/// Whether a removed segment's work is left behind: no segment received it (`received`: the
/// landings' segments), and it went nowhere, or its note is not in the segments it went to (a
/// restored text keeps its own state and note).
#[must_use]
pub fn unplaced(source: &Side, m: &Move, after: &[Side], received: &HashSet<usize>) -> bool {
    if m.to.iter().any(|j| received.contains(j)) {
        return false;
    }
    let note = source.narrator_note();
    let note = note.trim();
    m.to.is_empty() || !note.is_empty() && !m.to.iter().any(|&j| after[j].note.contains(note))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn side(key: i64, text: &str, review: &str, note: &str) -> Side {
        Side {
            key,
            id: key as u64,
            text: text.into(),
            line: key as u32,
            review: review.into(),
            note: note.into(),
        }
    }

    #[test]
    fn similarity_counts_the_shorter_texts_words() {
        assert_eq!(similarity("Mara went home.", "Mara went home. She slept."), 1.0);
        assert!(similarity("The cold light came in.", "The warm light came in.") >= 0.75);
        assert_eq!(similarity("Alpha beta.", "Gamma delta."), 0.0);
    }

    #[test]
    fn an_edited_approved_segment_becomes_edited_since_approval_with_its_note() {
        let before = [
            side(1, "One two three.", "approved", ""),
            side(2, "Mara walked to the old mill.", "approved", "Breath noise"),
            side(3, "Four five six.", "heard", ""),
        ];
        let after = [
            side(1, "One two three.", "approved", ""),
            side(4, "Mara walked to the new mill.", "unheard", ""),
            side(3, "Four five six.", "heard", ""),
        ];
        let moves = plan(&before, &after);
        assert_eq!(moves, vec![Move { from: 1, to: vec![1] }]);
        let l = landings(&before, &after, &moves);
        assert_eq!(l.len(), 1);
        assert_eq!(l[0].review, EDITED_SINCE_APPROVAL);
        assert!(l[0].newly_edited);
        assert!(l[0].note.starts_with("Breath noise"), "{}", l[0].note);
        assert!(l[0].note.contains("“Mara walked to the old mill.”"), "{}", l[0].note);
        assert_eq!(Review::parse(&l[0].review), Review::Pickup);
    }

    #[test]
    fn a_split_carries_the_note_to_both_halves_and_a_merge_joins_notes() {
        let before = [side(1, "Mara ran, and the dog followed her home.", "pickup", "redo")];
        let after = [
            side(2, "Mara ran.", "unheard", ""),
            side(3, "The dog followed her home.", "unheard", ""),
        ];
        let moves = plan(&before, &after);
        assert_eq!(moves[0].to, vec![0, 1]);
        let l = landings(&before, &after, &moves);
        assert!(l.iter().all(|l| l.note == "redo" && l.review == "pickup"), "{l:?}");

        let before =
            [side(1, "Mara ran.", "unheard", "fast"), side(2, "The dog.", "unheard", "loud")];
        let after = [side(3, "Mara ran. The dog.", "unheard", "")];
        let l = landings(&before, &after, &plan(&before, &after));
        assert_eq!(l[0].note, "fast · loud");
        assert_eq!(l[0].review, "unheard");
    }

    #[test]
    fn a_short_texts_work_goes_to_its_nearest_match_not_everywhere_its_words_are() {
        // Every segment rewritten (new reading rules, say): no segment anchors the positions.
        let before = [
            side(1, "He said no.", "unheard", "too loud"),
            side(2, "The river ran cold.", "unheard", ""),
            side(3, "She left.", "unheard", ""),
        ];
        let after = [
            side(4, "He said no, twice.", "unheard", ""),
            side(5, "The river ran colder.", "unheard", ""),
            side(6, "Later he said no again.", "unheard", ""),
        ];
        let moves = plan(&before, &after);
        assert_eq!(moves, vec![Move { from: 0, to: vec![0] }]);
    }

    #[test]
    fn work_with_nowhere_to_go_is_unplaced_and_a_restored_text_keeps_its_own() {
        let before = [side(1, "Keep.", "heard", ""), side(2, "Gone now.", "unheard", "a note")];
        let after = [side(1, "Keep.", "heard", "")];
        let moves = plan(&before, &after);
        assert_eq!(moves, vec![Move { from: 1, to: vec![] }]);
        assert!(unplaced(&before[1], &moves[0], &after, &HashSet::new()));

        // Reverting an edit: the old text's row comes back with its own approval and note.
        let before = [side(
            5,
            "Mara walked to the new mill.",
            "edited",
            "Breath noise · edited since approval; approved reading: “x”",
        )];
        let after = [side(2, "Mara walked to the old mill.", "approved", "Breath noise")];
        let moves = plan(&before, &after);
        assert!(landings(&before, &after, &moves).is_empty());
        assert!(!unplaced(&before[0], &moves[0], &after, &HashSet::new()));
        let after = [side(2, "Mara walked to the old mill.", "approved", "another note")];
        assert!(unplaced(&before[0], &moves[0], &after, &HashSet::new()));
    }
}
