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
