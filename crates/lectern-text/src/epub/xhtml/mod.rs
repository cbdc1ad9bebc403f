//! An XHTML content document → headings, paragraphs, stanzas and table rows of plain text, read
//! by meaning ([`super::semantics`]) under the book's [`ReadPolicy`].
//!
//! Block elements (`p`, `div`, `h1`–`h6`, `li`, `blockquote`, …) close a block; emphasis and
//! other inline markup are read as their text; whitespace is collapsed as a browser would.
//!
//! * **Never read** (each recorded as skipped, with its reason): printed page numbers
//!   (`pagebreak`, `doc-pagebreak`, and the targets of the nav's page list when their text is
//!   a page number), verse line numbers (`lnum`, `line-number`, … classes), navigation (`nav`,
//!   anything typed `toc`, `landmarks`, `page-list`, `index`, and a printed contents page: a
//!   run of three or more blocks that are only links into the book, with its "Contents"
//!   heading), note markers, what no reader sees (`hidden`, `aria-hidden="true"`), and the
//!   fallback of `canvas`, `object`, `embed`, `video`, `audio` and every `epub:case` of an
//!   `epub:switch` (its `epub:default` is read). Nor, unrecorded: the head, scripts, styles,
//!   MathML, ruby annotations.
//! * **By the policy**: sections by their kind (a title page is skipped, but an epigraph or a
//!   dedication inside it is read); code listings (`pre`, and blocks of nothing but `code`,
//!   `samp` or `kbd`) are skipped by default;
//!   tables are read row by row ([`crate::table`]) unless skipped; notes per [`NotesPolicy`]: a
//!   notes section the contents list is read as a chapter under `skip`, and under `inline` or
//!   `chapter-end` each note is read where it is referred to, its section then left out. Inline
//!   code in a sentence is read ("type `ls`"); a block of nothing but code is not.
//! * **Verse** (`z3998:poem`/`verse`/`stanza` types, `poem`/`stanza`/`linegroup` classes,
//!   lines as elements or `<br/>`): a stanza is one block whose lines are kept apart (`\n`) and
//!   read as phrases; a `<br/>` inside a heading is a space.
//! * **Fixed layout**: the text of SVG `<text>` elements is read (it is the page's text).
//! * **Languages**: `xml:lang`/`lang` on an element inside the document sets the language of
//!   its text ([`DocBlock::languages`]), read as `[lang:TAG]` markup would be; the root's
//!   (`<html xml:lang>`) is the document's own, which the book's `dc:language` speaks for.
//!   Table cells and captions keep the language of the text around the table.

mod contents;
mod notes;

use std::collections::{HashMap, HashSet};

use quick_xml::events::{BytesStart, Event};

use contents::drop_contents_pages;
pub(super) use notes::collect_notes;

use super::package::{attr, local, reader, resolve_ref, xml_error};
use super::resolve_href;
use super::semantics::{self, Meaning, is_note_marker, is_page_number};
use crate::document::excerpt;
use crate::policy::{NotesPolicy, ReadPolicy, SkipReason};
use crate::{DocBlock, SegmentKind};

/// Notes of the book by (file, id), for reading them where they are referred to.
pub(super) type Notes = HashMap<(String, String), String>;

/// What the reader of one content document needs to know about the book.
pub(super) struct Context<'a> {
    pub policy: &'a ReadPolicy,
    /// The document's entry name.
    pub file: &'a str,
    /// Ids where a contents entry starts a part.
    pub starts: HashSet<&'a str>,
    /// Kinds the guide or landmarks give the whole file (`titlepage`, `toc`, …).
    pub file_kinds: Vec<String>,
    /// Ids the nav's page list points at in this file.
    pub page_targets: HashSet<&'a str>,
    /// Ids in this file the contents point at (`""`: the file itself).
    pub toc_targets: HashSet<&'a str>,
    pub notes: &'a Notes,
    pub fixed_layout: bool,
}

/// Something left out, before block `block` of its part.
#[derive(Debug, Clone)]
pub(super) struct PartSkip {
    pub block: usize,
    pub reason: SkipReason,
    pub kind: Option<String>,
    pub text: String,
    pub chars: usize,
}

