//! Outputs never clobber inputs or strangers (issue #49): `render`, `say` and `export` refuse
//! an output that is the manuscript or a file the project reads, anything inside the project,
//! something that is not a file, an existing file Lectern did not write (unless `--force`), and
//! an extension that is not the format written — before any work, leaving everything as it was.

use std::path::Path;
use std::process::{Command, Output};

use crate::cli_common::isolated_env;

fn lectern() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lectern"));
    cmd.envs(isolated_env());
    cmd.env("LECTERN_VOICES", "/nonexistent-lectern-voices");
    cmd
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn render(book: &Path, out: &Path, extra: &[&str]) -> Output {
    lectern()
        .arg("render")
        .arg(book)
        .arg("-o")
        .arg(out)
        .arg("--quiet")
        .args(extra)
        .output()
        .unwrap()
}

/// A rendered one-chapter book in a fresh folder: (folder, manuscript).
fn rendered_book() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let book = dir.path().join("book.md");
    std::fs::write(&book, "# One\n\nThe lamp was lit.\n\n# Two\n\nThe door was shut.\n").unwrap();
    std::fs::write(dir.path().join("cast.toml"), "[characters]\n").unwrap();
    let o = render(&book, &dir.path().join("book.wav"), &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    (dir, book)
}

/// `o` failed, its message holds every needle, and `file` still holds `before`.
fn refused(o: &Output, needles: &[&str], file: &Path, before: &[u8]) {
    let err = stderr(o);
    assert!(!o.status.success(), "not refused: {err}");
    for needle in needles {
        assert!(err.contains(needle), "`{needle}` missing in: {err}");
    }
    assert_eq!(std::fs::read(file).unwrap(), before, "{} was changed", file.display());
}

#[test]
fn render_refuses_its_inputs_and_the_project_as_output() {
    let (dir, book) = rendered_book();
    let text = std::fs::read(&book).unwrap();
    let db = dir.path().join("book.lectern/project.db");
    let db_bytes = std::fs::read(&db).unwrap();
    for (out, needle) in [
        (book.clone(), "the manuscript"),
        (dir.path().join("cast.toml"), "the cast file"),
        (db.clone(), "the project folder"),
    ] {
        let o = render(&book, &out, &["--force"]);
        refused(&o, &[needle, "would"], &book, &text);
    }
    assert_eq!(std::fs::read(&db).unwrap(), db_bytes);
    // Through a hard link too (with a name that passes the extension check).
    let link = dir.path().join("link.wav");
    std::fs::hard_link(&book, &link).unwrap();
    refused(&render(&book, &link, &["--force"]), &["the manuscript"], &book, &text);
    // Split chapters take a folder: the manuscript is no folder, and a folder holding it is
    // refused too.
    let o = render(&book, &book, &["--split", "chapters", "--force"]);
    refused(&o, &["the manuscript"], &book, &text);
    let o = render(&book, dir.path(), &["--split", "chapters", "--force"]);
    refused(&o, &["would hold", "the manuscript"], &book, &text);
}

#[test]
fn render_refuses_what_is_not_a_file_and_a_wrong_extension() {
    let (dir, book) = rendered_book();
    let folder = dir.path().join("folder.wav");
    std::fs::create_dir(&folder).unwrap();
    let o = render(&book, &folder, &["--force"]);
    assert!(!o.status.success() && stderr(&o).contains("is a folder"), "{}", stderr(&o));
    let fifo = dir.path().join("pipe.wav");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let o = render(&book, &fifo, &["--force"]);
    assert!(!o.status.success() && stderr(&o).contains("is a FIFO"), "{}", stderr(&o));
    let o = render(&book, Path::new("/dev/full"), &["--force"]);
    assert!(!o.status.success(), "{}", stderr(&o));
    for name in ["book.flac", "book.mp3", "book"] {
        let o = render(&book, &dir.path().join(name), &[]);
        let err = stderr(&o);
        assert!(!o.status.success() && err.contains("written as .wav"), "{name}: {err}");
        assert!(!dir.path().join(name).exists(), "{name} was written");
    }
}

