//! The render plan: which segments need a take, with which seed, and where their flow groups
//! close. Pure functions of the manuscript and the store's answers, so `render` and the
//! workstation plan the same work for the same project.
//!
//! Groups close at paragraph ends (so a group is a function of its paragraph's text), after
//! the manuscript's first segment (the opener is a group of its own, so first audio never waits
//! for a long group), and before a segment that needs no take (so an interrupted or edited
//! manuscript re-forms exactly the groups an uninterrupted run forms). Within those bounds the
//! engine fills groups up to the frame target, which depends only on the segments' tokens.

use std::collections::HashSet;

use crate::review::{CastingOverride, SegmentKey};
use lectern_engine::protocol::{Casting, SegmentSpec, TakeContent};

/// One manuscript segment as the session plans it.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedSegment {
    /// The store's key: the engine's segment id and the UI's row id.
    pub key: SegmentKey,
    /// Position in the manuscript (0, 1, 2, …).
    pub position: usize,
    pub chapter: usize,
    /// Normalised text, what the LM gets.
    pub text: String,
    /// The manuscript's text of it, as the narrator wrote it.
    pub source: String,
    /// Where it starts in the manuscript: (line, column), 1-based.
    pub span: (usize, usize),
    pub pause_after_ms: u32,
    /// Ends a paragraph, heading or chapter.
    pub ends_paragraph: bool,
    /// The seed of its first take (see [`super::seed::segment_seed`]).
    pub default_seed: u64,
    /// What a current take of it is made of.
    pub content: TakeContent,
    /// Who speaks it and how (voice, mode, pace).
    pub casting: Casting,
    /// The cast character speaking it, if any (for the list).
    pub character: Option<String>,
    /// The narrator's casting of it in the workstation (empty: as the manuscript and cast
    /// give it).
    pub recast: CastingOverride,
}

impl PlannedSegment {
    /// The spec of its default take.
    #[must_use]
    pub fn spec(&self) -> SegmentSpec {
        SegmentSpec {
            id: self.key as u64,
            text: self.text.clone(),
            seed: self.default_seed,
            group_break_after: false,
            content: self.content.clone(),
            casting: self.casting.clone(),
        }
    }
}

/// Whether the plan closes a flow group after the segment at `position`: at a paragraph's end
/// and after the manuscript's first segment (the opener, alone for fast first audio).
#[must_use]
pub fn closes_group(position: usize, ends_paragraph: bool) -> bool {
    ends_paragraph || position == 0
}

/// Specs for the segments in `render` (keys), in manuscript order, with their group breaks.
#[must_use]
pub fn render_specs(segments: &[PlannedSegment], render: &HashSet<SegmentKey>) -> Vec<SegmentSpec> {
    let mut specs = Vec::new();
    for (i, s) in segments.iter().enumerate() {
        if !render.contains(&s.key) {
            continue;
        }
        let next_rendered = segments.get(i + 1).is_some_and(|n| render.contains(&n.key));
        let mut spec = s.spec();
        spec.group_break_after = closes_group(s.position, s.ends_paragraph) || !next_rendered;
        specs.push(spec);
    }
    specs
}

/// Why a take looks wrong for its text, if it does: no audio, or a length far outside what
/// speech of that text takes. Speech runs at about 12–18 characters a second; a take faster
/// than 60 or slower than 1.5 characters a second (with a second of slack for short texts) is
/// flagged for the narrator — it is not changed or hidden.
#[must_use]
pub fn implausible(text: &str, tokens: usize) -> Option<String> {
    const TOKENS_PER_S: f64 = 25.0;
    if tokens == 0 {
        return Some("take has no audio (zero speech tokens)".into());
    }
    let chars = text.chars().filter(|c| !c.is_whitespace()).count() as f64;
    let seconds = tokens as f64 / TOKENS_PER_S;
    if seconds < chars / 60.0 {
        return Some(format!("take is implausibly short: {seconds:.2} s for {chars} characters"));
    }
    if seconds > chars / 1.5 + 1.0 {
        return Some(format!("take is implausibly long: {seconds:.1} s for {chars} characters"));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(key: i64, ends_paragraph: bool) -> PlannedSegment {
        PlannedSegment {
            key,
            position: key as usize,
            chapter: 0,
            text: format!("s{key}"),
            source: format!("s{key}"),
            span: (1, 1),
            pause_after_ms: 0,
            ends_paragraph,
            default_seed: 10 + key as u64,
            content: TakeContent::default(),
            casting: Casting::default(),
            character: None,
            recast: CastingOverride::default(),
        }
    }

    #[test]
    fn implausible_lengths_are_flagged() {
        let sentence = "A sentence of about sixty characters, read at a normal pace.";
        assert!(implausible(sentence, 0).unwrap().contains("no audio"));
        assert!(implausible(sentence, 5).unwrap().contains("short")); // 0.2 s
        assert_eq!(implausible(sentence, 100), None); // 4 s
        assert!(implausible(sentence, 2000).unwrap().contains("long")); // 80 s
        assert_eq!(implausible("Hi.", 20), None); // short texts get a second of slack
    }

    #[test]
    fn groups_break_at_paragraphs_the_opener_and_gaps() {
        // Paragraphs: [0] [1 2 3] [4 5]; segment 2 already has a take.
        let segments: Vec<PlannedSegment> = [false, false, false, true, false, true]
            .iter()
            .enumerate()
            .map(|(k, &e)| seg(k as i64, e))
            .collect();
        let render: HashSet<i64> = [0, 1, 3, 4, 5].into_iter().collect();
        let specs = render_specs(&segments, &render);
        let ids: Vec<u64> = specs.iter().map(|s| s.id).collect();
        assert_eq!(ids, vec![0, 1, 3, 4, 5]);
        let breaks: Vec<bool> = specs.iter().map(|s| s.group_break_after).collect();
        assert_eq!(breaks, vec![true, true, true, false, true]);
        assert_eq!(specs[2].seed, 13);
    }
}

/// One share of a book rendered by a process of its own (`render --shard K/N`): the `index`th
/// (from 1) of `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl std::str::FromStr for Shard {
    type Err = String;

    /// `K/N` with 1 ≤ K ≤ N.
    fn from_str(text: &str) -> Result<Self, String> {
        let rule = || format!("`{text}`: a shard is K/N, K from 1 to N (e.g. 2/4)");
        let (k, n) = text.trim().split_once('/').ok_or_else(rule)?;
        let (index, count): (usize, usize) =
            (k.trim().parse().map_err(|_| rule())?, n.trim().parse().map_err(|_| rule())?);
        if index == 0 || index > count {
            return Err(rule());
        }
        Ok(Self { index, count })
    }
}

