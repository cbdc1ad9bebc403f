//! What `lectern render --dry-run` says of a book, without loading a model: every segment as
//! the model will read it, what the reading rules left out and why, each chapter's estimated
//! length, and warnings. One schema, [`DryRun`], serves the table and `--json`; its fields are
//! documented in `docs/dry-run.md` ([`SCHEMA`] names the version: within `/1` fields are only
//! added, never renamed, removed or given another meaning).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;
use std::path::Path;

use anyhow::Context;

use crate::cast::{Cast, Role};
use crate::review::CastingOverride;
use lectern_engine::protocol::Mode;
use lectern_text::reading_report::ReadingReport;
use lectern_text::{Boundary, Lang, Manuscript, Segment, SegmentLimits, SkipReason, Tokenizer};

/// The schema's name and version, the JSON object's `schema` field.
pub const SCHEMA: &str = "lectern.dry-run/1";

/// Speaking rate of English-family text, words (whitespace-separated) per minute: a typical
/// audiobook narration pace (ACX's guidance is 150–160).
pub const WORDS_PER_MINUTE: f64 = 155.0;
/// Speaking rate of CJK text, characters per minute (Mandarin audiobooks run about 230–270).
pub const CJK_CHARS_PER_MINUTE: f64 = 250.0;
/// ACX's longest accepted file, minutes: a longer chapter must be split.
pub const ACX_MAX_CHAPTER_MINUTES: f64 = 120.0;
/// Skipped stretches the table lists before it says how many more there are.
pub const TABLE_SKIPPED_LINES: usize = 200;

/// A dry run's whole answer (`lectern.dry-run/1`).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct DryRun {
    /// Always [`SCHEMA`].
    pub schema: &'static str,
    pub book: BookSummary,
    /// The tokenizer that counted `tokens` ([`Tokenizer::describe`]).
    pub tokenizer: String,
    pub chapters: Vec<ListedChapter>,
    pub segments: Vec<ListedSegment>,
    pub skipped: Vec<ListedSkip>,
    /// Text in a language CosyVoice3 does not speak, in reading order (refused by `render`
    /// unless `--unspoken-languages skip|read`).
    pub unspoken: Vec<ListedUnspoken>,
    pub summary: Summary,
    pub warnings: Vec<String>,
    /// The frontend's decisions worth a look and the suspicious leftovers in the spoken text
    /// ([`ReadingReport`]).
    pub reading: ReadingReport,
}

/// A stretch of text in a language the model does not speak.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ListedUnspoken {
    /// BCP 47 tag: the `[lang:…]`/`xml:lang` tag, else its script's main language (`ar`).
    pub language: String,
    /// 1-based chapter.
    pub chapter: usize,
    /// Its line in the source (the laid-out text for an EPUB or DOCX).
    pub line: usize,
    /// Its start (at most 80 characters).
    pub excerpt: String,
}

/// The book's metadata, where the manuscript carries it (EPUB metadata, Markdown front matter).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct BookSummary {
    pub title: Option<String>,
    pub author: Option<String>,
    /// BCP 47 tag.
    pub language: Option<String>,
}

/// One chapter: its size, where it starts, its estimated length and its sub-chapter marks.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ListedChapter {
    /// 1-based.
    pub chapter: usize,
    pub title: Option<String>,
    /// How many segments it holds.
    pub segments: usize,
    /// The 1-based number of its first segment (None: an empty chapter).
    pub first_segment: Option<usize>,
    /// Spoken length, estimated from its text and pauses ([`estimated_minutes`]).
    pub estimated_minutes: f64,
    pub marks: Vec<ListedMark>,
}

/// A contents entry inside a chapter (a part heading that opens it, a section).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ListedMark {
    pub title: String,
    /// The 1-based number of the segment it starts at.
    pub segment: usize,
    /// 0: a part heading that opens the chapter, 1: a section, …
    pub depth: usize,
}

