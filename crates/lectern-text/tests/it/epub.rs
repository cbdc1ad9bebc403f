//! EPUB input: real EPUB 2 and 3 files built in the test, read into chapters (titles from the
//! nav document or the NCX, a chapter over two files, an anchor opening a chapter, non-linear
//! items left out, front matter flagged), metadata, the manuscript they make, bad books.

use std::path::Path;

use lectern_text::epub::{self, EpubError};
use lectern_text::{
    DocMark, Document, Manuscript, NotesPolicy, ParseOptions, ReadPolicy, SegmentKind, SkipReason,
};

use lectern_test_support::epub::{PNG, epub2, epub3, write_epub, xhtml};

/// Every chapter as (title, front matter, [block texts]).
fn outline(doc: &Document) -> Vec<(Option<String>, bool, Vec<String>)> {
    doc.chapters
        .iter()
        .map(|c| {
            (c.title.clone(), c.front_matter, c.blocks.iter().map(|b| b.text.clone()).collect())
        })
        .collect()
}

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(ToString::to_string).collect()
}

#[test]
fn epub3_chapters_follow_the_nav_document() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("book.epub");
    epub3(&path);
    let doc = epub::read(&path, &ReadPolicy::default()).unwrap();
    // The title page is skipped (landmarks); Chapter 3, nested under Chapter 2, is a mark of it.
    assert_eq!(
        outline(&doc),
        vec![
            (
                Some("Chapter 1: Arrival".into()),
                false,
                s(&[
                    "Chapter 1: Arrival",
                    "The train came in at dusk.",
                    "Nobody met it.",
                    "Later, the rain began.",
                    "It did not stop."
                ])
            ),
            (
                Some("Chapter 2".into()),
                false,
                s(&[
                    "Chapter 2",
                    "Morning was grey.",
                    "Chapter 3",
                    "Evening was gold.",
                    "The end."
                ])
            ),
        ]
    );
    assert_eq!(
        doc.chapters[1].marks,
        vec![DocMark { title: "Chapter 3".into(), block: 2, depth: 1 }]
    );
    assert_eq!(doc.chapters[0].blocks[0].kind, SegmentKind::Heading);
    assert_eq!(doc.chapters[0].blocks[1].kind, SegmentKind::Body);
    assert_eq!(doc.info.title.as_deref(), Some("The Test of Time"));
    assert_eq!(doc.info.author.as_deref(), Some("Ada Writer, Bo Second"));
    assert_eq!(doc.info.language.as_deref(), Some("en"));
    let cover = doc.info.cover.as_ref().expect("cover");
    assert_eq!((cover.media_type.as_str(), cover.bytes.as_slice()), ("image/png", PNG));
    assert_eq!(cover.extension(), "png");
    let reasons: Vec<_> = doc.skipped.iter().map(|k| (k.reason, k.text.as_str())).collect();
    assert_eq!(
        reasons,
        [(SkipReason::FrontMatter, "The Test of Time by Ada Writer"), (SkipReason::Note, "1")]
    );
    // `--read titlepage` reads it, as the chapter the contents name.
    let read = ReadPolicy::default().reading(&["titlepage"]);
    let doc = epub::read(&path, &read).unwrap();
    assert_eq!(
        outline(&doc)[0],
        (Some("Title Page".into()), true, s(&["The Test of Time", "by Ada Writer"]))
    );
}