/// The segments of `shard`: whole paragraphs (a flow group never reaches across one, so no
/// group is split), contiguous, balanced on the text's length as an estimate of its tokens.
/// A function of the manuscript alone — not of what is rendered yet — so a shard resumed after
/// a kill covers the same segments, and the shards together cover the book exactly once.
#[must_use]
pub fn shard_keys(segments: &[PlannedSegment], shard: Shard) -> HashSet<SegmentKey> {
    let sizes = segments
        .iter()
        .map(|s| (s.text.chars().count(), closes_group(s.position, s.ends_paragraph)));
    segments
        .iter()
        .zip(shard_mask(sizes, shard))
        .filter(|(_, in_shard)| *in_shard)
        .map(|(s, _)| s.key)
        .collect()
}

/// Which segments fall in `shard`, given each one's text length and whether the plan closes a
/// flow group after it (see [`shard_keys`]; the workload bench shards its segments by it too).
#[must_use]
pub fn shard_mask(sizes: impl IntoIterator<Item = (usize, bool)>, shard: Shard) -> Vec<bool> {
    // Units: runs of segments up to a group's close; each weighs its text's length.
    let mut units: Vec<(usize, usize)> = Vec::new();
    let mut open = false;
    for (chars, closes) in sizes {
        if !open {
            units.push((0, 0));
        }
        let unit = units.last_mut().expect("a unit was opened");
        unit.0 += chars.max(1);
        unit.1 += 1;
        open = !closes;
    }
    let total: usize = units.iter().map(|u| u.0).sum::<usize>().max(1);
    let mut mask = Vec::new();
    let mut before = 0;
    for (weight, len) in units {
        // The unit goes to the shard its middle falls in.
        let owner = ((2 * before + weight) * shard.count / (2 * total)).min(shard.count - 1);
        mask.extend(std::iter::repeat_n(owner + 1 == shard.index, len));
        before += weight;
    }
    mask
}

#[cfg(test)]
mod shard_tests {
    use super::*;

    fn segment(position: usize, text: &str, ends_paragraph: bool) -> PlannedSegment {
        PlannedSegment {
            key: position as SegmentKey + 1,
            position,
            chapter: 0,
            text: text.to_string(),
            source: text.to_string(),
            span: (position + 1, 1),
            pause_after_ms: 0,
            ends_paragraph,
            default_seed: 0,
            content: TakeContent::default(),
            casting: Casting::default(),
            character: None,
            recast: CastingOverride::default(),
        }
    }

    #[test]
    fn shards_cover_the_book_once_in_whole_paragraphs_and_balance() {
        // Paragraphs of two segments each, of varied lengths.
        let segments: Vec<PlannedSegment> =
            (0..40).map(|i| segment(i, &"word ".repeat(3 + (i * 7) % 11), i % 2 == 1)).collect();
        for count in 1..=5 {
            let shares: Vec<HashSet<SegmentKey>> =
                (1..=count).map(|index| shard_keys(&segments, Shard { index, count })).collect();
            let total: usize = shares.iter().map(HashSet::len).sum();
            assert_eq!(total, segments.len(), "{count} shards cover every segment once");
            for share in &shares {
                for s in segments.iter().filter(|s| s.ends_paragraph) {
                    let first = &segments[s.position - 1];
                    let together = share.contains(&s.key) == share.contains(&first.key);
                    assert!(together || first.position == 0, "a paragraph is not split");
                }
                let chars: usize =
                    segments.iter().filter(|s| share.contains(&s.key)).map(|s| s.text.len()).sum();
                let all: usize = segments.iter().map(|s| s.text.len()).sum();
                let fair = all / count;
                assert!(chars.abs_diff(fair) <= fair / 4 + 60, "{count}: {chars} vs {fair}");
            }
        }
    }

    #[test]
    fn a_shard_is_k_of_n() {
        assert_eq!("2/4".parse(), Ok(Shard { index: 2, count: 4 }));
        for bad in ["0/4", "5/4", "2", "a/b", "1/0"] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
    }
}
