//! DOCX input: the LibreOffice-made fixture `fixtures/books/docx/manuscript.docx` (its whole
//! spoken outline as a golden snapshot, its metadata, its notes under each policy, the
//! manuscript it makes) and tiny documents built in the test, one rule each: headings by
//! localised style names and outline levels, the untitled chapter, the title, runs, verse,
//! hidden text, comments, tracked changes, fields, tables, errors.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use lectern_text::docx::{self, DocxError};
use lectern_text::{
    DocBlock, Document, Manuscript, NotesPolicy, ParseOptions, ReadPolicy, SegmentKind, SkipReason,
};

use lectern_test_support::docx::{
    DocxParts, STYLES, comments_xml, core_xml, notes_xml, p, write_docx,
};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/books/docx/manuscript.docx")
}

fn read_fixture(policy: &ReadPolicy) -> Document {
    docx::read(&fixture(), policy).unwrap()
}

/// Reads a tiny document of these parts (styles default to [`STYLES`]).
fn read_parts(parts: DocxParts<'_>, policy: &ReadPolicy) -> Document {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("tiny.docx");
    let parts = DocxParts { styles: parts.styles.or(Some(STYLES)), ..parts };
    write_docx(&path, &parts);
    docx::read(&path, policy).unwrap()
}

fn read_body(body: &str) -> Document {
    read_parts(DocxParts { body, ..DocxParts::default() }, &ReadPolicy::default())
}

/// Every block of every chapter, as `[H] text`, `[P] text` or `[V] line / line`.
fn blocks(doc: &Document) -> Vec<String> {
    doc.chapters.iter().flat_map(|c| c.blocks.iter().map(show_block)).collect()
}

fn show_block(b: &DocBlock) -> String {
    let tag = match (b.kind, b.verse) {
        (SegmentKind::Heading, _) => "H",
        (SegmentKind::Body, false) => "P",
        (SegmentKind::Body, true) => "V",
    };
    format!("[{tag}] {}", b.text.replace('\n', " / "))
}

/// Each skip as (chapter, block, reason, excerpt).
fn skips(doc: &Document) -> Vec<(usize, usize, SkipReason, String)> {
    doc.skipped.iter().map(|s| (s.chapter, s.block, s.reason, s.text.clone())).collect()
}

/// The whole spoken outline: metadata, chapters with their blocks and marks, what was
/// skipped, the character counts.
fn outline(doc: &Document) -> String {
    let mut out = String::new();
    let i = &doc.info;
    writeln!(out, "title: {:?}\nauthor: {:?}\nlanguage: {:?}", i.title, i.author, i.language)
        .unwrap();
    for (k, c) in doc.chapters.iter().enumerate() {
        writeln!(out, "\nchapter {k}: {:?}", c.title).unwrap();
        for (n, b) in c.blocks.iter().enumerate() {
            for m in c.marks.iter().filter(|m| m.block == n) {
                writeln!(out, "  (mark, depth {}: {})", m.depth, m.title).unwrap();
            }
            writeln!(out, "  {n}. {}", show_block(b)).unwrap();
        }
    }
    writeln!(out, "\nskipped:").unwrap();
    for s in &doc.skipped {
        let file = s.file.as_deref().unwrap_or("-");
        let kind = s.kind.as_deref().unwrap_or("-");
        let what = format!("{} ({kind}, {file})", s.reason.describe());
        writeln!(out, "  chapter {} block {}: {what}: {}", s.chapter, s.block, s.text).unwrap();
    }
    write!(out, "\nread chars: {}, skipped chars: {}", doc.read_chars, doc.skipped_chars).unwrap();
    out
}

#[test]
fn fixture_spoken_outline() {
    insta::assert_snapshot!("docx_fixture_outline", outline(&read_fixture(&ReadPolicy::default())));
}

#[test]
fn fixture_metadata_comes_from_the_core_properties() {
    let doc = read_fixture(&ReadPolicy::default());
    assert_eq!(doc.info.title.as_deref(), Some("The Lighthouse Keeper’s Ledger"));
    assert_eq!(doc.info.author.as_deref(), Some("Mara Quill"));
    assert_eq!(doc.info.language.as_deref(), Some("en-GB"));
    assert!(doc.info.cover.is_none() && doc.info.narrator.is_none());
}