/// A stretch of a document: from its top, or from the element a table-of-contents entry names.
#[derive(Debug, Default)]
pub(super) struct Part {
    pub starts_at: Option<String>,
    pub blocks: Vec<DocBlock>,
    pub skips: Vec<PartSkip>,
    /// Notes referred to in it, to be read at its chapter's end ([`NotesPolicy::ChapterEnd`]).
    pub end_notes: Vec<String>,
    /// Per block: all its text is links into the book (a contents page's line).
    linked: Vec<bool>,
}

#[derive(Debug, Default)]
pub(super) struct XhtmlDoc {
    /// `<title>`, else the first heading.
    pub title: Option<String>,
    /// The body, its first section or a nav in it is typed as front matter.
    pub front_matter: bool,
    pub parts: Vec<Part>,
    /// `ssml:ph` transcriptions that could not be used ([`super::ssml`]).
    pub ssml_warnings: Vec<String>,
}

const BLOCKS: &[&str] = &[
    "p",
    "div",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "li",
    "ul",
    "ol",
    "dl",
    "dt",
    "dd",
    "blockquote",
    "pre",
    "table",
    "tr",
    "td",
    "th",
    "caption",
    "figure",
    "figcaption",
    "section",
    "article",
    "header",
    "footer",
    "main",
    "body",
    "hr",
    "address",
    "aside",
    "nav",
    "hgroup",
    "text",
];
const HEADINGS: &[&str] = &["h1", "h2", "h3", "h4", "h5", "h6"];
/// `epub:type`s of a front-matter document.
const FRONT_TYPES: &[&str] = &[
    "frontmatter",
    "cover",
    "titlepage",
    "halftitlepage",
    "copyright-page",
    "toc",
    "dedication",
    "epigraph",
    "imprint",
];
/// SVG elements whose text is not the page's text.
const SVG_SILENT: &[&str] = &["title", "desc", "style", "defs", "metadata", "script"];
/// A run of this many blocks that are only links into the book is a printed contents page.
const CONTENTS_RUN: usize = 3;

/// Text being left out: why, and what it says.
struct Capture {
    reason: SkipReason,
    kind: Option<String>,
    /// The block it came before, in the part it started in (`parts`, `blocks`).
    at: (usize, usize),
    /// Its start, for the excerpt.
    text: String,
    /// All of its chars but whitespace.
    chars: usize,
}

impl Capture {
    fn new(reason: SkipReason, kind: Option<String>, at: (usize, usize)) -> Self {
        Self { reason, kind, at, text: String::new(), chars: 0 }
    }
}

/// What an open element changed, undone at its end.
#[derive(Default)]
struct Open {
    name: String,
    block: bool,
    /// It started a hard skip (its whole subtree), with a capture when recorded.
    hard_skip: bool,
    capture: bool,
    /// It pushed a section state (read or skipped), with a capture when skipped.
    section: bool,
    section_capture: bool,
    notes_section: bool,
    heading: bool,
    poem: bool,
    stanza: bool,
    /// A line of verse (an element per line): its end is a line break, not a block's end.
    verse_line: bool,
    /// A link: where its text starts in `buf`, its target, whether it leads into the book.
    link: Option<(usize, String)>,
    internal_link: bool,
    /// A page list's target: where its text starts in `buf`.
    page_target: Option<usize>,
    code: bool,
    table: bool,
    caption: bool,
    cell: bool,
    row: bool,
    head_rows: bool,
    svg: bool,
    /// The language it sets (`xml:lang`/`lang`): `Some(None)` for `""` (unknown: back to the
    /// document's language), `None` where it sets none.
    lang: Option<Option<String>>,
}

/// A table being read: its rows of cells, how many leading rows are headers.
#[derive(Default)]
struct TableBuild {
    rows: Vec<Vec<String>>,
    header_rows: usize,
    row_has_td: bool,
    in_head: bool,
}

