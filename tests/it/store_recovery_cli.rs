//! Recovery end to end (issue #49), the real binary on the bundled tiny model: `render
//! --rebuild` aborted at every step resumes to the same database and the same bytes; a project
//! whose take files were all truncated recovers in one render, to the same bytes;
//! `check-project` finds a changed byte; `clean` lists and removes leftovers; a damaged demo
//! model is written again.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::cli_common::{grouped_book_text, isolated_env};

fn lectern() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lectern"));
    cmd.envs(isolated_env());
    cmd.env("LECTERN_VOICES", "/nonexistent-lectern-voices");
    cmd
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// `lectern render BOOK -o OUT --quiet ARGS…`.
fn render(book: &Path, out: &Path, args: &[&str]) -> Output {
    let mut cmd = lectern();
    cmd.arg("render").arg(book).arg("-o").arg(out).arg("--quiet").args(args);
    cmd.output().expect("run lectern")
}

fn render_ok(book: &Path, out: &Path, args: &[&str]) -> Vec<u8> {
    let o = render(book, out, args);
    assert!(o.status.success(), "render failed: {}", text(&o));
    std::fs::read(out).unwrap()
}

/// Four segments (a paragraph each) in flow groups of two (the grouping decides the bytes of
/// a take).
fn grouped_book(dir: &Path) -> PathBuf {
    let text = grouped_book_text();
    let path = dir.join("book.txt");
    std::fs::write(&path, text).unwrap();
    path
}

fn take_wavs(project: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(project.join("takes"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "wav"))
        .collect();
    out.sort();
    out
}

/// Segments, takes and choices of a project's database, as sorted text.
fn content(project: &Path) -> Vec<String> {
    let conn = rusqlite::Connection::open(project.join("project.db")).unwrap();
    let mut out = Vec::new();
    for sql in [
        "SELECT key, hash, dup, segment_id, text, active, content_key FROM segments",
        "SELECT id, segment_key, audio_hash, wav_path, status, created_ms, content_key FROM takes",
        "SELECT segment_key, take_id FROM chosen_takes",
    ] {
        let mut stmt = conn.prepare(sql).unwrap();
        let n = stmt.column_count();
        let mut rows: Vec<String> = stmt
            .query_map([], |r| {
                Ok((0..n)
                    .map(|i| format!("{:?}", r.get::<_, rusqlite::types::Value>(i).unwrap()))
                    .collect::<Vec<_>>()
                    .join("|"))
            })
            .unwrap()
            .map(Result::unwrap)
            .collect();
        rows.sort();
        out.extend(rows);
    }
    out
}

/// Empties a project's database as a lost one is (its WAL gone).
fn lose_database(project: &Path) {
    std::fs::write(project.join("project.db"), b"").unwrap();
    for side in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(project.join(format!("project.db{side}")));
    }
}

/// Copies a project's take files into a fresh project directory with a lost database.
fn copy_lost(from: &Path, to: &Path) {
    std::fs::create_dir_all(to.join("takes")).unwrap();
    for f in take_wavs(from) {
        std::fs::copy(&f, to.join("takes").join(f.file_name().unwrap())).unwrap();
    }
    std::fs::write(to.join("project.db"), b"").unwrap();
}

