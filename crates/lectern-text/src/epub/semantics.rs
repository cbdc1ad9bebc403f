//! What the markup of a content document means for reading aloud: the EPUB 3 structural
//! semantics (`epub:type`), DPUB-ARIA roles and the class names real books use, sorted into
//! what is never read, what the [`ReadPolicy`] decides, and what changes how text is read.

use quick_xml::events::BytesStart;

use super::package::{attr, attr_tokens};
use crate::policy::{ReadPolicy, SkipReason, canonical_kind, section_skip};

/// Elements whose content is never read and never recorded as skipped: the head, scripts and
/// styles, MathML, and ruby annotations (a reading aid; the base text is read).
pub(super) const SILENT: &[&str] = &["head", "script", "style", "math", "rt", "rp", "template"];

/// Elements whose content is a fallback for what cannot be shown, or an `epub:switch`
/// alternative (`case`; its `default` is read instead).
pub(super) const FALLBACKS: &[&str] = &["canvas", "video", "audio", "object", "embed", "case"];

/// Elements of code listings and preformatted sample output: skipped as code by default.
const CODE_BLOCKS: &[&str] = &["pre"];
/// Inline code, sample output and keyboard input: read inside a sentence ("type `ls`"), a
/// block of nothing else is code.
const CODE_INLINE: &[&str] = &["code", "samp", "kbd"];

/// Kinds of navigation, never read.
const NAVIGATION: &[&str] = &["toc", "landmarks", "page-list", "pagelist", "loi", "lot", "index"];

/// Kinds of notes (a single note) and their references.
const NOTE: &[&str] = &["footnote", "endnote", "rearnote", "note"];
const NOTE_REF: &[&str] = &["noteref"];
const BACKLINK: &[&str] = &["backlink"];
/// Kinds of a notes section (canonical: all become `notes`).
const NOTES_SECTION: &[&str] = &["notes"];

/// Verse: the whole poem, and one stanza of it.
const POEM_TYPES: &[&str] = &["poem", "verse", "song", "hymn", "lyrics"];
const POEM_CLASSES: &[&str] = &["poem", "poetry", "verse", "song", "hymn"];
const STANZA_TYPES: &[&str] = &["stanza"];
const STANZA_CLASSES: &[&str] = &["stanza", "linegroup", "lg", "verse-group", "strophe"];
/// Classes of one verse line, where each line is an element.
const LINE_CLASSES: &[&str] = &["line", "l", "verse-line", "poem-line"];
/// Classes and types of printed verse line numbers.
const LINE_NUMBER_CLASSES: &[&str] =
    &["lnum", "linenum", "line-num", "linenumber", "line-number", "linenr", "lineno"];

/// What an element means for reading.
#[derive(Debug, Clone, Default)]
pub(super) struct Meaning {
    /// Its `epub:type` and `role` tokens, canonical (no prefix).
    pub kinds: Vec<String>,
    /// Never read, and why (`None` with `silent`: not worth recording).
    pub never: Option<SkipReason>,
    pub silent: bool,
    /// A section kind the policy decides on: `Some(reason)` when it skips it, and the kind.
    pub section: Option<(String, Option<SkipReason>)>,
    pub note: bool,
    pub noteref: bool,
    pub notes_section: bool,
    pub poem: bool,
    pub stanza: bool,
    pub line: bool,
    /// Inline code, sample output or keyboard input.
    pub code: bool,
}

/// The canonical kinds an element declares (`epub:type` tokens, then `role` tokens).
pub(super) fn kinds(e: &BytesStart<'_>) -> Vec<String> {
    attr_tokens(e, "epub:type")
        .into_iter()
        .chain(attr_tokens(e, "role"))
        .map(|k| canonical_kind(&k).to_string())
        .collect()
}