#[test]
fn an_existing_file_is_replaced_only_when_lectern_wrote_it_or_with_force() {
    let (dir, book) = rendered_book();
    let out = dir.path().join("book.wav");
    // Lectern's own output is replaced by the next render.
    let o = render(&book, &out, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    // A file the narrator made (or changed) is not.
    let mine = dir.path().join("mine.wav");
    std::fs::write(&mine, b"my recording").unwrap();
    refused(
        &render(&book, &mine, &[]),
        &["Lectern did not write it", "--force"],
        &mine,
        b"my recording",
    );
    std::fs::write(&out, b"edited by hand").unwrap();
    refused(&render(&book, &out, &[]), &["--force"], &out, b"edited by hand");
    let o = render(&book, &mine, &["--force"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(hound::WavReader::open(&mine).is_ok());
    // The report is an output like the audio.
    let o = lectern()
        .arg("render")
        .arg(&book)
        .arg("-o")
        .arg(&out)
        .arg("--quiet")
        .arg("--report")
        .arg(&book)
        .output()
        .unwrap();
    let err = stderr(&o);
    assert!(
        !o.status.success()
            && err.contains("the report would overwrite")
            && err.contains("the manuscript"),
        "{err}"
    );
}

#[test]
fn a_split_render_replaces_its_folder_as_a_whole() {
    let (dir, book) = rendered_book();
    let out = dir.path().join("chapters");
    let o = render(&book, &out, &["--split", "chapters"]);
    assert!(o.status.success(), "{}", stderr(&o));
    std::fs::write(out.join("notes.txt"), "mine").unwrap();
    std::fs::write(&book, "# One\n\nThe lamp was lit.\n").unwrap();
    let o = render(&book, &out, &["--split", "chapters"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let mut names: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    // The old second chapter is gone with the old set; the narrator's file stays.
    assert_eq!(names, [".lectern-output", "book-01.wav", "notes.txt"]);
    // A folder Lectern did not make, holding files, needs --force.
    let theirs = dir.path().join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    std::fs::write(theirs.join("a.txt"), "x").unwrap();
    let o = render(&book, &theirs, &["--split", "chapters"]);
    assert!(!o.status.success() && stderr(&o).contains("--force"), "{}", stderr(&o));
}

#[test]
fn export_follows_the_extension_and_refuses_its_inputs() {
    let (dir, book) = rendered_book();
    let text = std::fs::read(&book).unwrap();
    let export = |out: &Path, extra: &[&str]| {
        lectern().arg("export").arg(&book).arg("-o").arg(out).args(extra).output().unwrap()
    };
    let flac = dir.path().join("master.flac");
    let o = export(&flac, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(&std::fs::read(&flac).unwrap()[..4], b"fLaC", "the extension sets the format");
    assert!(dir.path().join("master.flac.cue").is_file());
    for (out, extra, needle) in [
        (book.clone(), &[][..], "would overwrite the manuscript"),
        (dir.path().join("book.lectern/x.wav"), &[][..], "the project folder"),
        (dir.path().join("a.mp3"), &[][..], "writes a folder"),
        (dir.path().join("a.flac"), &["--format", "wav"][..], "--format wav"),
        (dir.path().join("a.ogg"), &[][..], ".wav or .flac"),
    ] {
        let o = export(&out, extra);
        refused(&o, &[needle], &book, &text);
    }
    let hand = dir.path().join("hand.wav");
    std::fs::write(&hand, b"not lectern's").unwrap();
    refused(&export(&hand, &[]), &["--force"], &hand, b"not lectern's");
}

/// The files of a folder, by name (hidden ones aside), with their bytes.
fn folder_bytes(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .map(|e| (e.file_name().to_string_lossy().into_owned(), std::fs::read(e.path()).unwrap()))
        .collect();
    v.sort();
    v
}

#[test]
fn a_killed_delivery_leaves_the_previous_set_whole() {
    let (dir, book) = rendered_book();
    let out = dir.path().join("acx");
    let export = |title: &str| {
        let mut cmd = lectern();
        cmd.arg("export").arg(&book).args(["--preset", "acx", "--title", title, "-o"]).arg(&out);
        cmd
    };
    let o = export("First").output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let first = folder_bytes(&out);
    let o = export("Second").output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let second = folder_bytes(&out);
    assert_ne!(first, second, "the title is in the files' tags");
    for delay_ms in [50, 300, 800, 1500, 2500] {
        let title = if delay_ms % 2 == 0 { "First" } else { "Second" };
        let mut child = export(title).stderr(std::process::Stdio::null()).spawn().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        let _ = child.kill();
        let _ = child.wait();
        // Whatever moment the kill came, the folder holds one whole set (a commit killed
        // between its renames is put back by the next run, which the check below makes).
        let o = lectern().arg("check").arg(&out).output().unwrap();
        let now = folder_bytes(&out);
        assert!(now == first || now == second, "after a kill at {delay_ms} ms: a mixed set");
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let leftovers: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".acx."))
        .collect();
    let o = export("First").output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(folder_bytes(&out), first);
    let after: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".acx."))
        .collect();
    assert!(after.is_empty(), "a run leaves no staged folder: {after:?} (before: {leftovers:?})");
}

#[test]
fn export_tells_the_books_state_and_can_require_approval() {
    let (dir, book) = rendered_book();
    let export = |extra: &[&str]| {
        let out = dir.path().join("state.wav");
        lectern().arg("export").arg(&book).arg("-o").arg(out).args(extra).output().unwrap()
    };
    let o = export(&[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("book: 0/4 approved · 0 pickups · 4 unheard"), "{}", stderr(&o));
    let o = export(&["--require-approved"]);
    let err = stderr(&o);
    assert!(!o.status.success(), "{err}");
    assert!(
        err.contains("4 of 4 segments are not approved") && err.contains("segment 1 (unheard"),
        "{err}"
    );
    {
        let project = lectern::store::Project::open(dir.path().join("book.lectern")).unwrap();
        let mut project = project;
        for p in project.proofed_segments().unwrap() {
            project.set_review(p.key, lectern::review::Review::Approved).unwrap();
        }
    }
    let report = dir.path().join("export.json");
    let o = export(&["--require-approved", "--report", report.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("book: 4/4 approved"), "{}", stderr(&o));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(json["book"]["approved"], 4, "{json}");
    assert_eq!(json["segments"][1]["review"], "approved", "{json}");
    // The render's report carries the review states too.
    let rep = dir.path().join("render.json");
    let o = lectern()
        .arg("render")
        .arg(&book)
        .arg("-o")
        .arg(dir.path().join("book.wav"))
        .arg("--quiet")
        .arg("--report")
        .arg(&rep)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&rep).unwrap()).unwrap();
    assert_eq!(json["segments"][0]["review"], "approved", "{json}");
    // Before any render, export says what to run.
    let fresh = dir.path().join("fresh.md");
    std::fs::write(&fresh, "Nothing yet.\n").unwrap();
    let o = lectern().arg("export").arg(&fresh).output().unwrap();
    let err = stderr(&o);
    assert!(
        !o.status.success()
            && err.contains("nothing rendered yet")
            && err.contains("lectern render"),
        "{err}"
    );
}

#[test]
fn export_render_renders_what_is_missing_then_exports() {
    let dir = tempfile::tempdir().unwrap();
    let book = dir.path().join("tale.md");
    std::fs::write(&book, "# One\n\nThe lamp was lit.\n").unwrap();
    let out = dir.path().join("tale.wav");
    let o =
        lectern().arg("export").arg(&book).arg("-o").arg(&out).arg("--render").output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("--render: 2 segment(s) rendered"), "{}", stderr(&o));
    assert!(hound::WavReader::open(&out).is_ok());
    // An edit leaves a segment without a take: export says how to render it.
    std::fs::write(&book, "# One\n\nThe lamp was lit.\n\nA new line.\n").unwrap();
    let o = lectern().arg("export").arg(&book).arg("-o").arg(&out).output().unwrap();
    let err = stderr(&o);
    assert!(!o.status.success() && err.contains("--render"), "{err}");
    let o =
        lectern().arg("export").arg(&book).arg("-o").arg(&out).arg("--render").output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--render: 1 segment(s) rendered, 2 already there"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_manuscript_saved_during_the_render_is_named_at_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let book = dir.path().join("long.md");
    let text: String = (0..16).map(|i| format!("Paragraph {i} of the book goes on.\n\n")).collect();
    std::fs::write(&book, &text).unwrap();
    let child = lectern()
        .arg("render")
        .arg(&book)
        .arg("-o")
        .arg(dir.path().join("long.wav"))
        .arg("--quiet")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Saved once the first takes are in, while the rest renders.
    let takes = dir.path().join("long.lectern/takes");
    let started = std::time::Instant::now();
    while std::fs::read_dir(&takes).map_or(0, |d| d.count()) == 0
        && started.elapsed().as_secs() < 60
    {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    std::fs::write(&book, text.replace("Paragraph 15", "The last paragraph")).unwrap();
    let o = child.wait_with_output().unwrap();
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("long.md changed during the render"), "{err}");
}