/// The walk's state.
struct Walk<'c, 'a> {
    ctx: &'c Context<'a>,
    doc: XhtmlDoc,
    open: Vec<Open>,
    skip_depth: usize,
    captures: Vec<Capture>,
    /// Section states, innermost last: whether text under it is read.
    sections: Vec<bool>,
    section_captures: Vec<Capture>,
    notes_sections: usize,
    heading_depth: usize,
    poem_depth: usize,
    stanza_depth: usize,
    svg_depth: usize,
    in_title: bool,
    title: String,
    first_heading: Option<String>,
    /// The current block's text, whitespace collapsed as it comes; `\n` for a line break.
    buf: String,
    buf_heading: bool,
    /// Chars of the current block inside links into the book, and inside inline code.
    linked_chars: usize,
    code_chars: usize,
    code_depth: usize,
    internal_links: usize,
    /// Notes referred to in the current block, read after it ([`NotesPolicy::Inline`]).
    inline_notes: Vec<String>,
    table: Option<TableBuild>,
    seen_section: bool,
    /// A note marker in brackets was taken out: its closing bracket goes too.
    drop_closer: Option<char>,
    /// `ssml:ph` phones in place of the printed text.
    ssml: super::ssml::Phonemes,
    /// Where the language of `buf` changes: (byte offset, tag from there on). A later entry
    /// at the same offset wins; entries past the end of `buf` (cut back since) are stale.
    buf_langs: Vec<(usize, Option<String>)>,
}

/// Reads a content document; a part starts at each element whose `id` is in `ctx.starts`.
pub(super) fn read(xml: &str, ctx: &Context<'_>) -> Result<XhtmlDoc, String> {
    let mut r = reader(xml);
    let mut w = Walk::new(ctx);
    loop {
        let event = r.read_event().map_err(|e| xml_error(&r, &e))?;
        match event {
            Event::Start(e) => w.start(&e, false),
            Event::Empty(e) => w.start(&e, true),
            Event::End(_) => w.end(),
            Event::Text(t) => w.text(&t.xml10_content()),
            Event::CData(t) => w.text(&t.into_inner()),
            Event::GeneralRef(g) => w.text(&resolve_ref(&g)?),
            Event::Eof => break,
            _ => {}
        }
    }
    w.flush();
    let title = w.title.split_whitespace().collect::<Vec<_>>().join(" ");
    w.doc.title = Some(title).filter(|t| !t.is_empty()).or(w.first_heading);
    for part in &mut w.doc.parts {
        drop_contents_pages(part);
    }
    w.doc.ssml_warnings = std::mem::take(&mut w.ssml.warnings);
    w.doc.parts.retain(|p| !p.blocks.is_empty() || p.starts_at.is_some() || !p.skips.is_empty());
    Ok(w.doc)
}

impl<'c, 'a> Walk<'c, 'a> {
    fn new(ctx: &'c Context<'a>) -> Self {
        let mut doc = XhtmlDoc::default();
        doc.parts.push(Part::default());
        Self {
            ctx,
            doc,
            open: Vec::new(),
            skip_depth: 0,
            captures: Vec::new(),
            sections: Vec::new(),
            section_captures: Vec::new(),
            notes_sections: 0,
            heading_depth: 0,
            poem_depth: 0,
            stanza_depth: 0,
            svg_depth: 0,
            in_title: false,
            title: String::new(),
            first_heading: None,
            buf: String::new(),
            buf_heading: false,
            linked_chars: 0,
            code_chars: 0,
            code_depth: 0,
            internal_links: 0,
            inline_notes: Vec::new(),
            table: None,
            seen_section: false,
            drop_closer: None,
            ssml: super::ssml::Phonemes::default(),
            buf_langs: Vec::new(),
        }
    }

    fn part(&mut self) -> &mut Part {
        self.doc.parts.last_mut().expect("a part is open")
    }

    fn reading(&self) -> bool {
        self.skip_depth == 0 && self.sections.last().copied().unwrap_or(true)
    }