#[test]
fn fixture_chapters_follow_heading_1_and_heading_2_is_a_section() {
    let doc = read_fixture(&ReadPolicy::default());
    let titles: Vec<_> = doc.chapters.iter().map(|c| c.title.as_deref()).collect();
    assert_eq!(titles, [None, Some("Chapter One: The Storm"), Some("Chapter Two: The Ledger")]);
    let one = &doc.chapters[1];
    assert_eq!(one.blocks[0], DocBlock::heading("Chapter One: The Storm"));
    assert_eq!(one.marks.len(), 1);
    let mark = &one.marks[0];
    assert_eq!((mark.title.as_str(), mark.depth), ("The Keeper’s Song", 1));
    assert_eq!(one.blocks[mark.block], DocBlock::heading("The Keeper’s Song"));
}

#[test]
fn fixture_makes_a_manuscript() {
    let path = fixture();
    let doc = read_fixture(&ReadPolicy::default());
    let book = Manuscript::from_document(&doc, &path, &ParseOptions::default()).unwrap();
    assert_eq!(book.chapters.len(), 3);
    let text: String = book.segments().map(|s| s.text.as_str()).collect::<Vec<_>>().join(" ");
    for never in ["Remember to cut", "very", "Check the number", "Storms on this coast", "TITLE"] {
        assert!(!text.contains(never), "{never:?} was read: {text}");
    }
    assert!(text.contains("Nobody slept"), "{text}");
}

#[test]
fn fixture_notes_inline_follow_their_paragraph() {
    let doc = read_fixture(&ReadPolicy::default().with_notes(NotesPolicy::Inline));
    let b = blocks(&doc);
    let at = b.iter().position(|t| t.contains("Nobody slept")).unwrap();
    assert_eq!(b[at + 1], "[P] Note: Storms on this coast come from the west.");
    let at = b.iter().position(|t| t.contains("closed the book")).unwrap();
    assert_eq!(b[at + 1], "[P] Note: The ledger survives in the county archive.");
    assert!(doc.skipped.iter().all(|s| s.reason != SkipReason::Note));
    // The markers ("1", "i") and the separators are never read.
    assert!(b.iter().all(|t| !t.contains("sigh.i") && !t.contains("black.1")), "{b:?}");
}

#[test]
fn fixture_notes_at_chapter_end_come_under_a_notes_heading() {
    let doc = read_fixture(&ReadPolicy::default().with_notes(NotesPolicy::ChapterEnd));
    let last = |c: usize, n: usize| {
        let blocks = &doc.chapters[c].blocks;
        blocks[blocks.len() - n..].iter().map(show_block).collect::<Vec<_>>()
    };
    assert_eq!(last(1, 2), ["[H] Notes", "[P] Storms on this coast come from the west."]);
    assert_eq!(last(2, 2), ["[H] Notes", "[P] The ledger survives in the county archive."]);
}

#[test]
fn fixture_notes_skipped_are_recorded_where_referenced() {
    let doc = read_fixture(&ReadPolicy::default());
    let notes: Vec<_> = doc.skipped.iter().filter(|s| s.reason == SkipReason::Note).collect();
    assert_eq!(notes.len(), 2);
    assert_eq!((notes[0].chapter, notes[0].block), (1, 1));
    assert_eq!(notes[0].kind.as_deref(), Some("footnote"));
    assert_eq!(notes[0].file.as_deref(), Some("word/footnotes.xml"));
    assert_eq!(notes[1].kind.as_deref(), Some("endnote"));
    assert_eq!(notes[1].text, "The ledger survives in the county archive.");
}

#[test]
fn fixture_table_skipped_by_policy() {
    let doc = read_fixture(&ReadPolicy::default().skipping(&["table"]));
    assert!(blocks(&doc).iter().all(|b| !b.contains("Lamp oil")));
    let table = doc.skipped.iter().find(|s| s.reason == SkipReason::Table).unwrap();
    assert_eq!(table.kind.as_deref(), Some("table"));
    assert!(table.text.starts_with("Item Quantity Supplier Lamp oil"), "{}", table.text);
    assert_eq!((table.chapter, table.block), (2, 2));
}

