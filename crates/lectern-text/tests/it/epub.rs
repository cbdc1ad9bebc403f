//! EPUB input: real EPUB 2 and 3 files built in the test, read into chapters (titles from the
//! nav document or the NCX, a chapter over two files, an anchor opening a chapter, non-linear
//! items left out, front matter flagged), metadata, the manuscript they make, bad books.

use std::path::Path;

use lectern_text::epub::{self, EpubError};
use lectern_text::{Document, Manuscript, ParseOptions, ReadPolicy, SegmentKind};

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
    assert_eq!(
        outline(&doc),
        vec![
            (Some("Title Page".into()), true, s(&["The Test of Time", "by Ada Writer"])),
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
            (Some("Chapter 2".into()), false, s(&["Chapter 2", "Morning was grey."])),
            (Some("Chapter 3".into()), false, s(&["Chapter 3", "Evening was gold.", "The end."])),
        ]
    );
    assert_eq!(doc.chapters[1].blocks[0].kind, SegmentKind::Heading);
    assert_eq!(doc.chapters[1].blocks[1].kind, SegmentKind::Body);
    assert_eq!(doc.info.title.as_deref(), Some("The Test of Time"));
    assert_eq!(doc.info.author.as_deref(), Some("Ada Writer, Bo Second"));
    assert_eq!(doc.info.language.as_deref(), Some("en"));
    let cover = doc.info.cover.as_ref().expect("cover");
    assert_eq!((cover.media_type.as_str(), cover.bytes.as_slice()), ("image/png", PNG));
    assert_eq!(cover.extension(), "png");
}

#[test]
fn epub2_chapters_follow_the_ncx_and_the_guide_marks_front_matter() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("old.epub");
    epub2(&path);
    let doc = epub::read(&path, &ReadPolicy::default()).unwrap();
    assert_eq!(
        outline(&doc),
        vec![
            (Some("Copyright".into()), true, s(&["\u{a9} 1901 C. Author. All rights reserved."])),
            (
                Some("Part One".into()),
                false,
                s(&[
                    "Part One",
                    "It began\u{2026} quietly\u{2014}as things do.",
                    "Second paragraph."
                ])
            ),
            (Some("Part Two".into()), false, s(&["Part Two", "Then it ended."])),
        ]
    );
    assert_eq!(doc.info.title.as_deref(), Some("Old & New"));
    assert_eq!(doc.info.author.as_deref(), Some("C. Author"));
    assert_eq!(doc.info.language.as_deref(), Some("fr"));
    assert_eq!(doc.info.cover.as_ref().map(|c| c.extension()), Some("jpg"));
}

#[test]
fn a_book_becomes_a_manuscript_without_losing_a_paragraph() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("book.epub");
    epub3(&path);
    let doc = epub::read(&path, &ReadPolicy::default()).unwrap();
    let opts = ParseOptions::default().with_lead_sentence(false);
    let book = Manuscript::from_document(&doc, &path, &opts).unwrap();
    let titles: Vec<_> = book.chapters.iter().map(|c| c.title.as_deref()).collect();
    assert_eq!(
        titles,
        [Some("Title Page"), Some("Chapter 1: Arrival"), Some("Chapter 2"), Some("Chapter 3")]
    );
    // Every block of the book is in the segments, in order.
    let all: String = book.segments().map(|s| s.text.as_str()).collect::<Vec<_>>().join(" ");
    let mut at = 0;
    for block in doc.chapters.iter().flat_map(|c| &c.blocks) {
        let first_word = block.text.split_whitespace().next().unwrap();
        let k = all[at..].find(first_word).unwrap_or_else(|| panic!("{first_word} lost: {all}"));
        at += k;
    }
    assert_eq!(book.info.title.as_deref(), Some("The Test of Time"));
    // Front matter left out on request; the chapters after it are unchanged.
    let front = ReadPolicy::default().skipping_front_matter();
    let doc_without_front = epub::read(&path, &front).unwrap();
    let skipped = Manuscript::from_document(&doc_without_front, &path, &opts).unwrap();
    let titles: Vec<_> = skipped.chapters.iter().map(|c| c.title.as_deref()).collect();
    assert_eq!(titles, [Some("Chapter 1: Arrival"), Some("Chapter 2"), Some("Chapter 3")]);
    let texts = |m: &Manuscript| m.segments().map(|s| s.text.clone()).collect::<Vec<_>>();
    assert!(texts(&book).ends_with(&texts(&skipped)));
    assert!(!texts(&skipped).iter().any(|t| t.contains("Ada Writer")));
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
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("one.epub");
    let opf = r#"<package xmlns="http://www.idpf.org/2007/opf" version="3.0"><metadata/>
      <manifest><item id="a" href="a.xhtml" media-type="application/xhtml+xml"/></manifest>
      <spine><itemref idref="a"/></spine></package>"#;
    let a = xhtml("One", body);
    write_epub(&path, "p.opf", &[("p.opf", opf.as_bytes()), ("a.xhtml", a.as_bytes())]);
    let doc = epub::read(&path, &ReadPolicy::default()).unwrap();
    doc.chapters.iter().flat_map(|c| c.blocks.iter().map(|b| b.text.clone())).collect()
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
}

/// A line break inside a heading is a space: the heading is one line.
#[test]
fn a_break_in_a_heading_is_a_space() {
    assert_eq!(
        blocks_of("<h2>Chapter I<br/>The Arrival</h2><p>Text.</p>"),
        s(&["Chapter I The Arrival", "Text."])
    );
}
