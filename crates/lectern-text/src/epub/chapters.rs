//! Chapters from the contents: which entries are chapters (an audiobook's tracks), which are
//! parts (a mark at the start of their first chapter) and which are marks inside a chapter
//! (sub-chapters), and the book assembled from the documents' parts accordingly.
//!
//! The rule, per entry (unless `--chapter-level N` fixes the level):
//! * an entry in a list the nav hides is a mark (it is not meant for navigation);
//! * an entry without sub-entries is a chapter;
//! * an entry with sub-entries is a part when it has no text of its own before its first
//!   sub-entry but headings (an anthology's "Section IV", an author's name over their stories),
//!   or when its sub-entries start files of their own and its own text is under
//!   [`PART_MAX_CHARS`] (a part's title page with an epigraph): its sub-entries are decided the
//!   same way;
//! * any other entry with sub-entries is a chapter, and everything below it marks.
//!
//! A book of Parts → Chapters gets its chapters, the parts as marks; a chapter's sections stay
//! inside it. Spine items no entry starts continue the chapter before them; when the book has
//! no contents, each spine item is a chapter.

use crate::document::DocSkip;
use crate::{DocBlock, DocChapter, DocMark, Document, SegmentKind};

use super::package::TocEntry;
use super::xhtml::Part;

/// Under this many chars of its own text, an entry whose sub-entries start files is a part.
pub(super) const PART_MAX_CHARS: usize = 1_000;

/// A stretch of a spine item, and the contents entry that starts it.
pub(super) struct Piece {
    pub entry: Option<usize>,
    pub file: String,
    /// The document's `<title>` or first heading.
    pub file_title: Option<String>,
    /// It is the top of its file.
    pub starts_file: bool,
    pub front: bool,
    pub part: Part,
}

/// What a contents entry is in the audiobook.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Role {
    Chapter,
    /// A part: a mark (depth 0) at the start of the chapter it opens.
    Part,
    /// A mark inside a chapter, at this depth below it.
    Mark(usize),
}

/// The role of every contents entry.
pub(super) fn roles(toc: &[TocEntry], pieces: &[Piece], level: Option<usize>) -> Vec<Role> {
    if let Some(level) = level {
        return toc
            .iter()
            .map(|e| match e.depth {
                d if e.hidden || d > level => Role::Mark(d.saturating_sub(level).max(1)),
                d if d == level => Role::Chapter,
                _ => Role::Part,
            })
            .collect();
    }
    let own = own_chars(toc.len(), pieces);
    let children = children(toc);
    let mut roles = vec![Role::Mark(1); toc.len()];
    let roots: Vec<usize> = (0..toc.len()).filter(|&k| toc[k].parent.is_none()).collect();
    let mut stack: Vec<usize> = roots.into_iter().rev().collect();
    while let Some(k) = stack.pop() {
        let visible: Vec<usize> = children[k].iter().copied().filter(|&c| !toc[c].hidden).collect();
        roles[k] = if toc[k].hidden {
            Role::Mark(1)
        } else if visible.is_empty() {
            Role::Chapter
        } else if own[k] == 0
            || (own[k] < PART_MAX_CHARS && visible.iter().any(|&c| toc[c].fragment.is_empty()))
        {
            stack.extend(visible.iter().rev());
            Role::Part
        } else {
            Role::Chapter
        };
        if roles[k] == Role::Chapter {
            for d in descendants(&children, k) {
                roles[d] = Role::Mark(toc[d].depth.saturating_sub(toc[k].depth).max(1));
            }
        }
    }
    roles
}

fn children(toc: &[TocEntry]) -> Vec<Vec<usize>> {
    let mut out = vec![Vec::new(); toc.len()];
    for (k, entry) in toc.iter().enumerate() {
        if let Some(p) = entry.parent {
            out[p].push(k);
        }
    }
    out
}

fn descendants(children: &[Vec<usize>], k: usize) -> Vec<usize> {
    let mut out = Vec::new();
    let mut stack = children[k].clone();
    while let Some(c) = stack.pop() {
        out.push(c);
        stack.extend(children[c].iter().copied());
    }
    out
}

/// Chars of body text (headings left out) from each entry's start to the next entry's.
fn own_chars(n: usize, pieces: &[Piece]) -> Vec<usize> {
    let mut own = vec![0; n];
    let mut current = None;
    for p in pieces {
        if p.entry.is_some() {
            current = p.entry;
        }
        if let Some(k) = current {
            let body = p.part.blocks.iter().filter(|b| b.kind == SegmentKind::Body);
            own[k] += body.map(|b| b.text.chars().count()).sum::<usize>();
        }
    }
    own
}

