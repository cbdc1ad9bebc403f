//! What of a book is read aloud: the reading policy every document reader (EPUB, DOCX) applies,
//! and the record of what it left out.
//!
//! Kinds are EPUB 3 structural-semantics names (`titlepage`, `dedication`, `footnotes`, …; the
//! DPUB-ARIA `doc-` roles map onto them), plus three of Lectern's own for content that is not a
//! section: `code` (code listings, samples, keyboard input), `table` and `notes` (a notes
//! section). The default, [`ReadPolicy::default`], is what a narrator would choose:
//!
//! * **skipped**: the cover, half-title and title pages, copyright and imprint pages, the
//!   contents and lists of figures or tables, the publisher's colophon, bibliographies, code;
//! * **read**: everything the author wrote, front matter included (dedication, epigraph,
//!   foreword, preface, prologue, introduction, a novel's "Etymology"), tables row by row;
//! * **never read, whatever the policy**: printed page numbers, verse line numbers, navigation
//!   (a nav element, a contents page, an NCX), note markers, hidden text, the fallback of
//!   `canvas`, `object`, `video` and `audio`, and the alternatives of an `epub:switch`.
//!
//! `--skip KIND,…` and `--read KIND,…` move kinds between the first two lists;
//! `--skip-front-matter` skips every front-matter kind ([`FRONT_MATTER_KINDS`]).

use std::collections::BTreeSet;

/// Front-matter kinds (EPUB 3 structural semantics), the ones `--skip-front-matter` skips.
pub const FRONT_MATTER_KINDS: &[&str] = &[
    "frontmatter",
    "cover",
    "halftitlepage",
    "titlepage",
    "copyright-page",
    "imprint",
    "toc",
    "loi",
    "lot",
    "dedication",
    "epigraph",
    "foreword",
    "preface",
    "prologue",
    "introduction",
    "preamble",
    "acknowledgments",
    "contributors",
    "other-credits",
    "errata",
    "seriespage",
    "halftitle",
    "abstract",
];

/// Kinds skipped by default: what a publisher, not the author, put in the book, and code.
pub const SKIPPED_BY_DEFAULT: &[&str] = &[
    "cover",
    "halftitlepage",
    "halftitle",
    "titlepage",
    "copyright-page",
    "imprint",
    "colophon",
    "seriespage",
    "toc",
    "loi",
    "lot",
    "bibliography",
    "code",
];

/// How notes are read.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize, Hash,
)]
#[serde(rename_all = "kebab-case")]
pub enum NotesPolicy {
    /// Markers are not read, nor the notes beside the text (footnotes, asides); a notes section
    /// that the contents list (the author's "Notes" chapter) is read as a chapter.
    #[default]
    Skip,
    /// Each note is read after the paragraph that refers to it ("Note: …").
    Inline,
    /// The notes a chapter refers to are read at its end, in order.
    ChapterEnd,
}

/// What of a book is read; see the module documentation.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, Hash)]
#[serde(default)]
pub struct ReadPolicy {
    /// The kinds not read.
    pub skip: BTreeSet<String>,
    pub notes: NotesPolicy,
    /// Which contents level makes chapters (1 = the top); `None`: decided per book (parts
    /// become marks, their chapters chapters).
    pub chapter_level: Option<usize>,
}

impl Default for ReadPolicy {
    fn default() -> Self {
        Self {
            skip: SKIPPED_BY_DEFAULT.iter().map(|k| (*k).to_string()).collect(),
            notes: NotesPolicy::default(),
            chapter_level: None,
        }
    }
}

impl ReadPolicy {
    /// Whether content of this kind is left out. Kinds are matched without a vocabulary prefix
    /// (`z3998:`, `doc-`), so `--skip dedication` skips `role="doc-dedication"` too.
    #[must_use]
    pub fn skips(&self, kind: &str) -> bool {
        self.skip.contains(canonical_kind(kind))
    }

    /// Skips every front-matter kind (`--skip-front-matter`).
    #[must_use]
    pub fn skipping_front_matter(mut self) -> Self {
        self.skip.extend(FRONT_MATTER_KINDS.iter().map(|k| (*k).to_string()));
        self
    }

    /// Skips these kinds too (`--skip`).
    #[must_use]
    pub fn skipping<S: AsRef<str>>(mut self, kinds: &[S]) -> Self {
        self.skip.extend(kinds.iter().map(|k| canonical_kind(k.as_ref()).to_string()));
        self
    }

    /// Reads these kinds after all (`--read`; applied after `--skip`).
    #[must_use]
    pub fn reading<S: AsRef<str>>(mut self, kinds: &[S]) -> Self {
        for k in kinds {
            self.skip.remove(canonical_kind(k.as_ref()));
        }
        self
    }

