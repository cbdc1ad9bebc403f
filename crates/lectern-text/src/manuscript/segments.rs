//! Blocks read into chapters of segments: each run cut as upstream cuts it (plus the fast
//! start's lead sentence), then every segment given its structural pause, boundary and source
//! position; a document's skipped text and marks placed among them.

use std::ops::Range;
use std::path::Path;

use super::blocks::Block;
use super::language::segment_language;
use super::read::{RunText, UnspokenRuns, read_block};
use super::source::Cursor;
use super::{
    Chapter, Frontend, Manuscript, Mark, ParseOptions, Segment, Skipped, Span, Unspoken,
    UnspokenPolicy,
};
use crate::Result;
use crate::document::{DocSkip, Layout, excerpt};
use crate::hashing::stable_hash;
use crate::kind::SegmentKind;
use crate::normalize::Lang;
use crate::policy::SkipReason;
use crate::segment::{Boundary, Measure, estimate_tokens, sentence_pieces, split_paragraph_cuts};

/// Where a segment's pause comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Level {
    Sentence,
    Paragraph,
    Heading,
    Chapter,
}

struct Draft {
    seg: Segment,
    chapter: usize,
    level: Level,
    explicit_ms: u32,
    /// Why it ends, before the structural levels are known.
    cut: Boundary,
}

impl Draft {
    /// The boundary a listing shows: the strongest of its structural level and its cut.
    fn boundary(&self, last: bool) -> Boundary {
        match self.level {
            _ if last => Boundary::End,
            Level::Chapter => Boundary::Chapter,
            Level::Heading => Boundary::Heading,
            Level::Paragraph if self.cut == Boundary::Break => Boundary::Break,
            Level::Paragraph => Boundary::Paragraph,
            Level::Sentence => self.cut,
        }
    }
}