    fn start(&mut self, e: &BytesStart<'_>, empty: bool) {
        let name = local(e);
        if let Some(id) = attr(e, "id").filter(|id| self.ctx.starts.contains(id.as_str())) {
            self.flush();
            self.doc.parts.push(Part { starts_at: Some(id), ..Part::default() });
        }
        if name == "title" && self.open.len() == 2 && self.svg_depth == 0 && !empty {
            self.in_title = true;
        }
        let mut m = semantics::meaning(e, &name, self.ctx.policy);
        if name == "body" {
            self.apply_file_kinds(&mut m);
        }
        self.note_front_matter(&name, &m.kinds);
        if self.svg_depth > 0 && SVG_SILENT.contains(&name.as_str()) {
            m.silent = true;
        }
        if name == "svg" && !self.ctx.fixed_layout {
            m.silent = true;
        }
        if empty {
            self.empty_element(e, &name, &m);
            return;
        }
        let lang = element_language(e, &name);
        let mut open = Open { name: name.clone(), lang, ..Open::default() };
        self.open_skips(e, &m, &mut open);
        self.open_structure(e, &name, &m, &mut open);
        self.open.push(open);
        self.ssml.start(e, self.reading().then_some(self.buf.as_str()), self.ctx.file);
    }

    /// A self-closing element: a line break, or a page number marker to record.
    fn empty_element(&mut self, e: &BytesStart<'_>, name: &str, m: &Meaning) {
        if self.reading() && m.never == Some(SkipReason::PageNumber) {
            let label = attr(e, "title").or_else(|| attr(e, "aria-label")).unwrap_or_default();
            let chars = label.chars().count();
            self.record(SkipReason::PageNumber, None, label, chars);
            return;
        }
        if name == "br" && self.reading() {
            let in_cell = self.table.is_some();
            self.buf.push(if self.heading_depth > 0 || in_cell { ' ' } else { '\n' });
        } else if BLOCKS.contains(&name) && self.table.is_none() {
            self.flush();
        }
    }

    /// Starts skipping where the element is never read, or its section is not.
    fn open_skips(&mut self, e: &BytesStart<'_>, m: &Meaning, open: &mut Open) {
        let reads_notes = m.notes_section && self.reads_notes_section(e);
        let unread_note =
            m.noteref || (m.note && self.notes_sections == 0) || (m.notes_section && !reads_notes);
        let never = if unread_note { Some(SkipReason::Note) } else { m.never };
        if m.noteref {
            self.refer_to_note(attr(e, "href").as_deref());
        }
        if m.silent || never.is_some() {
            if self.skip_depth == 0 && self.sections.last().copied().unwrap_or(true) {
                if let Some(reason) = never {
                    let kind = m.kinds.first().cloned();
                    let at = self.position();
                    self.captures.push(Capture::new(reason, kind, at));
                    open.capture = true;
                }
            }
            self.skip_depth += 1;
            open.hard_skip = true;
            return;
        }
        if reads_notes {
            self.notes_sections += 1;
            open.notes_section = true;
            self.sections.push(true);
            open.section = true;
        } else if let Some((kind, skip)) = &m.section {
            let read = skip.is_none();
            if !read && self.reading() {
                let reason = skip.expect("skipped");
                let kind = Some(kind.clone());
                let at = self.position();
                self.section_captures.push(Capture::new(reason, kind, at));
                open.section_capture = true;
            }
            self.sections.push(read);
            open.section = true;
        }
        if self.ctx.page_targets.contains(attr(e, "id").unwrap_or_default().as_str())
            && self.reading()
        {
            open.page_target = Some(self.buf.len());
        }
    }

    /// Blocks, headings, verse, tables, links: how the element shapes what is read.
    fn open_structure(&mut self, e: &BytesStart<'_>, name: &str, m: &Meaning, open: &mut Open) {
        open.poem = m.poem;
        open.stanza = m.stanza;
        open.verse_line = self.is_verse_line(name, m);
        open.block = BLOCKS.contains(&name);
        if name == "svg" {
            self.svg_depth += 1;
            open.svg = true;
        }
        if name == "tspan" && self.svg_depth > 0 && self.reading() {
            self.join_printed_line();
        }
        if open.block {
            self.block_boundary(open.verse_line);
            if !self.reading() {
                self.capture_text(" ");
            }
        }
        if m.poem {
            self.poem_depth += 1;
        }
        if m.stanza {
            self.stanza_depth += 1;
        }
        if HEADINGS.contains(&name) {
            self.heading_depth += 1;
            open.heading = true;
        }
        if m.code {
            self.code_depth += 1;
            open.code = true;
        }
        if name == "a" {
            let href = attr(e, "href").unwrap_or_default();
            let internal = !href.is_empty() && !href.starts_with('#') && !href.contains(':');
            if internal {
                self.internal_links += 1;
                open.internal_link = true;
            }
            open.link = Some((self.buf.len(), href));
        }
        if !open.hard_skip {
            self.open_table_part(name, open);
        }
    }