/// One segment as a dry run lists it: where it is, what the narrator wrote, what the model
/// reads, its size against the segment limit and why it ends there.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ListedSegment {
    /// 1-based, as messages name segments.
    pub segment: usize,
    /// 1-based.
    pub chapter: usize,
    /// The source line it starts on.
    pub line: usize,
    /// The source text, as written (markup included); for documents, only what is read.
    pub source: String,
    /// The normalised text the LM reads.
    pub text: String,
    /// LM text tokens (the model's tokenizer).
    pub tokens: usize,
    /// Its length in the segmenter's unit (`unit`), measured against `limit`.
    pub length: usize,
    pub unit: &'static str,
    /// Upstream's segment size (`token_max_n`); a segment may pass it only where a short last
    /// sentence joined its neighbour.
    pub limit: usize,
    pub boundary: Boundary,
    /// `boundary` in words.
    pub reason: &'static str,
    /// Who speaks it and how.
    pub spoken_by: SpokenBy,
    /// `spoken_by` in words, where it is not the book's voice spoken plainly.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cast: Option<String>,
    /// BCP 47 tag of what it is read as ([`segment_language`]); several joined with `+`.
    pub language: String,
    /// The silence after it, milliseconds.
    pub pause_after: u32,
}

/// A stretch of the book that is not read.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ListedSkip {
    /// 1-based: the chapter whose text follows it.
    pub chapter: usize,
    /// The line of the laid-out text where it was left out.
    pub line: usize,
    /// Kebab-case ([`SkipReason`]): `page-number`, `navigation`, `front-matter`, …
    pub reason: SkipReason,
    /// The structural kind that decided it (`pagebreak`, `toc`, `dedication`), when known.
    pub kind: Option<String>,
    /// Its start (an excerpt of at most 80 characters).
    pub text: String,
    /// The container's file it came from (an EPUB's content document), when known.
    pub file: Option<String>,
}

/// The book in figures.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Summary {
    pub segments: usize,
    /// Characters read: the document reader's count, or for plain text and Markdown the
    /// characters of the segments' source text.
    pub read_chars: usize,
    /// Characters left out by the reading rules (0 for plain text and Markdown).
    pub skipped_chars: usize,
    /// Skipped stretches per reason (kebab-case), only the reasons that occur.
    pub skipped_by_reason: BTreeMap<String, usize>,
}

/// Who speaks a segment and how, as the render report and the dry run's listing show it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SpokenBy {
    /// The voice (its name; in a dry run, as the cast or the manuscript names it).
    pub voice: String,
    /// The cast character, if one speaks it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub character: Option<String>,
    /// `zero_shot`, `instruct` or `cross_lingual`.
    pub mode: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instruction: Option<String>,
    pub pace: f64,
}

impl SpokenBy {
    #[must_use]
    pub fn new(voice: &str, character: Option<String>, mode: &Mode, pace: f64) -> Self {
        Self {
            voice: voice.to_string(),
            character,
            mode: mode.name(),
            instruction: mode.instruction().map(str::to_string),
            pace,
        }
    }

    #[must_use]
    pub fn of_role(role: &Role, character: Option<String>) -> Self {
        Self::new(&role.voice, character, &role.mode, role.pace)
    }

    /// `fox (Anna) · instruct “Whisper.” · pace 0.9`; `None` for the book's voice spoken
    /// plainly (zero-shot at pace 1).
    #[must_use]
    pub fn describe(&self, book_voice: &str) -> Option<String> {
        let plain = self.voice == book_voice && self.mode == "zero_shot" && self.pace == 1.0;
        if plain && self.character.is_none() {
            return None;
        }
        let mut out = self.voice.clone();
        if let Some(c) = &self.character {
            out.push_str(&format!(" ({c})"));
        }
        match (&self.instruction, self.mode) {
            (Some(i), _) => out.push_str(&format!(" · instruct “{i}”")),
            (None, "cross_lingual") => out.push_str(" · cross-lingual"),
            _ => {}
        }
        if self.pace != 1.0 {
            out.push_str(&format!(" · pace {}", crate::cast::pace_label(self.pace)));
        }
        Some(out)
    }
}

