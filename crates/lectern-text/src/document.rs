//! Documents read by a container format (EPUB, in the app): chapters of headings and
//! paragraphs, already free of markup, plus the book's metadata.
//!
//! `Document::layout` lays a document out as plain text (a chapter's blocks one per
//! paragraph, blank lines between), and [`super::Manuscript::from_document`] segments that text:
//! segment spans point into it, so line numbers of an EPUB's segments are lines of this text
//! (what `render --dry-run` shows), not of the XHTML files.

use super::kind::SegmentKind;
use super::policy::SkipReason;

/// What a book says about itself (EPUB `dc:title`, `dc:creator`, `dc:language`, `dc:publisher`,
/// `dc:rights`, `dc:identifier`, `dc:description`, `dc:date`, its cover; a Markdown front
/// matter's `title:`, `author:`, `narrator:`, `lang:`, `cover:`, `publisher:`, `rights:`,
/// `isbn:`, `description:` and `date:`).
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct BookInfo {
    pub title: Option<String>,
    /// Creators in the order the book lists them, joined with ", ".
    pub author: Option<String>,
    /// Who reads the audiobook (Markdown front matter `narrator:`).
    #[serde(default)]
    pub narrator: Option<String>,
    /// BCP 47 tag (`en`, `fr-CA`, `zh-Hans`).
    pub language: Option<String>,
    /// The publisher (`dc:publisher`).
    #[serde(default)]
    pub publisher: Option<String>,
    /// The rights statement (`dc:rights`: a copyright line, a licence).
    #[serde(default)]
    pub rights: Option<String>,
    /// The book's ISBN, digits only (and a final `X`), from a `dc:identifier` that is one; else
    /// the front matter's `isbn:` as written.
    #[serde(default)]
    pub isbn: Option<String>,
    /// The book's description (`dc:description`), markup removed, whitespace collapsed.
    #[serde(default)]
    pub description: Option<String>,
    /// The publication date as the book writes it (`dc:date`: `2024`, `2024-03-01`, …).
    #[serde(default)]
    pub date: Option<String>,
    #[serde(skip)]
    pub cover: Option<Cover>,
    /// The cover image's path as a Markdown front matter writes it (`cover: art/cover.jpg`,
    /// relative to the manuscript); the caller reads it into [`Self::cover`].
    #[serde(skip)]
    pub cover_path: Option<String>,
    /// The book's own pronunciations (EPUB PLS lexicons), read under the project's
    /// `pronunciations.txt`, whose entries win ([`crate::Pronunciations::over`]).
    #[serde(skip)]
    pub lexicon: crate::Pronunciations,
    /// The book's pronunciations that could not be used (a lexicon entry, an `ssml:ph`), each
    /// naming its file and word: those words are read as printed. The dry run lists them.
    #[serde(skip)]
    pub lexicon_warnings: Vec<String>,
    /// What else of the book could not be used (a cover that is no JPEG or PNG of sane size),
    /// each naming its entry. The dry run lists them.
    #[serde(skip)]
    pub warnings: Vec<String>,
}

/// A cover image, as stored in the book.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cover {
    pub media_type: String,
    pub bytes: Vec<u8>,
}

impl Cover {
    /// The usual file extension of the image type (`jpg`, `png`, ...).
    pub fn extension(&self) -> &'static str {
        match self.media_type.as_str() {
            "image/jpeg" | "image/jpg" => "jpg",
            "image/png" => "png",
            "image/gif" => "gif",
            "image/webp" => "webp",
            "image/svg+xml" => "svg",
            _ => "img",
        }
    }
}