    #[must_use]
    pub fn with_notes(mut self, notes: NotesPolicy) -> Self {
        self.notes = notes;
        self
    }

    #[must_use]
    pub fn with_chapter_level(mut self, level: Option<usize>) -> Self {
        self.chapter_level = level;
        self
    }
}

/// A kind without its vocabulary prefix, in the EPUB 3 spelling (`doc-pagebreak` →
/// `pagebreak`, `z3998:poem` → `poem`, `title-page` (EPUB 2 guide) → `titlepage`).
#[must_use]
pub fn canonical_kind(kind: &str) -> &str {
    let k = kind.rsplit(':').next().unwrap_or(kind);
    let k = k.strip_prefix("doc-").unwrap_or(k);
    match k {
        "title-page" => "titlepage",
        "copyright" => "copyright-page",
        "colophon" | "imprint" => k,
        "acknowledgements" => "acknowledgments",
        "endnotes" | "rearnotes" | "footnotes" => "notes",
        _ => k,
    }
}

/// Why something in the book is not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, Hash)]
#[serde(rename_all = "kebab-case")]
pub enum SkipReason {
    /// A printed page number (`pagebreak`, `doc-pagebreak`, a page-list target).
    PageNumber,
    /// A verse line number.
    LineNumber,
    /// Navigation: a nav element, a contents page, landmarks, a page list.
    Navigation,
    /// A note, or a notes section, left out by the notes policy.
    Note,
    /// Code, sample output or keyboard input.
    Code,
    /// The fallback of `canvas`, `object`, `video` or `audio`, or an `epub:switch` alternative.
    Fallback,
    /// Hidden from every reader (`hidden`, `aria-hidden="true"`).
    Hidden,
    /// A front-matter section the policy skips (title page, copyright, …).
    FrontMatter,
    /// Another section kind the policy skips (`--skip`: a colophon, an index, an appendix).
    Section,
    /// A table the policy skips (`--skip table`).
    Table,
    /// A word processor's comment.
    Comment,
    /// A tracked deletion.
    Deletion,
    /// Text in a language CosyVoice3 does not speak, left out by `--unspoken-languages skip`
    /// ([`crate::manuscript::UnspokenPolicy::Skip`]).
    UnspokenLanguage,
}

impl SkipReason {
    /// In words, for the dry run's table.
    #[must_use]
    pub fn describe(self) -> &'static str {
        match self {
            Self::PageNumber => "page number",
            Self::LineNumber => "line number",
            Self::Navigation => "navigation",
            Self::Note => "note",
            Self::Code => "code",
            Self::Fallback => "fallback",
            Self::Hidden => "hidden",
            Self::FrontMatter => "front matter",
            Self::Section => "section",
            Self::Table => "table",
            Self::Comment => "comment",
            Self::Deletion => "deletion",
            Self::UnspokenLanguage => "unspoken language",
        }
    }
}

/// The reason a section of this kind is skipped under a policy, `None` when it is read.
#[must_use]
pub fn section_skip(policy: &ReadPolicy, kind: &str) -> Option<SkipReason> {
    let k = canonical_kind(kind);
    if !policy.skips(k) {
        return None;
    }
    Some(match k {
        "toc" | "landmarks" | "page-list" | "loi" | "lot" => SkipReason::Navigation,
        "notes" | "footnote" | "endnote" | "rearnote" | "note" => SkipReason::Note,
        "code" => SkipReason::Code,
        "table" => SkipReason::Table,
        _ if FRONT_MATTER_KINDS.contains(&k) => SkipReason::FrontMatter,
        _ => SkipReason::Section,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_reads_what_the_author_wrote() {
        let p = ReadPolicy::default();
        for kind in ["cover", "titlepage", "copyright-page", "toc", "colophon", "code"] {
            assert!(p.skips(kind), "{kind}");
        }
        for kind in ["dedication", "epigraph", "foreword", "preface", "prologue", "chapter"] {
            assert!(!p.skips(kind), "{kind}");
        }
        assert!(p.skips("doc-toc") && p.skips("title-page") && !p.skips("doc-dedication"));
    }

    #[test]
    fn skip_and_read_change_the_default_kind_by_kind() {
        let p = ReadPolicy::default().skipping(&["dedication", "doc-epilogue"]).reading(&["code"]);
        assert!(p.skips("dedication") && p.skips("epilogue") && !p.skips("code"));
        assert_eq!(section_skip(&p, "dedication"), Some(SkipReason::FrontMatter));
        assert_eq!(section_skip(&p, "epilogue"), Some(SkipReason::Section));
        let front = ReadPolicy::default().skipping_front_matter();
        assert!(front.skips("preface") && front.skips("epigraph") && !front.skips("chapter"));
        assert_eq!(section_skip(&front, "toc"), Some(SkipReason::Navigation));
    }
}
