//! Headless proofing end to end: `lectern takes|reseed|choose|approve|note|pickups` on a book
//! rendered with the real binary on the bundled tiny model. Segments are numbered as the dry
//! run numbers them, takes as the list shows them, and each refusal names the command that
//! fixes it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::cli_common::isolated_env;
use serde_json::Value;

/// Three paragraphs; with base seed 3 the tiny model gives no speech for the second one's
/// default seed nor for its first re-seed (found by rendering a few hundred sentences).
const BOOK: &str = "The first line is fine.\n\nCold light came under house mara warm.\n\n\
                    The last line is fine too.\n";
/// The base seed under which segment 2 of [`BOOK`] gives no speech.
const SILENT_BASE: &str = "3";

fn lectern() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lectern"));
    cmd.envs(isolated_env());
    cmd.env("LECTERN_VOICES", "/nonexistent-lectern-voices");
    cmd
}

fn run(args: &[&str], book: &Path) -> Output {
    let mut cmd = lectern();
    let (first, rest) = args.split_first().expect("a command");
    cmd.arg(first).arg(book).args(rest);
    cmd.output().expect("run lectern")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn ok(o: Output) -> String {
    assert!(o.status.success(), "failed: {}\n{}", stderr(&o), stdout(&o));
    stdout(&o)
}

fn refused(o: Output) -> String {
    assert!(!o.status.success(), "should fail: {}", stdout(&o));
    stderr(&o)
}

fn book_in(dir: &Path) -> PathBuf {
    let path = dir.join("tale.md");
    std::fs::write(&path, BOOK).unwrap();
    path
}

fn render(book: &Path, args: &[&str]) -> Output {
    let out = book.with_extension("wav");
    let mut cmd = lectern();
    cmd.arg("render").arg(book).arg("-o").arg(out).arg("--quiet").args(args);
    cmd.output().expect("run lectern")
}

/// `lectern takes BOOK --json`'s segments.
fn listing(book: &Path, base: &str) -> Vec<Value> {
    let json: Value =
        serde_json::from_str(&ok(run(&["takes", "--json", "--seed", base], book))).unwrap();
    assert_eq!(json["schema"], "lectern.takes/1");
    json["segments"].as_array().unwrap().clone()
}

#[test]
fn takes_numbers_segments_as_the_dry_run_does() {
    let dir = tempfile::tempdir().unwrap();
    let book = book_in(dir.path());
    let err = refused(run(&["takes"], &book));
    assert!(err.contains(&format!("lectern render {}", book.display())), "{err}");

    ok(render(&book, &[]));
    let dry =
        ok(lectern().arg("render").arg(&book).args(["--dry-run", "--json"]).output().unwrap());
    let dry: Value = serde_json::from_str(&dry).unwrap();
    let listed = listing(&book, "1000");
    let dry_segments = dry["segments"].as_array().unwrap();
    assert_eq!(listed.len(), dry_segments.len());
    for (l, d) in listed.iter().zip(dry_segments) {
        assert_eq!(l["segment"], d["segment"]);
        assert_eq!(l["text"], d["text"]);
        assert_eq!(l["chosen"], 1);
        assert_eq!(l["ready"], true);
        assert_eq!(l["review"], "unheard");
    }
    let table = ok(run(&["takes"], &book));
    assert!(table.contains("   2  unheard   1/1    Cold light came"), "{table}");
    let one = ok(run(&["takes", "3"], &book));
    assert!(one.starts_with("segment 3 · chapter 1 · line 5 · unheard"), "{one}");
    assert!(one.contains("take  1") && one.contains("chosen"), "{one}");
    let err = refused(run(&["takes", "9"], &book));
    assert!(err.contains("there is no segment 9") && err.contains("has 3 segments"), "{err}");
    assert!(err.contains(&format!("`lectern takes {}`", book.display())), "{err}");
}

#[test]
fn reseed_adds_a_take_and_choose_picks_it_by_its_number() {
    let dir = tempfile::tempdir().unwrap();
    let book = book_in(dir.path());
    ok(render(&book, &[]));
    let first_seed = listing(&book, "1000")[0]["takes"][0]["seed"].clone();
    let said = ok(run(&["reseed", "1", "--quiet"], &book));
    let fix = format!("lectern choose {} 1 2", book.display());
    assert!(said.starts_with("segment 1: take 2 (seed ") && said.contains(&fix), "{said}");
    let takes = listing(&book, "1000")[0]["takes"].as_array().unwrap().clone();
    assert_eq!(takes.len(), 2);
    assert_eq!(takes[0]["seed"], first_seed);
    assert_ne!(takes[1]["seed"], first_seed);
    assert_eq!(
        (takes[0]["chosen"].clone(), takes[1]["chosen"].clone()),
        (true.into(), false.into())
    );

    assert!(ok(run(&["choose", "1", "2"], &book)).contains("segment 1: take 2 chosen"));
    assert_eq!(listing(&book, "1000")[0]["chosen"], 2);
    let err = refused(run(&["choose", "1", "5"], &book));
    assert!(err.contains("has no take 5: it has 2"), "{err}");
    assert!(err.contains(&format!("`lectern takes {} 1`", book.display())), "{err}");
    let err = refused(run(&["reseed", "0"], &book));
    assert!(err.contains("numbered from 1"), "{err}");
}

#[test]
fn approve_locks_the_choice_until_undone() {
    let dir = tempfile::tempdir().unwrap();
    let book = book_in(dir.path());
    let err = refused(run(&["approve", "1"], &book));
    assert!(err.contains("render it first"), "{err}");
    ok(render(&book, &[]));
    let said = ok(run(&["approve", "1-2"], &book));
    assert!(said.contains("segment(s) 1, 2: approved (2 of 3 approved)"), "{said}");
    let reviews: Vec<Value> = listing(&book, "1000").iter().map(|s| s["review"].clone()).collect();
    assert_eq!(reviews, ["approved", "approved", "unheard"]);
    let err = refused(run(&["choose", "1", "1"], &book));
    assert!(err.contains(&format!("`lectern approve {} 1 --undo`", book.display())), "{err}");
    assert!(ok(run(&["approve", "1", "--undo"], &book)).contains("approval taken back"));
    assert_eq!(listing(&book, "1000")[0]["review"], "heard");
    ok(run(&["choose", "1", "1"], &book));
}

#[test]
fn notes_and_pickups_are_kept_and_listed() {
    let dir = tempfile::tempdir().unwrap();
    let book = book_in(dir.path());
    ok(render(&book, &[]));
    assert_eq!(ok(run(&["pickups"], &book)).trim(), "no pickups (3 segments)");
    let said = ok(run(&["note", "3", "Breath noise before Mara; redo", "--pickup"], &book));
    assert_eq!(said.trim(), "segment 3: note saved, marked for a pickup");
    ok(run(&["note", "1", "a little fast"], &book));
    let pickups = ok(run(&["pickups"], &book));
    assert!(pickups.contains("segment 3 · line 5: The last line is fine too."), "{pickups}");
    assert!(pickups.contains("note: Breath noise before Mara; redo"), "{pickups}");
    assert!(!pickups.contains("segment 1"), "a note alone is no pickup: {pickups}");
    let listed = listing(&book, "1000");
    assert_eq!(listed[0]["note"], "a little fast");
    assert_eq!(listed[2]["review"], "pickup");
    let json: Value = serde_json::from_str(&ok(run(&["pickups", "--json"], &book))).unwrap();
    assert_eq!(json["segments"].as_array().unwrap().len(), 1);
    ok(run(&["note", "1", ""], &book));
    assert_eq!(listing(&book, "1000")[0]["note"], "");
}

#[test]
fn a_segment_without_speech_is_fixed_by_reseed_by_hand() {
    let dir = tempfile::tempdir().unwrap();
    let book = book_in(dir.path());
    // Segment 2 gives no speech at this base seed: the render tries its next seeds by itself.
    let o = render(&book, &["--seed", SILENT_BASE]);
    assert!(stderr(&o).contains("segment 2: no speech with seed"), "{}", stderr(&o));
    ok(o);
    let listed = listing(&book, SILENT_BASE);
    let takes = listed[1]["takes"].as_array().unwrap();
    assert_eq!(takes.len(), 1, "{listed:?}");
    assert!(takes[0]["retry"].as_u64().is_some_and(|n| n > 0), "flagged as a retry: {listed:?}");
    // By hand: `reseed` makes another take of it, and `choose` picks it.
    let said = ok(run(&["reseed", "2", "--seed", SILENT_BASE], &book));
    assert!(said.contains("segment 2: take 2 (seed ") && said.contains("lectern choose"), "{said}");
    ok(run(&["choose", "2", "2", "--seed", SILENT_BASE], &book));
    let listed = listing(&book, SILENT_BASE);
    assert_eq!(listed[1]["takes"].as_array().unwrap().len(), 2);
    assert_eq!(listed[1]["ready"], true);
    // The book now renders from its takes alone.
    ok(render(&book, &["--seed", SILENT_BASE]));
}

#[test]
fn an_edit_keeps_the_narrators_work_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let book = book_in(dir.path());
    ok(render(&book, &[]));
    ok(run(&["approve", "2"], &book));
    ok(run(&["note", "2", "Breath noise before Mara; redo"], &book));
    let text = std::fs::read_to_string(&book).unwrap();
    std::fs::write(&book, text.replace("under house mara warm", "under the mara house")).unwrap();

    let o = run(&["takes"], &book);
    let said = stderr(&o);
    assert!(said.contains("1 segment edited since approval; 1 note carried"), "{said}");
    let table = ok(o);
    assert!(
        table.contains("   2  edited    -      Cold light came under the mara house."),
        "{table}"
    );
    assert!(
        table.contains("note: Breath noise before Mara; redo · edited since approval"),
        "{table}"
    );
    let pickups = ok(run(&["pickups"], &book));
    assert!(pickups.contains("segment 2 · line 3 (edited since approval)"), "{pickups}");
    let listed = listing(&book, "1000");
    assert_eq!(
        (listed[1]["review"].as_str(), listed[1]["edited_since_approval"].as_bool()),
        (Some("pickup"), Some(true))
    );
    // Its take was made for the old text: approving it again needs a new one first.
    let err = refused(run(&["approve", "2"], &book));
    assert!(
        err.contains(&format!("render it first with `lectern render {}`", book.display())),
        "{err}"
    );
}