#[test]
fn epub2_chapters_follow_the_ncx_and_the_guide_marks_front_matter() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("old.epub");
    epub2(&path);
    let doc = epub::read(&path, &ReadPolicy::default()).unwrap();
    // The copyright page (guide) is skipped; Part Two, nested under Part One, is its mark.
    assert_eq!(
        outline(&doc),
        vec![(
            Some("Part One".into()),
            false,
            s(&[
                "Part One",
                "It began\u{2026} quietly\u{2014}as things do.",
                "Second paragraph.",
                "Part Two",
                "Then it ended."
            ])
        )]
    );
    assert_eq!(
        doc.chapters[0].marks,
        vec![DocMark { title: "Part Two".into(), block: 3, depth: 1 }]
    );
    assert_eq!(doc.info.title.as_deref(), Some("Old & New"));
    assert_eq!(doc.info.author.as_deref(), Some("C. Author"));
    assert_eq!(doc.info.language.as_deref(), Some("fr"));
    assert_eq!(doc.info.cover.as_ref().map(|c| c.media_type.as_str()), Some("image/jpeg"));
    // The second contents level as chapters: Part One is then a part, marking its chapter.
    let level2 = ReadPolicy::default().with_chapter_level(Some(2));
    let doc = epub::read(&path, &level2).unwrap();
    assert_eq!(doc.chapters.len(), 1);
    assert_eq!(doc.chapters[0].title.as_deref(), Some("Part Two"));
    assert_eq!(doc.chapters[0].marks[0], DocMark { title: "Part One".into(), block: 0, depth: 0 });
    let read = ReadPolicy::default().reading(&["copyright-page"]);
    let doc = epub::read(&path, &read).unwrap();
    assert_eq!(
        outline(&doc)[0],
        (Some("Copyright".into()), true, s(&["\u{a9} 1901 C. Author. All rights reserved."]))
    );
}

#[test]
fn a_book_becomes_a_manuscript_without_losing_a_paragraph() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("book.epub");
    epub3(&path);
    let read_all = ReadPolicy::default().reading(&["titlepage"]);
    let doc = epub::read(&path, &read_all).unwrap();
    let opts = ParseOptions::default().with_lead_sentence(false);
    let book = Manuscript::from_document(&doc, &path, &opts).unwrap();
    let titles: Vec<_> = book.chapters.iter().map(|c| c.title.as_deref()).collect();
    assert_eq!(titles, [Some("Title Page"), Some("Chapter 1: Arrival"), Some("Chapter 2")]);
    // Every block of the book is in the segments, in order.
    let all: String = book.segments().map(|s| s.text.as_str()).collect::<Vec<_>>().join(" ");
    let mut at = 0;
    for block in doc.chapters.iter().flat_map(|c| &c.blocks) {
        let first_word = block.text.split_whitespace().next().unwrap();
        let k = all[at..].find(first_word).unwrap_or_else(|| panic!("{first_word} lost: {all}"));
        at += k;
    }
    assert_eq!(book.info.title.as_deref(), Some("The Test of Time"));
    // The mark points at the segment it starts; the note marker's skip is placed on its line.
    let chapter2 = &book.chapters[2];
    let mark = &chapter2.marks[0];
    let first = book.segments().find(|s| s.id == mark.segment).unwrap();
    assert!(first.text.starts_with("Chapter three"), "{first:?}");
    let note = book.skipped.iter().find(|k| k.reason == SkipReason::Note).unwrap();
    let line_of_train = book.segments().find(|s| s.text.contains("train")).unwrap().span.start.line;
    assert_eq!((note.chapter, note.line), (1, line_of_train));
    // Front matter left out on request; the chapters after it are unchanged.
    let front = ReadPolicy::default().skipping_front_matter();
    let doc_without_front = epub::read(&path, &front).unwrap();
    let skipped = Manuscript::from_document(&doc_without_front, &path, &opts).unwrap();
    let titles: Vec<_> = skipped.chapters.iter().map(|c| c.title.as_deref()).collect();
    assert_eq!(titles, [Some("Chapter 1: Arrival"), Some("Chapter 2")]);
    let texts = |m: &Manuscript| m.segments().map(|s| s.text.clone()).collect::<Vec<_>>();
    assert!(texts(&book).ends_with(&texts(&skipped)));
    assert!(!texts(&skipped).iter().any(|t| t.contains("Ada Writer")));
    assert!(skipped.skipped.iter().any(|k| k.reason == SkipReason::FrontMatter));
}