/// The dry run of `book`, spoken by `cast` (an unknown character or a bad pace is an error
/// naming the manuscript line), with the project that keeps its takes (`None`: a scratch render): the
/// narrator's casting choices in it (voice and style chosen in the workstation) apply, as they
/// do in `render`, and every voice the cast and the manuscript name is checked as `render`
/// checks it, so the dry run refuses what the render would refuse.
pub fn dry_run(
    book: &Manuscript,
    tokenizer: &Tokenizer,
    cast: &Cast,
    manuscript: &Path,
    project: Option<&Path>,
) -> anyhow::Result<DryRun> {
    let overrides = match project {
        Some(dir) => project_overrides(dir)?,
        None => HashMap::new(),
    };
    let mut voices = VoiceCheck::of_cast(cast)?;
    let segments = listing_as(book, tokenizer, cast, manuscript, &overrides, &mut voices)?;
    let chapters = chapters(book);
    let summary = summary(book);
    let mut warnings = warnings(&chapters, &summary);
    warnings.extend(unspoken_warning(book));
    // The book's own pronunciations (EPUB lexicon, ssml:ph) it could not use: read as printed.
    warnings.extend(book.info.lexicon_warnings.iter().map(|w| format!("pronunciation: {w}")));
    warnings.extend(book.info.warnings.iter().cloned());
    Ok(DryRun {
        schema: SCHEMA,
        book: BookSummary {
            title: book.info.title.clone(),
            author: book.info.author.clone(),
            language: book.info.language.clone(),
        },
        tokenizer: tokenizer.describe(),
        chapters,
        segments,
        skipped: skipped(book),
        unspoken: unspoken(book),
        summary,
        warnings,
        reading: ReadingReport::of(book),
    })
}

/// Every segment of `book` as the dry run lists it, spoken by `cast`.
pub fn listing(
    book: &Manuscript,
    tokenizer: &Tokenizer,
    cast: &Cast,
    manuscript: &Path,
) -> anyhow::Result<Vec<ListedSegment>> {
    let mut voices = VoiceCheck::of_cast(cast)?;
    listing_as(book, tokenizer, cast, manuscript, &HashMap::new(), &mut voices)
}

/// The narrator's casting choices kept in a project, by the (content hash, occurrence) key the
/// store gives segments. The database is only read; no project is no choice.
pub fn project_overrides(dir: &Path) -> anyhow::Result<HashMap<(u64, u32), CastingOverride>> {
    let path = dir.join(crate::store::DB_FILE);
    if !path.is_file() {
        return Ok(HashMap::new());
    }
    let read = || -> rusqlite::Result<Vec<(u64, u32, CastingOverride)>> {
        let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY;
        let conn = rusqlite::Connection::open_with_flags(&path, flags)?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        crate::store::db::casting_overrides(&conn)
    };
    let rows = read()
        .with_context(|| format!("reading the casting choices of the project {}", dir.display()))?;
    Ok(rows.into_iter().map(|(hash, dup, over)| ((hash, dup), over)).collect())
}

/// The voices a render would load, checked as it checks them: the book's voice, and each other
/// one the cast or the manuscript names loaded once ([`crate::voices::load`]).
struct VoiceCheck {
    book_voice: String,
    loaded: HashSet<String>,
}

impl VoiceCheck {
    /// The cast's characters' voices, each checked as the render's session loads them.
    fn of_cast(cast: &Cast) -> anyhow::Result<Self> {
        let mut check = Self { book_voice: cast.book_voice.clone(), loaded: HashSet::new() };
        for (name, character) in &cast.file.characters {
            check.voice(&character.voice).with_context(|| {
                let file = cast.path.as_deref().unwrap_or(Path::new(crate::cast::CAST_FILE));
                format!("{}: character `{name}`", file.display())
            })?;
        }
        Ok(check)
    }

    fn voice(&mut self, written: &str) -> anyhow::Result<()> {
        if written == self.book_voice || self.loaded.contains(written) {
            return Ok(());
        }
        let voice =
            crate::voices::load(written).with_context(|| format!("unknown voice `{written}`"))?;
        self.loaded.insert(voice.manifest.name);
        self.loaded.insert(written.to_string());
        Ok(())
    }
}

