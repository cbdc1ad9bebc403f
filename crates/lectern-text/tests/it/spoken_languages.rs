//! Every run in its language: EPUB `xml:lang` stretches, Japanese and Korean by script or tag,
//! languages the model does not speak (listed, skipped or read), numbers spelled in French,
//! German, Spanish, Italian and Russian, and mixed paragraphs sized per run.

use lectern_test_support::epub::{write_epub, xhtml};
use lectern_text::{
    Lang, Manuscript, ParseOptions, ReadPolicy, SegmentKind, SkipReason, UnspokenPolicy, epub,
};

fn opts() -> ParseOptions<'static> {
    ParseOptions::default().with_lead_sentence(false)
}

/// (normalised text, language) of every segment.
fn read(src: &str, opts: &ParseOptions<'_>) -> Vec<(String, Option<String>)> {
    let book = Manuscript::parse(src, opts).unwrap();
    book.segments().map(|s| (s.text.clone(), s.language.clone())).collect()
}

fn seg(text: &str, language: Option<&str>) -> (String, Option<String>) {
    (text.to_string(), language.map(str::to_string))
}

const OPF: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="id">
  <metadata xmlns:dc="http://purl.org/dc/elements/1.1/">
    <dc:identifier id="id">urn:test:languages</dc:identifier>
    <dc:title>Voices</dc:title><dc:language>en</dc:language>
  </metadata>
  <manifest>
    <item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>
    <item id="c1" href="c1.xhtml" media-type="application/xhtml+xml"/>
  </manifest>
  <spine><itemref idref="c1"/></spine>
</package>"#;

const NAV: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<html xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops"><body>
<nav epub:type="toc"><ol><li><a href="c1.xhtml">The Poem</a></li></ol></nav></body></html>"#;

/// An English book whose chapter holds a German quatrain, a Latin epigraph and an Italian
/// dedication, each marked with `xml:lang` or `lang`.
fn book_with_languages(dir: &std::path::Path, body: &str) -> std::path::PathBuf {
    let path = dir.join("voices.epub");
    let c1 = xhtml("The Poem", body);
    write_epub(
        &path,
        "OEBPS/content.opf",
        &[
            ("OEBPS/content.opf", OPF.as_bytes()),
            ("OEBPS/nav.xhtml", NAV.as_bytes()),
            ("OEBPS/c1.xhtml", c1.as_bytes()),
        ],
    );
    path
}

#[test]
fn epub_xml_lang_sets_the_language_of_its_text() {
    let tmp = tempfile::tempdir().unwrap();
    let body = r#"<h1>The Poem</h1>
<p>She sang it on the 3rd of May: <span xml:lang="de">Am 3. Mai 1999 sang sie.</span> Then 2 more.</p>
<div class="stanza" xml:lang="de"><p>Der Mond ist aufgegangen,</p><p>die goldnen Sternlein prangen</p></div>
<p lang="it">A mia madre, il 1º maggio.</p>"#;
    let path = book_with_languages(tmp.path(), body);
    let doc = epub::read(&path, &ReadPolicy::default()).unwrap();
    let blocks = &doc.chapters[0].blocks;
    let first = blocks.iter().find(|b| b.text.starts_with("She sang")).unwrap();
    let (range, tag) = &first.languages[0];
    assert_eq!((&first.text[range.clone()], tag.as_str()), ("Am 3. Mai 1999 sang sie.", "de"));
    // The book's text is as written: no markup was put into it.
    assert!(!first.text.contains('['));
    let book = Manuscript::from_document(&doc, &path, &opts()).unwrap();
    let segs: Vec<(String, Option<String>)> =
        book.segments().map(|s| (s.text.clone(), s.language.clone())).collect();
    assert_eq!(
        segs,
        vec![
            seg("The Poem.", None),
            seg(
                "She sang it on the third of May: Am dritten Mai neunzehnhundertneunundneunzig \
                 sang sie. Then two more.",
                Some("de")
            ),
            seg("Der Mond ist aufgegangen, die goldnen Sternlein prangen.", Some("de")),
            seg("A mia madre, il primo maggio.", Some("it")),
        ]
    );
    // The source stays what is read.
    let s = book.segments().nth(1).unwrap();
    assert!(s.source.contains("Am 3. Mai 1999"), "{}", s.source);
}

#[test]
fn a_latin_epigraph_is_listed_as_unspoken() {
    let tmp = tempfile::tempdir().unwrap();
    let body = r#"<h1>The Poem</h1><p xml:lang="la">Nam Sibyllam quidem Cumis ego ipse oculis meis vidi.</p><p>April is the cruellest month.</p>"#;
    let path = book_with_languages(tmp.path(), body);
    let doc = epub::read(&path, &ReadPolicy::default()).unwrap();
    let book = Manuscript::from_document(&doc, &path, &opts()).unwrap();
    assert_eq!(book.unspoken.len(), 1);
    assert_eq!(book.unspoken[0].language, "la");
    assert_eq!(book.unspoken[0].chapter, 0);
    assert!(book.unspoken[0].text.starts_with("Nam Sibyllam"));
    // Skipped: not read, recorded as skipped.
    let skip = opts().with_unspoken(UnspokenPolicy::Skip);
    let book = Manuscript::from_document(&doc, &path, &skip).unwrap();
    assert!(book.segments().all(|s| !s.text.contains("Sibyllam")));
    let skipped: Vec<_> = book
        .skipped
        .iter()
        .filter(|s| s.reason == SkipReason::UnspokenLanguage)
        .map(|s| (s.kind.clone(), s.text.clone()))
        .collect();
    assert_eq!(skipped.len(), 1);
    assert_eq!(skipped[0].0.as_deref(), Some("la"));
}