/// Segments blocks of `src`; a block paired with `Some(title)` opens a chapter.
pub(super) fn parse_blocks(
    src: &str,
    blocks: Vec<(Option<Option<String>>, Block)>,
    opts: &ParseOptions<'_>,
    path: &Path,
    language: Option<&str>,
) -> Result<Manuscript> {
    let tokens = |s: &str| match opts.tokenizer {
        Some(t) => t.count(s),
        None => estimate_tokens(s),
    };
    let mut measure_en = Measure::new(Lang::En, &tokens);
    // Ours sizes a CJK run's Latin text in tokens; upstream counts every char.
    let mut measure_zh = match opts.frontend {
        Frontend::Lectern => Measure::mixed(&tokens),
        Frontend::Upstream => Measure::new(Lang::Zh, &tokens),
    };
    // Unspoken stretches found: (byte range in `src`, tag, chapter as drafted).
    let mut unspoken: Vec<(Range<usize>, String, usize)> = Vec::new();
    let mut chapters: Vec<Chapter> = vec![Chapter::default()];
    let mut drafts: Vec<Draft> = Vec::new();
    let mut lead_in_ms = 0;
    // The `[voice:…]` in effect: it carries across paragraphs, not chapters.
    let mut voice = None;
    for (opens_chapter, block) in blocks {
        if let Some(title) = opens_chapter {
            voice = None;
            if !chapters.last().is_some_and(|c| c.title.is_none() && drafts.is_empty()) {
                if let Some(d) = drafts.last_mut() {
                    d.level = d.level.max(Level::Chapter);
                }
                chapters.push(Chapter::default());
            }
            chapters.last_mut().expect("one chapter").title = title;
        }
        let chapter = chapters.len() - 1;
        for (run, read, found) in read_block(&block, src, path, opts, language, &mut voice)? {
            let spoken = read.is_some();
            unspoken.extend(found_in_source(&block, &run.range, found, chapter));
            if let Some(RunText { lang, norm, stretches }) = read {
                let block_text = &block.text.text[run.range.clone()];
                let measure = if lang == Lang::Zh { &mut measure_zh } else { &mut measure_en };
                let mut cuts = split_paragraph_cuts(&norm.text, lang, &opts.limits, measure);
                if opts.lead_sentence && drafts.is_empty() && block.kind != SegmentKind::Heading {
                    cuts = lead_sentence_cuts(&norm.text, lang, cuts);
                }
                for (r, cut) in cuts {
                    let in_run = norm.src_range(r.clone());
                    let in_block = run.range.start + in_run.start..run.range.start + in_run.end;
                    let bytes = block.text.src_range(in_block);
                    let text = norm.text[r].to_string();
                    let seg = Segment {
                        id: drafts.len(),
                        hash: stable_hash(text.as_bytes()),
                        text,
                        source: src[bytes.clone()].to_string(),
                        lang,
                        language: segment_language(block_text, &stretches, in_run),
                        kind: block.kind,
                        span: Span { bytes, ..Span::default() },
                        pause_after_ms: 0,
                        ends_paragraph: false,
                        boundary: cut,
                        voicing: run.voicing.clone(),
                    };
                    let level = Level::Sentence;
                    drafts.push(Draft { seg, chapter, level, explicit_ms: 0, cut });
                }
            }
            if let Some(d) = drafts.last_mut() {
                d.explicit_ms = d.explicit_ms.saturating_add(run.pause_ms);
                if run.is_break {
                    d.level = d.level.max(Level::Paragraph);
                    d.cut = Boundary::Break;
                } else if run.pause_ms > 0 {
                    d.cut = Boundary::Pause;
                } else if run.voicing_ends && spoken {
                    d.cut = Boundary::Voice;
                }
            } else {
                lead_in_ms += run.pause_ms;
            }
        }
        if let Some(d) = drafts.last_mut() {
            let level =
                if block.kind == SegmentKind::Heading { Level::Heading } else { Level::Paragraph };
            d.level = d.level.max(level);
        }
    }
    let n = drafts.len();
    let mut cursor = Cursor::new(src);
    for (i, mut d) in drafts.into_iter().enumerate() {
        let p = &opts.pauses;
        let structural = match d.level {
            _ if i + 1 == n => 0,
            Level::Sentence => p.sentence_ms,
            Level::Paragraph => p.paragraph_ms,
            Level::Heading => p.heading_ms,
            Level::Chapter => p.chapter_ms,
        };
        d.seg.pause_after_ms = structural.max(d.explicit_ms);
        d.seg.ends_paragraph = i + 1 == n || d.level != Level::Sentence;
        d.seg.boundary = d.boundary(i + 1 == n);
        d.seg.span.start = cursor.position(d.seg.span.bytes.start);
        d.seg.span.end = cursor.position(d.seg.span.bytes.end);
        chapters[d.chapter].segments.push(d.seg);
    }
    let kept: Vec<bool> =
        chapters.iter().map(|c| !c.segments.is_empty() || c.title.is_some()).collect();
    chapters.retain(|c| !c.segments.is_empty() || c.title.is_some());
    if chapters.iter().all(|c| c.segments.is_empty()) {
        chapters.clear();
    }
    let (unspoken, skipped) = unspoken_records(src, unspoken, &kept, opts.unspoken);
    Ok(Manuscript { chapters, lead_in_ms, unspoken, skipped, ..Manuscript::default() })
}

/// A run's unspoken stretches as source byte ranges, with their tags and chapter.
fn found_in_source(
    block: &Block,
    run: &Range<usize>,
    found: UnspokenRuns,
    chapter: usize,
) -> impl Iterator<Item = (Range<usize>, String, usize)> {
    found.into_iter().map(move |(r, tag)| {
        let bytes = block.text.src_range(run.start + r.start..run.start + r.end);
        (bytes, tag, chapter)
    })
}

