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
//! * Input checks: a NUL byte (binary file), invalid UTF-8 (error names line and column) and a
//!   file with nothing to say are clear errors. A UTF-8 BOM is skipped.
//!
//! Each [`Segment`] has its normalised text, its source [`Span`] (1-based line and column, in
//! chars, end exclusive, plus the byte range), a stable content hash and the pause after it.

use std::ops::{Range, RangeInclusive};
use std::path::{Path, PathBuf};

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

use super::cjk::is_cjk;
use super::document::{BookInfo, DocSkip, Document, Layout};
use super::kind::SegmentKind;
use super::mapped::Mapped;
use super::normalize::{Lang, Latin, normalize_at, normalize_runs_latin_at, script_runs};
use super::policy::SkipReason;
use super::pronounce::Pronunciations;
use super::segment::{
    Boundary, Measure, SegmentLimits, estimate_tokens, is_closer, is_mark, sentence_pieces,
    speakable, split_paragraph_cuts,
};
use super::tokenizer::{Tokenizer, char_prefix, is_special_token_at};
use super::{Result, TextError, stable_hash};

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

/// The longest explicit pause accepted (a typo guard).
pub const MAX_PAUSE_MS: u32 = 60_000;

/// The paces `[pace:X]` accepts (1.0: the voice's own pace).
pub const PACE_RANGE: RangeInclusive<f32> = 0.5..=2.0;

/// The longest `[style:…]` instruction, in chars (a typo guard: a forgotten `]`).
pub const MAX_STYLE_CHARS: usize = 200;

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
    /// The English length measure; without one, [`estimate_tokens`] (errs long).
    pub tokenizer: Option<&'a Tokenizer>,
    /// Fast start: the manuscript's first segment ends after its first sentence, so the
    /// first audio needs only that sentence's speech tokens (see [`split_lead_sentence`]).
    pub lead_sentence: bool,
    pub frontend: Frontend,
    /// The document's language (BCP 47, e.g. `fr`), where the caller knows it (EPUB
    /// `dc:language`); a Markdown front matter's `lang:` is used when this is `None`. See
    /// [`latin_reading`] for what it changes.
    pub language: Option<String>,
    /// The cast's character names (`cast.toml`): the names `[as:NAME]` and `NAME:` paragraphs
    /// may use. Empty: no cast, so `[as:…]` is an error and no paragraph is a character's.
    pub characters: Vec<String>,
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
    /// The language of its Latin-script text when that is not English (`fr`, `de-CH`, …), from
    /// `[lang:…]` markup or the document's language; tags joined with `+` when it holds
    /// several. Part of a take's content: changing it makes the segment stale.
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
}

impl Manuscript {
    /// Reads and parses a file (format from `opts.format` or the extension).
    pub fn load(path: &Path, opts: &ParseOptions<'_>) -> Result<Self> {
        let bytes = std::fs::read(path)
            .map_err(|cause| TextError::Io { path: path.to_path_buf(), cause })?;
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
    /// the reading policy: its plain-text layout ([`Document::layout`]) is the source the spans
    /// point into, and the skipped stretches and marks are placed in it.
    pub fn from_document(doc: &Document, path: &Path, opts: &ParseOptions<'_>) -> Result<Self> {
        let layout = doc.layout();
        let src = layout.text.as_str();
        let blocks = layout
            .blocks
            .iter()
            .map(|b| {
                let text = Mapped::identity(&src[b.range.clone()], b.range.start);
                (b.opens_chapter.clone(), Block { kind: b.kind, verse: b.verse, text })
            })
            .collect();
        let language = opts.language.as_deref().or(doc.info.language.as_deref());
        let mut m = parse_blocks(src, blocks, opts, path, language)?;
        if m.segments().next().is_none() {
            return Err(TextError::Empty { path: path.to_path_buf() });
        }
        place_skips_and_marks(&mut m, &layout);
        m.read_chars = doc.read_chars;
        m.skipped_chars = doc.skipped_chars;
        Ok(Self { path: Some(path.to_path_buf()), info: doc.info.clone(), ..m })
    }

    /// All segments in reading order.
    pub fn segments(&self) -> impl Iterator<Item = &Segment> {
        self.chapters.iter().flat_map(|c| c.segments.iter())
    }
}

/// Places a layout's skipped stretches and marks in the segmented book: each belongs to the
/// chapter of the first segment at or after its offset (the last chapter at the end).
fn place_skips_and_marks(m: &mut Manuscript, layout: &Layout<'_>) {
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

/// Checks bytes for a binary file and UTF-8; errors name the line.
pub fn decode<'b>(bytes: &'b [u8], path: &Path) -> Result<&'b str> {
    if let Some(offset) = bytes.iter().take(8192).position(|&b| b == 0) {
        return Err(TextError::Binary { path: path.to_path_buf(), offset });
    }
    let src = std::str::from_utf8(bytes).map_err(|e| {
        let offset = e.valid_up_to();
        let good = &bytes[..offset];
        let line = good.iter().filter(|&&b| b == b'\n').count() + 1;
        let line_start = good.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        // The prefix is valid UTF-8, so the column counts chars.
        let column = std::str::from_utf8(&good[line_start..]).map_or(0, |s| s.chars().count()) + 1;
        TextError::InvalidUtf8 { path: path.to_path_buf(), line, column, offset }
    })?;
    if let Some(offset) = src.find('\0') {
        return Err(TextError::Binary { path: path.to_path_buf(), offset });
    }
    Ok(src)
}

