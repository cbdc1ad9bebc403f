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