#[test]
fn headings_are_found_by_localised_style_name_base_and_outline_level() {
    let body = [
        p(Some("Titel"), "Das Buch"),
        p(None, "Vorwort."),
        p(Some("berschrift1"), "Eins"),
        p(Some("Teil"), "Abschnitt"),
        p(None, "Text."),
        p(Some("berschrift3"), "Tiefer"),
        p(Some("Kapitel"), "Zwei"),
        r#"<w:p><w:pPr><w:outlineLvl w:val="0"/></w:pPr><w:r><w:t>Drei</w:t></w:r></w:p>"#.into(),
        r#"<w:p><w:pPr><w:pStyle w:val="berschrift1"/><w:outlineLvl w:val="9"/></w:pPr><w:r><w:t>Kein Kapitel</w:t></w:r></w:p>"#.into(),
    ]
    .concat();
    let doc = read_body(&body);
    let titles: Vec<_> = doc.chapters.iter().map(|c| c.title.as_deref()).collect();
    assert_eq!(titles, [None, Some("Eins"), Some("Zwei"), Some("Drei")]);
    assert_eq!(blocks(&doc)[..2], ["[H] Das Buch", "[P] Vorwort."]);
    let marks: Vec<_> =
        doc.chapters[1].marks.iter().map(|m| (m.title.as_str(), m.block, m.depth)).collect();
    assert_eq!(marks, [("Abschnitt", 1, 1), ("Tiefer", 3, 2)]);
    assert_eq!(show_block(&doc.chapters[3].blocks[1]), "[P] Kein Kapitel");
}

#[test]
fn the_top_heading_level_present_opens_chapters() {
    let body = [p(Some("berschrift2"), "A"), p(None, "a."), p(Some("berschrift3"), "A1")].concat();
    let doc = read_body(&body);
    assert_eq!(doc.chapters.len(), 1);
    assert_eq!(doc.chapters[0].title.as_deref(), Some("A"));
    assert_eq!(doc.chapters[0].marks[0].depth, 1);
}

#[test]
fn the_title_paragraph_names_the_book_unless_the_core_properties_do() {
    let body = [p(Some("Titel"), "Paragraph Title"), p(None, "Text.")].concat();
    let doc = read_body(&body);
    assert_eq!(doc.info.title.as_deref(), Some("Paragraph Title"));
    // Without core properties the styles' default language is the book's.
    assert_eq!(doc.info.language.as_deref(), Some("de-DE"));
    assert_eq!(doc.chapters[0].title, None);
    let core = core_xml(Some("Core Title"), Some("A. Author"), Some("fr"));
    let doc = read_parts(
        DocxParts { body: &body, core: Some(&core), ..DocxParts::default() },
        &ReadPolicy::default(),
    );
    assert_eq!(doc.info.title.as_deref(), Some("Core Title"));
    assert_eq!(doc.info.author.as_deref(), Some("A. Author"));
    assert_eq!(doc.info.language.as_deref(), Some("fr"));
    assert_eq!(blocks(&doc)[0], "[H] Paragraph Title");
}

#[test]
fn runs_read_as_text_and_symbols_page_breaks_and_fields_do_not() {
    let body = r#"<w:p>
<w:r><w:rPr><w:i/></w:rPr><w:t xml:space="preserve">“Well</w:t></w:r><w:r><w:noBreakHyphen/><w:t>known,”</w:t></w:r>
<w:r><w:tab/><w:rPr><w:b/></w:rPr><w:t>she</w:t></w:r><w:r><w:sym w:font="Wingdings" w:char="F04A"/></w:r>
<w:r><w:t xml:space="preserve"> said, </w:t></w:r><w:hyperlink r:id="rId9"><w:r><w:t>see here</w:t></w:r></w:hyperlink>
<w:r><w:br w:type="page"/><w:t xml:space="preserve"> &amp; </w:t></w:r>
<w:r><w:fldChar w:fldCharType="begin"/></w:r><w:r><w:instrText xml:space="preserve"> DATE \@ "yyyy" </w:instrText></w:r>
<w:r><w:fldChar w:fldCharType="separate"/></w:r><w:r><w:t>2024</w:t></w:r><w:r><w:fldChar w:fldCharType="end"/></w:r>
<w:fldSimple w:instr=" AUTHOR "><w:r><w:t xml:space="preserve"> by Mara</w:t></w:r></w:fldSimple>
<w:r><w:lastRenderedPageBreak/><w:t>.</w:t></w:r></w:p>"#;
    assert_eq!(blocks(&read_body(body)), ["[P] “Well-known,” she said, see here & 2024 by Mara."]);
}