/// A heading or paragraph of plain text (inner line breaks are kept, as poetry needs them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocBlock {
    pub kind: SegmentKind,
    pub text: String,
    /// A stanza: each line (`\n`-separated) is a phrase, read with a short pause and no full
    /// stop added; the stanza ends like a paragraph.
    pub verse: bool,
    /// Stretches of `text` in a language other than the document's (EPUB `xml:lang`/`lang` on
    /// an element inside the body): byte ranges in `text`, in order, not overlapping, each
    /// with its BCP 47 tag (lower case). The manuscript reads them as `[lang:TAG]` markup
    /// would, with no markup put into the text.
    pub languages: Vec<(std::ops::Range<usize>, String)>,
}

impl DocBlock {
    /// A paragraph of prose.
    pub fn body(text: impl Into<String>) -> Self {
        Self { kind: SegmentKind::Body, text: text.into(), verse: false, languages: Vec::new() }
    }

    /// A heading.
    pub fn heading(text: impl Into<String>) -> Self {
        Self { kind: SegmentKind::Heading, text: text.into(), verse: false, languages: Vec::new() }
    }

    /// A stanza of verse, its lines separated by `\n`.
    pub fn stanza(text: impl Into<String>) -> Self {
        Self { kind: SegmentKind::Body, text: text.into(), verse: true, languages: Vec::new() }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DocChapter {
    pub title: Option<String>,
    /// Its structural kind where the book names one (`chapter`, `preface`, `dedication`,
    /// `notes`, …; EPUB 3 structural semantics without prefix).
    pub kind: Option<String>,
    /// It lies in the book's front matter (before the body matter, or typed so).
    pub front_matter: bool,
    pub blocks: Vec<DocBlock>,
    /// Contents entries inside the chapter (sections, or the part that opens it): kept as
    /// sub-chapters in the chapter list, not as chapters of their own.
    pub marks: Vec<DocMark>,
}

/// A contents entry that is not a chapter: its title, the block it starts at, its depth below
/// the chapter (0: a part heading that opens the chapter, 1: a section of it, …).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DocMark {
    pub title: String,
    pub block: usize,
    pub depth: usize,
}

/// Something of the book that is not read: where it was (before block `block` of chapter
/// `chapter` of the document; `block` may be the chapter's length), why, and a short excerpt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocSkip {
    pub chapter: usize,
    pub block: usize,
    pub reason: SkipReason,
    /// The structural kind that made it skipped, where there is one (`titlepage`, `footnote`).
    pub kind: Option<String>,
    /// The start of its text, at most [`SKIP_EXCERPT_CHARS`] chars, whitespace collapsed.
    pub text: String,
    /// The book's file it was in (an EPUB entry), where there is one.
    pub file: Option<String>,
}

/// How much of a skipped text its record keeps.
pub const SKIP_EXCERPT_CHARS: usize = 80;