    /// Where verse keeps a line apart instead of closing a block: an element per line inside
    /// a stanza, or a `div`/line-classed element directly inside a poem.
    fn is_verse_line(&self, name: &str, m: &Meaning) -> bool {
        if HEADINGS.contains(&name) || m.stanza || m.poem || !BLOCKS.contains(&name) {
            return false;
        }
        if self.stanza_depth > 0 {
            return true;
        }
        self.poem_depth > 0 && (name == "div" || m.line)
    }

    fn open_table_part(&mut self, name: &str, open: &mut Open) {
        match (name, self.table.is_some()) {
            ("table", false) => {
                self.flush();
                self.table = Some(TableBuild::default());
                open.table = true;
            }
            ("caption", true) => {
                self.buf.clear();
                open.caption = true;
            }
            ("thead", true) => {
                self.table.as_mut().expect("a table").in_head = true;
                open.head_rows = true;
            }
            ("tr", true) => {
                let t = self.table.as_mut().expect("a table");
                t.rows.push(Vec::new());
                t.row_has_td = false;
                open.row = true;
            }
            ("td" | "th", true) => {
                let t = self.table.as_mut().expect("a table");
                if name == "td" {
                    t.row_has_td = true;
                }
                self.buf.clear();
                open.cell = true;
            }
            _ => {}
        }
    }

    fn end(&mut self) {
        let Some(open) = self.open.pop() else { return };
        self.ssml.end(&mut self.buf);
        if open.name == "title" {
            self.in_title = false;
        }
        if let Some((from, href)) = &open.link {
            self.end_link(*from, href, open.internal_link);
        }
        if let Some(from) = open.page_target {
            if from <= self.buf.len() && is_page_number(&self.buf[from..]) {
                let number = self.buf[from..].trim().to_string();
                self.buf.truncate(from);
                let chars = number.chars().count();
                self.record(SkipReason::PageNumber, None, number, chars);
            }
        }
        self.close_table_part(&open);
        if open.block {
            self.block_boundary(open.verse_line);
        }
        if open.heading {
            self.heading_depth -= 1;
        }
        if open.code {
            self.code_depth -= 1;
        }
        if open.poem {
            self.poem_depth -= 1;
        }
        if open.stanza {
            self.stanza_depth -= 1;
        }
        if open.svg {
            self.svg_depth -= 1;
        }
        if open.hard_skip {
            self.skip_depth -= 1;
            if open.capture {
                let c = self.captures.pop().expect("a capture per skipping element");
                self.record_capture(c);
            }
        }
        if open.section {
            self.sections.pop();
            if open.section_capture {
                let c = self.section_captures.pop().expect("a capture per skipped section");
                self.record_capture(c);
            }
        }
        if open.notes_section {
            self.notes_sections -= 1;
        }
    }

    /// A link closes: a note marker is taken out of the text (and its note read where the
    /// policy says).
    fn end_link(&mut self, from: usize, href: &str, internal: bool) {
        if internal {
            self.internal_links -= 1;
        }
        if !self.reading() || from > self.buf.len() || !href.contains('#') {
            return;
        }
        let text = &self.buf[from..];
        if is_note_marker(text) && !text.trim().is_empty() {
            let marker = text.trim().to_string();
            self.buf.truncate(from);
            // `[<a>1</a>]`: the brackets were the marker's too.
            if let Some(open) = self.buf.strip_suffix(['[', '(']).map(|b| b.len()) {
                self.drop_closer = Some(if self.buf.ends_with('[') { ']' } else { ')' });
                self.buf.truncate(open);
            }
            let chars = marker.chars().count();
            self.record(SkipReason::Note, Some("noteref".into()), marker, chars);
            self.refer_to_note(Some(href));
        }
    }

