//! Read-along editions (`epub::overlay`): every segment of a real EPUB is found again in its
//! XHTML and wrapped in a span holding exactly its words; the overlays pair them with clips.

use std::io::Read;

use lectern_test_support::epub::epub3;
use lectern_text::epub::overlay::{self, OverlayAudio, OverlayClip, ReadAlong};
use lectern_text::{Manuscript, ParseOptions, ReadPolicy};

/// The entries of a ZIP, by name.
fn entries(path: &std::path::Path) -> Vec<(String, String)> {
    let mut zip = zip::ZipArchive::new(std::fs::File::open(path).unwrap()).unwrap();
    (0..zip.len())
        .map(|k| {
            let mut f = zip.by_index(k).unwrap();
            let mut text = String::new();
            let _ = f.read_to_string(&mut text);
            (f.name().unwrap().to_string(), text)
        })
        .collect()
}

/// A read-along of `sources` on one stand-in MP3, half a second a segment, one a second apart.
fn read_along_of(sources: &[String], narrator: Option<&str>) -> ReadAlong {
    let clips = sources
        .iter()
        .enumerate()
        .map(|(k, text)| OverlayClip {
            text: text.clone(),
            audio: 0,
            begin_s: k as f64,
            end_s: k as f64 + 0.5,
        })
        .collect();
    ReadAlong {
        audio: vec![OverlayAudio {
            name: "01-book.mp3".into(),
            media_type: "audio/mpeg".into(),
            bytes: vec![0xff, 0xfb, 0x90, 0x00],
        }],
        clips,
        narrator: narrator.map(str::to_string),
        disclosure: vec![("synthetic-speech".into(), "yes".into())],
    }
}

/// Letters and digits, lower-cased: the words of a text, whatever its spacing and punctuation.
fn letters(text: &str) -> String {
    text.chars().filter(|c| c.is_alphanumeric()).flat_map(char::to_lowercase).collect()
}

/// Whether `anchored` holds the words of `segment` in order, with at most a few characters
/// more (a page number the book prints inside a paragraph, which the reading leaves out).
fn holds(anchored: &str, segment: &str) -> bool {
    let (got, want) = (letters(anchored), letters(segment));
    let mut wanted = want.chars().peekable();
    let mut extra = 0;
    for c in got.chars() {
        if wanted.peek() == Some(&c) {
            wanted.next();
        } else {
            extra += 1;
        }
    }
    wanted.peek().is_none() && extra <= 4 + want.chars().count() / 10
}

/// The text inside `<span id="ID">…</span>` (nested tags left out).
fn span_text(xhtml: &str, id: &str) -> String {
    let start = xhtml.find(&format!("<span id=\"{id}\">")).unwrap_or_else(|| panic!("#{id}"));
    let mut depth = 0;
    let mut out = String::new();
    let mut rest = &xhtml[start..];
    while let Some(k) = rest.find('<') {
        out.push_str(&rest[..k]);
        let end = rest[k..].find('>').unwrap() + k + 1;
        let tag = &rest[k..end];
        if tag.starts_with("<rt") {
            // A ruby's reading is not read aloud: skip to its end.
            let close = rest[end..].find("</rt>").unwrap() + end;
            rest = &rest[close + "</rt>".len()..];
            continue;
        }
        if tag.starts_with("<span") {
            depth += 1;
        } else if tag.starts_with("</span") {
            depth -= 1;
            if depth == 0 {
                break;
            }
        }
        rest = &rest[end..];
    }
    out
}

