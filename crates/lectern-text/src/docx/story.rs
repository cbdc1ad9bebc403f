//! WordprocessingML stories (the document body, each footnote, endnote and comment) →
//! paragraphs and tables of plain text, with what the text left out where it was.
//!
//! Read: `w:t`, `w:tab` (a space), `w:noBreakHyphen` (`-`), text line breaks (`w:br` without a
//! type or `textWrapping`, `w:cr`), the text of hyperlinks, content controls, tracked
//! insertions and field results. Not read: page and column breaks, `w:sym` symbols, field
//! instructions, tables of contents and indexes (their field results), tracked deletions and
//! moves away (`w:del`, `w:moveFrom`), hidden runs (`w:vanish`, directly or by style), ruby
//! annotations, drawings, text boxes and embedded objects, and earlier formatting kept by
//! tracked changes (`w:pPrChange`, …). Note references and comment anchors are recorded where
//! they stand.

use quick_xml::events::{BytesStart, Event};

use super::styles::Styles;
use super::xml::{attr, is_on, local, reader, resolve_ref, xml_error};
use crate::SkipReason;

/// Elements whose whole content is not read: drawings and text boxes (their text is laid out
/// apart from the flow), ruby annotations, content-control properties, field data, and the
/// previous properties a tracked formatting change keeps.
const SKIPPED: &[&str] = &[
    "drawing",
    "pict",
    "object",
    "AlternateContent",
    "txbxContent",
    "rt",
    "sdtPr",
    "fldData",
    "delInstrText",
    "pPrChange",
    "rPrChange",
    "tblPrChange",
    "trPrChange",
    "tcPrChange",
    "sectPrChange",
    "numberingChange",
];

/// Fields whose results are navigation, never read: contents, indexes, cross-reference lists.
const NAVIGATION_FIELDS: &[&str] = &["TOC", "INDEX", "TOA"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum NoteKind {
    Footnote,
    Endnote,
}

/// Something in the text that is not read as text, where it stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Inline {
    /// A comment's range starts (or its reference stands) here: its id.
    Comment(String),
    /// A note reference: the note's id.
    Note(NoteKind, String),
    /// Text left out (deleted, hidden, navigation).
    Left(SkipReason, String),
}

#[derive(Debug, Default)]
pub(super) struct Paragraph {
    pub style: Option<String>,
    /// Its own `w:outlineLvl`.
    pub outline: Option<u8>,
    /// Its text, split at line breaks, whitespace collapsed.
    pub lines: Vec<String>,
    pub inlines: Vec<Inline>,
}

impl Paragraph {
    /// The non-empty lines.
    pub fn text_lines(&self) -> impl Iterator<Item = &str> {
        self.lines.iter().map(String::as_str).filter(|l| !l.is_empty())
    }

    /// Its text on one line.
    pub fn text(&self) -> String {
        self.text_lines().collect::<Vec<_>>().join(" ")
    }
}

#[derive(Debug, Default)]
pub(super) struct Table {
    /// Cell texts, row by row (a merged cell's value repeated in the cells it covers).
    pub rows: Vec<Vec<String>>,
    /// How many rows at the top repeat as a header (`w:tblHeader`).
    pub header_rows: usize,
    pub inlines: Vec<Inline>,
}

#[derive(Debug)]
pub(super) enum Item {
    Paragraph(Paragraph),
    Table(Table),
}

/// A story: the body, or one note or comment.
#[derive(Debug, Default)]
pub(super) struct Story {
    /// `w:id` of a note or comment.
    pub id: Option<String>,
    /// It has a `w:type` (a note separator, not a note).
    pub special: bool,
    pub items: Vec<Item>,
}

impl Story {
    /// The story's text on one line (a note's or a comment's), paragraphs and cells joined.
    pub fn text(&self) -> String {
        let parts = self.items.iter().map(|item| match item {
            Item::Paragraph(p) => p.text(),
            Item::Table(t) => t.rows.iter().flatten().cloned().collect::<Vec<_>>().join(" "),
        });
        parts.filter(|p| !p.is_empty()).collect::<Vec<_>>().join(" ")
    }
}

/// Parses the stories of a part: each element named in `containers` (`body`; `footnote`;
/// `comment`) is one.
pub(super) fn parse(xml: &str, containers: &[&str], styles: &Styles) -> Result<Vec<Story>, String> {
    let mut p = Parser::new(styles, containers);
    let mut r = reader(xml);
    loop {
        let event = r.read_event().map_err(|e| xml_error(&r, &e))?;
        match event {
            Event::Start(e) => p.start(&e),
            Event::Empty(e) => p.empty(&e),
            Event::End(e) => p.end(AsRef::<str>::as_ref(&e.local_name())),
            Event::Text(t) => p.text(&t.xml10_content()),
            Event::GeneralRef(g) => p.text(&resolve_ref(&g)?),
            Event::CData(c) => p.text(&c.into_inner()),
            Event::Eof => break,
            _ => {}
        }
    }
    Ok(p.stories)
}