#[test]
fn a_table_of_contents_field_is_navigation() {
    let toc_line = |t: &str, last: bool| {
        let end = if last { r#"<w:r><w:fldChar w:fldCharType="end"/></w:r>"# } else { "" };
        format!(r#"<w:p><w:r><w:t>{t}</w:t></w:r>{end}</w:p>"#)
    };
    let body = [
        r#"<w:p><w:r><w:fldChar w:fldCharType="begin"/></w:r><w:r><w:instrText> TOC \o "1-3" </w:instrText></w:r><w:r><w:fldChar w:fldCharType="separate"/></w:r></w:p>"#.to_string(),
        toc_line("One 1", false),
        toc_line("Two 7", true),
        p(Some("berschrift1"), "One"),
        p(None, "Text."),
    ]
    .concat();
    let doc = read_body(&body);
    assert_eq!(blocks(&doc), ["[H] One", "[P] Text."]);
    assert_eq!(skips(&doc), [(0, 0, SkipReason::Navigation, "One 1 Two 7".to_string())]);
}

#[test]
fn manual_line_breaks_make_verse() {
    let body = r#"<w:p><w:r><w:t>Light on the water,</w:t><w:br/><w:t>light on the stone,</w:t></w:r>
<w:r><w:br w:type="textWrapping"/><w:t xml:space="preserve">all night  alone. </w:t><w:br/></w:r></w:p>
<w:p><w:r><w:t>Prose</w:t><w:br w:type="page"/><w:t xml:space="preserve"> goes on.</w:t><w:br w:type="column"/></w:r></w:p>"#;
    let doc = read_body(body);
    assert_eq!(
        doc.chapters[0].blocks,
        [
            DocBlock::stanza("Light on the water,\nlight on the stone,\nall night alone."),
            DocBlock::body("Prose goes on.")
        ]
    );
}

#[test]
fn hidden_text_is_not_read() {
    let body = r#"<w:p><w:r><w:t xml:space="preserve">Seen. </w:t></w:r>
<w:r><w:rPr><w:vanish/></w:rPr><w:t xml:space="preserve">Direct. </w:t></w:r>
<w:r><w:rPr><w:rStyle w:val="Geheim"/></w:rPr><w:t>By style.</w:t></w:r>
<w:r><w:rPr><w:rStyle w:val="Geheim"/><w:vanish w:val="0"/></w:rPr><w:t xml:space="preserve"> Shown.</w:t></w:r></w:p>"#;
    let doc = read_body(body);
    assert_eq!(blocks(&doc), ["[P] Seen. Shown."]);
    assert_eq!(skips(&doc), [(0, 0, SkipReason::Hidden, "Direct. By style.".to_string())]);
    assert_eq!(doc.skipped[0].file.as_deref(), Some("word/document.xml"));
}

#[test]
fn comments_are_recorded_once_where_their_range_starts() {
    let body = [
        p(None, "First."),
        r#"<w:p><w:r><w:t xml:space="preserve">Counted the </w:t></w:r><w:commentRangeStart w:id="3"/><w:r><w:t>lamps</w:t></w:r></w:p>"#.to_string(),
        r#"<w:p><w:r><w:t>twice.</w:t></w:r><w:commentRangeEnd w:id="3"/><w:r><w:commentReference w:id="3"/></w:r></w:p>"#.to_string(),
    ]
    .concat();
    let comments = comments_xml(&[("3", "Check the number of lamps.")]);
    let doc = read_parts(
        DocxParts { body: &body, comments: Some(&comments), ..DocxParts::default() },
        &ReadPolicy::default(),
    );
    assert_eq!(blocks(&doc), ["[P] First.", "[P] Counted the lamps", "[P] twice."]);
    assert_eq!(skips(&doc), [(0, 1, SkipReason::Comment, "Check the number of lamps.".into())]);
    assert_eq!(doc.skipped[0].file.as_deref(), Some("word/comments.xml"));
}

#[test]
fn tracked_deletions_are_not_read_and_insertions_are() {
    let body = r#"<w:p><w:r><w:t xml:space="preserve">She was </w:t></w:r>
<w:del w:id="1" w:author="Ed"><w:r><w:delText xml:space="preserve">very </w:delText></w:r></w:del>
<w:r><w:t>tired</w:t></w:r><w:ins w:id="2" w:author="Ed"><w:r><w:t xml:space="preserve"> but awake</w:t></w:r></w:ins>
<w:moveFrom w:id="3" w:author="Ed"><w:r><w:t xml:space="preserve"> at last</w:t></w:r></w:moveFrom><w:r><w:t>.</w:t></w:r></w:p>"#;
    let doc = read_body(body);
    assert_eq!(blocks(&doc), ["[P] She was tired but awake."]);
    assert_eq!(
        skips(&doc),
        [
            (0, 0, SkipReason::Deletion, "very".to_string()),
            (0, 0, SkipReason::Deletion, "at last".to_string())
        ]
    );
}

#[test]
fn notes_follow_the_policy_and_separators_are_never_read() {
    let body = [
        p(Some("berschrift1"), "One"),
        r#"<w:p><w:r><w:t>Text.</w:t></w:r><w:r><w:rPr><w:rStyle w:val="FootnoteReference"/></w:rPr><w:footnoteReference w:id="1"/></w:r><w:r><w:t xml:space="preserve"> More.</w:t></w:r><w:r><w:endnoteReference w:id="1"/></w:r></w:p>"#.to_string(),
        p(None, "After."),
    ]
    .concat();
    let footnotes = notes_xml("footnote", &[("1", "A footnote.")]);
    let endnotes = notes_xml("endnote", &[("1", "An endnote.")]);
    let parts = DocxParts {
        body: &body,
        footnotes: Some(&footnotes),
        endnotes: Some(&endnotes),
        ..DocxParts::default()
    };
    let read = |notes| read_parts(parts, &ReadPolicy::default().with_notes(notes));
    let skip = read(NotesPolicy::Skip);
    assert_eq!(blocks(&skip), ["[H] One", "[P] Text. More.", "[P] After."]);
    assert_eq!(
        skips(&skip),
        [
            (0, 1, SkipReason::Note, "A footnote.".to_string()),
            (0, 1, SkipReason::Note, "An endnote.".to_string())
        ]
    );
    let inline = read(NotesPolicy::Inline);
    assert_eq!(
        blocks(&inline),
        [
            "[H] One",
            "[P] Text. More.",
            "[P] Note: A footnote.",
            "[P] Note: An endnote.",
            "[P] After."
        ]
    );
    let end = read(NotesPolicy::ChapterEnd);
    assert_eq!(
        blocks(&end),
        [
            "[H] One",
            "[P] Text. More.",
            "[P] After.",
            "[H] Notes",
            "[P] A footnote.",
            "[P] An endnote."
        ]
    );
    assert!(inline.skipped.is_empty() && end.skipped.is_empty());
}

/// A table row: cells of one paragraph each; `header` marks it `w:tblHeader`.
fn row(header: bool, cells: &[&str]) -> String {
    let tr_pr = if header { "<w:trPr><w:tblHeader/></w:trPr>" } else { "" };
    let cells: String = cells.iter().map(|c| format!("<w:tc>{}</w:tc>", p(None, c))).collect();
    format!("<w:tr>{tr_pr}{cells}</w:tr>")
}

#[test]
fn a_table_with_a_header_row_names_its_values() {
    let body = format!(
        "<w:tbl>{}{}{}{}</w:tbl>",
        row(true, &["Item", "Quantity", "Supplier"]),
        row(false, &["Lamp oil", "12 barrels", "Harbour Stores"]),
        row(false, &["Wicks", "", "〃"]),
        row(false, &["Matches", "3 boxes", "Village shop!"]),
    );
    assert_eq!(
        blocks(&read_body(&body)),
        [
            "[P] Item: Lamp oil; Quantity: 12 barrels; Supplier: Harbour Stores.",
            "[P] Item: Wicks; Supplier: Harbour Stores.",
            "[P] Item: Matches; Quantity: 3 boxes; Supplier: Village shop!",
        ]
    );
}

#[test]
fn a_table_without_a_header_is_read_as_lists() {
    let body =
        format!("<w:tbl>{}{}</w:tbl>", row(false, &["Oil", "12"]), row(false, &["do.", "40"]));
    assert_eq!(blocks(&read_body(&body)), ["[P] Oil, 12.", "[P] Oil, 40."]);
    // A header row alone is not read.
    let body = format!("<w:tbl>{}</w:tbl>", row(true, &["Item", "Quantity"]));
    assert!(read_body(&body).chapters.iter().all(|c| c.blocks.is_empty()));
}

#[test]
fn merged_cells_keep_their_columns() {
    let body = format!(
        "<w:tbl>{}{}{}</w:tbl>",
        row(true, &["A", "B", "C"]),
        r#"<w:tr><w:tc><w:tcPr><w:gridSpan w:val="2"/></w:tcPr><w:p><w:r><w:t>wide</w:t></w:r></w:p></w:tc><w:tc><w:tcPr><w:vMerge w:val="restart"/></w:tcPr><w:p><w:r><w:t>tall</w:t></w:r></w:p></w:tc></w:tr>"#,
        r#"<w:tr><w:tc><w:p><w:r><w:t>x</w:t></w:r></w:p></w:tc><w:tc><w:p/></w:tc><w:tc><w:tcPr><w:vMerge/></w:tcPr><w:p/></w:tc></w:tr>"#,
    );
    assert_eq!(blocks(&read_body(&body)), ["[P] A: wide; C: tall.", "[P] A: x; C: tall."]);
}

#[test]
fn chars_read_and_skipped_are_counted() {
    let body = r#"<w:p><w:r><w:t>Read.</w:t></w:r><w:del w:id="1" w:author="E"><w:r><w:delText>Gone</w:delText></w:r></w:del></w:p>"#;
    let doc = read_body(body);
    assert_eq!((doc.read_chars, doc.skipped_chars), (5, 4));
}

#[test]
fn is_docx_goes_by_the_extension() {
    assert!(docx::is_docx(Path::new("book.docx")) && docx::is_docx(Path::new("B.DOCX")));
    assert!(!docx::is_docx(Path::new("book.doc")) && !docx::is_docx(Path::new("docx")));
}

#[test]
fn errors_name_the_file_and_the_entry() {
    let tmp = tempfile::tempdir().unwrap();
    let not_zip = tmp.path().join("plain.docx");
    std::fs::write(&not_zip, "just text").unwrap();
    let err = docx::read(&not_zip, &ReadPolicy::default()).unwrap_err();
    assert!(matches!(err, DocxError::NotZip { .. }), "{err}");
    assert!(err.to_string().contains("plain.docx"), "{err}");

    let missing = tmp.path().join("missing.docx");
    let err = docx::read(&missing, &ReadPolicy::default()).unwrap_err();
    assert!(matches!(err, DocxError::Io { .. }), "{err}");

    let bad = tmp.path().join("bad.docx");
    write_docx(
        &bad,
        &DocxParts { body: "<w:p><w:r><w:t>unclosed</w:r></w:p>", ..DocxParts::default() },
    );
    let err = docx::read(&bad, &ReadPolicy::default()).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, DocxError::Entry { .. }), "{msg}");
    assert!(msg.contains("bad.docx") && msg.contains("`word/document.xml`"), "{msg}");

    let no_notes = tmp.path().join("no-notes.docx");
    write_docx(
        &no_notes,
        &DocxParts { body: &p(None, "x"), footnotes: Some(""), ..DocxParts::default() },
    );
    // An empty notes part is no error (it has no notes).
    assert!(docx::read(&no_notes, &ReadPolicy::default()).is_ok());
}

#[test]
fn a_zip_without_a_main_part_is_missing_it() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("empty.docx");
    let mut zip = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
    zip.start_file("readme.txt", zip::write::SimpleFileOptions::default()).unwrap();
    zip.finish().unwrap();
    let err = docx::read(&path, &ReadPolicy::default()).unwrap_err();
    assert!(
        matches!(&err, DocxError::Missing { entry, .. } if entry == "word/document.xml"),
        "{err}"
    );
}
