//! Manuscripts: plain text or Markdown → chapters of normalised, sized segments with spans.
//!
//! * Plain text: paragraphs are separated by blank lines; one chapter without a title.
//! * Markdown (`.md`, `.markdown`; block structure by pulldown-cmark, CommonMark): every
//!   heading, ATX (`#` … `######`) or setext (a line over `===` or `---`), starts a chapter and
//!   is read as a heading segment; emphasis, inline code and links are read as their text;
//!   images, HTML tags and comments, fenced and indented code blocks, link definitions and
//!   thematic breaks are skipped; block quotes and list items are read as paragraphs.
//! * Pause markup anywhere in the text: `[pause]` (default 500 ms), `[pause:1.5s]`,
//!   `[pause:300ms]`, `[break]` (a paragraph break inside a line). A bad value is an error
//!   naming line and column. The pause after a segment is the larger of its structural pause
//!   (sentence, paragraph, heading, chapter; see [`PauseDefaults`]) and the explicit pauses that
//!   follow it, summed.
//! * Voicing markup, in plain text and Markdown alike (the app resolves names through the cast,
//!   `cast.toml`, and the voices directory; see [`Voicing`]):
//!   - `[voice:NAME]` speaks in voice NAME (letters, digits, `-`, `_`, `.`) from there on,
//!     across paragraphs, until the next `[voice:…]`, `[voice]` (back to the book's voice) or
//!     the next chapter (a heading, or an EPUB chapter, starts in the book's voice; a heading's
//!     own `[voice:…]` then carries into its chapter).
//!   - `[as:NAME]…[/as]`: a cast character ([`ParseOptions::characters`], matched ignoring
//!     case, recorded as the cast spells it) speaks until `[/as]` or the paragraph's end; a
//!     second `[as:…]` switches character (spans do not nest), `[/as]` returns to the
//!     paragraph's speaker.
//!   - `NAME: text`: a body paragraph that starts with a cast character's name and a colon is
//!     spoken by that character, and `NAME:` is not read (the segment's span starts after it).
//!     Other `Word:` openings (`Note:`) stay text; markup goes after the colon
//!     (`Anna: [style:soft] Hush.`).
//!   - `[style:TEXT]` (an instruction, at most [`MAX_STYLE_CHARS`] chars) and `[pace:X]` (X in
//!     [`PACE_RANGE`]) hold from there to the paragraph's end (a blank line; `[break]` does
//!     not end it); `[style]` / `[pace]` clear them.
//!
//!   Markup is never read aloud. Where it changes the voicing, the segment ends there
//!   ([`Boundary::Voice`], no pause added): a segment has one voicing. Markup that changes
//!   nothing is skipped. Unknown characters, bad names or values, an unclosed `[…` and a stray
//!   `[/as]` are errors naming line and column. Heading titles leave the markup out.
//! * Verse (a document's stanzas, [`crate::document::DocBlock::verse`]): each line is a phrase.
//!   A line that ends without punctuation is read with a comma after it (a short pause), one
//!   that ends with a mark is read as written, and no full stop is added at a line's end; lines
//!   are joined with a space, and the stanza ends like a paragraph.
//! * Input checks: a NUL byte (binary file), invalid UTF-8 (error names line and column) and a
//!   file with nothing to say are clear errors. A UTF-8 BOM is skipped.
//!
//! Each [`Segment`] has its normalised text, its source [`Span`] (1-based line and column, in
//! chars, end exclusive, plus the byte range), a stable content hash and the pause after it.
//!
//! The module's rooms: `source` (decoding, lines, positions), `blocks` (plain and Markdown
//! block reading), `front_matter`, `read` (a block's markup, runs and normalised text, with
//! `pauses`, `language`, `voicing` and `verse`), `segments` (runs → chapters of segments with
//! their pauses). The markup grammar itself is [`crate::markup`]'s.

mod blocks;
mod front_matter;
mod language;
mod pauses;
mod read;
mod segments;
mod source;
mod verse;
mod voicing;

use std::ops::Range;
use std::path::{Path, PathBuf};

use super::document::{BookInfo, Document};
use super::kind::SegmentKind;
use super::mapped::Mapped;
use super::normalize::Lang;
use super::policy::SkipReason;
use super::pronounce::Pronunciations;
use super::segment::{Boundary, SegmentLimits};
use super::tokenizer::Tokenizer;
use super::{Result, TextError};
use blocks::{Block, blocks};
use front_matter::front_matter;
use read::read_block;
use segments::{parse_blocks, place_skips_and_marks};

pub use crate::markup::{MAX_PAUSE_MS, MAX_STYLE_CHARS, PACE_RANGE};
pub use language::language_name;
pub use segments::split_lead_sentence;
pub use source::decode;

