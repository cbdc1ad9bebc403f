//! The body's paragraphs and tables → chapters of blocks, with marks, notes and the record of
//! what was left out (positions are chapter indices and the index of the next block).

use std::collections::{BTreeSet, HashMap, HashSet};

use super::story::{Inline, Item, NoteKind, Paragraph, Table};
use super::styles::{Role, Styles};
use crate::document::excerpt;
use crate::policy::section_skip;
use crate::table::table_blocks;
use crate::{
    DocBlock, DocChapter, DocMark, DocSkip, Document, NotesPolicy, ReadPolicy, SkipReason,
};

/// The heading notes read at a chapter's end are under.
const NOTES_HEADING: &str = "Notes";

/// The notes and comments the body refers to (texts by id) and the parts they came from.
#[derive(Debug, Default)]
pub(super) struct Notes {
    pub footnotes: HashMap<String, String>,
    pub endnotes: HashMap<String, String>,
    pub comments: HashMap<String, String>,
    pub footnotes_part: Option<String>,
    pub endnotes_part: Option<String>,
    pub comments_part: Option<String>,
    pub main_part: String,
}

/// The document (its info left empty) and the text of its first `Title` paragraph.
pub(super) fn document(
    items: Vec<Item>,
    styles: &Styles,
    notes: &Notes,
    policy: &ReadPolicy,
) -> (Document, Option<String>) {
    let roles: Vec<Role> = items
        .iter()
        .map(|item| match item {
            Item::Paragraph(p) if !p.text().is_empty() => {
                styles.role(p.style.as_deref(), p.outline)
            }
            _ => Role::Body,
        })
        .collect();
    let levels: BTreeSet<u8> = roles
        .iter()
        .filter_map(|r| if let Role::Heading(n) = r { Some(*n) } else { None })
        .collect();
    let mut b = Builder {
        notes,
        policy,
        doc: Document::default(),
        chapter_notes: Vec::new(),
        comments_seen: HashSet::new(),
        title: None,
    };
    for (item, role) in items.into_iter().zip(roles) {
        match (item, role) {
            (Item::Paragraph(p), Role::Heading(n)) => b.heading(&p, n, &levels),
            (Item::Paragraph(p), Role::Title) => {
                b.title.get_or_insert_with(|| p.text());
                let at = b.push_blocks(vec![DocBlock::heading(p.text())]);
                b.inlines(&p.inlines, at);
            }
            (Item::Paragraph(p), Role::Body) => b.paragraph(&p),
            (Item::Table(t), _) => b.table(&t),
        }
    }
    b.close_chapter();
    (b.doc, b.title)
}

struct Builder<'a> {
    notes: &'a Notes,
    policy: &'a ReadPolicy,
    doc: Document,
    /// The open chapter's notes, read at its end ([`NotesPolicy::ChapterEnd`]).
    chapter_notes: Vec<String>,
    /// Comments already recorded (a comment's range start and its reference both point at it).
    comments_seen: HashSet<String>,
    title: Option<String>,
}