    fn close_table_part(&mut self, open: &Open) {
        if open.caption {
            let text = self.buf.split_whitespace().collect::<Vec<_>>().join(" ");
            self.buf.clear();
            if !text.is_empty() {
                let part = self.part();
                part.blocks.push(DocBlock::body(text));
                part.linked.push(false);
            }
        }
        if open.cell {
            let text = self.buf.split_whitespace().collect::<Vec<_>>().join(" ");
            self.buf.clear();
            self.linked_chars = 0;
            if let Some(row) = self.table.as_mut().and_then(|t| t.rows.last_mut()) {
                row.push(text);
            }
        }
        if open.row {
            let t = self.table.as_mut().expect("a table");
            let header = t.in_head || !t.row_has_td;
            if header && t.header_rows + 1 == t.rows.len() {
                t.header_rows += 1;
            }
        }
        if open.head_rows {
            self.table.as_mut().expect("a table").in_head = false;
        }
        if open.table {
            let t = self.table.take().expect("a table");
            self.buf.clear();
            let blocks = crate::table::table_blocks(&t.rows, t.header_rows);
            let part = self.part();
            for b in blocks {
                part.blocks.push(b);
                part.linked.push(false);
            }
        }
    }

    /// A block element starts or ends: the current block closes, or (inside verse) a line.
    fn block_boundary(&mut self, verse_line: bool) {
        if self.table.is_some() {
            // Inside a cell, blocks are only spaces; captions are read before the rows.
            if !self.buf.ends_with(' ') && !self.buf.is_empty() {
                self.buf.push(' ');
            }
            return;
        }
        if verse_line {
            if !self.buf.trim().is_empty() && !self.buf.ends_with('\n') {
                self.buf.push('\n');
            }
        } else {
            self.flush();
        }
    }

    /// The guide's or landmarks' kinds of the whole file act as kinds of its body.
    fn apply_file_kinds(&self, m: &mut Meaning) {
        for k in &self.ctx.file_kinds {
            let k = crate::policy::canonical_kind(k);
            if matches!(k, "toc" | "loi" | "lot" | "index") {
                m.never = m.never.or(Some(SkipReason::Navigation));
            } else if m.section.is_none() {
                if let Some(reason) = crate::policy::section_skip(self.ctx.policy, k) {
                    m.section = Some((k.to_string(), Some(reason)));
                }
            }
            m.kinds.push(k.to_string());
        }
    }

    /// Whether a notes section is read as a chapter: notes are not read where they are
    /// referred to, the policy reads notes, and the contents list the section.
    fn reads_notes_section(&self, e: &BytesStart<'_>) -> bool {
        let policy = self.ctx.policy;
        if policy.notes != NotesPolicy::Skip || policy.skips("notes") {
            return false;
        }
        let id = attr(e, "id").unwrap_or_default();
        let listed_here = !id.is_empty() && self.ctx.toc_targets.contains(id.as_str());
        let file_listed = self.ctx.toc_targets.contains("") && self.notes_sections == 0;
        listed_here || file_listed
    }

    /// A reference to a note: under `inline` it is read after this block, under
    /// `chapter-end` at the chapter's end.
    fn refer_to_note(&mut self, href: Option<&str>) {
        let policy = self.ctx.policy.notes;
        let Some(href) = href.filter(|_| policy != NotesPolicy::Skip && self.reading()) else {
            return;
        };
        let key = resolve_href(self.ctx.file, href);
        let Some(text) = self.ctx.notes.get(&key).cloned() else { return };
        match policy {
            NotesPolicy::Inline => self.inline_notes.push(text),
            NotesPolicy::ChapterEnd => self.part().end_notes.push(text),
            NotesPolicy::Skip => {}
        }
    }

    /// A document typed as front matter on its body, its first section or a contents nav.
    fn note_front_matter(&mut self, name: &str, kinds: &[String]) {
        let first_section = name == "section" && !std::mem::replace(&mut self.seen_section, true);
        let typed_front = kinds.iter().any(|t| FRONT_TYPES.contains(&t.as_str()));
        if typed_front && (name == "body" || first_section || name == "nav") {
            self.doc.front_matter = true;
        }
    }