#[test]
fn a_book_without_navigation_makes_a_chapter_of_each_file() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("bare.epub");
    let opf = r#"<package xmlns="http://www.idpf.org/2007/opf" version="3.0"><metadata/>
      <manifest><item id="a" href="a.xhtml" media-type="application/xhtml+xml"/>
      <item id="b" href="b.xhtml" media-type="application/xhtml+xml"/></manifest>
      <spine><itemref idref="a"/><itemref idref="b"/></spine></package>"#;
    let a = xhtml("First", "<p>One.</p>");
    let b = xhtml("", "<h2>Second</h2><p>Two.</p>");
    write_epub(
        &path,
        "p.opf",
        &[("p.opf", opf.as_bytes()), ("a.xhtml", a.as_bytes()), ("b.xhtml", b.as_bytes())],
    );
    let doc = epub::read(&path, &ReadPolicy::default()).unwrap();
    assert_eq!(
        outline(&doc),
        vec![
            (Some("First".into()), false, s(&["One."])),
            (Some("Second".into()), false, s(&["Second", "Two."])),
        ]
    );
}

fn error_of(path: &Path) -> String {
    let e: EpubError = epub::read(path, &ReadPolicy::default()).unwrap_err();
    e.to_string()
}

#[test]
fn bad_books_name_the_file_and_the_entry() {
    let tmp = tempfile::tempdir().unwrap();
    let not_zip = tmp.path().join("text.epub");
    std::fs::write(&not_zip, "just text").unwrap();
    let e = error_of(&not_zip);
    assert!(e.contains("text.epub: not an EPUB (not a ZIP container"), "{e}");

    let no_container = tmp.path().join("nocontainer.epub");
    let file = std::fs::File::create(&no_container).unwrap();
    let mut zip = zip::ZipWriter::new(file);
    zip.start_file("mimetype", zip::write::SimpleFileOptions::default()).unwrap();
    zip.finish().unwrap();
    let e = error_of(&no_container);
    assert!(e.contains("nocontainer.epub: the EPUB has no entry `META-INF/container.xml`"), "{e}");

    let opf = r#"<package xmlns="http://www.idpf.org/2007/opf"><metadata/><manifest>
      <item id="a" href="a.xhtml" media-type="application/xhtml+xml"/></manifest>
      <spine><itemref idref="a"/><itemref idref="ghost"/></spine></package>"#;
    let ghost = tmp.path().join("ghost.epub");
    write_epub(&ghost, "o.opf", &[("o.opf", opf.as_bytes())]);
    let e = error_of(&ghost);
    assert!(e.contains("ghost.epub: entry `o.opf`: the spine names `ghost`"), "{e}");

    let opf = r#"<package xmlns="http://www.idpf.org/2007/opf"><metadata/><manifest>
      <item id="a" href="a.xhtml" media-type="application/xhtml+xml"/></manifest>
      <spine><itemref idref="a"/></spine></package>"#;
    let missing = tmp.path().join("missing.epub");
    write_epub(&missing, "o.opf", &[("o.opf", opf.as_bytes())]);
    let e = error_of(&missing);
    assert!(
        e.contains("missing.epub: the EPUB has no entry `a.xhtml` (the spine lists it)"),
        "{e}"
    );

    let broken = tmp.path().join("broken.epub");
    let bad = "<html><body><p>unclosed</body></html>";
    write_epub(&broken, "o.opf", &[("o.opf", opf.as_bytes()), ("a.xhtml", bad.as_bytes())]);
    let e = error_of(&broken);
    assert!(e.contains("broken.epub: entry `a.xhtml`: malformed XML at byte"), "{e}");

    let entity = tmp.path().join("entity.epub");
    let bad = xhtml("t", "<p>&madeup;</p>");
    write_epub(&entity, "o.opf", &[("o.opf", opf.as_bytes()), ("a.xhtml", bad.as_bytes())]);
    let e = error_of(&entity);
    assert!(e.contains("entity.epub: entry `a.xhtml`: unknown entity `&madeup;`"), "{e}");
}

/// One content document with `body`, read back as its blocks' texts.
fn blocks_of(body: &str) -> Vec<String> {
    blocks_with(body, &ReadPolicy::default())
}