/// [`listing`] with the narrator's casting choices applied and every voice checked.
fn listing_as(
    book: &Manuscript,
    tokenizer: &Tokenizer,
    cast: &Cast,
    manuscript: &Path,
    overrides: &HashMap<(u64, u32), CastingOverride>,
    voices: &mut VoiceCheck,
) -> anyhow::Result<Vec<ListedSegment>> {
    let limit = SegmentLimits::default().token_max_n;
    let book_language = book.info.language.as_deref();
    let mut out = Vec::new();
    let mut occurrences: HashMap<u64, u32> = HashMap::new();
    for (chapter, ch) in book.chapters.iter().enumerate() {
        for s in &ch.segments {
            let n = occurrences.entry(s.hash).or_insert(0);
            let recast = overrides.get(&(s.hash, *n)).cloned().unwrap_or_default();
            *n += 1;
            let role = cast.resolve_as(s, manuscript, &recast)?;
            voices.voice(&role.voice).with_context(|| {
                let at = format!("{}:{}", manuscript.display(), s.span.start.line);
                match &recast.voice {
                    Some(v) => format!(
                        "{at}: the voice `{v}` was chosen for this segment in the workstation \
                         and is neither in the cast nor installed: put it back in {} or add it \
                         with `lectern voice add`",
                        crate::cast::CAST_FILE
                    ),
                    None => at,
                }
            })?;
            let spoken_by = SpokenBy::of_role(&role, s.voicing.character.clone());
            let tokens = tokenizer.count(&s.text);
            let (length, unit) = match s.lang {
                Lang::Zh => (s.text.chars().count(), "characters"),
                Lang::En => (tokens, "tokens"),
            };
            out.push(ListedSegment {
                segment: s.id + 1,
                chapter: chapter + 1,
                line: s.span.start.line,
                source: s.source.clone(),
                text: s.text.clone(),
                tokens,
                length,
                unit,
                limit,
                boundary: s.boundary,
                reason: s.boundary.describe(),
                cast: spoken_by.describe(&cast.book_voice),
                spoken_by,
                language: segment_language(s, book_language),
                pause_after: s.pause_after_ms,
            });
        }
    }
    Ok(out)
}

/// The BCP 47 tag a segment is read as: its own `language` (several tags joined with `+` when
/// it mixes languages), else `zh` for Chinese text, else the book's language when it is an
/// English one (`en-GB`), else `en`.
#[must_use]
pub fn segment_language(segment: &Segment, book_language: Option<&str>) -> String {
    if let Some(l) = &segment.language {
        return l.clone();
    }
    if segment.lang == Lang::Zh {
        return "zh".to_string();
    }
    match book_language {
        Some(l) if is_english(l) => l.to_string(),
        _ => "en".to_string(),
    }
}

/// `en`, `en-GB`, `EN_us`: an English-family tag.
fn is_english(tag: &str) -> bool {
    tag.split(['-', '_']).next().is_some_and(|p| p.eq_ignore_ascii_case("en"))
}

/// The estimated spoken minutes of some segments: English-family words at
/// [`WORDS_PER_MINUTE`], CJK characters at [`CJK_CHARS_PER_MINUTE`], plus their pauses. An
/// estimate from the text alone: a dry run runs no model.
#[must_use]
pub fn estimated_minutes<'a>(segments: impl IntoIterator<Item = &'a Segment>) -> f64 {
    let (mut words, mut cjk, mut pause_ms) = (0usize, 0usize, 0u64);
    for s in segments {
        for word in s.text.split_whitespace() {
            let n = word.chars().filter(|&c| is_cjk_char(c)).count();
            // A word of CJK characters is read character by character.
            if n == 0 { words += 1 } else { cjk += n }
        }
        pause_ms += u64::from(s.pause_after_ms);
    }
    words as f64 / WORDS_PER_MINUTE + cjk as f64 / CJK_CHARS_PER_MINUTE + pause_ms as f64 / 60_000.0
}

