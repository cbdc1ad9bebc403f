//! The corpus extracts (`fixtures/books/<name>/`, cut from real EPUBs: see each one's
//! `SOURCE.md`) packed into EPUBs and opened by the reader. What each should read is in its
//! `EXPECTED.md`; here only that each book opens and yields a chapter.

use lectern_test_support::epub::{corpus_book, corpus_dir, pack_tree};
use lectern_text::ReadPolicy;
use lectern_text::epub;

/// Every extract: the directories of `fixtures/books` that hold a `mimetype`.
fn extracts() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(corpus_dir())
        .expect("fixtures/books")
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("mimetype").is_file())
        .map(|p| p.file_name().unwrap().to_str().unwrap().to_string())
        .collect();
    names.sort();
    names
}

#[test]
fn there_are_the_corpus_extracts() {
    let names = extracts();
    for name in ["wasteland", "childrens-literature", "moby-dick-se", "georgia-pls-ssml"] {
        assert!(names.iter().any(|n| n == name), "{name} missing from {names:?}");
    }
}

#[test]
fn every_corpus_extract_opens_and_yields_a_chapter() {
    let tmp = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    for name in extracts() {
        let path = tmp.path().join(format!("{name}.epub"));
        pack_tree(&corpus_book(&name), &path);
        match epub::read(&path, &ReadPolicy::default()) {
            Ok(doc) if doc.chapters.is_empty() => failures.push(format!("{name}: no chapter")),
            Ok(_) => {}
            Err(e) => failures.push(format!("{name}: {e}")),
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// What a listener hears of a book, as a reviewable text: each chapter's title and marks, each
/// segment's spoken text (the real Qwen2 tokenizer cuts them) with its language tag when it has
/// one, then what was left out and why.
fn spoken_outline(name: &str) -> String {
    use std::fmt::Write as _;
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join(format!("{name}.epub"));
    pack_tree(&corpus_book(name), &path);
    let doc = epub::read(&path, &ReadPolicy::default()).unwrap();
    let tokenizer = lectern_text::Tokenizer::from_model_dir(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/qwen2-tokenizer"),
    )
    .unwrap();
    let opts =
        lectern_text::ParseOptions::default().with_tokenizer(&tokenizer).with_lead_sentence(false);
    let book = lectern_text::Manuscript::from_document(&doc, &path, &opts).unwrap();
    let mut out = String::new();
    for (k, chapter) in book.chapters.iter().enumerate() {
        let title = chapter.title.as_deref().unwrap_or("(untitled)");
        let _ = writeln!(out, "## {} {title}", k + 1);
        for mark in &chapter.marks {
            let _ = writeln!(
                out,
                "   mark at segment {}: {}{}",
                mark.segment + 1,
                "  ".repeat(mark.depth),
                mark.title
            );
        }
        for s in &chapter.segments {
            let lang = s.language.as_deref().map(|l| format!(" [{l}]")).unwrap_or_default();
            let _ = writeln!(out, "{}{lang} | {}", s.id + 1, s.text);
        }
    }
    let _ = writeln!(out, "## skipped");
    for k in &book.skipped {
        let kind = k.kind.as_deref().map(|k| format!(" ({k})")).unwrap_or_default();
        let _ = writeln!(
            out,
            "chapter {} line {}: {}{kind}: {}",
            k.chapter + 1,
            k.line,
            k.reason.describe(),
            k.text
        );
    }
    out
}

/// Golden readings of the real books' hard parts, reviewed by hand against each extract's
/// `EXPECTED.md`: no page number, line number, note marker, navigation or code is read.
#[test]
fn corpus_extracts_read_as_a_narrator_reads_them() {
    for name in extracts() {
        let outline = spoken_outline(&name);
        insta::assert_snapshot!(format!("corpus_{name}"), outline);
    }
}