/// The unspoken stretches as records, their chapters renumbered as the chapters kept are
/// (`kept[c]`: drafted chapter `c` was kept; a dropped one's text goes to the next kept);
/// under [`UnspokenPolicy::Skip`] each is also a skipped record.
fn unspoken_records(
    src: &str,
    found: Vec<(Range<usize>, String, usize)>,
    kept: &[bool],
    policy: UnspokenPolicy,
) -> (Vec<Unspoken>, Vec<Skipped>) {
    let total = kept.iter().filter(|k| **k).count();
    let renumber = |c: usize| kept[..c].iter().filter(|k| **k).count().min(total.saturating_sub(1));
    let mut cursor = Cursor::new(src);
    let mut unspoken = Vec::new();
    let mut skipped = Vec::new();
    for (bytes, language, chapter) in found {
        let (chapter, line) = (renumber(chapter), cursor.position(bytes.start).line);
        let text = excerpt(&src[bytes]);
        if policy == UnspokenPolicy::Skip {
            skipped.push(Skipped {
                chapter,
                line,
                reason: SkipReason::UnspokenLanguage,
                kind: Some(language.clone()),
                text: text.clone(),
                file: None,
            });
        }
        unspoken.push(Unspoken { language, chapter, line, text });
    }
    (unspoken, skipped)
}

/// [`split_lead_sentence`] over cuts: the opener ends as [`Boundary::FirstSentence`].
fn lead_sentence_cuts(
    text: &str,
    lang: Lang,
    cuts: Vec<(Range<usize>, Boundary)>,
) -> Vec<(Range<usize>, Boundary)> {
    let ranges = split_lead_sentence(text, lang, cuts.iter().map(|c| c.0.clone()).collect());
    if ranges.len() == cuts.len() {
        return cuts;
    }
    let mut ends = vec![Boundary::FirstSentence];
    ends.extend(cuts.iter().map(|c| c.1));
    ranges.into_iter().zip(ends).collect()
}

/// Splits the first of a run's segment ranges after its first sentence, when it has more
/// than one (applied to a manuscript's first segment unless it is a heading: headings are
/// short already, and a colon would cut them). Time to first audio is the first segment's LM time plus one flow and vocoder
/// call, so a one-sentence opener starts playback several times sooner than a full segment
/// of upstream's 60–80 text tokens; every later segment keeps upstream's sizes.
pub fn split_lead_sentence(
    text: &str,
    lang: Lang,
    mut ranges: Vec<Range<usize>>,
) -> Vec<Range<usize>> {
    let Some(first) = ranges.first().cloned() else {
        return ranges;
    };
    let pieces = sentence_pieces(&text[first.clone()], lang);
    if pieces.len() < 2 {
        return ranges;
    }
    let cut = first.start + pieces[0].end;
    let rest = first.start + pieces[1].start..first.end;
    ranges[0] = first.start..cut;
    ranges.insert(1, rest);
    ranges
}

/// Places a layout's skipped stretches and marks in the segmented book: each belongs to the
/// chapter of the first segment at or after its offset (the last chapter at the end).
pub(super) fn place_skips_and_marks(m: &mut Manuscript, layout: &Layout<'_>) {
    // (byte offset, chapter, segment id) of every segment, in order.
    let starts: Vec<(usize, usize, usize)> = m
        .chapters
        .iter()
        .enumerate()
        .flat_map(|(c, ch)| ch.segments.iter().map(move |s| (s.span.bytes.start, c, s.id)))
        .collect();
    let last_chapter = m.chapters.len().saturating_sub(1);
    let at = |offset: usize| {
        let k = starts.partition_point(|(o, _, _)| *o < offset);
        starts.get(k).map_or((last_chapter, None), |(_, c, id)| (*c, Some(*id)))
    };
    let mut cursor = Cursor::new(&layout.text);
    let mut skipped: Vec<(usize, &DocSkip)> = layout.skipped.clone();
    skipped.sort_by_key(|(o, _)| *o);
    for (offset, s) in skipped {
        let (chapter, _) = at(offset);
        m.skipped.push(Skipped {
            chapter,
            line: cursor.position(offset).line,
            reason: s.reason,
            kind: s.kind.clone(),
            text: s.text.clone(),
            file: s.file.clone(),
        });
    }
    for (offset, mark) in &layout.marks {
        if let (chapter, Some(segment)) = at(*offset) {
            let title = mark.title.clone();
            m.chapters[chapter].marks.push(Mark { title, segment, depth: mark.depth });
        }
    }
}
