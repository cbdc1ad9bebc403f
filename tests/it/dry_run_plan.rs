//! The dry run is the render's plan: it applies the narrator's casting choices kept in the
//! project (voice and style chosen in the workstation) and refuses a voice the render would
//! refuse, with the same message; a cast's pace reads as written.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::cli_common::isolated_env;
use crate::session_common::open_session;
use lectern::review::CastingOverride;
use serde_json::Value;

fn lectern() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lectern"));
    cmd.envs(isolated_env());
    cmd.env("LECTERN_VOICES", "/nonexistent-lectern-voices");
    cmd
}

fn book_in(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("book.md");
    std::fs::write(&path, text).unwrap();
    path
}

fn render(book: &Path, args: &[&str]) -> Output {
    let mut cmd = lectern();
    cmd.arg("render").arg(book).arg("-o").arg(book.with_extension("wav")).arg("--quiet");
    cmd.args(args).output().expect("run lectern")
}

/// The `error:` line of a failed run.
fn error_line(o: &Output) -> String {
    assert!(!o.status.success(), "should fail");
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    err.lines().find(|l| l.starts_with("error:")).unwrap_or_else(|| panic!("{err}")).to_string()
}

#[test]
fn an_unknown_voice_fails_the_dry_run_as_it_fails_the_render() {
    let dir = tempfile::tempdir().unwrap();
    let book = book_in(dir.path(), "Hello there.\n\n[voice:nobody]Who is this?\n");
    let dry = error_line(&render(&book, &["--dry-run"]));
    assert!(dry.contains("book.md:3") && dry.contains("unknown voice `nobody`"), "{dry}");
    assert_eq!(dry, error_line(&render(&book, &[])), "the same refusal");
}

#[test]
fn the_dry_run_shows_the_workstations_casting_and_the_casts_pace() {
    let dir = tempfile::tempdir().unwrap();
    // The narrator gives segment 2 a style in the workstation.
    let book = book_in(dir.path(), "Hello there.\n\nWho is this?\n");
    let mut s = open_session(&book, 1000);
    let key = s.segments()[1].key;
    let whisper = CastingOverride { voice: None, style: Some("Whisper.".into()) };
    s.set_casting_override(key, &whisper).unwrap();
    drop(s);
    // Then a cast speaks a third line, and the fourth is marked up at pace 1.2 (read as
    // `f32`, it is 1.2000000476837158 as `f64`).
    let book = book_in(
        dir.path(),
        "Hello there.\n\nWho is this?\n\nAnna: It is me.\n\n[pace:1.2]Quickly now.\n",
    );
    let cast = "[characters.Anna]\nvoice = \"tiny-demo\"\npace = 1.2\n";
    std::fs::write(dir.path().join("cast.toml"), cast).unwrap();
    let dry = |args: &[&str]| {
        let o = lectern().arg("render").arg(&book).arg("--dry-run").args(args).output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let table = dry(&[]);
    assert!(table.contains("pace 1.2") && !table.contains("1.2000"), "{table}");
    assert_eq!(table.matches("pace 1.2").count(), 2, "{table}");
    let json: Value = serde_json::from_str(&dry(&["--json"])).unwrap();
    let segments = json["segments"].as_array().unwrap();
    let shown = |i: usize| segments[i]["cast"].as_str().unwrap_or("").to_string();
    assert!(shown(1).contains("instruct “Whisper.”"), "{}", segments[1]);
    assert!(!shown(0).contains("Whisper"), "only the segment it was chosen for");
    assert!(table.contains("instruct “Whisper.”"), "{table}");
}
