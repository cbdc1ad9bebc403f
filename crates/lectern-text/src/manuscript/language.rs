//! The language pass: `[lang:TAG]` … `[/lang]` spans (from [`crate::markup::lex`]) and the
//! document's language give each stretch of a run its language tag, which decides how it is
//! read ([`Reading`]) and the segment's [`super::Segment::language`].

use std::ops::Range;

use super::pauses::Run;
use crate::cjk::is_cjk;
use crate::markup::{Markup, Token};

/// A stretch of a run's text (a range in it): markup (not read), or text under a language tag
/// (`None`: English).
#[derive(Debug, Clone)]
pub(super) struct Piece {
    pub range: Range<usize>,
    pub markup: bool,
    pub tag: Option<String>,
}

/// A block's language markup, read run by run: a `[lang:…]` span ends at `[/lang]` or with
/// its block, and carries across the pauses and voicing changes inside it.
pub(super) struct Languages {
    /// `[lang:TAG]` (`Some`) and `[/lang]` (`None`: back to the document's tag), in order.
    marks: Vec<(Range<usize>, Option<String>)>,
    /// The document's tag for its Latin-script text ([`document_latin_tag`]).
    document: Option<String>,
    /// The tag in effect where the last run read ended.
    current: Option<String>,
}

impl Languages {
    pub(super) fn new(tokens: &[Token], document: Option<String>) -> Self {
        let marks = tokens
            .iter()
            .filter_map(|t| match &t.markup {
                Markup::Lang(tag) => Some((t.range.clone(), tag.clone())),
                _ => None,
            })
            .collect();
        Self { marks, current: document.clone(), document }
    }

    /// The pieces of a run (ranges in the run's text), in order: its language markup and the
    /// voicing markup that changed nothing (`run.unchanged`) are markup, not read; the text
    /// between them is under the tag in effect.
    pub(super) fn pieces(&mut self, run: &Run) -> Vec<Piece> {
        // `Some`: the tag from there on; `None`: voicing markup, which changes no language.
        let mut skipped: Vec<(Range<usize>, Option<Option<String>>)> = self
            .marks
            .iter()
            .filter(|(range, _)| run.range.contains(&range.start))
            .map(|(range, tag)| (range.clone(), Some(tag.clone())))
            .chain(run.unchanged.iter().map(|r| (r.clone(), None)))
            .collect();
        skipped.sort_by_key(|(r, _)| r.start);
        let mut pieces = Vec::new();
        let mut at = run.range.start;
        for (range, tag) in skipped {
            pieces.push(Piece { range: at..range.start, markup: false, tag: self.current.clone() });
            pieces.push(Piece { range: range.clone(), markup: true, tag: None });
            if let Some(tag) = tag {
                self.current = tag.or_else(|| self.document.clone());
            }
            at = range.end;
        }
        pieces.push(Piece { range: at..run.range.end, markup: false, tag: self.current.clone() });
        for p in &mut pieces {
            p.range = p.range.start - run.range.start..p.range.end - run.range.start;
        }
        pieces.retain(|p| !p.range.is_empty());
        pieces
    }
}

/// How text under a language tag is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Reading {
    /// Per run: CJK as Chinese, the rest as English.
    English,
    /// CJK as Chinese, the Latin text kept as written ([`crate::normalize::Latin::Kept`]).
    Kept,
    /// All of it as Chinese (`[lang:zh]`: digits and signs between Latin words too).
    Chinese,
}

/// `None` and `en…` read as English, `zh…` as Chinese, any other language kept as written.
pub(super) fn reading(tag: Option<&str>) -> Reading {
    match tag.map(primary_subtag) {
        None | Some("en") => Reading::English,
        Some("zh") => Reading::Chinese,
        Some(_) => Reading::Kept,
    }
}

fn primary_subtag(tag: &str) -> &str {
    tag.split(['-', '_']).next().unwrap_or(tag)
}

/// The tag a document's language gives its Latin-script text: `None` (English) for English
/// and for Chinese, Japanese and Korean books, whose Latin text is mostly English names and
/// quotations; the tag itself for any other language.
pub(super) fn document_latin_tag(language: Option<&str>) -> Option<String> {
    let tag = language?.trim().to_ascii_lowercase();
    let cjk_or_en = matches!(primary_subtag(&tag), "en" | "zh" | "ja" | "ko" | "yue" | "");
    (!cjk_or_en).then_some(tag)
}

/// The non-English language tags of the pieces whose words fall in `src` (a range of the
/// run's text), in order, joined with `+`.
pub(super) fn segment_language(text: &str, pieces: &[Piece], src: Range<usize>) -> Option<String> {
    let mut tags: Vec<&str> = Vec::new();
    for p in pieces.iter().filter(|p| !p.markup) {
        let Some(tag) = p.tag.as_deref() else { continue };
        let rule = reading(Some(tag));
        let overlap = p.range.start.max(src.start)..p.range.end.min(src.end);
        let has_words = !overlap.is_empty()
            && text[overlap]
                .chars()
                .any(|c| c.is_alphanumeric() && (rule == Reading::Chinese || !is_cjk(c)));
        if rule != Reading::English && has_words && !tags.contains(&tag) {
            tags.push(tag);
        }
    }
    (!tags.is_empty()).then(|| tags.join("+"))
}