/// An open field: its instruction so far, and whether its result part has begun.
#[derive(Debug, Default)]
struct Field {
    instruction: String,
    in_result: bool,
}

impl Field {
    fn is_navigation(&self) -> bool {
        let word = self.instruction.split_whitespace().next().unwrap_or_default();
        NAVIGATION_FIELDS.iter().any(|n| n.eq_ignore_ascii_case(word))
    }
}

/// Where a piece of text goes.
enum Sink {
    Read,
    Drop,
    Left(SkipReason),
}

#[derive(Debug, Default)]
struct Run {
    /// `w:vanish` of the run's own properties.
    vanish: Option<bool>,
    /// Its character style.
    style: Option<String>,
}

#[derive(Debug, Default)]
struct Cell {
    text: String,
    /// Its column in the row.
    col: usize,
    /// How many grid columns it spans.
    span: usize,
    /// It continues the vertically merged cell above.
    continues: bool,
}

#[derive(Debug, Default)]
struct Row {
    cells: Vec<String>,
    header: bool,
}

#[derive(Debug, Default)]
struct TableBuild {
    rows: Vec<Row>,
    row: Option<Row>,
    cell: Option<Cell>,
    inlines: Vec<Inline>,
}

struct Parser<'a> {
    styles: &'a Styles,
    containers: &'a [&'a str],
    /// Local names of the open elements.
    path: Vec<String>,
    /// Depth inside an element whose content is not read (0: reading).
    skip_depth: usize,
    stories: Vec<Story>,
    story: Option<Story>,
    para: Option<Paragraph>,
    run: Run,
    fields: Vec<Field>,
    tables: Vec<TableBuild>,
    /// Text being left out, by reason, until it ends.
    left: Option<(SkipReason, String)>,
    /// What stands outside a paragraph, for the next one.
    pending: Vec<Inline>,
}