/// Reads an element's meaning under a policy.
pub(super) fn meaning(e: &BytesStart<'_>, name: &str, policy: &ReadPolicy) -> Meaning {
    let kinds = kinds(e);
    let classes = attr_tokens(e, "class");
    let has = |list: &[&str]| kinds.iter().any(|k| list.contains(&k.as_str()));
    let has_class =
        |list: &[&str]| classes.iter().any(|c| list.contains(&c.to_ascii_lowercase().as_str()));
    let mut m = Meaning { silent: SILENT.contains(&name), ..Meaning::default() };
    // An `aside` named as a note (`id="footnotes"`, `class="endnote"`) is one, typed or not.
    let named_note = name == "aside"
        && attr(e, "id").into_iter().chain(classes.iter().cloned()).any(|v| {
            let v = v.to_ascii_lowercase();
            v.contains("footnote") || v.contains("endnote") || v == "note" || v == "notes"
        });
    m.note = has(NOTE) || named_note;
    m.noteref = has(NOTE_REF);
    m.notes_section = has(NOTES_SECTION);
    m.poem = has(POEM_TYPES) || has_class(POEM_CLASSES);
    m.stanza = has(STANZA_TYPES) || has_class(STANZA_CLASSES);
    m.line = has_class(LINE_CLASSES) || kinds.iter().any(|k| k == "line");
    m.never = if has(&["pagebreak"]) {
        Some(SkipReason::PageNumber)
    } else if has(&["line-number", "linenum"]) || has_class(LINE_NUMBER_CLASSES) {
        Some(SkipReason::LineNumber)
    } else if name == "nav" || has(NAVIGATION) {
        Some(SkipReason::Navigation)
    } else if is_hidden(e) {
        Some(SkipReason::Hidden)
    } else if FALLBACKS.contains(&name) {
        Some(SkipReason::Fallback)
    } else if has(BACKLINK) {
        Some(SkipReason::Note)
    } else {
        None
    };
    m.code = CODE_INLINE.contains(&name);
    if CODE_BLOCKS.contains(&name) || has(&["code"]) {
        if let Some(reason) = section_skip(policy, "code") {
            m.never = m.never.or(Some(reason));
        }
    }
    if name == "table" {
        if let Some(reason) = section_skip(policy, "table") {
            m.never = m.never.or(Some(reason));
        }
    }
    m.section = kinds
        .iter()
        .filter(|k| !is_inline_kind(k))
        .find(|k| section_skip(policy, k).is_some())
        .map(|k| (k.clone(), section_skip(policy, k)))
        .or_else(|| kinds.iter().find(|k| is_authored_kind(k)).map(|k| (k.clone(), None)));
    m.kinds = kinds;
    m
}

/// Kinds that describe inline or note markup, not a section of the book.
fn is_inline_kind(kind: &str) -> bool {
    NOTE.contains(&kind) || NOTE_REF.contains(&kind) || BACKLINK.contains(&kind)
}

/// Section kinds an author writes: inside a skipped section (a title page that holds the
/// epigraph and dedication), an element of one of these kinds is read.
fn is_authored_kind(kind: &str) -> bool {
    matches!(
        kind,
        "dedication"
            | "epigraph"
            | "foreword"
            | "preface"
            | "prologue"
            | "introduction"
            | "preamble"
            | "chapter"
            | "part"
            | "bodymatter"
            | "epilogue"
            | "afterword"
            | "conclusion"
            | "appendix"
    )
}

/// Whether the element is hidden from every reader: `hidden`, or `aria-hidden="true"`.
pub(super) fn is_hidden(e: &BytesStart<'_>) -> bool {
    attr(e, "hidden").is_some() || attr(e, "aria-hidden").is_some_and(|v| v.trim() == "true")
}

/// A footnote marker's text: `1`, `12a`, `[3]`, `(4)`, `*`, `†`, `‡`, `§`, a roman `iv`.
pub(super) fn is_note_marker(text: &str) -> bool {
    let t = text.trim().trim_start_matches(['[', '(']).trim_end_matches([']', ')']);
    if t.is_empty() || t.chars().count() > 5 {
        return false;
    }
    let digits = t.trim_end_matches(|c: char| c.is_ascii_lowercase());
    (!digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit()))
        || t.chars().all(|c| matches!(c, '*' | '†' | '‡' | '§'))
        || t.chars().all(|c| matches!(c, 'i' | 'v' | 'x'))
}

/// A printed page number as a page list's target holds it: digits, or a roman numeral, at
/// most a few chars (`173`, `xiv`, `[12]`, `p. 5`).
pub(super) fn is_page_number(text: &str) -> bool {
    let t = text.trim().trim_start_matches(['[', '(']).trim_end_matches([']', ')']);
    let t = t.strip_prefix("p.").or_else(|| t.strip_prefix("page")).unwrap_or(t).trim();
    !t.is_empty()
        && t.chars().count() <= 8
        && (t.chars().all(|c| c.is_ascii_digit())
            || t.chars().all(|c| "ivxlcdmIVXLCDM".contains(c)))
}

/// Whether a heading names a contents page (`Contents`, `Table of Contents`, and the same in
/// a few languages).
pub(super) fn is_contents_heading(text: &str) -> bool {
    let t = text.trim().trim_end_matches(['.', ':']).to_lowercase();
    matches!(
        t.as_str(),
        "contents"
            | "the contents"
            | "table of contents"
            | "sommaire"
            | "table des matières"
            | "inhalt"
            | "inhaltsverzeichnis"
            | "índice"
            | "indice"
            | "目次"
            | "目录"
            | "目錄"
    )
}