/// Input format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Plain,
    Markdown,
}

impl Format {
    /// Markdown for `.md`/`.markdown`/`.mdown`, plain text otherwise.
    pub fn from_path(path: &Path) -> Self {
        match path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).as_deref() {
            Some("md" | "markdown" | "mdown") => Self::Markdown,
            _ => Self::Plain,
        }
    }
}

/// How a paragraph's language is decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Frontend {
    /// Per run: CJK runs are normalised as Chinese, the rest as English
    /// ([`super::normalize::script_runs`]).
    #[default]
    Lectern,
    /// Upstream's rule: one language per paragraph, Chinese if it holds any ideograph.
    Upstream,
}

/// What becomes of text in a language CosyVoice3 does not speak (Arabic, Hebrew, Greek, Hindi,
/// Thai, …, by script or by tag; see [`Manuscript::unspoken`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum UnspokenPolicy {
    /// Read as written, and listed: the app refuses to render such a book.
    #[default]
    Refuse,
    /// Not read; each stretch is recorded in [`Manuscript::skipped`]
    /// ([`SkipReason::UnspokenLanguage`]).
    Skip,
    /// Read as written, at the narrator's risk.
    Read,
}

/// A stretch of text in a language the model does not speak.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Unspoken {
    /// Its tag (`ar`, `la`): the markup's or the document's, else that of its script's main
    /// language.
    pub language: String,
    /// 0-based index of its chapter.
    pub chapter: usize,
    /// Its line in the source (the laid-out text for a document).
    pub line: usize,
    /// Its start, at most [`crate::document::SKIP_EXCERPT_CHARS`] chars.
    pub text: String,
}

/// Structural pauses, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PauseDefaults {
    /// Between segments of one paragraph.
    pub sentence_ms: u32,
    /// After a paragraph (and at `[break]`).
    pub paragraph_ms: u32,
    /// After a heading.
    pub heading_ms: u32,
    /// After a chapter's last segment.
    pub chapter_ms: u32,
    /// A bare `[pause]`.
    pub pause_ms: u32,
}

impl Default for PauseDefaults {
    fn default() -> Self {
        Self {
            sentence_ms: 200,
            paragraph_ms: 700,
            heading_ms: 1000,
            chapter_ms: 2000,
            pause_ms: 500,
        }
    }
}

/// Who speaks a segment and how, as the manuscript's markup says. Names are as written; the
/// app resolves them through the cast (cast.toml) and the voices directory.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize)]
pub struct Voicing {
    /// `[voice:NAME]` in effect (`None`: the book's voice).
    pub voice: Option<String>,
    /// The cast character speaking: an `[as:NAME]` span or a `NAME:` paragraph.
    pub character: Option<String>,
    /// `[style:…]` instruction in effect for this paragraph.
    pub style: Option<String>,
    /// `[pace:X]` in effect for this paragraph.
    pub pace: Option<f32>,
}

// The parser only makes paces within `PACE_RANGE`, never NaN, so equality is an equivalence
// (and `Segment`, `Chapter` and `Manuscript` stay `Eq`).
impl Eq for Voicing {}

/// How to read a manuscript.
#[derive(Debug, Clone)]
pub struct ParseOptions<'a> {
    /// Forced format; by default from the file extension (plain for strings).
    pub format: Option<Format>,
    pub pauses: PauseDefaults,
    pub limits: SegmentLimits,
    pub pronunciations: Pronunciations,
    /// The English length measure; without one, [`crate::segment::estimate_tokens`] (errs long).
    pub tokenizer: Option<&'a Tokenizer>,
    /// Fast start: the manuscript's first segment ends after its first sentence, so the
    /// first audio needs only that sentence's speech tokens (see [`split_lead_sentence`]).
    pub lead_sentence: bool,
    pub frontend: Frontend,
    /// The document's language (BCP 47, e.g. `fr`), where the caller knows it (EPUB
    /// `dc:language`); a Markdown front matter's `lang:` is used when this is `None`. Latin-script
    /// text in a language other than English is read as written ([`Segment::language`]).
    pub language: Option<String>,
    /// The cast's character names (`cast.toml`): the names `[as:NAME]` and `NAME:` paragraphs
    /// may use. Empty: no cast, so `[as:…]` is an error and no paragraph is a character's.
    pub characters: Vec<String>,
    /// Text in a language the model does not speak: read as written or skipped.
    pub unspoken: UnspokenPolicy,
}

