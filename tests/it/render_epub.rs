//! An EPUB rendered and exported by the `lectern` binary: titles, author and cover reach the
//! export's cue sheet, chapter list and cover file.

use std::path::Path;

use lectern_test_support::epub::{PNG, epub3};

fn lectern() -> std::process::Command {
    let home = Path::new(env!("CARGO_TARGET_TMPDIR")).join("lectern-test-home");
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_lectern"));
    cmd.env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .env("HOME", &home)
        .env("LECTERN_VOICES", "/nonexistent-lectern-voices");
    cmd
}

fn run_ok(cmd: &mut std::process::Command) -> String {
    let out = cmd.output().expect("run lectern");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{err}");
    err
}

#[test]
fn an_epub_renders_and_exports_with_its_titles_author_and_cover() {
    let tmp = tempfile::tempdir().unwrap();
    let book = tmp.path().join("book.epub");
    epub3(&book);
    let wav = tmp.path().join("render.wav");
    run_ok(
        lectern()
            .arg("render")
            .arg(&book)
            .arg("-o")
            .arg(&wav)
            .args(["--quiet", "--skip-front-matter"]),
    );
    let out = tmp.path().join("out/book.wav");
    run_ok(lectern().arg("export").arg(&book).arg("-o").arg(&out));
    let cue = std::fs::read_to_string(tmp.path().join("out/book.wav.cue")).unwrap();
    assert!(cue.starts_with("REM GENERATOR \"Lectern\"\nTITLE \"The Test of Time\"\nPERFORMER \"Ada Writer, Bo Second\"\nFILE"), "{cue}");
    let tracks: Vec<&str> = cue.lines().filter_map(|l| l.strip_prefix("    TITLE ")).collect();
    // Chapter 3 is nested under Chapter 2 in the contents: a mark inside it, not a track.
    assert_eq!(tracks, ["\"Chapter 1: Arrival\"", "\"Chapter 2\""]);
    assert_eq!(std::fs::read(tmp.path().join("out/book.cover.png")).unwrap(), PNG);
    let json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(tmp.path().join("out/book.wav.chapters.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(json["book"]["language"], "en");
    assert_eq!(json["book"]["cover"], "book.cover.png");
    // The export read the book as the render did (front matter skipped): nothing is missing.
    assert_eq!(json["chapters"].as_array().unwrap().len(), 2);
    // Chapter 3 is kept in the chapter list as a sub-chapter of Chapter 2, where it starts.
    let chapter2 = &json["chapters"][1];
    let sub = &chapter2["marks"][0];
    assert_eq!((sub["title"].as_str(), sub["depth"].as_u64()), (Some("Chapter 3"), Some(1)));
    let (start, sub_start) =
        (chapter2["start_s"].as_f64().unwrap(), sub["start_s"].as_f64().unwrap());
    assert!(sub_start > start, "{chapter2}");
}