/// Han ideographs (with extension A and the compatibility block), kana and Hangul syllables:
/// scripts read about a character at a time.
fn is_cjk_char(c: char) -> bool {
    lectern_text::cjk::is_cjk(c)
        || matches!(c, '\u{3400}'..='\u{4dbf}' | '\u{f900}'..='\u{faff}' | '\u{3040}'..='\u{30ff}'
            | '\u{ac00}'..='\u{d7af}')
}

fn chapters(book: &Manuscript) -> Vec<ListedChapter> {
    book.chapters
        .iter()
        .enumerate()
        .map(|(i, ch)| ListedChapter {
            chapter: i + 1,
            title: ch.title.clone(),
            segments: ch.segments.len(),
            first_segment: ch.segments.first().map(|s| s.id + 1),
            estimated_minutes: round_tenth(estimated_minutes(&ch.segments)),
            marks: ch
                .marks
                .iter()
                .map(|m| ListedMark {
                    title: m.title.clone(),
                    segment: m.segment + 1,
                    depth: m.depth,
                })
                .collect(),
        })
        .collect()
}

/// Minutes to a tenth: an estimate says no more.
fn round_tenth(minutes: f64) -> f64 {
    (minutes * 10.0).round() / 10.0
}

fn skipped(book: &Manuscript) -> Vec<ListedSkip> {
    book.skipped
        .iter()
        .map(|s| ListedSkip {
            chapter: s.chapter + 1,
            line: s.line,
            reason: s.reason,
            kind: s.kind.clone(),
            text: s.text.clone(),
            file: s.file.clone(),
        })
        .collect()
}

fn unspoken(book: &Manuscript) -> Vec<ListedUnspoken> {
    book.unspoken
        .iter()
        .map(|u| ListedUnspoken {
            language: u.language.clone(),
            chapter: u.chapter + 1,
            line: u.line,
            excerpt: u.text.clone(),
        })
        .collect()
}

/// Text the model does not speak: where, in which languages, and what `render` will do.
fn unspoken_warning(book: &Manuscript) -> Option<String> {
    let first = book.unspoken.first()?;
    let mut languages: Vec<String> = Vec::new();
    for u in &book.unspoken {
        let name = lectern_text::manuscript::language_name(&u.language);
        if !languages.contains(&name) {
            languages.push(name);
        }
    }
    let skipped = book.skipped.iter().any(|s| s.reason == SkipReason::UnspokenLanguage);
    let fate = if skipped {
        "left out (`--unspoken-languages skip`)"
    } else {
        "`render` refuses the book unless `--unspoken-languages skip|read`"
    };
    Some(format!(
        "{} stretch(es) of text in a language CosyVoice3 does not speak ({}), the first in \
         chapter {}, line {}: {fate}",
        book.unspoken.len(),
        languages.join(", "),
        first.chapter + 1,
        first.line
    ))
}

fn summary(book: &Manuscript) -> Summary {
    let mut skipped_by_reason = BTreeMap::new();
    for s in &book.skipped {
        *skipped_by_reason.entry(reason_name(s.reason)).or_insert(0) += 1;
    }
    // Plain text and Markdown have no reader's count: what is read is the segments' source.
    let read_chars = if book.read_chars > 0 {
        book.read_chars
    } else {
        book.segments().map(|s| s.source.chars().count()).sum()
    };
    Summary {
        segments: book.segments().count(),
        read_chars,
        skipped_chars: book.skipped_chars,
        skipped_by_reason,
    }
}

/// A reason as the JSON spells it (`page-number`).
#[must_use]
pub fn reason_name(reason: SkipReason) -> String {
    serde_json::to_value(reason)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| reason.describe().replace(' ', "-"))
}