impl Default for ParseOptions<'_> {
    fn default() -> Self {
        Self {
            format: None,
            pauses: PauseDefaults::default(),
            limits: SegmentLimits::default(),
            pronunciations: Pronunciations::default(),
            tokenizer: None,
            lead_sentence: true,
            frontend: Frontend::default(),
            language: None,
            characters: Vec::new(),
            unspoken: UnspokenPolicy::default(),
        }
    }
}

impl<'a> ParseOptions<'a> {
    pub fn with_tokenizer(mut self, tokenizer: &'a Tokenizer) -> Self {
        self.tokenizer = Some(tokenizer);
        self
    }

    pub fn with_format(mut self, format: Format) -> Self {
        self.format = Some(format);
        self
    }

    pub fn with_pronunciations(mut self, p: Pronunciations) -> Self {
        self.pronunciations = p;
        self
    }

    pub fn with_frontend(mut self, frontend: Frontend) -> Self {
        self.frontend = frontend;
        self
    }

    pub fn with_language(mut self, language: Option<String>) -> Self {
        self.language = language;
        self
    }

    pub fn with_lead_sentence(mut self, on: bool) -> Self {
        self.lead_sentence = on;
        self
    }

    pub fn with_characters(mut self, characters: Vec<String>) -> Self {
        self.characters = characters;
        self
    }

    pub fn with_unspoken(mut self, policy: UnspokenPolicy) -> Self {
        self.unspoken = policy;
        self
    }
}

/// A place in the source: 1-based line, 1-based column counted in chars.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, serde::Serialize)]
pub struct Position {
    pub line: usize,
    pub column: usize,
}

/// A source span; `end` is exclusive.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize)]
pub struct Span {
    pub start: Position,
    pub end: Position,
    pub bytes: Range<usize>,
}

/// One unit of text for the model.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Segment {
    /// Position in the manuscript (0, 1, 2, …).
    pub id: usize,
    /// Normalised text, what the tokenizer gets.
    pub text: String,
    /// The source text it was read from, as the narrator wrote it (the bytes of `span`,
    /// markup included).
    pub source: String,
    pub lang: Lang,
    /// Its language when that is not English nor untagged Chinese (`fr`, `de-CH`, `ja`, `ko`,
    /// …), from `[lang:…]` markup, an EPUB's `xml:lang`, the document's language or the
    /// script (kana, Hangul, Cyrillic); tags joined with `+` when it holds several. Part of a
    /// take's content: changing it makes the segment stale.
    pub language: Option<String>,
    pub kind: SegmentKind,
    pub span: Span,
    /// FNV-1a 64 of `text`: unchanged text keeps its hash across edits and runs.
    pub hash: u64,
    pub pause_after_ms: u32,
    /// The segment ends a paragraph, heading or chapter (or the manuscript). Flow groups never
    /// reach across such a boundary, so a group is a function of its paragraph's text alone.
    pub ends_paragraph: bool,
    /// Why the segment ends where it does.
    pub boundary: Boundary,
    /// Who speaks it and how (voicing markup). Not part of `hash`, which is the text's.
    pub voicing: Voicing,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize)]
pub struct Chapter {
    pub title: Option<String>,
    pub segments: Vec<Segment>,
    /// Contents entries inside it (a part that opens it, its sections): sub-chapters of the
    /// chapter list, not chapters (nor M4B tracks) of their own.
    pub marks: Vec<Mark>,
}

/// A sub-chapter: its title, the id of the segment it starts at, its depth below the chapter
/// (0: a part heading that opens the chapter, 1: a section, …).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Mark {
    pub title: String,
    pub segment: usize,
    pub depth: usize,
}

/// Text of the book that is not read, and why ([`crate::policy`]).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Skipped {
    /// 0-based index of the chapter it falls in (the one whose text follows it).
    pub chapter: usize,
    /// The line of the laid-out text where it was left out.
    pub line: usize,
    pub reason: SkipReason,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Its start, at most [`crate::document::SKIP_EXCERPT_CHARS`] chars.
    pub text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize)]
pub struct Manuscript {
    pub path: Option<PathBuf>,
    /// Title, author, language and cover, where the format carries them (EPUB).
    pub info: BookInfo,
    pub chapters: Vec<Chapter>,
    /// Explicit pauses before the first segment.
    pub lead_in_ms: u32,
    /// What of the book is not read, in reading order (a document's readers fill it).
    pub skipped: Vec<Skipped>,
    /// Characters of the book's text read and skipped (documents only; 0 for plain text).
    pub read_chars: usize,
    pub skipped_chars: usize,
    /// Text in languages the model does not speak, in reading order (read or skipped as
    /// [`ParseOptions::unspoken`] says).
    pub unspoken: Vec<Unspoken>,
}