impl Builder<'_> {
    /// A top-level heading opens a chapter; a deeper one is a section mark in it.
    fn heading(&mut self, p: &Paragraph, level: u8, levels: &BTreeSet<u8>) {
        let text = p.text();
        let depth = levels.iter().filter(|l| **l < level).count();
        if depth == 0 {
            self.close_chapter();
            self.doc
                .chapters
                .push(DocChapter { title: Some(text.clone()), ..DocChapter::default() });
        } else {
            let block = self.chapter().blocks.len();
            self.chapter().marks.push(DocMark { title: text.clone(), block, depth });
        }
        let at = self.push_blocks(vec![DocBlock::heading(text)]);
        self.inlines(&p.inlines, at);
    }

    /// A paragraph: prose, or a stanza when it has line breaks.
    fn paragraph(&mut self, p: &Paragraph) {
        let lines: Vec<&str> = p.text_lines().collect();
        let blocks = match lines.len() {
            0 => Vec::new(),
            1 => vec![DocBlock::body(lines[0])],
            _ => vec![DocBlock::stanza(lines.join("\n"))],
        };
        if blocks.is_empty() && p.inlines.is_empty() {
            return;
        }
        let at = self.push_blocks(blocks);
        self.inlines(&p.inlines, at);
    }

    /// A table, read row by row unless the policy skips tables.
    fn table(&mut self, t: &Table) {
        if let Some(reason) = section_skip(self.policy, "table") {
            let text = t.rows.iter().flatten().cloned().collect::<Vec<_>>().join(" ");
            let at = self.chapter().blocks.len();
            let file = Some(self.notes.main_part.clone());
            self.skip(at, reason, Some("table"), &text, file);
            // Its notes go with it; what else it holds is recorded as usual.
            for inline in &t.inlines {
                match inline {
                    Inline::Note(kind, id) => self.skip_note(*kind, id, at),
                    other => self.inlines(std::slice::from_ref(other), at),
                }
            }
            return;
        }
        let at = self.push_blocks(table_blocks(&t.rows, t.header_rows));
        self.inlines(&t.inlines, at);
    }

    /// Records what stands in an item whose first block is `at`; notes read inline follow
    /// the item's blocks.
    fn inlines(&mut self, inlines: &[Inline], at: usize) {
        let mut after = Vec::new();
        for inline in inlines {
            match inline {
                Inline::Comment(id) => {
                    if self.comments_seen.insert(id.clone()) {
                        let text = self.notes.comments.get(id).cloned().unwrap_or_default();
                        let file = self.notes.comments_part.clone();
                        self.skip(at, SkipReason::Comment, None, &text, file);
                    }
                }
                Inline::Left(reason, text) => {
                    let file = Some(self.notes.main_part.clone());
                    self.skip(at, *reason, None, text, file);
                }
                Inline::Note(kind, id) => match self.policy.notes {
                    NotesPolicy::Skip => self.skip_note(*kind, id, at),
                    NotesPolicy::Inline => after.extend(self.note_text(*kind, id)),
                    NotesPolicy::ChapterEnd => {
                        let text = self.note_text(*kind, id);
                        self.chapter_notes.extend(text);
                    }
                },
            }
        }
        let blocks = after.into_iter().map(|t| DocBlock::body(format!("Note: {t}"))).collect();
        self.push_blocks(blocks);
    }

    fn note_text(&self, kind: NoteKind, id: &str) -> Option<String> {
        let notes = match kind {
            NoteKind::Footnote => &self.notes.footnotes,
            NoteKind::Endnote => &self.notes.endnotes,
        };
        notes.get(id).filter(|t| !t.is_empty()).cloned()
    }

    fn skip_note(&mut self, kind: NoteKind, id: &str, at: usize) {
        let Some(text) = self.note_text(kind, id) else { return };
        let (name, file) = match kind {
            NoteKind::Footnote => ("footnote", self.notes.footnotes_part.clone()),
            NoteKind::Endnote => ("endnote", self.notes.endnotes_part.clone()),
        };
        self.skip(at, SkipReason::Note, Some(name), &text, file);
    }

    fn skip(
        &mut self,
        block: usize,
        reason: SkipReason,
        kind: Option<&str>,
        text: &str,
        file: Option<String>,
    ) {
        let chapter = self.chapter_index();
        self.doc.skipped_chars += text.trim().chars().count();
        self.doc.skipped.push(DocSkip {
            chapter,
            block,
            reason,
            kind: kind.map(str::to_string),
            text: excerpt(text),
            file,
        });
    }

    /// Appends blocks to the open chapter; returns the index of the first.
    fn push_blocks(&mut self, blocks: Vec<DocBlock>) -> usize {
        if blocks.is_empty() {
            // Nothing to read opens no chapter.
            return self.doc.chapters.last().map_or(0, |c| c.blocks.len());
        }
        self.doc.read_chars += blocks.iter().map(|b| b.text.chars().count()).sum::<usize>();
        let chapter = self.chapter();
        let at = chapter.blocks.len();
        chapter.blocks.extend(blocks);
        at
    }

    /// The open chapter's index, opening an untitled one for text before the first heading.
    fn chapter_index(&mut self) -> usize {
        if self.doc.chapters.is_empty() {
            self.doc.chapters.push(DocChapter::default());
        }
        self.doc.chapters.len() - 1
    }

    fn chapter(&mut self) -> &mut DocChapter {
        let k = self.chapter_index();
        &mut self.doc.chapters[k]
    }

    /// Reads the open chapter's notes at its end.
    fn close_chapter(&mut self) {
        if self.chapter_notes.is_empty() {
            return;
        }
        let notes = std::mem::take(&mut self.chapter_notes);
        let blocks = std::iter::once(DocBlock::heading(NOTES_HEADING))
            .chain(notes.into_iter().map(DocBlock::body))
            .collect();
        self.push_blocks(blocks);
    }
}