/// `render --rebuild` aborted (as by `kill -9`) at each step of the rebuild — the temporary
/// database made, the lost one moved aside, each take imported, the import committed, the
/// database sealed, swapped in — then a plain `render`: the rebuild resumes, nothing is
/// rendered again, the database is the one an uninterrupted rebuild makes and the output the
/// same bytes.
#[test]
fn render_rebuild_aborted_at_every_step_resumes_to_the_same_database_and_bytes() {
    let tmp = tempfile::tempdir().unwrap();
    let book = grouped_book(tmp.path());
    let out = tmp.path().join("book.wav");
    let first = render_ok(&book, &out, &[]);
    let original = tmp.path().join("book.lectern");
    let takes = take_wavs(&original).len();
    lose_database(&original);

    let clean = tmp.path().join("clean.lectern");
    copy_lost(&original, &clean);
    let clean_arg = clean.display().to_string();
    let bytes = render_ok(&book, &out, &["--rebuild", "--project", &clean_arg]);
    assert_eq!(bytes, first, "an uninterrupted rebuild gives the same bytes");
    let want = content(&clean);

    // Steps: the build started, the lost database moved, one per take, committed, sealed,
    // swapped.
    let steps = takes + 5;
    for step in 1..=steps {
        let dir = tmp.path().join(format!("step-{step}.lectern"));
        copy_lost(&original, &dir);
        let arg = dir.display().to_string();
        let o = lectern()
            .arg("render")
            .arg(&book)
            .arg("-o")
            .arg(&out)
            .args(["--quiet", "--rebuild", "--project", &arg])
            .env("LECTERN_FAULT", format!("abort-rebuild-step:{step}"))
            .output()
            .unwrap();
        assert!(!o.status.success(), "step {step}: not aborted: {}", text(&o));
        let report = tmp.path().join("report.json");
        let o = render(&book, &out, &["--project", &arg, "--report", report.to_str().unwrap()]);
        assert!(o.status.success(), "step {step}: the next render failed: {}", text(&o));
        let rep: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
        assert_eq!(rep["rendered"], 0, "step {step}: takes rendered again: {}", text(&o));
        assert_eq!(std::fs::read(&out).unwrap(), first, "step {step}: other bytes");
        assert_eq!(content(&dir), want, "step {step}: another database");
        assert!(!dir.join("takes/orphans").exists(), "step {step}: takes orphaned");
    }
}

/// A lost database and a take file with a changed byte: `render --rebuild` re-attaches the
/// take as missing and regenerates it from its record in its flow group: the same bytes as
/// before the loss (once it was left out and its segment rendered anew, in another group).
#[test]
fn a_rebuild_regenerates_a_damaged_take_to_the_same_bytes() {
    let tmp = tempfile::tempdir().unwrap();
    let book = grouped_book(tmp.path());
    let out = tmp.path().join("book.wav");
    let first = render_ok(&book, &out, &[]);
    let project = tmp.path().join("book.lectern");
    let victim = take_wavs(&project)[0].clone();
    let mut bytes = std::fs::read(&victim).unwrap();
    let at = 44 + (bytes.len() - 44) / 3;
    bytes[at] ^= 0x10;
    std::fs::write(&victim, bytes).unwrap();
    lose_database(&project);
    let o = render(&book, &out, &["--rebuild"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("regenerated from its record"), "{}", text(&o));
    assert_eq!(std::fs::read(&out).unwrap(), first, "the regenerated take differs");
}

/// Every take file truncated: ONE render finds them all at open, quarantines them,
/// regenerates each from its record in the flow group it names, and writes the same bytes.
#[test]
fn all_take_files_truncated_recover_in_one_render_to_the_same_bytes() {
    let tmp = tempfile::tempdir().unwrap();
    let book = grouped_book(tmp.path());
    let out = tmp.path().join("book.wav");
    let first = render_ok(&book, &out, &[]);
    let project = tmp.path().join("book.lectern");
    let files = take_wavs(&project);
    assert!(files.len() >= 4);
    let conn = rusqlite::Connection::open(project.join("project.db")).unwrap();
    let (groups, takes): (i64, i64) = conn
        .query_row(
            "SELECT count(DISTINCT json_extract(group_json, '$.segment_ids')), count(*) FROM takes",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert!(groups < takes, "some flow group holds several takes");
    drop(conn);
    for f in &files {
        let file = std::fs::OpenOptions::new().write(true).open(f).unwrap();
        let len = file.metadata().unwrap().len();
        file.set_len(len * 2 / 3).unwrap();
    }
    std::fs::remove_file(&out).unwrap();
    let o = render(&book, &out, &[]);
    assert!(o.status.success(), "one render did not recover: {}", text(&o));
    assert_eq!(std::fs::read(&out).unwrap(), first, "the recovered render differs");
    let quarantined = std::fs::read_dir(project.join("takes/quarantine")).unwrap().count();
    assert_eq!(quarantined, files.len());
    assert_eq!(take_wavs(&project).len(), files.len(), "regenerated, not new takes");
}

/// `check-project` reads every take: a byte changed in place is found, the file quarantined,
/// the command fails naming what to run; that render restores the same bytes and the next
/// check passes.
#[test]
fn check_project_finds_a_changed_byte_and_render_restores_it() {
    let tmp = tempfile::tempdir().unwrap();
    let book = grouped_book(tmp.path());
    let out = tmp.path().join("book.wav");
    let first = render_ok(&book, &out, &[]);
    let project = tmp.path().join("book.lectern");
    let victim = take_wavs(&project)[1].clone();
    let mut bytes = std::fs::read(&victim).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x20;
    std::fs::write(&victim, bytes).unwrap();

    let o = lectern().arg("check-project").arg(&book).output().unwrap();
    assert!(!o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("does not match the hash"), "{}", text(&o));
    assert!(text(&o).contains("lectern render"), "{}", text(&o));
    assert!(!victim.exists());
    assert_eq!(render_ok(&book, &out, &[]), first);
    let o = lectern().arg("check-project").arg(&book).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
}

/// `check-project` of a manuscript without a project refuses instead of creating one.
#[test]
fn check_project_without_a_project_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let book = tmp.path().join("book.txt");
    std::fs::write(&book, "Hello.").unwrap();
    let o = lectern().arg("check-project").arg(&book).output().unwrap();
    assert!(!o.status.success());
    assert!(text(&o).contains("no project at"), "{}", text(&o));
    assert!(!tmp.path().join("book.lectern").exists());
}

/// `clean --dry-run` lists the leftovers and removes nothing; `clean` removes them and keeps
/// the takes and what is not Lectern's.
#[test]
fn clean_lists_with_dry_run_then_removes_leftovers() {
    let tmp = tempfile::tempdir().unwrap();
    let book = tmp.path().join("book.txt");
    std::fs::write(&book, "One bird sang.\n").unwrap();
    let out = tmp.path().join("book.wav");
    render_ok(&book, &out, &[]);
    let project = tmp.path().join("book.lectern");
    let leftovers = [
        project.join("takes/orphans/x.wav"),
        tmp.path().join("book.partial.wav"),
        tmp.path().join("book.wav.part"),
    ];
    let strangers = [tmp.path().join("notes.txt.part"), tmp.path().join("other.partial.wav")];
    for p in leftovers.iter().chain(&strangers) {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, b"x").unwrap();
    }
    let o = lectern().arg("clean").arg(&book).arg("--dry-run").output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    for p in &leftovers {
        assert!(text(&o).contains(&p.display().to_string()), "{}", text(&o));
        assert!(p.exists());
    }
    assert!(text(&o).contains("would remove 3 file(s)"), "{}", text(&o));
    let o = lectern().arg("clean").arg(&book).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert!(leftovers.iter().all(|p| !p.exists()));
    assert!(strangers.iter().all(|p| p.exists()));
    assert!(out.exists() && !take_wavs(&project).is_empty());
}