    fn text(&mut self, s: &str) {
        if self.in_title {
            self.title.push_str(s);
            return;
        }
        if !self.reading() {
            self.capture_text(s);
            return;
        }
        self.ssml.before_text(&mut self.buf, s);
        let before = self.buf.len();
        self.note_language(before);
        let mut chars = s.chars().filter(|c| !is_invisible(*c)).peekable();
        if let Some(closer) = self.drop_closer.take() {
            while chars.peek().is_some_and(|c| c.is_whitespace()) {
                chars.next();
            }
            if chars.peek() == Some(&closer) {
                chars.next();
            }
        }
        for c in chars {
            if c.is_whitespace() {
                if !self.buf.ends_with([' ', '\n']) && !self.buf.is_empty() {
                    self.buf.push(' ');
                }
            } else {
                self.buf.push(c);
            }
        }
        let added = self.buf[before..].chars().filter(|c| !c.is_whitespace()).count();
        if self.internal_links > 0 {
            self.linked_chars += added;
        }
        if self.code_depth > 0 {
            self.code_chars += added;
        }
        if self.heading_depth > 0 && !s.trim().is_empty() {
            self.buf_heading = true;
        }
    }

    /// The language of the open elements, innermost first (`None`: the document's).
    fn language(&self) -> Option<String> {
        self.open.iter().rev().find_map(|o| o.lang.clone()).flatten()
    }

    /// Text is about to be added at `at`: where its language differs from the one `buf` ends
    /// in, a change is noted there.
    fn note_language(&mut self, at: usize) {
        self.buf_langs.retain(|(o, _)| *o <= at);
        let current = self.language();
        let before = self.buf_langs.last().and_then(|(_, t)| t.as_ref());
        if before != current.as_ref() {
            self.buf_langs.push((at, current));
        }
    }

    /// A printed line of a fixed-layout page starts (an SVG `tspan`): it follows the last one
    /// after a space, or joined to it where a word was hyphenated at the line's end.
    fn join_printed_line(&mut self) {
        let hyphenated = self
            .buf
            .strip_suffix('-')
            .is_some_and(|b| b.chars().next_back().is_some_and(char::is_alphabetic));
        if hyphenated {
            self.buf.pop();
        } else if !self.buf.is_empty() && !self.buf.ends_with([' ', '\n']) {
            self.buf.push(' ');
        }
    }

    /// Text that is not read goes to the outermost record of what is skipped.
    fn capture_text(&mut self, s: &str) {
        let capture = if self.skip_depth > 0 {
            self.captures.first_mut()
        } else {
            self.section_captures.last_mut()
        };
        if let Some(c) = capture {
            // Skipped text counts whole, however little of it the excerpt keeps.
            c.chars += s.chars().filter(|c| !c.is_whitespace()).count();
            if c.text.len() < 4 * crate::document::SKIP_EXCERPT_CHARS {
                c.text.push_str(s);
            }
        }
    }

    /// Where the next block goes: (part, block).
    fn position(&self) -> (usize, usize) {
        let part = self.doc.parts.len() - 1;
        (part, self.doc.parts[part].blocks.len())
    }

    /// Records a skipped element where it started (when its part is still the one open).
    fn record_capture(&mut self, c: Capture) {
        let len = self.record_len();
        self.record(c.reason, c.kind, c.text, c.chars);
        if c.at.0 + 1 == self.doc.parts.len() && self.record_len() > len {
            if let Some(last) = self.part().skips.last_mut() {
                last.block = c.at.1;
            }
        }
    }

    fn record_len(&self) -> usize {
        self.doc.parts.last().map_or(0, |p| p.skips.len())
    }

    /// Records a stretch left out, before the block being read.
    fn record(&mut self, reason: SkipReason, kind: Option<String>, text: String, chars: usize) {
        let text = excerpt(&text);
        if text.is_empty() && !matches!(reason, SkipReason::PageNumber) {
            return;
        }
        let part = self.part();
        let block = part.blocks.len();
        part.skips.push(PartSkip { block, reason, kind, text, chars });
    }