/// The book's chapters from its pieces, by the entries' roles.
pub(super) fn assemble(pieces: Vec<Piece>, toc: &[TocEntry], roles: &[Role]) -> Document {
    let mut book = Assembly::default();
    for piece in pieces {
        let role = piece.entry.map(|k| (roles[k], toc[k].title.clone()));
        match role {
            Some((Role::Chapter, title)) => book.open_chapter(title, &piece),
            Some((Role::Part, title)) => book.open_part(title, &piece),
            Some((Role::Mark(depth), title)) => book.mark(title, depth, &piece),
            None if book.current.is_none() || (toc.is_empty() && piece.starts_file) => {
                let title = piece.file_title.clone().unwrap_or_default();
                book.open_chapter(title, &piece);
            }
            None => {}
        }
        book.append(piece);
    }
    book.finish()
}

/// A chapter being assembled: it, the notes to read at its end, and whether only a part's
/// title page is in it so far (the next chapter entry then titles it instead of opening one).
struct Open {
    chapter: DocChapter,
    end_notes: Vec<String>,
    awaiting_title: bool,
    skips: Vec<DocSkip>,
    /// Chars of the text its skips left out.
    skipped_chars: usize,
}

#[derive(Default)]
struct Assembly {
    done: Vec<(DocChapter, Vec<DocSkip>, usize)>,
    current: Option<Open>,
}

impl Assembly {
    fn open_chapter(&mut self, title: String, piece: &Piece) {
        if let Some(open) = self.current.as_mut().filter(|o| o.awaiting_title) {
            // A chapter whose text is all left out (a skipped bibliography) names nothing.
            if piece.part.blocks.is_empty() {
                return;
            }
            open.awaiting_title = false;
            open.chapter.title = Some(title).filter(|t| !t.is_empty());
            return;
        }
        self.open(Some(title), piece, false);
    }

    fn open_part(&mut self, title: String, piece: &Piece) {
        if !self.current.as_ref().is_some_and(|o| o.awaiting_title) {
            self.open(Some(title.clone()), piece, true);
        }
        let open = self.current.as_mut().expect("a chapter is open");
        let block = open.chapter.blocks.len();
        // A part whose text was all left out (a skipped copyright page) marks nothing.
        open.chapter.marks.retain(|m| m.block != block || m.depth != 0);
        open.chapter.marks.push(DocMark { title, block, depth: 0 });
    }

    fn mark(&mut self, title: String, depth: usize, piece: &Piece) {
        if self.current.is_none() {
            self.open(piece.file_title.clone(), piece, false);
        }
        let open = self.current.as_mut().expect("a chapter is open");
        let block = open.chapter.blocks.len();
        open.chapter.marks.push(DocMark { title, block, depth });
    }

    fn open(&mut self, title: Option<String>, piece: &Piece, awaiting_title: bool) {
        self.close();
        let chapter = DocChapter {
            title: title.filter(|t| !t.is_empty()),
            front_matter: piece.front,
            ..DocChapter::default()
        };
        self.current = Some(Open {
            chapter,
            end_notes: Vec::new(),
            awaiting_title,
            skips: Vec::new(),
            skipped_chars: 0,
        });
    }

    fn append(&mut self, piece: Piece) {
        let file = piece.file;
        let open = self.current.as_mut().expect("a chapter is open before any piece");
        let base = open.chapter.blocks.len();
        for s in piece.part.skips {
            open.skips.push(DocSkip {
                chapter: 0,
                block: base + s.block,
                reason: s.reason,
                kind: s.kind,
                text: s.text,
                file: Some(file.clone()),
            });
            open.skipped_chars += s.chars;
        }
        open.chapter.blocks.extend(piece.part.blocks);
        open.end_notes.extend(piece.part.end_notes);
    }

    fn close(&mut self) {
        let Some(mut open) = self.current.take() else { return };
        if !open.end_notes.is_empty() {
            open.chapter.blocks.push(DocBlock::heading("Notes"));
            open.chapter.blocks.extend(open.end_notes.into_iter().map(DocBlock::body));
        }
        self.done.push((open.chapter, open.skips, open.skipped_chars));
    }

    /// The chapters with something to read; each skip placed in its chapter, a skip in a
    /// chapter left empty moved to the start of the next one.
    fn finish(mut self) -> Document {
        self.close();
        let mut doc = Document::default();
        let mut orphans: Vec<DocSkip> = Vec::new();
        for (chapter, skips, skipped_chars) in self.done {
            doc.skipped_chars += skipped_chars;
            if chapter.blocks.is_empty() {
                orphans.extend(skips.into_iter().map(|s| DocSkip { block: 0, ..s }));
                continue;
            }
            let index = doc.chapters.len();
            for s in orphans.drain(..).chain(skips) {
                doc.skipped.push(DocSkip { chapter: index, ..s });
            }
            doc.chapters.push(chapter);
        }
        if let Some(last) = doc.chapters.len().checked_sub(1) {
            let end = doc.chapters[last].blocks.len();
            doc.skipped.extend(orphans.into_iter().map(|s| DocSkip {
                chapter: last,
                block: end,
                ..s
            }));
        }
        doc.read_chars =
            doc.chapters.iter().flat_map(|c| &c.blocks).map(|b| b.text.chars().count()).sum();
        doc
    }
}