/// One content document with `body`, read under `policy`, as its blocks' texts.
fn blocks_with(body: &str, policy: &ReadPolicy) -> Vec<String> {
    let doc = one_file(body, policy);
    doc.chapters.iter().flat_map(|c| c.blocks.iter().map(|b| b.text.clone())).collect()
}

/// One content document with `body`, read under `policy`.
fn one_file(body: &str, policy: &ReadPolicy) -> Document {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("one.epub");
    let opf = r#"<package xmlns="http://www.idpf.org/2007/opf" version="3.0"><metadata/>
      <manifest><item id="a" href="a.xhtml" media-type="application/xhtml+xml"/></manifest>
      <spine><itemref idref="a"/></spine></package>"#;
    let a = xhtml("One", body);
    write_epub(&path, "p.opf", &[("p.opf", opf.as_bytes()), ("a.xhtml", a.as_bytes())]);
    epub::read(&path, policy).unwrap()
}

/// Printed page numbers sit mid-sentence in real books (Standard Ebooks, DAISY samples): as an
/// empty marker, or with the number as its text; neither is read.
#[test]
fn page_numbers_are_never_read() {
    let body = r#"<p>marching along <span epub:type="pagebreak" id="p173" title="173"/>the high
        road, <span role="doc-pagebreak" id="p174">174</span>singing.</p>"#;
    assert_eq!(blocks_of(body), s(&["marching along the high road, singing."]));
}

/// Navigation is never read, wherever it sits: a contents list inside a chapter, hidden or not.
#[test]
fn navigation_is_never_read() {
    let body = r#"<nav epub:type="toc" hidden=""><ol><li><a href="a.xhtml">Guide</a></li></ol></nav>
        <section role="doc-toc"><h2>Contents</h2><p>Begin Reading</p></section>
        <nav epub:type="landmarks"><ol><li>Pages</li></ol></nav><p>The story.</p>"#;
    assert_eq!(blocks_of(body), s(&["The story."]));
}

/// What no reader sees, code listings and fallbacks are not read (inline code in running text
/// is); an `epub:switch` reads its default.
#[test]
fn hidden_content_code_and_fallbacks_are_not_read() {
    let body = r#"<p>Seen.<span aria-hidden="true"> Unseen.</span><span hidden=""> Gone.</span></p>
        <p>Type <kbd>ls</kbd> to list, as in <code>ls -l</code>.</p>
        <pre><code>fn main() {}</code></pre>
        <canvas>Your reader cannot draw this.</canvas>
        <epub:switch><epub:case required-namespace="http://www.w3.org/1998/Math/MathML">Case.</epub:case>
        <epub:default><p>Default.</p></epub:default></epub:switch>"#;
    assert_eq!(blocks_of(body), s(&["Seen.", "Type ls to list, as in ls -l.", "Default."]));
    let read_code = ReadPolicy::default().reading(&["code"]);
    assert_eq!(
        blocks_with(body, &read_code),
        s(&["Seen.", "Type ls to list, as in ls -l.", "fn main() {}", "Default."])
    );
}

/// A line break inside a heading is a space: the heading is one line.
#[test]
fn a_break_in_a_heading_is_a_space() {
    assert_eq!(
        blocks_of("<h2>Chapter I<br/>The Arrival</h2><p>Text.</p>"),
        s(&["Chapter I The Arrival", "Text."])
    );
}