impl Manuscript {
    /// Reads and parses a file (format from `opts.format` or the extension).
    pub fn load(path: &Path, opts: &ParseOptions<'_>) -> Result<Self> {
        let bytes = crate::InputLimits::from_env().read_manuscript(path)?;
        let src = decode(&bytes, path)?;
        let format = opts.format.unwrap_or_else(|| Format::from_path(path));
        let m = parse_source(src, format, opts, path)?;
        if m.segments().next().is_none() {
            return Err(TextError::Empty { path: path.to_path_buf() });
        }
        Ok(Self { path: Some(path.to_path_buf()), ..m })
    }

    /// Parses text (plain unless `opts.format` says otherwise). Empty text gives no chapters.
    pub fn parse(src: &str, opts: &ParseOptions<'_>) -> Result<Self> {
        parse_source(src, opts.format.unwrap_or(Format::Plain), opts, Path::new("<text>"))
    }

    /// Segments a document read from a container (EPUB, DOCX), whose reader already applied
    /// the reading policy: its plain-text layout (`Document::layout`) is the source the spans
    /// point into, and the skipped stretches and marks are placed in it.
    pub fn from_document(doc: &Document, path: &Path, opts: &ParseOptions<'_>) -> Result<Self> {
        let layout = doc.layout();
        let src = layout.text.as_str();
        let blocks = layout
            .blocks
            .iter()
            .map(|b| {
                let text = Mapped::identity(&src[b.range.clone()], b.range.start);
                let at = b.range.start;
                let languages = b
                    .languages
                    .iter()
                    .map(|(r, t)| (r.start - at..r.end - at, t.clone()))
                    .collect();
                (b.opens_chapter.clone(), Block { kind: b.kind, verse: b.verse, text, languages })
            })
            .collect();
        let language = opts.language.as_deref().or(doc.info.language.as_deref());
        // The book's own lexicon under the project's pronunciations, which win.
        let opts = &opts.clone().with_pronunciations(opts.pronunciations.over(&doc.info.lexicon));
        let mut m = parse_blocks(src, blocks, opts, path, language)?;
        if m.segments().next().is_none() {
            return Err(TextError::Empty { path: path.to_path_buf() });
        }
        place_skips_and_marks(&mut m, &layout);
        // The reader's skips and the unspoken stretches left out, in reading order.
        m.skipped.sort_by_key(|s| (s.chapter, s.line));
        m.read_chars = doc.read_chars;
        m.skipped_chars = doc.skipped_chars;
        Ok(Self { path: Some(path.to_path_buf()), info: doc.info.clone(), ..m })
    }

    /// All segments in reading order.
    pub fn segments(&self) -> impl Iterator<Item = &Segment> {
        self.chapters.iter().flat_map(|c| c.segments.iter())
    }
}

/// The normalised text of every run, in order, with the final mark upstream appends. The
/// concatenated segments equal this text up to whitespace (a test invariant).
pub fn normalized_runs(src: &str, format: Format, opts: &ParseOptions<'_>) -> Result<Vec<String>> {
    let language = document_language(src, format, opts);
    let mut runs = Vec::new();
    let mut voice = None;
    for (_, block) in blocks(src, format) {
        let path = Path::new("<text>");
        for (_, read, _) in read_block(&block, src, path, opts, language.as_deref(), &mut voice)? {
            runs.extend(read.map(|r| r.norm.text));
        }
    }
    Ok(runs)
}

/// The document's language: the caller's ([`ParseOptions::language`]), else a Markdown front
/// matter's `lang:` / `language:`.
fn document_language(src: &str, format: Format, opts: &ParseOptions<'_>) -> Option<String> {
    let front = || (format == Format::Markdown).then(|| front_matter(src)).flatten();
    opts.language.clone().or_else(|| front().and_then(|f| f.language))
}

fn parse_source(
    src: &str,
    format: Format,
    opts: &ParseOptions<'_>,
    path: &Path,
) -> Result<Manuscript> {
    // A heading opens a titled chapter.
    let blocks = blocks(src, format).into_iter().map(|(title, b)| (title.map(Some), b)).collect();
    let language = document_language(src, format, opts);
    let m = parse_blocks(src, blocks, opts, path, language.as_deref())?;
    let front = (format == Format::Markdown).then(|| front_matter(src)).flatten();
    let info = match front {
        Some(f) => BookInfo {
            title: f.title,
            author: f.author,
            narrator: f.narrator,
            cover_path: f.cover,
            language,
            cover: None,
            publisher: f.publisher,
            rights: f.rights,
            isbn: f.isbn,
            description: f.description,
            date: f.date,
            ..BookInfo::default()
        },
        None => BookInfo { language, ..BookInfo::default() },
    };
    Ok(Manuscript { info, ..m })
}