/// A block of cleaned text (over source bytes).
struct Block {
    kind: SegmentKind,
    /// A stanza: its lines are phrases ([`crate::document::DocBlock::verse`]).
    verse: bool,
    text: Mapped,
}

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

/// The normalised text of every run, in order, with the final mark upstream appends. The
/// concatenated segments equal this text up to whitespace (a test invariant).
pub fn normalized_runs(src: &str, format: Format, opts: &ParseOptions<'_>) -> Result<Vec<String>> {
    let language = document_language(src, format, opts);
    let mut runs = Vec::new();
    let mut voice = None;
    for (_, block) in blocks(src, format) {
        let path = Path::new("<text>");
        for (_, read) in read_block(&block, src, path, opts, language.as_deref(), &mut voice)? {
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
        },
        None => BookInfo { language, ..BookInfo::default() },
    };
    Ok(Manuscript { info, ..m })
}

/// Segments blocks of `src`; a block paired with `Some(title)` opens a chapter.
fn parse_blocks(
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
    let mut measure_zh = Measure::new(Lang::Zh, &tokens);
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
        for (run, read) in read_block(&block, src, path, opts, language, &mut voice)? {
            let spoken = read.is_some();
            if let Some(RunText { lang, norm, pieces }) = read {
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
                        language: segment_language(block_text, &pieces, in_run),
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
    chapters.retain(|c| !c.segments.is_empty() || c.title.is_some());
    if chapters.iter().all(|c| c.segments.is_empty()) {
        chapters.clear();
    }
    Ok(Manuscript { chapters, lead_in_ms, ..Manuscript::default() })
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

/// A run's normalised text: its script branch (for segmenting), the text, and the language
/// pieces it was read in (ranges in the run's text).
struct RunText {
    lang: Lang,
    norm: Mapped,
    pieces: Vec<Piece>,
}

/// A stretch of a run's text: language markup (not read), or text under a language tag
/// (`None`: English).
#[derive(Debug, Clone)]
struct Piece {
    range: Range<usize>,
    markup: bool,
    tag: Option<String>,
}

/// How text under a language tag is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reading {
    /// Per run: CJK as Chinese, the rest as English.
    English,
    /// CJK as Chinese, the Latin text kept as written ([`Latin::Kept`]).
    Kept,
    /// All of it as Chinese (`[lang:zh]`: digits and signs between Latin words too).
    Chinese,
}

/// `None` and `en…` read as English, `zh…` as Chinese, any other language kept as written.
fn reading(tag: Option<&str>) -> Reading {
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
fn document_latin_tag(language: Option<&str>) -> Option<String> {
    let tag = language?.trim().to_ascii_lowercase();
    let cjk_or_en = matches!(primary_subtag(&tag), "en" | "zh" | "ja" | "ko" | "yue" | "");
    (!cjk_or_en).then_some(tag)
}

/// A block split at its pause markup and where its voicing changes, each run normalised
/// (`None`: nothing to say). The language markup state carries across pauses and voicing
/// changes and ends with the block; `voice` is the `[voice:…]` in effect before the block and,
/// on return, after it.
fn read_block(
    block: &Block,
    src: &str,
    path: &Path,
    opts: &ParseOptions<'_>,
    language: Option<&str>,
    voice: &mut Option<String>,
) -> Result<Vec<(Run, Option<RunText>)>> {
    let text = &block.text.text;
    let doc_tag = document_latin_tag(language);
    let marks = lang_marks(text, src, &block.text, path)?;
    let voicing = voicing_marks(text, src, &block.text, path, &opts.characters, block.kind)?;
    let runs = pause_runs(text, src, &block.text, path, &opts.pauses)?;
    let mut current = doc_tag.clone();
    let mut out = Vec::new();
    for run in voicing_runs(runs, &voicing, voice) {
        // Markup inside the run, in order: language marks (`Some`: the tag from there on) and
        // voicing markup that changed nothing (`None`); neither is read.
        let mut skipped: Vec<(Range<usize>, Option<Option<String>>)> = marks
            .iter()
            .filter(|m| run.range.contains(&m.range.start))
            .map(|m| (m.range.clone(), Some(m.tag.clone())))
            .chain(run.unchanged.iter().map(|r| (r.clone(), None)))
            .collect();
        skipped.sort_by_key(|(r, _)| r.start);
        let mut pieces = Vec::new();
        let mut at = run.range.start;
        for (range, tag) in skipped {
            pieces.push(Piece { range: at..range.start, markup: false, tag: current.clone() });
            pieces.push(Piece { range: range.clone(), markup: true, tag: None });
            if let Some(tag) = tag {
                current = tag.or_else(|| doc_tag.clone());
            }
            at = range.end;
        }
        pieces.push(Piece { range: at..run.range.end, markup: false, tag: current.clone() });
        for p in &mut pieces {
            p.range = p.range.start - run.range.start..p.range.end - run.range.start;
        }
        pieces.retain(|p| !p.range.is_empty());
        let read = normalize_run(&text[run.range.clone()], pieces, opts);
        out.push((run, read));
    }
    Ok(out)
}

/// Normalises one run; `None` when it has nothing to say. Appends the final mark upstream adds.
/// The run's language is Chinese when it holds an ideograph (for segmenting: Chinese marks
/// include the English ones); its text is normalised per [`Frontend`] and, with ours, each
/// piece per its language ([`reading`]).
fn normalize_run(text: &str, pieces: Vec<Piece>, opts: &ParseOptions<'_>) -> Option<RunText> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return None;
    }
    let lead = text.len() - text.trim_start().len();
    let end = lead + trimmed.len();
    let upstream = opts.frontend == Frontend::Upstream;
    let any_chinese =
        pieces.iter().any(|p| !p.markup && reading(p.tag.as_deref()) == Reading::Chinese);
    let lang = if any_chinese && !upstream { Lang::Zh } else { Lang::detect(trimmed) };
    let prons = &opts.pronunciations;
    let mut norm = Mapped::default();
    for p in &pieces {
        let mut r = p.range.start.max(lead)..p.range.end.min(end);
        if p.markup || r.is_empty() {
            continue;
        }
        // Where markup stood between two spaces, one is enough.
        if norm.text.is_empty() || norm.text.ends_with(char::is_whitespace) {
            r.start += text[r.clone()].len() - text[r.clone()].trim_start().len();
        }
        let piece = &text[r.clone()];
        norm.append(match (upstream, reading(p.tag.as_deref())) {
            (true, _) => normalize_at(piece, r.start, lang, prons),
            (false, Reading::English) => {
                normalize_runs_latin_at(piece, r.start, Latin::English, prons)
            }
            (false, Reading::Kept) => normalize_runs_latin_at(piece, r.start, Latin::Kept, prons),
            (false, Reading::Chinese) => normalize_at(piece, r.start, Lang::Zh, prons),
        });
    }
    // The final mark follows the language of the text's last run.
    let lang_at_end = if upstream {
        lang
    } else {
        script_runs(norm.text.trim_end()).last().map_or(lang, |(_, l)| *l)
    };
    let t = norm.text.trim_end();
    if !speakable(t) && !t.contains(['[', '<']) {
        return None;
    }
    let last = t.trim_end_matches(is_closer);
    let ends_marked = last.chars().next_back().is_some_and(|c| is_mark(c, lang));
    if !ends_marked {
        norm.push_replace(if lang_at_end == Lang::Zh { "。" } else { "." }, end..end);
    }
    let pieces = if upstream { Vec::new() } else { pieces };
    Some(RunText { lang, norm, pieces })
}

/// The non-English language tags of the pieces whose words fall in `src` (a range of the
/// run's text), in order, joined with `+`.
fn segment_language(text: &str, pieces: &[Piece], src: Range<usize>) -> Option<String> {
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

const LANG_OPEN: &str = "[lang:";
const LANG_CLOSE: &str = "[/lang]";

/// `[lang:TAG]` or `[/lang]` in block text, and the tag from there on (`None`: back to the
/// document's language).
struct LangMark {
    range: Range<usize>,
    tag: Option<String>,
}

/// The language markup of a block's text; a bad tag or a stray `[/lang]` is an error naming
/// line and column. A `[lang:…]` span ends at `[/lang]` or with its paragraph; a second
/// `[lang:…]` inside it switches language (spans do not nest).
fn lang_marks(text: &str, src: &str, map: &Mapped, path: &Path) -> Result<Vec<LangMark>> {
    let mut marks = Vec::new();
    let mut open = false;
    let mut i = 0;
    while let Some(k) = text[i..].find('[') {
        let at = i + k;
        let rest = &text[at..];
        i = at + 1;
        if rest.starts_with(LANG_CLOSE) {
            if !open {
                let reason = "`[/lang]` closes no `[lang:…]` in this paragraph".to_string();
                return Err(markup_error(src, map, at, path, reason));
            }
            open = false;
            marks.push(LangMark { range: at..at + LANG_CLOSE.len(), tag: None });
        } else if let Some(body) = rest.strip_prefix(LANG_OPEN) {
            let tag = body.find(']').map(|e| &body[..e]).filter(|t| is_language_tag(t));
            let Some(tag) = tag else {
                let shown = rest.find(']').map_or(char_prefix(rest, 20), |e| &rest[..=e]);
                let reason = format!(
                    "bad language `{shown}`: write a BCP 47 tag, as in [lang:fr], [lang:de-CH]"
                );
                return Err(markup_error(src, map, at, path, reason));
            };
            open = true;
            let len = LANG_OPEN.len() + tag.len() + 1;
            marks.push(LangMark { range: at..at + len, tag: Some(tag.to_ascii_lowercase()) });
        } else {
            continue;
        }
        i = marks.last().expect("pushed").range.end;
    }
    Ok(marks)
}

/// A language tag as BCP 47 writes them: 2–3 letters, then subtags of 1–8 letters or digits.
fn is_language_tag(t: &str) -> bool {
    let mut parts = t.split(['-', '_']);
    let primary = parts.next().unwrap_or("");
    (2..=3).contains(&primary.len())
        && primary.chars().all(|c| c.is_ascii_alphabetic())
        && parts.all(|p| (1..=8).contains(&p.len()) && p.chars().all(|c| c.is_ascii_alphanumeric()))
}

/// Language and voicing markup removed (chapter titles).
fn strip_title_markup(title: &str) -> String {
    let mut out = String::new();
    let mut rest = title;
    while let Some(k) = rest.find('[') {
        out.push_str(&rest[..k]);
        rest = &rest[k..];
        let len = if rest.starts_with(LANG_CLOSE) {
            LANG_CLOSE.len()
        } else if let Some(e) = rest.strip_prefix(LANG_OPEN).and_then(|b| b.find(']')) {
            LANG_OPEN.len() + e + 1
        } else if let Some(len) = voicing_markup_len(rest) {
            len
        } else {
            out.push('[');
            1
        };
        rest = &rest[len..];
    }
    out.push_str(rest);
    out
}

/// The voicing markup forms: those ending in `:` take a value up to `]`.
const VOICING_MARKUP: [&str; 8] =
    ["[voice:", "[voice]", "[as:", "[/as]", "[style:", "[style]", "[pace:", "[pace]"];

/// The length of the voicing markup at the start of `s` (up to its `]`, on its line).
fn voicing_markup_len(s: &str) -> Option<usize> {
    let form = VOICING_MARKUP.iter().find(|m| s.starts_with(*m))?;
    if form.ends_with(']') {
        return Some(form.len());
    }
    let line = s.split('\n').next().unwrap_or(s);
    line.find(']').map(|e| e + 1)
}

/// What a voicing markup changes.
#[derive(Debug, Clone)]
enum Change {
    /// `[voice:NAME]`, or `[voice]` (`None`: the book's voice).
    Voice(Option<String>),
    /// `[as:NAME]`, or `[/as]` (`None`: back to the paragraph's speaker).
    Character(Option<String>),
    /// A paragraph's `NAME:` opening: its speaker.
    Speaker(String),
    Style(Option<String>),
    Pace(Option<f32>),
}

/// Voicing markup (or a `NAME:` opening) in block text.
struct VoicingMark {
    range: Range<usize>,
    change: Change,
}

/// The voicing markup of a block's text, in order; a bad name or value, an unknown character,
/// an unclosed markup or a stray `[/as]` is an error naming line and column. A body block that
/// opens with a cast character's `NAME:` starts with that speaker.
fn voicing_marks(
    text: &str,
    src: &str,
    map: &Mapped,
    path: &Path,
    characters: &[String],
    kind: SegmentKind,
) -> Result<Vec<VoicingMark>> {
    let mut marks = Vec::new();
    if kind == SegmentKind::Body
        && let Some((range, name)) = speaker_prefix(text, characters)
    {
        marks.push(VoicingMark { range, change: Change::Speaker(name) });
    }
    let mut in_span = false;
    let mut i = 0;
    while let Some(k) = text[i..].find('[') {
        let at = i + k;
        let rest = &text[at..];
        i = at + 1;
        let error = |reason| markup_error(src, map, at, path, reason);
        let Some(len) = voicing_markup_len(rest) else {
            if VOICING_MARKUP.iter().any(|m| rest.starts_with(m)) {
                let shown = char_prefix(rest.split('\n').next().unwrap_or(rest), 24);
                return Err(error(format!("`{shown}` is not closed: end it with `]` on its line")));
            }
            continue;
        };
        let change = voicing_change(&rest[..len], characters).map_err(error)?;
        match change {
            Change::Character(Some(_)) => in_span = true,
            Change::Character(None) if !in_span => {
                return Err(error("`[/as]` closes no `[as:…]` in this paragraph".to_string()));
            }
            Change::Character(None) => in_span = false,
            _ => {}
        }
        marks.push(VoicingMark { range: at..at + len, change });
        i = at + len;
    }
    Ok(marks)
}

/// The change a whole voicing markup (`[…]`) makes, or why it is wrong.
fn voicing_change(markup: &str, characters: &[String]) -> std::result::Result<Change, String> {
    let inner = &markup[1..markup.len() - 1];
    let (form, value) = match inner.split_once(':') {
        Some((form, value)) => (form, Some(value)),
        None => (inner, None),
    };
    if value.is_some_and(|v| v.contains('[')) {
        return Err(format!("`{markup}` holds a `[`: end the markup with `]` before it"));
    }
    match (form, value) {
        ("voice", None) => Ok(Change::Voice(None)),
        ("voice", Some(v)) => voice_name(v, markup).map(|v| Change::Voice(Some(v))),
        ("as", Some(v)) => {
            cast_character(v, characters, markup).map(|c| Change::Character(Some(c)))
        }
        ("/as", None) => Ok(Change::Character(None)),
        ("style", None) => Ok(Change::Style(None)),
        ("style", Some(v)) => style_text(v, markup).map(|s| Change::Style(Some(s))),
        ("pace", None) => Ok(Change::Pace(None)),
        ("pace", Some(v)) => pace_value(v, markup).map(|p| Change::Pace(Some(p))),
        _ => unreachable!("voicing_markup_len knows only the forms above"),
    }
}

/// A `[voice:NAME]` name: letters, digits, `-`, `_`, `.` (a voice's file or folder name).
fn voice_name(value: &str, markup: &str) -> std::result::Result<String, String> {
    let name = value.trim();
    let ok = !name.is_empty()
        && name.chars().all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if !ok {
        return Err(format!(
            "bad voice `{markup}`: a voice name has letters, digits, `-`, `_` and `.` only, as \
             in [voice:anna] ([voice] returns to the book's voice)"
        ));
    }
    Ok(name.to_string())
}

/// The cast's spelling of an `[as:NAME]` character (matched ignoring case).
fn cast_character(
    value: &str,
    characters: &[String],
    markup: &str,
) -> std::result::Result<String, String> {
    let name = value.trim();
    if let Some(c) = characters.iter().find(|c| same_name(c, name)) {
        return Ok(c.trim().to_string());
    }
    if name.is_empty() {
        return Err(format!("`{markup}` names no character: write [as:NAME]…[/as]"));
    }
    if characters.is_empty() {
        return Err(format!(
            "`{markup}`: there is no cast to say who `{name}` is (characters are listed in \
             cast.toml beside the manuscript)"
        ));
    }
    let known: Vec<&str> = characters.iter().map(|c| c.trim()).collect();
    Err(format!("`{markup}`: the cast has no character `{name}` (it has {})", known.join(", ")))
}

/// Whether a cast name and a written name are the same, ignoring case. Compared char by
/// char, so a long paragraph opening (`NAME:` candidates) costs no more than the name.
fn same_name(cast: &str, written: &str) -> bool {
    let cast = cast.trim();
    !cast.is_empty()
        && cast
            .chars()
            .flat_map(char::to_lowercase)
            .eq(written.chars().flat_map(char::to_lowercase))
}

/// A `[style:TEXT]` instruction: trimmed, not empty, at most [`MAX_STYLE_CHARS`] chars.
fn style_text(value: &str, markup: &str) -> std::result::Result<String, String> {
    let style = value.trim();
    if style.is_empty() {
        return Err(format!(
            "empty style `{markup}`: write an instruction, as in [style:whispering] ([style] \
             clears it)"
        ));
    }
    let n = style.chars().count();
    if n > MAX_STYLE_CHARS {
        return Err(format!(
            "style `{}…` is too long ({n} chars, at most {MAX_STYLE_CHARS})",
            char_prefix(markup, 24)
        ));
    }
    Ok(style.to_string())
}

/// A `[pace:X]` value within [`PACE_RANGE`].
fn pace_value(value: &str, markup: &str) -> std::result::Result<f32, String> {
    match value.trim().parse::<f32>() {
        Ok(pace) if PACE_RANGE.contains(&pace) => Ok(pace),
        _ => Err(format!(
            "bad pace `{markup}`: write a number from {} to {}, as in [pace:0.9] ([pace] \
             returns to the voice's pace)",
            PACE_RANGE.start(),
            PACE_RANGE.end()
        )),
    }
}

/// A paragraph's `NAME:` opening, where NAME is a cast character (ignoring case): the range of
/// the name and colon, and the cast's spelling. Other `Word:` openings are text.
fn speaker_prefix(text: &str, characters: &[String]) -> Option<(Range<usize>, String)> {
    let lead = text.len() - text.trim_start().len();
    let (head, _) = text[lead..].split_once(':')?;
    let cast = characters.iter().find(|c| same_name(c, head))?;
    Some((lead..lead + head.len() + 1, cast.trim().to_string()))
}

/// Splits pause runs where the voicing changes and gives every run its voicing. `voice` is the
/// `[voice:…]` in effect before the block and, on return, after it; the character, style and
/// pace start afresh with each block.
fn voicing_runs(runs: Vec<Run>, marks: &[VoicingMark], voice: &mut Option<String>) -> Vec<Run> {
    let mut voicing = Voicing { voice: voice.take(), ..Voicing::default() };
    let mut speaker = None;
    let mut marks = marks.iter().peekable();
    let mut out = Vec::new();
    for run in runs {
        let mut start = run.range.start;
        let mut unchanged = Vec::new();
        // Marks lie inside runs: their text holds no `[` after the first, so no pause markup.
        while let Some(m) = marks.next_if(|m| m.range.start < run.range.end) {
            let next = changed(&voicing, &m.change, &mut speaker);
            if next == voicing {
                unchanged.push(m.range.clone());
                continue;
            }
            out.push(Run {
                range: start..m.range.start,
                pause_ms: 0,
                is_break: false,
                voicing: std::mem::replace(&mut voicing, next),
                voicing_ends: true,
                unchanged: std::mem::take(&mut unchanged),
            });
            start = m.range.end;
        }
        out.push(Run { range: start..run.range.end, voicing: voicing.clone(), unchanged, ..run });
    }
    *voice = voicing.voice;
    out
}

/// The voicing after a change; `speaker` is the paragraph's (its `NAME:` opening).
fn changed(voicing: &Voicing, change: &Change, speaker: &mut Option<String>) -> Voicing {
    let mut next = voicing.clone();
    match change {
        Change::Voice(voice) => next.voice.clone_from(voice),
        Change::Character(Some(name)) => next.character = Some(name.clone()),
        Change::Character(None) => next.character.clone_from(speaker),
        Change::Speaker(name) => {
            *speaker = Some(name.clone());
            next.character = Some(name.clone());
        }
        Change::Style(style) => next.style.clone_from(style),
        Change::Pace(pace) => next.pace = *pace,
    }
    next
}

/// An error at byte `at` of block text.
fn markup_error(src: &str, map: &Mapped, at: usize, path: &Path, reason: String) -> TextError {
    let bytes = map.src_range(at..at + 1);
    let pos = Cursor::new(src).position(bytes.start);
    TextError::Markup { path: path.to_path_buf(), line: pos.line, column: pos.column, reason }
}

/// A Markdown front matter: its end (byte offset) and its language.
struct FrontMatter {
    end: usize,
    language: Option<String>,
    title: Option<String>,
    author: Option<String>,
    narrator: Option<String>,
    /// As written (a path relative to the manuscript).
    cover: Option<String>,
}

/// A YAML front matter block: `---` on the first line, closed by `---` or `...`. Its simple
/// `key: value` lines `lang:` (or `language:`), `title:`, `author:`, `narrator:` and `cover:`
/// are read (other keys are left alone); the block is never read aloud.
fn front_matter(src: &str) -> Option<FrontMatter> {
    let all = lines(src);
    let (first, ..) = all.first()?;
    if first.trim_end() != "---" {
        return None;
    }
    let close = all[1..].iter().position(|(l, ..)| matches!(l.trim_end(), "---" | "..."))? + 1;
    let fields: Vec<(String, &str)> = all[1..close]
        .iter()
        .filter_map(|(l, ..)| {
            let (key, value) = l.split_once(':')?;
            let value = value.trim().trim_matches(['"', '\'']).trim();
            Some((key.trim().to_ascii_lowercase(), value))
        })
        .filter(|(_, value)| !value.is_empty())
        .collect();
    let field = |names: &[&str]| {
        fields.iter().find(|(k, _)| names.contains(&k.as_str())).map(|(_, v)| (*v).to_string())
    };
    let language =
        field(&["lang", "language"]).filter(|v| is_language_tag(v)).map(|v| v.to_ascii_lowercase());
    Some(FrontMatter {
        end: all[close].2,
        language,
        title: field(&["title"]),
        author: field(&["author"]),
        narrator: field(&["narrator"]),
        cover: field(&["cover"]),
    })
}

/// A stretch of block text between pause markups (and, after [`voicing_runs`], voicing
/// changes), and the pause after it.
struct Run {
    range: Range<usize>,
    pause_ms: u32,
    is_break: bool,
    /// Its voicing (from [`voicing_runs`]).
    voicing: Voicing,
    /// It ends where the voicing changes.
    voicing_ends: bool,
    /// Voicing markup inside it that changed nothing (skipped, not read).
    unchanged: Vec<Range<usize>>,
}

impl Run {
    /// A run as pause markup ends it; [`voicing_runs`] fills in the voicing.
    fn paused(range: Range<usize>, pause_ms: u32, is_break: bool) -> Self {
        let voicing = Voicing::default();
        Self { range, pause_ms, is_break, voicing, voicing_ends: false, unchanged: Vec::new() }
    }
}

/// Splits block text at `[pause…]` / `[break]`.
fn pause_runs(
    text: &str,
    src: &str,
    map: &Mapped,
    path: &Path,
    p: &PauseDefaults,
) -> Result<Vec<Run>> {
    let mut runs = Vec::new();
    let mut st = 0;
    let mut i = 0;
    while let Some(k) = text[i..].find('[') {
        let at = i + k;
        let rest = &text[at..];
        let parsed = if rest.starts_with("[break]") {
            Some(("[break]".len(), 0, true))
        } else if rest.starts_with("[pause]") {
            Some(("[pause]".len(), p.pause_ms, false))
        } else if let Some(body) = rest.strip_prefix("[pause:") {
            let end = body.find(']').filter(|&e| e <= 16);
            let value = end.map(|e| &body[..e]);
            let Some(ms) = value.and_then(parse_duration_ms) else {
                let reason = format!(
                    "bad pause `{}`: write [pause], [pause:1.5s] or [pause:300ms] (at most {} s)",
                    rest.find(']').map_or(char_prefix(rest, 20), |e| &rest[..=e]),
                    MAX_PAUSE_MS / 1000
                );
                return Err(markup_error(src, map, at, path, reason));
            };
            Some(("[pause:".len() + end.unwrap_or(0) + 1, ms, false))
        } else {
            None
        };
        match parsed {
            Some((len, ms, is_break)) => {
                runs.push(Run::paused(st..at, ms, is_break));
                st = at + len;
                i = st;
            }
            None => i = at + 1,
        }
    }
    runs.push(Run::paused(st..text.len(), 0, false));
    Ok(runs)
}

/// `1.5s`, `1.5`, `300ms` → milliseconds, within [`MAX_PAUSE_MS`].
fn parse_duration_ms(v: &str) -> Option<u32> {
    let v = v.trim();
    let (num, scale) = if let Some(n) = v.strip_suffix("ms") {
        (n, 1.0)
    } else if let Some(n) = v.strip_suffix('s') {
        (n, 1000.0)
    } else {
        (v, 1000.0)
    };
    let x: f64 = num.trim().parse().ok()?;
    let ms = (x * scale).round();
    (x.is_finite() && ms >= 0.0 && ms <= f64::from(MAX_PAUSE_MS)).then_some(ms as u32)
}

/// Line/column lookup, fast for increasing offsets.
struct Cursor<'s> {
    src: &'s str,
    offset: usize,
    pos: Position,
}

impl<'s> Cursor<'s> {
    fn new(src: &'s str) -> Self {
        Self { src, offset: 0, pos: Position { line: 1, column: 1 } }
    }

    fn position(&mut self, offset: usize) -> Position {
        let mut offset = offset.min(self.src.len());
        while !self.src.is_char_boundary(offset) {
            offset -= 1;
        }
        if offset < self.offset {
            // Spans may overlap where a segment boundary falls inside one rewritten source
            // range (a number read as several words); step back without rescanning the file.
            let back = &self.src[offset..self.offset];
            if back.contains('\n') {
                self.pos.line -= back.matches('\n').count();
                let line_start = self.src[..offset].rfind('\n').map_or(0, |i| i + 1);
                self.pos.column = self.src[line_start..offset].chars().count() + 1;
            } else {
                self.pos.column -= back.chars().count();
            }
            self.offset = offset;
            return self.pos;
        }
        for c in self.src[self.offset..offset].chars() {
            if c == '\n' {
                self.pos.line += 1;
                self.pos.column = 1;
            } else {
                self.pos.column += 1;
            }
        }
        self.offset = offset;
        self.pos
    }
}

/// Source lines as (content without the line break, byte offset, byte offset after the break).
fn lines(src: &str) -> Vec<(&str, usize, usize)> {
    let mut out = Vec::new();
    let mut off = if src.starts_with('\u{feff}') { 3 } else { 0 };
    while off < src.len() {
        let end = src[off..].find('\n').map_or(src.len(), |k| off + k);
        let next = (end + 1).min(src.len());
        let content = src[off..end].strip_suffix('\r').unwrap_or(&src[off..end]);
        out.push((content, off, next.max(end)));
        off = end + 1;
    }
    out
}

/// The blocks of a manuscript, each with the chapter title it starts (headings only).
fn blocks(src: &str, format: Format) -> Vec<(Option<String>, Block)> {
    match format {
        Format::Plain => plain_blocks(src),
        Format::Markdown => markdown_blocks(src),
    }
}

fn plain_blocks(src: &str) -> Vec<(Option<String>, Block)> {
    let mut out = Vec::new();
    let mut para: Option<Mapped> = None;
    for (content, off, _) in lines(src) {
        if content.trim().is_empty() {
            if let Some(p) = para.take() {
                out.push((None, Block { kind: SegmentKind::Body, verse: false, text: p }));
            }
            continue;
        }
        let p = para.get_or_insert_with(Mapped::default);
        if !p.text.is_empty() {
            p.push_replace("\n", off..off);
        }
        p.push_copy(content, off);
    }
    if let Some(p) = para {
        out.push((None, Block { kind: SegmentKind::Body, verse: false, text: p }));
    }
    out
}

/// Markdown blocks: pulldown-cmark gives the block structure; each readable block's text is
/// read from its source lines by [`inline_markdown`], so spans, pause and language markup
/// stay exact. Code blocks and HTML comments are skipped; other HTML blocks are read with
/// their tags dropped.
fn markdown_blocks(src: &str) -> Vec<(Option<String>, Block)> {
    let bom = if src.starts_with('\u{feff}') { 3 } else { 0 };
    let body = front_matter(src).map_or(bom, |f| f.end);
    let mut out = Vec::new();
    let mut leaf = Leaf::default();
    let mut skipping = false;
    for (event, range) in Parser::new_ext(&src[body..], Options::empty()).into_offset_iter() {
        let range = range.start + body..range.end + body;
        match event {
            Event::Start(Tag::CodeBlock(_)) => {
                leaf.flush_body(src, &mut out);
                skipping = true;
            }
            Event::Start(Tag::HtmlBlock) if src[range.clone()].trim_start().starts_with("<!--") => {
                skipping = true
            }
            Event::End(TagEnd::CodeBlock | TagEnd::HtmlBlock) => {
                leaf.flush_body(src, &mut out);
                skipping = false;
            }
            Event::End(TagEnd::Heading(_)) => leaf.flush_heading(src, &mut out),
            Event::SoftBreak | Event::HardBreak => {}
            _ if !is_inline(&event) => leaf.flush_body(src, &mut out),
            _ if !skipping => leaf.add(src, range),
            _ => {}
        }
    }
    leaf.flush_body(src, &mut out);
    out
}

/// Events inside a block's text (as opposed to those that open, close or separate blocks).
fn is_inline(event: &Event<'_>) -> bool {
    match event {
        Event::Start(tag) => matches!(
            tag,
            Tag::Emphasis
                | Tag::Strong
                | Tag::Strikethrough
                | Tag::Superscript
                | Tag::Subscript
                | Tag::Link { .. }
                | Tag::Image { .. }
        ),
        Event::End(tag) => matches!(
            tag,
            TagEnd::Emphasis
                | TagEnd::Strong
                | TagEnd::Strikethrough
                | TagEnd::Superscript
                | TagEnd::Subscript
                | TagEnd::Link
                | TagEnd::Image
        ),
        Event::Rule => false,
        _ => true,
    }
}

/// The source extent of the block being read: where its first inline event starts and where
/// its last one ends.
#[derive(Default)]
struct Leaf {
    extent: Option<Range<usize>>,
}

impl Leaf {
    fn add(&mut self, src: &str, range: Range<usize>) {
        match &mut self.extent {
            Some(e) => e.end = e.end.max(range.end),
            None => {
                // An escaped character's text starts after its backslash; the backslash is
                // part of the source `inline_markdown` reads.
                let start = range.start - usize::from(src[..range.start].ends_with('\\'));
                self.extent = Some(start..range.end);
            }
        }
    }

    fn flush_body(&mut self, src: &str, out: &mut Vec<(Option<String>, Block)>) {
        if let Some(extent) = self.extent.take() {
            let text = read_lines(src, extent, false);
            out.push((None, Block { kind: SegmentKind::Body, verse: false, text }));
        }
    }

    /// Every heading (ATX or setext, any level) opens a chapter, an empty one too.
    fn flush_heading(&mut self, src: &str, out: &mut Vec<(Option<String>, Block)>) {
        let text = self.extent.take().map(|e| read_lines(src, e, true)).unwrap_or_default();
        let title = strip_title_markup(text.text.trim()).trim().replace('\n', " ");
        out.push((Some(title), Block { kind: SegmentKind::Heading, verse: false, text }));
    }
}

/// A block's text from its source lines, joined by `\n`. The first line starts at `extent`;
/// later lines after their container prefix (indentation, `>` markers), the only prefix a
/// continuation line can have. Body lines run to the line end (trailing spaces and a hard
/// break's backslash included, as written); a heading's last line ends with its text,
/// before an ATX closing sequence.
fn read_lines(src: &str, extent: Range<usize>, heading: bool) -> Mapped {
    let mut out = Mapped::default();
    let mut start = extent.start;
    while start < extent.end {
        let line_end = src[start..].find('\n').map_or(src.len(), |k| start + k);
        let mut end = src[..line_end].strip_suffix('\r').map_or(line_end, str::len);
        if heading && line_end >= extent.end {
            end = end.min(extent.end);
        }
        let line = &src[start..end];
        if !line.trim().is_empty() {
            if !out.text.is_empty() {
                out.push_replace("\n", start..start);
            }
            inline_markdown(line, start, &mut out);
        }
        start = line_end + 1;
        start += container_prefix_len(src.get(start..).unwrap_or_default());
    }
    out
}

/// The length of a continuation line's container prefix: indentation and `>` markers.
fn container_prefix_len(line: &str) -> usize {
    let mut rest = line.trim_start_matches([' ', '\t']);
    while let Some(quoted) = rest.strip_prefix('>') {
        rest = quoted.trim_start_matches([' ', '\t']);
    }
    line.len() - rest.len()
}

/// Inline Markdown → text: emphasis markers, backticks and HTML tags dropped, links read as
/// their text, images skipped; CosyVoice3 tokens and pause markup kept.
fn inline_markdown(s: &str, base: usize, out: &mut Mapped) {
    let mut i = 0;
    while i < s.len() {
        let rest = &s[i..];
        let c = rest.chars().next().expect("in bounds");
        let n = c.len_utf8();
        match c {
            '\\' if rest[1..].starts_with(|d: char| d.is_ascii_punctuation()) => {
                out.push_copy(&rest[1..2], base + i + 1);
                i += 2;
            }
            '<' | '[' if is_special_token_at(rest).is_some() => {
                let k = is_special_token_at(rest).expect("checked");
                out.push_copy(&rest[..k], base + i);
                i += k;
            }
            // Voicing markup is copied whole: `[as:Anna][style:soft]` is no reference link,
            // and a name's `_` or `*` is no emphasis.
            '[' if voicing_markup_len(rest).is_some() => {
                let k = voicing_markup_len(rest).expect("checked");
                out.push_copy(&rest[..k], base + i);
                i += k;
            }
            '[' if rest.starts_with("[pause")
                || rest.starts_with("[break]")
                || rest.starts_with(LANG_OPEN)
                || rest.starts_with(LANG_CLOSE)
                || VOICING_MARKUP.iter().any(|m| rest.starts_with(m)) =>
            {
                out.push_copy("[", base + i);
                i += 1;
            }
            '!' if rest.starts_with("![") => match link_parts(&rest[1..]) {
                Some((_, total)) => i += 1 + total,
                None => {
                    out.push_copy("!", base + i);
                    i += 1;
                }
            },
            '[' => match link_parts(rest) {
                Some((text_end, total)) => {
                    inline_markdown(&rest[1..text_end], base + i + 1, out);
                    i += total;
                }
                None => {
                    out.push_copy("[", base + i);
                    i += 1;
                }
            },
            '`' | '*' => i += 1,
            '~' if rest.starts_with("~~") => i += 2,
            '_' => {
                let prev = s[..i].chars().next_back();
                let next = rest[1..].chars().next();
                let inner = prev.is_some_and(char::is_alphanumeric)
                    && next.is_some_and(char::is_alphanumeric);
                if inner {
                    out.push_copy("_", base + i);
                }
                i += 1;
            }
            '<' if html_tag_len(rest).is_some() => i += html_tag_len(rest).expect("checked"),
            _ => {
                out.push_copy(&rest[..n], base + i);
                i += n;
            }
        }
    }
}

/// `[text](url)` or `[text][ref]` at the start of `s` → (end of text, total length).
fn link_parts(s: &str) -> Option<(usize, usize)> {
    let close = s.find(']')?;
    if s[1..close].contains('[') {
        return None;
    }
    let after = &s[close + 1..];
    let shut = match after.chars().next()? {
        '(' => ')',
        '[' => ']',
        _ => return None,
    };
    let end = after.find(shut)?;
    Some((close, close + 1 + end + 1))
}

/// An HTML tag or autolink (`<em>`, `</p>`, `<https://…>`) at the start of `s`.
fn html_tag_len(s: &str) -> Option<usize> {
    let body = s.strip_prefix('<')?;
    let body = body.strip_prefix('/').unwrap_or(body);
    if !body.starts_with(|c: char| c.is_ascii_alphabetic()) {
        return None;
    }
    let end = s.find('>')?;
    (!s[1..end].contains('<')).then_some(end + 1)
}