/// A book of content documents (`files`, in spine order) and a nav document holding `nav`.
fn book(tmp: &Path, nav: &str, meta: &str, files: &[(&str, String)]) -> std::path::PathBuf {
    let path = tmp.join("book.epub");
    let manifest: String = files
        .iter()
        .enumerate()
        .map(|(k, (href, _))| {
            format!(r#"<item id="f{k}" href="{href}" media-type="application/xhtml+xml"/>"#)
        })
        .collect();
    let spine: String = (0..files.len()).map(|k| format!(r#"<itemref idref="f{k}"/>"#)).collect();
    let opf = format!(
        r#"<package xmlns="http://www.idpf.org/2007/opf" version="3.0"><metadata>{meta}</metadata>
      <manifest><item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>
      {manifest}</manifest><spine>{spine}</spine></package>"#
    );
    let nav = xhtml("Nav", nav);
    let mut entries: Vec<(&str, &[u8])> =
        vec![("p.opf", opf.as_bytes()), ("nav.xhtml", nav.as_bytes())];
    entries.extend(files.iter().map(|(href, body)| (*href, body.as_bytes())));
    write_epub(&path, "p.opf", &entries);
    path
}

fn toc(items: &str) -> String {
    format!(r#"<nav epub:type="toc"><ol>{items}</ol></nav>"#)
}

/// Front matter is decided per section: a title page is skipped, the epigraph and dedication
/// inside it are read, and a book whose only file opens with front matter keeps its body.
#[test]
fn front_matter_is_decided_per_section() {
    let body = r#"<section epub:type="frontmatter"><section epub:type="titlepage">
        <h1>The Waste Land</h1><div class="aut">T.S. Eliot</div>
        <div epub:type="epigraph"><p>Nam Sibyllam quidem Cumis ego ipse oculis meis vidi.</p></div>
        <p epub:type="dedication">For Ezra Pound, il miglior fabbro.</p></section>
        <section epub:type="copyright-page"><p>Public domain.</p></section></section>
        <section epub:type="bodymatter"><section><h2>I. The Burial of the Dead</h2>
        <p>April is the cruellest month.</p></section></section>"#;
    let doc = one_file(body, &ReadPolicy::default());
    let texts: Vec<_> = doc.chapters.iter().flat_map(|c| &c.blocks).map(|b| &b.text).collect();
    assert_eq!(
        texts,
        [
            "Nam Sibyllam quidem Cumis ego ipse oculis meis vidi.",
            "For Ezra Pound, il miglior fabbro.",
            "I. The Burial of the Dead",
            "April is the cruellest month."
        ]
    );
    let skipped: Vec<_> = doc.skipped.iter().map(|k| (k.reason, k.kind.as_deref())).collect();
    assert_eq!(
        skipped,
        [
            (SkipReason::FrontMatter, Some("titlepage")),
            (SkipReason::FrontMatter, Some("copyright-page"))
        ]
    );
    // Every front-matter kind skipped: the body is all that is left, and it is left.
    let front = ReadPolicy::default().skipping_front_matter();
    assert_eq!(
        blocks_with(body, &front),
        s(&["I. The Burial of the Dead", "April is the cruellest month."])
    );
    // Kind by kind.
    let no_dedication = ReadPolicy::default().skipping(&["dedication"]);
    assert!(!blocks_with(body, &no_dedication).iter().any(|t| t.contains("Pound")));
}

/// Authored front matter (a novel's "Etymology", typed front matter by the landmarks) is read.
#[test]
fn authored_front_matter_is_read() {
    let tmp = tempfile::tempdir().unwrap();
    let nav = format!(
        r#"{}<nav epub:type="landmarks"><ol><li><a epub:type="bodymatter" href="c1.xhtml">Start</a></li></ol></nav>"#,
        toc(
            r#"<li><a href="ety.xhtml">Etymology</a></li><li><a href="c1.xhtml">Loomings</a></li>"#
        )
    );
    let files = [
        (
            "ety.xhtml",
            xhtml(
                "Etymology",
                r#"<section epub:type="frontmatter"><h2>Etymology</h2><p>The pale Usher.</p></section>"#,
            ),
        ),
        ("c1.xhtml", xhtml("Loomings", "<h2>Loomings</h2><p>Call me Ishmael.</p>")),
    ];
    let path = book(tmp.path(), &nav, "", &files);
    let doc = epub::read(&path, &ReadPolicy::default()).unwrap();
    let titles: Vec<_> = doc.chapters.iter().map(|c| c.title.as_deref()).collect();
    assert_eq!(titles, [Some("Etymology"), Some("Loomings")]);
    assert!(doc.chapters[0].front_matter);
    let front = ReadPolicy::default().skipping_front_matter();
    let doc = epub::read(&path, &front).unwrap();
    assert_eq!(doc.chapters.len(), 1);
}

/// Notes: markers are never read; by default notes are skipped but a notes section that the
/// contents list is read as a chapter (without its back links); `inline` reads each note
/// after its paragraph, `chapter-end` at its chapter's end.
#[test]
fn notes_follow_the_notes_policy() {
    let tmp = tempfile::tempdir().unwrap();
    let nav = toc(r#"<li><a href="c1.xhtml">One</a></li><li><a href="notes.xhtml">Notes</a></li>"#);
    let files = [
        (
            "c1.xhtml",
            xhtml(
                "One",
                r##"<h2>One</h2><p>Son of man,<a epub:type="noteref" href="notes.xhtml#n1">1</a> you cannot say.</p>
                <p>A heap of broken images.</p>
                <aside epub:type="footnote" id="f2"><p>An aside.</p></aside>"##,
            ),
        ),
        (
            "notes.xhtml",
            xhtml(
                "Notes",
                r##"<section epub:type="endnotes"><h2>Notes</h2><ol>
                <li id="n1" epub:type="endnote"><p>Cf. Ezekiel 2:1. <a href="c1.xhtml#r1" epub:type="backlink">↩</a></p></li>
                </ol></section>"##,
            ),
        ),
    ];
    let path = book(tmp.path(), &nav, "", &files);
    let all = |policy: &ReadPolicy| {
        let doc = epub::read(&path, policy).unwrap();
        doc.chapters
            .iter()
            .map(|c| c.blocks.iter().map(|b| b.text.clone()).collect::<Vec<_>>())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        all(&ReadPolicy::default()),
        vec![
            s(&["One", "Son of man, you cannot say.", "A heap of broken images."]),
            s(&["Notes", "Cf. Ezekiel 2:1."]),
        ]
    );
    assert_eq!(
        all(&ReadPolicy::default().with_notes(NotesPolicy::Inline)),
        vec![s(&[
            "One",
            "Son of man, you cannot say.",
            "Note: Cf. Ezekiel 2:1.",
            "A heap of broken images."
        ])]
    );
    assert_eq!(
        all(&ReadPolicy::default().with_notes(NotesPolicy::ChapterEnd)),
        vec![s(&[
            "One",
            "Son of man, you cannot say.",
            "A heap of broken images.",
            "Notes",
            "Cf. Ezekiel 2:1."
        ])]
    );
    assert_eq!(all(&ReadPolicy::default().skipping(&["endnotes"])).len(), 1);
}

/// Verse: a stanza is one block whose lines stay apart, line per element (The Waste Land's
/// `linegroup`) or with `<br/>` (Standard Ebooks' `z3998:poem`); line numbers are not read.
#[test]
fn verse_is_read_by_stanza_and_line() {
    let body = r#"<div class="linegroup">
        <div>April is the cruellest month, breeding</div>
        <div>Lilacs out of the dead land, mixing</div>
        <div>And went on in sunlight, into the Hofgarten,<span class="lnum">10</span></div></div>
        <section epub:type="z3998:poem"><p><span>I celebrate myself,</span><br/>
        <span class="i1">and sing myself.</span></p></section>"#;
    let doc = one_file(body, &ReadPolicy::default());
    let blocks: Vec<_> =
        doc.chapters[0].blocks.iter().map(|b| (b.text.as_str(), b.verse)).collect();
    assert_eq!(
        blocks,
        [
            (
                "April is the cruellest month, breeding\nLilacs out of the dead land, mixing\nAnd went on in sunlight, into the Hofgarten,",
                true
            ),
            ("I celebrate myself,\nand sing myself.", true)
        ]
    );
    assert_eq!(
        doc.skipped.iter().map(|k| (k.reason, k.text.as_str())).collect::<Vec<_>>(),
        [(SkipReason::LineNumber, "10")]
    );
}

/// Tables are read row by row, each value with its column's header, ditto marks resolved;
/// `--skip table` leaves them out.
#[test]
fn tables_are_read_row_by_row() {
    let body = r#"<p>Stores:</p><table><caption>Stores taken aboard</caption>
        <thead><tr><th>Item</th><th>Quantity</th></tr></thead>
        <tbody><tr><td>Lamp oil</td><td>12 barrels</td></tr><tr><td>Biscuit</td><td>〃</td></tr></tbody></table>"#;
    assert_eq!(
        blocks_of(body),
        s(&[
            "Stores:",
            "Stores taken aboard",
            "Item: Lamp oil; Quantity: 12 barrels.",
            "Item: Biscuit; Quantity: 12 barrels."
        ])
    );
    let doc = one_file(body, &ReadPolicy::default().skipping(&["table"]));
    assert_eq!(doc.chapters[0].blocks.len(), 1);
    assert_eq!(doc.skipped[0].reason, SkipReason::Table);
}

/// The nav's page list names the printed page numbers: its targets are not read even when
/// untyped; a printed contents page (a run of links into the book under "Contents") is not
/// read either.
#[test]
fn page_list_targets_and_printed_contents_are_not_read() {
    let tmp = tempfile::tempdir().unwrap();
    let nav = format!(
        r##"{}<nav epub:type="page-list" hidden=""><ol><li><a href="c1.xhtml#pg5">5</a></li></ol></nav>"##,
        toc(r#"<li><a href="contents.xhtml">Contents</a></li><li><a href="c1.xhtml">One</a></li>"#)
    );
    let files = [
        (
            "contents.xhtml",
            xhtml(
                "Contents",
                r#"<h2>Contents</h2><p><a href="c1.xhtml">One</a></p><p><a href="c2.xhtml">Two</a></p>
                <p><a href="c3.xhtml">Three</a></p>"#,
            ),
        ),
        (
            "c1.xhtml",
            xhtml(
                "One",
                r#"<h2>One</h2><p>marching along <span id="pg5">5</span>the high road.</p>"#,
            ),
        ),
    ];
    let path = book(tmp.path(), &nav, "", &files);
    let doc = epub::read(&path, &ReadPolicy::default()).unwrap();
    assert_eq!(
        outline(&doc),
        vec![(Some("One".into()), false, s(&["One", "marching along the high road."]))]
    );
    let reasons: Vec<_> = doc.skipped.iter().map(|k| (k.reason, k.text.as_str())).collect();
    assert_eq!(
        reasons,
        [(SkipReason::Navigation, "Contents. One. Two. Three."), (SkipReason::PageNumber, "5")]
    );
}

/// A fixed-layout book's text sits in SVG: its `<text>` is read there (and only there).
#[test]
fn fixed_layout_svg_text_is_read() {
    let tmp = tempfile::tempdir().unwrap();
    let page = xhtml(
        "Page",
        r#"<svg xmlns="http://www.w3.org/2000/svg"><title>Page one</title>
        <text x="10" y="20">Sous le vent,</text><text x="10" y="40"><tspan>la mer.</tspan></text></svg>"#,
    );
    let nav = toc(r#"<li><a href="p1.xhtml">Page</a></li>"#);
    let fxl = r#"<meta property="rendition:layout">pre-paginated</meta>"#;
    let path = book(tmp.path(), &nav, fxl, &[("p1.xhtml", page.clone())]);
    let doc = epub::read(&path, &ReadPolicy::default()).unwrap();
    assert_eq!(outline(&doc), vec![(Some("Page".into()), false, s(&["Sous le vent,", "la mer."]))]);
    let reflowable = book(tmp.path(), &nav, "", &[("p1.xhtml", page)]);
    let doc = epub::read(&reflowable, &ReadPolicy::default()).unwrap();
    assert!(doc.chapters.is_empty());
}

/// Chapters come from the contents level whose entries hold the text: parts (a title page of
/// their own) become marks at the start of their first chapter, hidden sub-entries marks
/// inside theirs; `--chapter-level` overrides.
#[test]
fn parts_and_nested_entries_are_marks() {
    let tmp = tempfile::tempdir().unwrap();
    let nav = toc(r##"<li><a href="part1.xhtml">Part I</a><ol>
        <li><a href="c1.xhtml">Chapter 1</a><ol hidden=""><li><a href="c1.xhtml#s2">Section 2</a></li></ol></li>
        <li><a href="c2.xhtml">Chapter 2</a></li></ol></li>"##);
    let files = [
        ("part1.xhtml", xhtml("Part I", "<h1>Part I</h1>")),
        (
            "c1.xhtml",
            xhtml(
                "Chapter 1",
                r#"<h2>Chapter 1</h2><p>One.</p><section id="s2"><h3>Section 2</h3><p>Two.</p></section>"#,
            ),
        ),
        ("c2.xhtml", xhtml("Chapter 2", "<h2>Chapter 2</h2><p>Three.</p>")),
    ];
    let path = book(tmp.path(), &nav, "", &files);
    let doc = epub::read(&path, &ReadPolicy::default()).unwrap();
    assert_eq!(
        outline(&doc),
        vec![
            (
                Some("Chapter 1".into()),
                false,
                s(&["Part I", "Chapter 1", "One.", "Section 2", "Two."])
            ),
            (Some("Chapter 2".into()), false, s(&["Chapter 2", "Three."])),
        ]
    );
    assert_eq!(
        doc.chapters[0].marks,
        vec![
            DocMark { title: "Part I".into(), block: 0, depth: 0 },
            DocMark { title: "Section 2".into(), block: 3, depth: 1 }
        ]
    );
    let level1 = ReadPolicy::default().with_chapter_level(Some(1));
    let doc = epub::read(&path, &level1).unwrap();
    assert_eq!(doc.chapters.len(), 1);
    assert_eq!(doc.chapters[0].title.as_deref(), Some("Part I"));
    assert_eq!(doc.chapters[0].marks.len(), 3);
}

/// The counts behind the dry run's warning: characters read and skipped.
#[test]
fn read_and_skipped_characters_are_counted() {
    let body = r#"<section epub:type="copyright-page"><p>Copyright 2024 by the publisher.</p></section>
        <p>Short.</p>"#;
    let doc = one_file(body, &ReadPolicy::default());
    assert_eq!(doc.read_chars, "Short.".len());
    assert_eq!(doc.skipped_chars, "Copyright2024bythepublisher.".len());
}

/// An EPUB 2 book's page list is in its NCX (`pageList`): its targets are not read either.
#[test]
fn an_ncx_page_list_names_page_numbers_too() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("old.epub");
    let opf = r#"<package xmlns="http://www.idpf.org/2007/opf" version="2.0"><metadata/>
      <manifest><item id="ncx" href="toc.ncx" media-type="application/x-dtbncx+xml"/>
      <item id="a" href="a.html" media-type="application/xhtml+xml"/></manifest>
      <spine toc="ncx"><itemref idref="a"/></spine></package>"#;
    let ncx = r#"<ncx xmlns="http://www.daisy.org/z3986/2005/ncx/" version="2005-1"><navMap>
      <navPoint id="n1"><navLabel><text>One</text></navLabel><content src="a.html"/></navPoint>
      </navMap><pageList><pageTarget id="p5" type="normal" value="5"><navLabel><text>5</text>
      </navLabel><content src="a.html#page5"/></pageTarget></pageList></ncx>"#;
    let a = xhtml("One", r#"<p>the road ran <span id="page5">5</span>north.</p>"#);
    write_epub(
        &path,
        "p.opf",
        &[("p.opf", opf.as_bytes()), ("toc.ncx", ncx.as_bytes()), ("a.html", a.as_bytes())],
    );
    let doc = epub::read(&path, &ReadPolicy::default()).unwrap();
    assert_eq!(outline(&doc), vec![(Some("One".into()), false, s(&["the road ran north."]))]);
    assert_eq!(doc.skipped[0].reason, SkipReason::PageNumber);
}