/// A damaged demo model (a file cut short, a byte changed) is written again from the binary
/// by the next run, which then renders.
#[test]
fn a_damaged_demo_model_is_restored_by_the_next_run() {
    let home = tempfile::tempdir().unwrap();
    let env = [
        ("HOME", home.path().to_path_buf()),
        ("XDG_CONFIG_HOME", home.path().join("config")),
        ("XDG_DATA_HOME", home.path().join("data")),
    ];
    let book = home.path().join("book.txt");
    std::fs::write(&book, "One bird sang.\n").unwrap();
    let run = || {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_lectern"));
        cmd.envs(env.iter().cloned()).env("LECTERN_VOICES", "/nonexistent-lectern-voices");
        cmd.arg("render").arg(&book).arg("-o").arg(home.path().join("book.wav"));
        cmd.args(["--quiet", "--no-project"]).output().unwrap()
    };
    let o = run();
    assert!(o.status.success(), "{}", text(&o));
    let demo = home.path().join("data/lectern/demo/model");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/cosyvoice3-tiny-a/model");
    let llm = demo.join("llm.pt");
    let f = std::fs::OpenOptions::new().write(true).open(&llm).unwrap();
    f.set_len(f.metadata().unwrap().len() / 2).unwrap();
    drop(f);
    let flow = demo.join("flow.pt");
    let mut bytes = std::fs::read(&flow).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x01;
    std::fs::write(&flow, bytes).unwrap();

    let o = run();
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("written again"), "{}", text(&o));
    for name in ["llm.pt", "flow.pt"] {
        assert!(
            std::fs::read(demo.join(name)).unwrap() == std::fs::read(fixture.join(name)).unwrap(),
            "{name} not restored"
        );
    }
}