/// The first [`SKIP_EXCERPT_CHARS`] chars of `text`, whitespace collapsed, `…` when cut.
#[must_use]
pub fn excerpt(text: &str) -> String {
    let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if words.chars().count() <= SKIP_EXCERPT_CHARS {
        return words;
    }
    let cut: String = words.chars().take(SKIP_EXCERPT_CHARS - 1).collect();
    format!("{}\u{2026}", cut.trim_end())
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Document {
    pub info: BookInfo,
    pub chapters: Vec<DocChapter>,
    /// What the reader left out, in reading order.
    pub skipped: Vec<DocSkip>,
    /// Characters of text the reader read and the ones it skipped (for the dry run's warning
    /// when the rules remove most of a book).
    pub read_chars: usize,
    pub skipped_chars: usize,
}

/// A block laid out in [`Document::layout`]: its byte range there and, when it opens a
/// chapter, that chapter's title (`Some(None)` for an untitled chapter).
pub(crate) struct LaidOutBlock {
    pub kind: SegmentKind,
    pub verse: bool,
    pub range: std::ops::Range<usize>,
    /// The block's language stretches ([`DocBlock::languages`]), in bytes of the laid-out text.
    pub languages: Vec<(std::ops::Range<usize>, String)>,
    pub opens_chapter: Option<Option<String>>,
}

/// A document laid out as plain text: the text, its blocks, and where in it each skipped
/// stretch and each mark falls (the byte offset of the next block).
pub(crate) struct Layout<'d> {
    pub text: String,
    pub blocks: Vec<LaidOutBlock>,
    pub skipped: Vec<(usize, &'d DocSkip)>,
    pub marks: Vec<(usize, &'d DocMark)>,
}

impl Document {
    /// The document as plain text (a chapter's blocks one per paragraph, blank lines between),
    /// and where each block, skip and mark lies in it. Chapters without blocks are left out.
    pub(crate) fn layout(&self) -> Layout<'_> {
        let mut text = String::new();
        let mut blocks = Vec::new();
        // Byte offset of each (chapter, block) position, filled as the text grows: a position
        // whose block is empty or missing gets the offset of the next block laid out.
        let mut pending: Vec<(usize, usize)> = Vec::new();
        let mut starts: std::collections::HashMap<(usize, usize), usize> =
            std::collections::HashMap::new();
        let wanted: std::collections::HashSet<(usize, usize)> = self
            .skipped
            .iter()
            .map(|s| (s.chapter, s.block))
            .chain(
                self.chapters
                    .iter()
                    .enumerate()
                    .flat_map(|(c, ch)| ch.marks.iter().map(move |m| (c, m.block))),
            )
            .collect();
        for (c, chapter) in self.chapters.iter().enumerate() {
            for (i, block) in chapter.blocks.iter().enumerate() {
                if wanted.contains(&(c, i)) {
                    pending.push((c, i));
                }
                let body = block.text.trim();
                if body.is_empty() {
                    continue;
                }
                let lead = block.text.len() - block.text.trim_start().len();
                if !text.is_empty() {
                    text.push_str("\n\n");
                }
                let start = text.len();
                for p in pending.drain(..) {
                    starts.insert(p, start);
                }
                text.push_str(body);
                // A chapter opens at its first block, titled or not, so chapters stay apart.
                let opens_chapter = (!blocks_before_in(chapter, i)).then(|| chapter.title.clone());
                let languages = shifted_languages(block, lead, start, body.len());
                blocks.push(LaidOutBlock {
                    kind: block.kind,
                    verse: block.verse,
                    languages,
                    range: start..text.len(),
                    opens_chapter,
                });
            }
            if wanted.contains(&(c, chapter.blocks.len())) {
                pending.push((c, chapter.blocks.len()));
            }
        }
        let end = text.len();
        for p in pending.drain(..) {
            starts.insert(p, end);
        }
        let at = |p: (usize, usize)| starts.get(&p).copied().unwrap_or(end);
        let skipped = self.skipped.iter().map(|s| (at((s.chapter, s.block)), s)).collect();
        let marks = self
            .chapters
            .iter()
            .enumerate()
            .flat_map(|(c, ch)| ch.marks.iter().map(move |m| (c, m)))
            .map(|(c, m)| (at((c, m.block)), m))
            .collect();
        Layout { text, blocks, skipped, marks }
    }
}

/// A block's language stretches moved to where its trimmed text (`len` bytes, after `lead`
/// bytes of blanks) starts in the layout, at `start`; clipped to the trimmed text.
fn shifted_languages(
    block: &DocBlock,
    lead: usize,
    start: usize,
    len: usize,
) -> Vec<(std::ops::Range<usize>, String)> {
    block
        .languages
        .iter()
        .filter_map(|(r, tag)| {
            let (a, b) = (r.start.max(lead).min(lead + len), r.end.min(lead + len));
            (a < b).then(|| (start + a - lead..start + b - lead, tag.clone()))
        })
        .collect()
}

/// Whether a chapter has a non-empty block before block `i`.
fn blocks_before_in(chapter: &DocChapter, i: usize) -> bool {
    chapter.blocks[..i].iter().any(|b| !b.text.trim().is_empty())
}