#[test]
fn every_segment_of_a_book_is_anchored_around_its_own_words() {
    let tmp = tempfile::tempdir().unwrap();
    let book = tmp.path().join("book.epub");
    epub3(&book);
    let doc = lectern_text::epub::read(&book, &ReadPolicy::default()).unwrap();
    let opts = ParseOptions::default().with_lead_sentence(false);
    let manuscript = Manuscript::from_document(&doc, &book, &opts).unwrap();
    let sources: Vec<String> =
        manuscript.chapters.iter().flat_map(|c| &c.segments).map(|s| s.source.clone()).collect();
    assert!(sources.len() >= 8, "{sources:?}");
    let read_along = read_along_of(&sources, Some("Nell Reader"));
    let out = tmp.path().join("read-along.epub");
    let report = overlay::write(&book, &out, &read_along).unwrap();
    assert_eq!(report.unanchored, Vec::<usize>::new(), "{sources:?}");
    let files = entries(&out);
    assert_eq!(files[0], ("mimetype".to_string(), "application/epub+zip".to_string()));
    let file = |name: &str| files.iter().find(|(n, _)| n == name).unwrap().1.clone();
    for anchor in &report.anchors {
        let xhtml = file(&anchor.document);
        assert_eq!(letters(&span_text(&xhtml, &anchor.id)), letters(&sources[anchor.clip]));
    }
    // Chapter 1 is two files, chapters 2 and 3 one: three overlays, one per narrated file.
    assert_eq!(report.overlays.len(), 3);
    let smil = file(&report.overlays[2]);
    assert!(smil.contains("<text src=\"../../text/ch23.xhtml#lectern-s"), "{smil}");
    assert!(smil.contains("<audio src=\"../audio/01-book.mp3\" clipBegin=\""), "{smil}");
    let opf = file("OEBPS/content.opf");
    assert!(opf.contains("href=\"text/ch1%20b.xhtml\" media-type=\"application/xhtml+xml\" media-overlay=\"lectern-mo-2\""), "{opf}");
    assert!(opf.contains("<meta property=\"media:narrator\">Nell Reader</meta>"), "{opf}");
    assert!(opf.contains("<meta property=\"lectern:synthetic-speech\">yes</meta>"), "{opf}");
    // The rest of the book is as it was: the cover image and the notes, byte for byte.
    let original = entries(&book);
    for name in ["OEBPS/text/notes.xhtml", "OEBPS/nav.xhtml", "META-INF/container.xml"] {
        let was = &original.iter().find(|(n, _)| n == name).unwrap().1;
        assert_eq!(&file(name), was, "{name}");
    }
}

#[test]
fn an_epub_2_book_is_refused_by_name() {
    let tmp = tempfile::tempdir().unwrap();
    let book = tmp.path().join("old.epub");
    lectern_test_support::epub::epub2(&book);
    let err = overlay::write(&book, &tmp.path().join("o.epub"), &ReadAlong::default()).unwrap_err();
    assert!(err.to_string().contains("from an EPUB 3 book"), "{err}");
}

/// A segment's words without the bracketed phones an `ssml:ph` left in its source.
fn without_phones(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(k) = rest.find('[') {
        out.push_str(&rest[..k]);
        match rest[k..].find(']') {
            Some(end) if !rest[k..k + end].contains(' ') => rest = &rest[k + end + 1..],
            _ => {
                out.push('[');
                rest = &rest[k + 1..];
            }
        }
    }
    out + rest
}

/// Every corpus extract (real books: Standard Ebooks, IDPF samples, Japanese with ruby, Arabic,
/// verse, SVG text, a book of `ssml:ph`): every segment with printed words is found in the
/// book's XHTML and anchored around exactly those words (a page number the book prints inside
/// a paragraph aside).
#[test]
fn every_segment_of_the_corpus_books_is_anchored() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = lectern_test_support::epub::corpus_dir();
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("mimetype").is_file())
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut failures = Vec::new();
    for name in names {
        let book = tmp.path().join(format!("{name}.epub"));
        lectern_test_support::epub::pack_tree(&dir.join(&name), &book);
        let doc = lectern_text::epub::read(&book, &ReadPolicy::default()).unwrap();
        let opts = ParseOptions::default().with_lead_sentence(false);
        let manuscript = Manuscript::from_document(&doc, &book, &opts).unwrap();
        let sources: Vec<String> = manuscript
            .chapters
            .iter()
            .flat_map(|c| &c.segments)
            .map(|s| without_phones(&s.source))
            .collect();
        let read_along = read_along_of(&sources, None);
        let out = tmp.path().join(format!("{name}-read-along.epub"));
        let report = overlay::write(&book, &out, &read_along).unwrap();
        for &k in &report.unanchored {
            if !letters(&sources[k]).is_empty() {
                failures.push(format!("{name}: not anchored: {:?}", sources[k]));
            }
        }
        let files = entries(&out);
        let file = |n: &str| files.iter().find(|(x, _)| x == n).unwrap().1.clone();
        for anchor in &report.anchors {
            let xhtml = file(&anchor.document);
            // An anchor on an element of the book's own (SVG text, two paragraphs) holds more.
            let own_span = xhtml.contains(&format!("<span id=\"{}\">", anchor.id));
            if own_span && !holds(&span_text(&xhtml, &anchor.id), &sources[anchor.clip]) {
                failures.push(format!(
                    "{name}: #{} holds {:?}, not {:?}",
                    anchor.id,
                    span_text(&xhtml, &anchor.id),
                    sources[anchor.clip]
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