    /// Closes the current block: lines trimmed, empty lines dropped; a block of several lines
    /// is a stanza.
    fn flush(&mut self) {
        let lines: Vec<&str> =
            self.buf.split('\n').map(str::trim).filter(|l| !l.is_empty()).collect();
        if !lines.is_empty() {
            let languages = line_languages(&self.buf, &self.buf_langs);
            let text = lines.join("\n");
            let kind = if self.buf_heading { SegmentKind::Heading } else { SegmentKind::Body };
            if kind == SegmentKind::Heading && self.first_heading.is_none() {
                self.first_heading = Some(text.replace('\n', " "));
            }
            let total = text.chars().filter(|c| !c.is_whitespace()).count();
            let linked = self.linked_chars >= total && total > 0;
            let verse = lines.len() > 1 && kind == SegmentKind::Body;
            if self.code_chars >= total && self.ctx.policy.skips("code") {
                self.record(SkipReason::Code, Some("code".into()), text, total);
            } else {
                let part = self.part();
                part.blocks.push(DocBlock { kind, text, verse, languages });
                part.linked.push(linked);
            }
        }
        for note in std::mem::take(&mut self.inline_notes) {
            let part = self.part();
            part.blocks.push(DocBlock::body(format!("Note: {note}")));
            part.linked.push(false);
        }
        self.buf.clear();
        self.buf_langs.clear();
        self.buf_heading = false;
        self.linked_chars = 0;
        self.code_chars = 0;
        // Links still open now span blocks; their text is no marker.
        for open in &mut self.open {
            if let Some((from, _)) = open.link.as_mut() {
                *from = usize::MAX;
            }
            open.page_target = None;
        }
    }
}

/// The language an element sets: `xml:lang`, else `lang` (lower case, when it is a BCP 47
/// tag); `Some(None)` for an empty one. The root's is the document's own, not a stretch's.
fn element_language(e: &BytesStart<'_>, name: &str) -> Option<Option<String>> {
    if name == "html" {
        return None;
    }
    let value = attr(e, "xml:lang").or_else(|| attr(e, "lang"))?;
    let tag = value.trim().to_ascii_lowercase();
    // Undetermined, no language, several: the text around decides.
    if matches!(tag.as_str(), "" | "und" | "zxx" | "mul") {
        return Some(None);
    }
    crate::markup::is_language_tag(&tag).then_some(Some(tag))
}

/// The language stretches of the block `flush` makes of `buf` (its lines trimmed, empty ones
/// dropped, joined with `\n`): `marks` (offsets in `buf`) moved to that text, adjacent
/// stretches of one tag merged.
fn line_languages(
    buf: &str,
    marks: &[(usize, Option<String>)],
) -> Vec<(std::ops::Range<usize>, String)> {
    let marks: Vec<&(usize, Option<String>)> =
        marks.iter().filter(|(o, _)| *o <= buf.len()).collect();
    if marks.iter().all(|(_, t)| t.is_none()) {
        return Vec::new();
    }
    let tag_at = |q: usize| marks.iter().rev().find(|(o, _)| *o <= q).and_then(|(_, t)| t.clone());
    let mut out: Vec<(std::ops::Range<usize>, String)> = Vec::new();
    let mut joined = 0;
    let mut at = 0;
    for raw in buf.split('\n') {
        let line = raw.trim();
        let from = at + (raw.len() - raw.trim_start().len());
        at += raw.len() + 1;
        if line.is_empty() {
            continue;
        }
        let mut cuts: Vec<usize> = marks
            .iter()
            .map(|(o, _)| *o)
            .filter(|o| (from..from + line.len()).contains(o))
            .chain([from])
            .collect();
        cuts.sort_unstable();
        cuts.dedup();
        for (k, &c) in cuts.iter().enumerate() {
            let end = cuts.get(k + 1).copied().unwrap_or(from + line.len());
            let Some(tag) = tag_at(c) else { continue };
            let range = joined + c - from..joined + end - from;
            match out.last_mut() {
                // One stretch across the line break between two lines of one language.
                Some((r, t)) if *t == tag && r.end + 1 >= range.start => r.end = range.end,
                _ => out.push((range, tag)),
            }
        }
        joined += line.len() + 1;
    }
    out
}

/// Characters that are never seen nor said: soft hyphens, zero-width spaces and joiners, the
/// word joiner (Standard Ebooks puts one before every em dash), the byte-order mark.
fn is_invisible(c: char) -> bool {
    matches!(c, '\u{ad}' | '\u{200b}'..='\u{200d}' | '\u{2060}' | '\u{feff}')
}
