//! The narrator's work follows the text: a manuscript edit moves a replaced segment's review
//! state, note and pickup flag to the segments that took its place; an approved segment
//! whose text changed is "edited since approval"; what has nowhere to go is named. On the
//! session with the engine's fake backend, across reopenings, as the workstation and
//! `lectern takes` see the project.

use crate::session_common;

use std::path::{Path, PathBuf};

use lectern::review::Review;
use lectern::session::{SegmentView, Session};
use lectern_engine::protocol::RenderParams;
use session_common::{open_session, render_all};

const BOOK: &str = "# One\n\nThe lamp was lit. The keeper climbed the stairs.\n\n\
                    Rain fell on the roof all night long.\n\nShe turned the page.\n";
const NOTE: &str = "Breath noise before Mara; redo";

fn book_in(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("book.md");
    std::fs::write(&path, text).unwrap();
    path
}

/// A rendered book, reopened after each edit as the workstation opens it.
struct Book {
    path: PathBuf,
    _dir: tempfile::TempDir,
}

impl Book {
    fn rendered(text: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let path = book_in(dir.path(), text);
        let mut s = open_session(&path, 1000);
        render_all(&mut s, RenderParams::default());
        Self { path, _dir: dir }
    }

    fn open(&self) -> Session {
        open_session(&self.path, 1000)
    }

    fn edit(&self, from: &str, to: &str) -> Session {
        let text = std::fs::read_to_string(&self.path).unwrap();
        assert!(text.contains(from), "{from}");
        std::fs::write(&self.path, text.replace(from, to)).unwrap();
        self.open()
    }
}

/// The view of the one segment whose text has `words`.
fn with<'a>(views: &'a [SegmentView], words: &str) -> &'a SegmentView {
    let found: Vec<&SegmentView> =
        views.iter().filter(|v| v.planned.text.contains(words)).collect();
    assert_eq!(found.len(), 1, "one segment with “{words}”");
    found[0]
}

fn mark(s: &mut Session, words: &str, review: Review, note: &str) {
    let views = s.views().unwrap();
    let key = with(&views, words).planned.key;
    s.set_review(key, review).unwrap();
    s.set_note(key, note).unwrap();
}

#[test]
fn an_approved_segment_edited_two_words_is_edited_since_approval_with_its_note() {
    let book = Book::rendered(BOOK);
    let mut s = book.open();
    mark(&mut s, "Rain fell", Review::Approved, NOTE);
    mark(&mut s, "She turned", Review::Approved, "");
    drop(s);

    let s = book.edit("on the roof all night", "on the barn all day");
    let views = s.views().unwrap();
    let edited = with(&views, "on the barn all day");
    assert_eq!(edited.review, Review::Pickup, "listed for listening, never approved silently");
    assert!(s.edited_since_approval().unwrap().contains(&edited.planned.key));
    assert!(edited.edited_since_approval, "the list's field says it too");
    assert!(edited.note.starts_with(NOTE), "the note is kept: {}", edited.note);
    assert!(edited.note.contains("“Rain fell on the roof all night long.”"), "{}", edited.note);
    assert_eq!(with(&views, "She turned").review, Review::Approved, "others keep theirs");
    assert_eq!(
        s.carry_summary().as_deref(),
        Some("1 segment edited since approval; 1 note carried")
    );
    assert!(s.left_behind().is_empty());
    assert_eq!(s.edited_since_approval().unwrap().len(), 1);
    drop(s);

    // Opening again changes nothing: the state lives in the project.
    let s = book.open();
    assert_eq!(s.carry_summary(), None);
    assert_eq!(s.edited_since_approval().unwrap().len(), 1);
    drop(s);

    // Reverting the file brings the approved segment back approved, with its own note.
    let s = book.edit("on the barn all day", "on the roof all night");
    let views = s.views().unwrap();
    let back = with(&views, "Rain fell on the roof all night long.");
    assert_eq!(back.review, Review::Approved);
    assert!(!back.edited_since_approval);
    assert_eq!(back.note, NOTE);
    assert!(s.edited_since_approval().unwrap().is_empty());
    assert!(s.left_behind().is_empty(), "{:?}", s.left_behind());
}

#[test]
fn inserting_a_sentence_keeps_the_pickup_flag_and_the_note() {
    let book = Book::rendered(BOOK);
    let mut s = book.open();
    mark(&mut s, "Rain fell", Review::Pickup, NOTE);
    drop(s);
    let s = book.edit("all night long.", "all night long, and the wind kept the keeper awake.");
    let views = s.views().unwrap();
    let grown = with(&views, "the wind kept the keeper awake");
    assert_eq!(grown.review, Review::Pickup);
    assert_eq!(grown.note, NOTE);
    assert!(s.edited_since_approval().unwrap().is_empty(), "it was not approved");
    assert_eq!(s.carry_summary().as_deref(), Some("1 note carried; 1 pickup flag carried"));
}

#[test]
fn a_split_segment_carries_its_note_to_both_halves() {
    let book = Book::rendered(BOOK);
    let mut s = book.open();
    let views = s.views().unwrap();
    let whole = with(&views, "The lamp was lit.");
    assert!(whole.planned.text.contains("The keeper climbed"), "one segment before the split");
    mark(&mut s, "The lamp was lit.", Review::Heard, NOTE);
    drop(s);
    let s = book.edit("The lamp was lit. The keeper", "The lamp was lit.\n\nThe keeper");
    let views = s.views().unwrap();
    for half in ["The lamp was lit.", "The keeper climbed the stairs."] {
        let v = with(&views, half);
        assert_eq!(v.planned.text, half);
        assert_eq!(v.note, NOTE, "{half}");
    }
    assert_eq!(s.carry_summary().as_deref(), Some("1 note carried"));
}

#[test]
fn a_deleted_segments_note_is_named_not_dropped() {
    let book = Book::rendered(BOOK);
    let mut s = book.open();
    mark(&mut s, "She turned", Review::Heard, "too fast");
    drop(s);
    let s = book.edit("\n\nShe turned the page.\n", "\n");
    let lines = s.left_behind();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].contains("its note “too fast”") && lines[0].contains("She turned"),
        "{}",
        lines[0]
    );
    drop(s);
    // Restoring the text brings the note back with it.
    let s = book.edit("all night long.\n", "all night long.\n\nShe turned the page.\n");
    assert_eq!(with(&s.views().unwrap(), "She turned").note, "too fast");
}