impl<'a> Parser<'a> {
    fn new(styles: &'a Styles, containers: &'a [&'a str]) -> Self {
        Self {
            styles,
            containers,
            path: Vec::new(),
            skip_depth: 0,
            stories: Vec::new(),
            story: None,
            para: None,
            run: Run::default(),
            fields: Vec::new(),
            tables: Vec::new(),
            left: None,
            pending: Vec::new(),
        }
    }

    fn start(&mut self, e: &BytesStart<'_>) {
        if self.skip_depth > 0 {
            self.skip_depth += 1;
            return;
        }
        let name = local(e);
        if SKIPPED.contains(&name.as_str()) {
            self.skip_depth = 1;
            return;
        }
        self.open(&name, e);
        self.path.push(name);
    }

    /// A self-closing element: opened and closed at once.
    fn empty(&mut self, e: &BytesStart<'_>) {
        let name = local(e);
        if self.skip_depth == 0 && !SKIPPED.contains(&name.as_str()) {
            self.open(&name, e);
            self.close(&name);
        }
    }

    fn end(&mut self, name: &str) {
        if self.skip_depth > 0 {
            self.skip_depth -= 1;
            return;
        }
        self.path.pop();
        self.close(name);
    }

    fn parent(&self) -> &str {
        self.path.last().map_or("", String::as_str)
    }

    /// The parent's parent (`r` for a run property).
    fn grandparent(&self) -> &str {
        self.path.iter().rev().nth(1).map_or("", String::as_str)
    }

    fn open(&mut self, name: &str, e: &BytesStart<'_>) {
        let parent = self.parent().to_string();
        match name {
            _ if self.containers.contains(&name) => {
                self.story = Some(Story {
                    id: attr(e, "id"),
                    special: attr(e, "type").is_some_and(|t| t != "normal"),
                    items: Vec::new(),
                });
            }
            "p" => {
                self.para = Some(Paragraph { lines: vec![String::new()], ..Paragraph::default() })
            }
            "pStyle" if parent == "pPr" => {
                if let Some(p) = self.para.as_mut() {
                    p.style = attr(e, "val");
                }
            }
            "outlineLvl" if parent == "pPr" => {
                if let Some(p) = self.para.as_mut() {
                    p.outline = attr(e, "val").and_then(|v| v.parse().ok());
                }
            }
            "r" => self.run = Run::default(),
            "rStyle" | "vanish" if parent == "rPr" && self.grandparent() == "r" => {
                if name == "rStyle" {
                    self.run.style = attr(e, "val");
                } else {
                    self.run.vanish = Some(is_on(e));
                }
            }
            _ if parent == "r" => self.run_content(name, e),
            "fldSimple" => {
                let instruction = attr(e, "instr").unwrap_or_default();
                self.fields.push(Field { instruction, in_result: true });
            }
            "commentRangeStart" => self.inline(Inline::Comment(attr(e, "id").unwrap_or_default())),
            _ => self.open_table_part(name, &parent, e),
        }
    }

    /// A run's child: text, a tab, a break, a field character, a note or comment reference.
    fn run_content(&mut self, name: &str, e: &BytesStart<'_>) {
        match name {
            "tab" | "ptab" => self.text_piece(" "),
            "noBreakHyphen" => self.text_piece("-"),
            "br" | "cr" => {
                let kind = attr(e, "type");
                if matches!(kind.as_deref(), None | Some("textWrapping")) {
                    self.line_break();
                }
            }
            "fldChar" => match attr(e, "fldCharType").as_deref() {
                Some("begin") => self.fields.push(Field::default()),
                Some("separate") => {
                    if let Some(f) = self.fields.last_mut() {
                        f.in_result = true;
                    }
                }
                Some("end") => {
                    self.fields.pop();
                }
                _ => {}
            },
            "footnoteReference" | "endnoteReference" => {
                let kind =
                    if name == "endnoteReference" { NoteKind::Endnote } else { NoteKind::Footnote };
                // A note whose reference is deleted or hidden goes with it.
                if matches!(self.sink(), Sink::Read) {
                    self.inline(Inline::Note(kind, attr(e, "id").unwrap_or_default()));
                }
            }
            "commentReference" => self.inline(Inline::Comment(attr(e, "id").unwrap_or_default())),
            _ => {}
        }
    }

    fn open_table_part(&mut self, name: &str, parent: &str, e: &BytesStart<'_>) {
        if name == "tbl" {
            self.tables.push(TableBuild::default());
            return;
        }
        let Some(table) = self.tables.last_mut() else { return };
        match (name, parent) {
            ("tr", _) => table.row = Some(Row::default()),
            ("tblHeader", "trPr") => {
                if let Some(row) = table.row.as_mut() {
                    row.header = is_on(e);
                }
            }
            ("tc", _) => {
                let col = table.row.as_ref().map_or(0, |r| r.cells.len());
                table.cell = Some(Cell { col, span: 1, ..Cell::default() });
            }
            ("gridSpan", "tcPr") => {
                if let Some(cell) = table.cell.as_mut() {
                    cell.span = attr(e, "val").and_then(|v| v.parse().ok()).unwrap_or(1);
                }
            }
            ("vMerge", "tcPr") => {
                if let Some(cell) = table.cell.as_mut() {
                    cell.continues = attr(e, "val").as_deref() != Some("restart");
                }
            }
            _ => {}
        }
    }

    fn close(&mut self, name: &str) {
        match name {
            _ if self.containers.contains(&name) => self.finish_story(),
            "p" => self.finish_paragraph(),
            "r" => self.run = Run::default(),
            "del" | "moveFrom" | "fldSimple" => {
                self.flush_left();
                if name == "fldSimple" {
                    self.fields.pop();
                }
            }
            "fldChar" if self.fields.is_empty() => self.flush_left(),
            "tc" => self.finish_cell(),
            "tr" => {
                if let Some(t) = self.tables.last_mut() {
                    t.rows.extend(t.row.take());
                }
            }
            "tbl" => self.finish_table(),
            _ => {}
        }
    }

    /// Character data: read inside `w:t` and `w:delText`; a field's instruction inside
    /// `w:instrText`; whitespace between elements elsewhere.
    fn text(&mut self, text: &str) {
        if self.skip_depth > 0 {
            return;
        }
        match self.parent() {
            "t" | "delText" => self.text_piece(text),
            "instrText" => {
                if let Some(f) = self.fields.last_mut().filter(|f| !f.in_result) {
                    f.instruction.push_str(text);
                }
            }
            _ => {}
        }
    }

    /// Where text at this point goes.
    fn sink(&self) -> Sink {
        if self.fields.iter().any(|f| !f.in_result) {
            return Sink::Drop;
        }
        if self.path.iter().any(|p| p == "del" || p == "moveFrom") {
            return Sink::Left(SkipReason::Deletion);
        }
        if self.fields.iter().any(Field::is_navigation) {
            return Sink::Left(SkipReason::Navigation);
        }
        if self.run_hidden() {
            return Sink::Left(SkipReason::Hidden);
        }
        Sink::Read
    }

    /// The run is hidden by its own properties, else by its character style, else by its
    /// paragraph's style.
    fn run_hidden(&self) -> bool {
        let para_style = self.para.as_ref().and_then(|p| p.style.as_deref());
        self.run
            .vanish
            .or_else(|| self.styles.hides(self.run.style.as_deref()))
            .or_else(|| self.styles.hides(para_style))
            .unwrap_or(false)
    }

    fn text_piece(&mut self, text: &str) {
        match self.sink() {
            Sink::Drop => {}
            Sink::Left(reason) => match self.left.as_mut() {
                Some((r, buf)) if *r == reason => buf.push_str(text),
                _ => {
                    self.flush_left();
                    self.left = Some((reason, text.to_string()));
                }
            },
            Sink::Read => {
                self.flush_left();
                if let Some(line) = self.para.as_mut().and_then(|p| p.lines.last_mut()) {
                    line.push_str(text);
                }
            }
        }
    }

    fn line_break(&mut self) {
        match self.sink() {
            Sink::Read => {
                self.flush_left();
                if let Some(p) = self.para.as_mut() {
                    p.lines.push(String::new());
                }
            }
            _ => self.text_piece(" "),
        }
    }

    /// Records the text left out so far, if it has any.
    fn flush_left(&mut self) {
        if let Some((reason, text)) = self.left.take() {
            if !text.trim().is_empty() {
                self.inline(Inline::Left(reason, text));
            }
        }
    }

    fn inline(&mut self, inline: Inline) {
        if let Some(p) = self.para.as_mut() {
            p.inlines.push(inline);
        } else if let Some(t) = self.tables.last_mut() {
            t.inlines.push(inline);
        } else {
            self.pending.push(inline);
        }
    }

    fn finish_paragraph(&mut self) {
        // A contents field runs over many paragraphs and is recorded once, where it ends.
        if self.fields.iter().any(Field::is_navigation) {
            if let Some((_, text)) = self.left.as_mut() {
                text.push(' ');
            }
        } else {
            self.flush_left();
        }
        let Some(mut p) = self.para.take() else { return };
        for line in &mut p.lines {
            *line = collapse(line);
        }
        let mut inlines = std::mem::take(&mut self.pending);
        inlines.append(&mut p.inlines);
        p.inlines = inlines;
        if let Some(table) = self.tables.last_mut() {
            if let Some(cell) = table.cell.as_mut() {
                append_words(&mut cell.text, &p.text());
            }
            table.inlines.append(&mut p.inlines);
        } else if let Some(story) = self.story.as_mut() {
            story.items.push(Item::Paragraph(p));
        }
    }

    fn finish_cell(&mut self) {
        let Some(table) = self.tables.last_mut() else { return };
        let (Some(cell), Some(row)) = (table.cell.take(), table.row.as_mut()) else { return };
        let text = if cell.continues {
            let above = table.rows.last().and_then(|r| r.cells.get(cell.col));
            above.cloned().unwrap_or_default()
        } else {
            cell.text
        };
        row.cells.push(text);
        // A cell spanning several columns leaves the ones it covers empty, so the columns
        // after it keep their headers.
        row.cells.extend(std::iter::repeat_n(String::new(), cell.span.saturating_sub(1)));
    }

    fn finish_table(&mut self) {
        let Some(t) = self.tables.pop() else { return };
        let header_rows = t.rows.iter().take_while(|r| r.header).count();
        let rows: Vec<Vec<String>> = t.rows.into_iter().map(|r| r.cells).collect();
        if let Some(parent) = self.tables.last_mut() {
            // A table inside a cell is read as part of that cell's text.
            if let Some(cell) = parent.cell.as_mut() {
                append_words(&mut cell.text, &rows.concat().join(" "));
            }
            parent.inlines.extend(t.inlines);
        } else if let Some(story) = self.story.as_mut() {
            story.items.push(Item::Table(Table { rows, header_rows, inlines: t.inlines }));
        }
    }

    fn finish_story(&mut self) {
        self.flush_left();
        let Some(mut story) = self.story.take() else { return };
        if !self.pending.is_empty() {
            // Anchors after the last paragraph travel on an empty one.
            let inlines = std::mem::take(&mut self.pending);
            story.items.push(Item::Paragraph(Paragraph { inlines, ..Paragraph::default() }));
        }
        self.stories.push(story);
    }
}

/// `text` with runs of spaces, tabs and newlines made one space, trimmed (no-break spaces are
/// kept, as they were written on purpose).
fn collapse(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for word in text.split([' ', '\t', '\n', '\r']).filter(|w| !w.is_empty()) {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// Appends words to a cell's text, a space between.
fn append_words(to: &mut String, words: &str) {
    let words = collapse(words);
    if words.is_empty() {
        return;
    }
    if !to.is_empty() {
        to.push(' ');
    }
    to.push_str(&words);
}