#[test]
fn kana_make_japanese_and_its_commas_are_kept() {
    let src = "吾輩は猫である、名前はまだ無い。どこで生れたか、とんと見当がつかぬ。";
    let book = Manuscript::parse(src, &opts()).unwrap();
    let s: Vec<_> = book.segments().collect();
    assert_eq!(s.len(), 1);
    assert_eq!(s[0].text, src, "Japanese is read as written: its 、 stay");
    assert_eq!(s[0].language.as_deref(), Some("ja"));
    assert_eq!(s[0].lang, Lang::Zh, "sized in characters");
    // Tagged `ja`, kanji alone are Japanese too; digits are left to the model.
    let o = opts().with_language(Some("ja".into()));
    assert_eq!(read("第3章、東京。", &o), vec![seg("第3章、東京。", Some("ja"))]);
    // A Japanese run in an English paragraph: its own language; the English keeps its rules.
    assert_eq!(
        read("He said こんにちは、友よ to 2 friends.", &opts()),
        vec![seg("He said こんにちは、友よ to two friends.", Some("ja"))]
    );
    // Without a final mark, Japanese ends with `。`.
    assert_eq!(read("ありがとう", &opts()), vec![seg("ありがとう。", Some("ja"))]);
}

#[test]
fn hangul_is_korean() {
    let src = "안녕하세요, 저는 학생입니다. 3개 있어요.";
    let book = Manuscript::parse(src, &opts()).unwrap();
    let s: Vec<_> = book.segments().collect();
    assert_eq!(s[0].text, src);
    assert_eq!(s[0].language.as_deref(), Some("ko"));
    assert_eq!(s[0].lang, Lang::Zh);
    assert_eq!(read("감사합니다", &opts()), vec![seg("감사합니다.", Some("ko"))]);
}

#[test]
fn arabic_is_unspoken_by_script_and_a_lone_greek_letter_is_a_sign() {
    let src = "# One\n\nThe sign read: مرحبا بكم في المدينة. Then we left.\n\nThe ratio π is 3.14.";
    let md = opts().with_format(lectern_text::Format::Markdown);
    let book = Manuscript::parse(src, &md).unwrap();
    let found: Vec<_> =
        book.unspoken.iter().map(|u| (u.language.as_str(), u.chapter, u.line)).collect();
    assert_eq!(found, vec![("ar", 0, 3)]);
    assert!(book.unspoken[0].text.starts_with("مرحبا"));
    // Read as written by default (the app refuses); skipped on request.
    let first = book.segments().nth(1).unwrap();
    assert!(first.text.contains("مرحبا"), "{}", first.text);
    assert_eq!(first.language.as_deref(), Some("ar"));
    let skip = md.clone().with_unspoken(UnspokenPolicy::Skip);
    let book = Manuscript::parse(src, &skip).unwrap();
    let texts: Vec<&str> = book.segments().map(|s| s.text.as_str()).collect();
    assert_eq!(
        texts,
        ["One.", "The sign read: . Then we left.", "The ratio π is three point one four."]
    );
    assert_eq!(book.skipped[0].reason, SkipReason::UnspokenLanguage);
    // Greek words by script; a tag the model does not speak, whatever the script.
    let greek = Manuscript::parse("The word λόγος means word.", &opts()).unwrap();
    assert_eq!(greek.unspoken[0].language, "el");
    let tagged = Manuscript::parse("[lang:pt]Bom dia, amigo.[/lang]", &opts()).unwrap();
    assert_eq!(tagged.unspoken[0].language, "pt");
}

#[test]
fn numbers_are_spelled_in_the_runs_language() {
    let fr = opts().with_language(Some("fr".into()));
    assert_eq!(
        read("Le 3 mai 1999, il a payé 12 € à 21:00.", &fr),
        vec![seg(
            "Le trois mai mille neuf cent quatre-vingt-dix-neuf, il a payé douze euros à \
             vingt-et-une heures.",
            Some("fr")
        )]
    );
    // A `[lang:fr]` span inside an English book: French numbers.
    assert_eq!(
        read("In 1999: [lang:fr]le 1er mai, 50 %[/lang].", &opts()),
        vec![seg("In nineteen ninety-nine: le premier mai, cinquante pour cent.", Some("fr"))]
    );
    // Cyrillic text is Russian without a tag.
    assert_eq!(
        read("Он родился 3 мая 1999 года.", &opts()),
        vec![seg("Он родился третьего мая тысяча девятьсот девяносто девятого года.", Some("ru"))]
    );
}

#[test]
fn a_mixed_paragraph_is_sized_per_run() {
    // An English sentence of about 30 tokens (well over 80 characters) inside Chinese text:
    // sized in tokens, it is not cut at its comma.
    let english = "The old lighthouse keeper, who had watched the sea for forty years, finally \
                   walked down to the harbour at dawn.";
    let src = format!("他说：{english}我们都笑了。");
    let book = Manuscript::parse(&src, &opts()).unwrap();
    let segs: Vec<_> = book.segments().collect();
    assert!(segs.iter().all(|s| s.boundary != lectern_text::Boundary::Comma), "{segs:#?}");
    assert!(segs.iter().any(|s| s.text.contains("forty years, finally walked")));
    assert_eq!(segs[0].kind, SegmentKind::Body);
}
