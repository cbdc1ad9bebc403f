//! Text in a language CosyVoice3 does not speak: the dry run lists it (`unspoken`, and a
//! warning), `render` refuses the book naming language, chapter and line, and
//! `--unspoken-languages skip|read` lets it through.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::cli_common::isolated_env;

fn lectern() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lectern"));
    cmd.envs(isolated_env());
    cmd.env("LECTERN_VOICES", "/nonexistent-lectern-voices");
    cmd
}

/// A Markdown book whose second chapter has an Arabic paragraph (line 9).
fn arabic_book(dir: &Path) -> PathBuf {
    let path = dir.join("book.md");
    let text = "# One\n\nThe caravan left at dawn.\n\n# Two\n\nThe sign over the gate read:\n\n\
                مرحبا بكم في المدينة القديمة\n\nThen we went in.\n";
    std::fs::write(&path, text).unwrap();
    path
}

fn render(book: &Path, args: &[&str]) -> std::process::Output {
    lectern()
        .arg("render")
        .arg(book)
        .arg("-o")
        .arg(book.with_extension("wav"))
        .arg("--quiet")
        .args(args)
        .output()
        .expect("run lectern")
}

fn dry_run_json(book: &Path, args: &[&str]) -> (Value, String) {
    let o = render(book, &[&["--dry-run", "--json"], args].concat());
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{stderr}");
    (serde_json::from_slice(&o.stdout).expect("dry-run json"), stderr)
}

#[test]
fn an_arabic_paragraph_is_listed_by_the_dry_run_and_refused_by_render() {
    let tmp = tempfile::tempdir().unwrap();
    let book = arabic_book(tmp.path());
    let (json, stderr) = dry_run_json(&book, &[]);
    let unspoken = json["unspoken"].as_array().unwrap();
    assert_eq!(unspoken.len(), 1, "{json:#}");
    assert_eq!(unspoken[0]["language"], "ar");
    assert_eq!(unspoken[0]["chapter"], 2);
    assert_eq!(unspoken[0]["line"], 9);
    assert!(unspoken[0]["excerpt"].as_str().unwrap().starts_with("مرحبا"));
    let warnings = json["warnings"].as_array().unwrap();
    assert!(warnings.iter().any(|w| w.as_str().unwrap().contains("Arabic (ar)")), "{json:#}");
    assert!(stderr.contains("does not speak"), "{stderr}");

    let o = render(&book, &[]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    for part in ["Arabic (ar)", "chapter 2", "line 9", "--unspoken-languages"] {
        assert!(stderr.contains(part), "{part} missing: {stderr}");
    }
    assert!(!book.with_extension("wav").exists(), "refused before any work");
}

#[test]
fn unspoken_languages_skip_leaves_the_text_out_and_records_it() {
    let tmp = tempfile::tempdir().unwrap();
    let book = arabic_book(tmp.path());
    let (json, _) = dry_run_json(&book, &["--unspoken-languages", "skip"]);
    let skipped = json["skipped"].as_array().unwrap();
    let s = skipped.iter().find(|s| s["reason"] == "unspoken-language").expect("recorded");
    assert_eq!((s["chapter"].as_u64(), s["line"].as_u64()), (Some(2), Some(9)));
    assert_eq!(s["kind"], "ar");
    let segments = json["segments"].as_array().unwrap();
    assert!(segments.iter().all(|s| !s["text"].as_str().unwrap().contains("مرحبا")));
    // Still listed as unspoken, for the record.
    assert_eq!(json["unspoken"].as_array().unwrap().len(), 1);
    // `read`: sent as written.
    let (json, _) = dry_run_json(&book, &["--unspoken-languages", "read"]);
    let segments = json["segments"].as_array().unwrap();
    assert!(segments.iter().any(|s| s["text"].as_str().unwrap().contains("مرحبا")));
}