/// A chapter over ACX's length limit; the skipping rules leaving out more than they read.
fn warnings(chapters: &[ListedChapter], summary: &Summary) -> Vec<String> {
    let mut out: Vec<String> = chapters
        .iter()
        .filter(|c| c.estimated_minutes > ACX_MAX_CHAPTER_MINUTES)
        .map(|c| {
            let title = c.title.as_ref().map_or(String::new(), |t| format!(" \"{t}\""));
            format!(
                "chapter {}{title} is about {:.0} min, over ACX's {:.0}-minute limit: split it",
                c.chapter, c.estimated_minutes, ACX_MAX_CHAPTER_MINUTES
            )
        })
        .collect();
    if summary.skipped_chars > summary.read_chars {
        let mut reasons: Vec<(&String, &usize)> = summary.skipped_by_reason.iter().collect();
        reasons.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        let top: Vec<String> = reasons.iter().take(3).map(|(r, n)| format!("{r} ({n})")).collect();
        out.push(format!(
            "the reading rules left out more of the book than they read ({} characters skipped, \
             {} read): a rule likely misfired; most skipped: {} (see `--skip`/`--read`)",
            summary.skipped_chars,
            summary.read_chars,
            top.join(", ")
        ));
    }
    out
}

/// The dry run as a table: a line of figures per segment, then its source and spoken text
/// (line breaks of the source shown as `⏎`); then what was skipped, and the chapters.
#[must_use]
pub fn format_listing(dry: &DryRun) -> String {
    let mut out = String::from("   #  ch  line  lang   pause  size        ends at\n");
    for s in &dry.segments {
        let size = match s.unit {
            "tokens" => format!("{}/{} tok", s.length, s.limit),
            _ => format!("{}/{} chr", s.length, s.limit),
        };
        let _ = writeln!(
            out,
            "{:>4} {:>3} {:>5}  {:<6} {:>5}  {size:<11} {}",
            s.segment,
            s.chapter,
            s.line,
            s.language,
            format_pause(s.pause_after),
            s.reason
        );
        let _ = writeln!(out, "        source: {}", s.source.replace('\n', " ⏎ "));
        let _ = writeln!(out, "        spoken: {} ({} LM tokens)", s.text, s.tokens);
        if let Some(cast) = &s.cast {
            let _ = writeln!(out, "        voice:  {cast}");
        }
    }
    format_skipped(&mut out, dry);
    format_chapters(&mut out, &dry.chapters);
    out
}

/// `0`, `400ms`, `1.2s`.
fn format_pause(ms: u32) -> String {
    match ms {
        0 => "0".to_string(),
        ms if ms < 1000 => format!("{ms}ms"),
        ms => format!("{:.1}s", f64::from(ms) / 1000.0),
    }
}

fn format_skipped(out: &mut String, dry: &DryRun) {
    if dry.skipped.is_empty() {
        return;
    }
    let reasons: Vec<String> =
        dry.summary.skipped_by_reason.iter().map(|(r, n)| format!("{r} {n}")).collect();
    let _ = writeln!(
        out,
        "\nskipped: {} stretches, {} characters ({})\n  ch  line  reason        excerpt",
        dry.skipped.len(),
        dry.summary.skipped_chars,
        reasons.join(", ")
    );
    for s in dry.skipped.iter().take(TABLE_SKIPPED_LINES) {
        let _ = writeln!(
            out,
            "{:>4} {:>5}  {:<13} {}",
            s.chapter,
            s.line,
            s.reason.describe(),
            s.text.replace('\n', " ⏎ ")
        );
    }
    if dry.skipped.len() > TABLE_SKIPPED_LINES {
        let _ = writeln!(out, "  … and {} more", dry.skipped.len() - TABLE_SKIPPED_LINES);
    }
}

fn format_chapters(out: &mut String, chapters: &[ListedChapter]) {
    let _ = writeln!(
        out,
        "\nchapters (minutes estimated from the text):\n  ch  segments   ~min  title"
    );
    for c in chapters {
        let _ = writeln!(
            out,
            "{:>4} {:>9} {:>6.1}  {}",
            c.chapter,
            c.segments,
            c.estimated_minutes,
            c.title.as_deref().unwrap_or("(untitled)")
        );
        for m in &c.marks {
            let indent = "  ".repeat(m.depth + 1);
            let _ = writeln!(out, "{:>23}{indent}{} (segment {})", "", m.title, m.segment);
        }
    }
}
