//! `lectern render` end to end: the real binary on the bundled tiny model, small manuscripts in
//! a temporary directory. Lengths are checked exactly against the render report (tokens × 960
//! per take, plus pauses and lead-in), takes are reused from the project store across runs and
//! across a SIGKILL, and bad input fails clearly without leaving an output file.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::cli_common::{grouped_book_text, isolated_env};
use serde_json::Value;

const SAMPLES_PER_TOKEN: u64 = 960;
const SAMPLES_PER_MS: u64 = 24;

fn lectern() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lectern"));
    cmd.envs(isolated_env());
    // Voice names resolve against the bundled voices only.
    cmd.env("LECTERN_VOICES", "/nonexistent-lectern-voices");
    cmd
}

/// Runs `lectern render MANUSCRIPT -o OUT --quiet --report REPORT ARGS…`.
fn render(manuscript: &Path, out: &Path, report: &Path, args: &[&str]) -> Output {
    let mut cmd = lectern();
    cmd.arg("render").arg(manuscript).arg("-o").arg(out).arg("--quiet").arg("--report");
    cmd.arg(report).args(args);
    cmd.output().expect("run lectern")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn ok_report(o: &Output, report: &Path) -> Value {
    assert!(o.status.success(), "render failed: {}", stderr(o));
    serde_json::from_str(&std::fs::read_to_string(report).expect("report")).expect("report json")
}

/// Samples of a 24 kHz mono WAV (data length / bytes per sample).
fn wav_samples(path: &Path) -> u64 {
    let r = hound::WavReader::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(r.spec().sample_rate, 24_000);
    assert_eq!(r.spec().channels, 1);
    u64::from(r.duration())
}

fn n(v: &Value) -> u64 {
    v.as_u64().expect("number")
}

/// Checks every segment's take length and returns `Σ (samples + pause)` per chapter.
fn chapter_sums(report: &Value) -> Vec<u64> {
    let mut sums = Vec::new();
    for s in report["segments"].as_array().expect("segments") {
        let (tokens, samples) = (n(&s["tokens"]), n(&s["samples"]));
        // A take has speech: an empty one fails its segment.
        assert!(tokens > 0, "segment {} has an empty take", s["id"]);
        assert_eq!(samples, tokens * SAMPLES_PER_TOKEN, "segment {}", s["id"]);
        let chapter = n(&s["chapter"]) as usize;
        if sums.len() <= chapter {
            sums.resize(chapter + 1, 0);
        }
        sums[chapter] += samples + n(&s["pause_samples"]);
    }
    sums
}

fn files_of(report: &Value) -> Vec<(PathBuf, u64)> {
    report["files"]
        .as_array()
        .expect("files")
        .iter()
        .map(|f| (PathBuf::from(f[0].as_str().expect("path")), n(&f[1])))
        .collect()
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write manuscript");
    path
}

const SHORT: &str = "[pause:250ms]\n\nThe keeper climbed the stairs. He counted every step.\n\n\
                     The lamp was cold that night. [pause:0.5s] Nobody came.\n";

#[test]
fn wav_length_is_tokens_times_960_plus_pauses() {
    let dir = tempfile::tempdir().unwrap();
    let book = write(dir.path(), "book.txt", SHORT);
    let (out, rep) = (dir.path().join("book.wav"), dir.path().join("report.json"));
    let report = ok_report(&render(&book, &out, &rep, &[]), &rep);

    let lead_in = n(&report["lead_in_samples"]);
    assert_eq!(lead_in, 250 * SAMPLES_PER_MS);
    let body: u64 = chapter_sums(&report).iter().sum();
    assert_eq!(wav_samples(&out), lead_in + body);
    assert_eq!(files_of(&report), vec![(out.clone(), lead_in + body)]);
    // The explicit pause is in the report's pauses.
    let pauses: Vec<u64> =
        report["segments"].as_array().unwrap().iter().map(|s| n(&s["pause_samples"])).collect();
    assert!(pauses.contains(&(500 * SAMPLES_PER_MS)), "{pauses:?}");
    assert!(dir.path().join("book.lectern").join("project.db").is_file());
    assert!(!dir.path().join("book.partial.wav").exists());

    // Every take carries its quality figures (#19). On the random-weight tiny model they are
    // only arithmetic: units, rate and loudness against the median, and a cosine in [-1, 1].
    let segments = report["segments"].as_array().unwrap();
    let mut vs_median = Vec::new();
    for s in segments {
        let q = &s["quality"];
        assert!(q["text_units"].as_u64().unwrap() > 0, "{q}");
        let voiced = q["voiced_s"].as_f64().unwrap();
        let rate = q["rate_per_s"].as_f64().unwrap();
        if voiced > 0.0 {
            let units = q["text_units"].as_f64().unwrap();
            assert!((rate - units / voiced).abs() < 1e-9, "{q}");
        }
        assert!(q["flags"].is_array());
        if let Some(sim) = q["similarity"].as_f64() {
            assert!((-1.0..=1.0).contains(&sim), "{q}");
        }
        if let Some(lufs) = q["loudness_lufs"].as_f64() {
            vs_median.push(q["loudness_vs_median_db"].as_f64().unwrap());
            assert!(lufs < 0.0, "{q}");
        }
    }
    // The tiny model's campplus.onnx is there: at least one take long enough has a similarity.
    assert!(segments.iter().any(|s| s["quality"]["similarity"].is_f64()));
    // Against the median: some take is at or above it and some at or below.
    assert!(vs_median.iter().any(|d| *d >= 0.0) && vs_median.iter().any(|d| *d <= 0.0));

    // Every take's own figures are stored with it in the project, and the report's are them.
    let project = lectern::store::Project::open(dir.path().join("book.lectern")).unwrap();
    let takes = project.all_takes().unwrap();
    assert_eq!(takes.len(), segments.len());
    for (take, s) in takes.iter().zip(segments) {
        let f = take.figures.as_ref().expect("figures stored with the take");
        let q = &s["quality"];
        assert_eq!(f.voiced_s, q["voiced_s"].as_f64().unwrap(), "{q}");
        assert_eq!(f.text_units as u64, q["text_units"].as_u64().unwrap(), "{q}");
        assert_eq!(f.loudness_lufs, q["loudness_lufs"].as_f64(), "{q}");
        assert_eq!(f.similarity, q["similarity"].as_f64().map(|s| s as f32), "{q}");
    }
}

#[test]
fn split_chapters_writes_one_file_per_chapter() {
    let dir = tempfile::tempdir().unwrap();
    let book = write(
        dir.path(),
        "book.md",
        "# One\n\nThe first chapter starts here. It is short.\n\n\
         # Two\n\nThe second chapter is shorter.\n\n# Three\n\nThe end.\n",
    );
    // A split render writes a folder of its own.
    let (out, rep) = (dir.path().join("chapters"), dir.path().join("report.json"));
    let report = ok_report(&render(&book, &out, &rep, &["--split", "chapters"]), &rep);

    let sums = chapter_sums(&report);
    assert_eq!(sums.len(), 3);
    let files = files_of(&report);
    assert_eq!(files.len(), 3);
    for (i, (path, len)) in files.iter().enumerate() {
        assert_eq!(path, &out.join(format!("book-{:02}.wav", i + 1)));
        let expected = sums[i] + if i == 0 { n(&report["lead_in_samples"]) } else { 0 };
        assert_eq!(*len, expected, "chapter {}", i + 1);
        assert_eq!(wav_samples(path), expected, "chapter {}", i + 1);
    }
    let mut names: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, [".lectern-output", "book-01.wav", "book-02.wav", "book-03.wav"]);
}

#[test]
fn rerender_reuses_takes_and_an_edit_rerenders_one_segment() {
    let dir = tempfile::tempdir().unwrap();
    // One paragraph per segment (short sentences of one paragraph may share a segment).
    let text = "One bird sang.\n\nTwo dogs barked.\n\nThree cats slept.\n\nFour owls watched.\n";
    let book = write(dir.path(), "book.txt", text);
    let (out, rep) = (dir.path().join("book.wav"), dir.path().join("report.json"));

    let first = ok_report(&render(&book, &out, &rep, &[]), &rep);
    let total = first["segments"].as_array().unwrap().len() as u64;
    assert_eq!(total, 4, "{first}");
    assert_eq!((n(&first["reused"]), n(&first["rendered"])), (0, total));
    let first_bytes = std::fs::read(&out).unwrap();

    let o = render(&book, &out, &rep, &[]);
    let second = ok_report(&o, &rep);
    assert_eq!((n(&second["reused"]), n(&second["rendered"])), (total, 0));
    assert!(stderr(&o).contains(&format!("{total} of {total} segments reused")), "{}", stderr(&o));
    assert_eq!(std::fs::read(&out).unwrap(), first_bytes, "same takes, same bytes");

    write(dir.path(), "book.txt", &text.replace("Three cats slept.", "Three cats purred."));
    let third = ok_report(&render(&book, &out, &rep, &[]), &rep);
    assert_eq!((n(&third["reused"]), n(&third["rendered"])), (total - 1, 1));
    let fresh: Vec<&Value> =
        third["segments"].as_array().unwrap().iter().filter(|s| s["reused"] == false).collect();
    assert_eq!(fresh.len(), 1);
    let body: u64 = chapter_sums(&third).iter().sum();
    assert_eq!(wav_samples(&out), n(&third["lead_in_samples"]) + body);

    // Settings are not staleness: other NFE keeps the takes and counts them …
    let o = render(&book, &out, &rep, &["--nfe", "3"]);
    let nfe = ok_report(&o, &rep);
    assert_eq!((n(&nfe["rendered"]), n(&nfe["other_settings"])), (0, total));
    assert!(stderr(&o).contains("--rerender-settings"), "{}", stderr(&o));
    // … and `--rerender-settings` renders them again with the new settings.
    let again = ok_report(&render(&book, &out, &rep, &["--nfe", "3", "--rerender-settings"]), &rep);
    assert_eq!((n(&again["rendered"]), n(&again["other_settings"])), (total, total));
    let after = ok_report(&render(&book, &out, &rep, &["--nfe", "3"]), &rep);
    assert_eq!((n(&after["rendered"]), n(&after["other_settings"])), (0, 0));
    // `--no-project` renders everything and leaves the project alone.
    let mem = ok_report(&render(&book, &out, &rep, &["--no-project"]), &rep);
    assert_eq!((n(&mem["reused"]), n(&mem["rendered"])), (0, total));
    assert!(mem["project"].is_null());
}

/// Finished take files (not `.tmp`) in the project.
fn take_files(project: &Path) -> usize {
    std::fs::read_dir(project.join("takes")).map_or(0, |d| {
        d.filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().ends_with(".wav"))
            .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
            .count()
    })
}

fn spawn_render(manuscript: &Path, out: &Path, report: &Path) -> Child {
    let mut cmd = lectern();
    cmd.arg("render").arg(manuscript).arg("-o").arg(out).arg("--quiet").arg("--report");
    cmd.arg(report).args(["--lanes", "1", "--group-target", "0"]);
    cmd.stdout(Stdio::null()).stderr(Stdio::null()).spawn().expect("spawn lectern")
}

#[test]
fn sigkill_midway_loses_no_finished_take() {
    let dir = tempfile::tempdir().unwrap();
    // 12 one-sentence segments at one lane: after the second take is saved, ten are left
    // (seconds of work), so the kill lands midway.
    let text: String = (1..=12)
        // Sentences on which the tiny model's random weights give every segment speech (a
        // take of 0 speech tokens fails its segment, and so the render).
        .map(|i| format!("Chapter part {i} describes the lamp that turns above the water. "))
        .collect();
    let book = write(dir.path(), "book.txt", &text);
    let (out, rep) = (dir.path().join("book.wav"), dir.path().join("report.json"));
    let project = dir.path().join("book.lectern");

    let mut child = spawn_render(&book, &out, &rep);
    let deadline = Instant::now() + Duration::from_secs(120);
    while take_files(&project) < 2 {
        assert!(child.try_wait().unwrap().is_none(), "render ended before two takes were saved");
        assert!(Instant::now() < deadline, "no take saved in 120 s");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(child.try_wait().unwrap().is_none(), "render finished before the kill");
    child.kill().expect("SIGKILL");
    child.wait().unwrap();
    let saved = take_files(&project);
    assert!(!out.exists(), "a killed render left {}", out.display());
    assert!(!rep.exists());

    let report = ok_report(&render(&book, &out, &rep, &[]), &rep);
    let total = report["segments"].as_array().unwrap().len() as u64;
    assert!(saved as u64 >= 2 && (saved as u64) < total, "saved {saved} of {total}");
    // Every take finished before the kill is reused (one more may have been mid-commit).
    assert!(n(&report["reused"]) + 1 >= saved as u64, "reused {} of {saved}", report["reused"]);
    assert!(n(&report["reused"]) >= 1);
    assert_eq!(n(&report["reused"]) + n(&report["rendered"]), total);
    let body: u64 = chapter_sums(&report).iter().sum();
    assert_eq!(wav_samples(&out), n(&report["lead_in_samples"]) + body);
}

/// Asserts a failed render: exit code ≠ 0, `needle` in stderr, no output left.
fn assert_fails(o: &Output, needle: &str, out: &Path) {
    let err = stderr(o);
    assert!(!o.status.success(), "expected failure, got success: {err}");
    assert!(err.to_lowercase().contains(&needle.to_lowercase()), "`{needle}` not in: {err}");
    assert!(!out.exists(), "{} left after a failure", out.display());
    let partial = out.with_extension("partial.wav");
    assert!(!partial.exists(), "{} left after a failure", partial.display());
}

#[test]
fn bad_manuscripts_fail_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let (out, rep) = (dir.path().join("out.wav"), dir.path().join("report.json"));

    let binary = dir.path().join("binary.txt");
    std::fs::write(&binary, [0x7fu8, b'E', b'L', b'F', 0, 0, 1, 2, 3]).unwrap();
    assert_fails(&render(&binary, &out, &rep, &[]), "binary", &out);
    assert!(!dir.path().join("binary.lectern").exists(), "no project for a bad manuscript");

    let empty = write(dir.path(), "empty.txt", "");
    assert_fails(&render(&empty, &out, &rep, &[]), "empty", &out);
    let blank = write(dir.path(), "blank.md", "\n\n   \n# \n");
    assert_fails(&render(&blank, &out, &rep, &[]), "empty", &out);

    let missing = dir.path().join("missing.txt");
    assert_fails(&render(&missing, &out, &rep, &[]), "missing.txt", &out);
}

#[test]
fn five_megabyte_single_line_segments_within_bounds() {
    let dir = tempfile::tempdir().unwrap();
    let sentence = "The tide came in over the grey stones and went out again. ";
    let line: String = sentence.repeat(5 * 1024 * 1024 / sentence.len() + 1);
    let book = write(dir.path(), "huge.txt", &line);
    let (out, rep) = (dir.path().join("huge.wav"), dir.path().join("report.json"));

    let started = Instant::now();
    let o = render(&book, &out, &rep, &["--dry-run"]);
    let report = ok_report(&o, &rep);
    assert!(started.elapsed() < Duration::from_secs(120), "took {:?}", started.elapsed());
    let segments = report["segments"].as_array().unwrap().len();
    assert!(segments > 10_000, "{segments} segments");
    assert!(report["dry_run"].as_bool().unwrap());
    assert!(report["files"].as_array().unwrap().is_empty());
    assert!(!out.exists());
    assert!(!dir.path().join("huge.lectern").exists(), "a dry run writes nothing");

    // A real render records every segment in the project and starts the engine; killed
    // there, it leaves no output file.
    let mut child = lectern()
        .arg("render")
        .arg(&book)
        .arg("-o")
        .arg(&out)
        .arg("--quiet")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn lectern");
    let (tx, rx) = std::sync::mpsc::channel();
    let err = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufRead::lines(std::io::BufReader::new(err)).map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let expected = format!("0 of {segments} segments reused, {segments} to render");
    let deadline = Instant::now() + Duration::from_secs(120);
    let started = loop {
        match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(line) if line.contains(&expected) => break true,
            Ok(_) => {}
            Err(_) => break false,
        }
    };
    child.kill().expect("SIGKILL");
    child.wait().unwrap();
    assert!(started, "the render did not start within 120 s");
    assert!(!out.exists());
}

#[test]
fn bad_voices_fail_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let book = write(dir.path(), "book.txt", "A short line.\n");
    let (out, rep) = (dir.path().join("out.wav"), dir.path().join("report.json"));

    let o = render(&book, &out, &rep, &["--voice", "no-such-voice"]);
    assert_fails(&o, "no-such-voice", &out);
    assert!(!dir.path().join("book.lectern").exists(), "no project for a bad voice");

    // The demo voice relabelled as made for the full-size model.
    let voice = dir.path().join("big-voice");
    std::fs::create_dir(&voice).unwrap();
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("voices/tiny-demo");
    for f in ["voice.json", "prompt.safetensors"] {
        std::fs::copy(demo.join(f), voice.join(f)).unwrap();
    }
    let mut manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(voice.join("voice.json")).unwrap()).unwrap();
    manifest["model"]["name"] = "cosyvoice3-0.5b".into();
    manifest["model"]["llm_hidden_size"] = 896.into();
    std::fs::write(voice.join("voice.json"), manifest.to_string()).unwrap();
    let o = render(&book, &out, &rep, &["--voice", voice.to_str().unwrap()]);
    assert_fails(&o, "was made for model `cosyvoice3-0.5b`", &out);
    assert!(!dir.path().join("book.lectern").exists(), "no project for a bad voice");
}

#[test]
fn a_render_killed_inside_group_saves_resumes_to_the_same_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let book = write(dir.path(), "book.txt", &grouped_book_text());
    let clean_out = dir.path().join("clean.wav");
    let rep = dir.path().join("report.json");
    let clean_project = dir.path().join("clean.lectern").display().to_string();
    let killed_project = dir.path().join("killed.lectern").display().to_string();
    let clean = ok_report(&render(&book, &clean_out, &rep, &["--project", &clean_project]), &rep);
    let groups: std::collections::BTreeSet<String> = {
        let p = lectern::store::Project::open(dir.path().join("clean.lectern")).unwrap();
        p.all_takes().unwrap().iter().map(|t| format!("{:?}", t.record.group.segment_ids)).collect()
    };
    assert!(groups.len() >= 3, "several groups: {groups:?}");
    assert!(
        clean["segments"].as_array().unwrap().len() > groups.len(),
        "some group holds more than one segment"
    );

    // Killed (aborted, as by kill -9) after the files of a group are written and before its
    // rows commit — at the first group, then at the second of the resumed run, and so on.
    let out = dir.path().join("resumed.wav");
    for k in 1..=3 {
        let o = lectern()
            .current_dir(dir.path())
            .args([
                "render",
                "book.txt",
                "-o",
                "resumed.wav",
                "--quiet",
                "--project",
                "killed.lectern",
            ])
            .env("LECTERN_FAULT", format!("abort-before-group-commit:{k}"))
            .output()
            .unwrap();
        assert!(!o.status.success(), "run {k} was not aborted: {}", stderr(&o));
        assert!(!out.exists());
    }
    ok_report(&render(&book, &out, &rep, &["--project", &killed_project]), &rep);
    assert!(
        std::fs::read(&out).unwrap() == std::fs::read(&clean_out).unwrap(),
        "the resumed render differs from the uninterrupted one"
    );
}

/// A lost database: `render` refuses and says `--rebuild`; `render --rebuild` re-attaches every
/// take from its file, renders nothing and writes the same bytes; `export book.txt` then works.
#[test]
fn a_lost_database_is_refused_then_rebuilt_from_the_take_files() {
    let dir = tempfile::tempdir().unwrap();
    let text = "One bird sang.\n\nTwo dogs barked.\n\nThree cats slept.\n";
    let book = write(dir.path(), "book.txt", text);
    let (out, rep) = (dir.path().join("book.wav"), dir.path().join("report.json"));
    ok_report(&render(&book, &out, &rep, &[]), &rep);
    let first = std::fs::read(&out).unwrap();

    let db = dir.path().join("book.lectern/project.db");
    std::fs::write(&db, b"").unwrap();
    let _ = std::fs::remove_file(dir.path().join("book.lectern/project.db-wal"));
    let o = render(&book, &out, &rep, &[]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("--rebuild"), "{}", stderr(&o));

    let o = render(&book, &out, &rep, &["--rebuild"]);
    let rebuilt = ok_report(&o, &rep);
    assert!(stderr(&o).contains("3 take(s) of 3 segment(s) re-attached"), "{}", stderr(&o));
    assert_eq!((n(&rebuilt["reused"]), n(&rebuilt["rendered"])), (3, 0));
    assert_eq!(std::fs::read(&out).unwrap(), first, "same takes, same bytes");

    let exported = dir.path().join("export.wav");
    let o = lectern().arg("export").arg(&book).arg("-o").arg(&exported).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    // An intact database is not rebuilt again.
    let o = render(&book, &out, &rep, &["--rebuild"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("nothing to rebuild"), "{}", stderr(&o));
}

/// A segment whose flow fails (an injected device error) does not stop the render: the other
/// segments are rendered and saved, the run exits non-zero naming the failed segment (number
/// and line) and writes no output; the next render renders only that segment.
#[test]
fn a_failed_segment_is_named_and_the_rest_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let text = "One bird sang.\n\nTwo dogs barked.\n\nThree cats slept.\n\nFour owls watched.\n";
    let book = write(dir.path(), "book.txt", text);
    let (out, rep) = (dir.path().join("book.wav"), dir.path().join("report.json"));
    let mut cmd = lectern();
    cmd.arg("render").arg(&book).arg("-o").arg(&out).arg("--quiet");
    cmd.args(["--group-target", "0"]).env("LECTERN_FAULT", "fail-flow-call:2");
    let o = cmd.output().unwrap();
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(err.contains("1 of 4 segment(s) failed"), "{err}");
    assert!(err.contains("injected fault in flow call 2"), "{err}");
    assert!(err.contains("at line"), "{err}");
    assert!(!out.exists(), "no output with a segment missing");
    assert_eq!(take_files(&dir.path().join("book.lectern")), 3);
    let again = ok_report(&render(&book, &out, &rep, &["--group-target", "0"]), &rep);
    assert_eq!((n(&again["reused"]), n(&again["rendered"])), (3, 1));
}

#[test]
fn dry_run_lists_segments_with_source_spoken_text_size_and_boundary() {
    let dir = tempfile::tempdir().unwrap();
    let text = "# The Keeper\n\nIn 1999 the **keeper** left. [pause:1s] Then he waited.\n\n\
                # Two\n\nThe end.\n";
    let book = write(dir.path(), "book.md", text);
    let (out, rep) = (dir.path().join("book.wav"), dir.path().join("report.json"));

    let table = render(&book, &out, &rep, &["--dry-run"]);
    assert!(table.status.success(), "{}", stderr(&table));
    let table = String::from_utf8(table.stdout).unwrap();
    assert!(table.contains("source: In 1999 the **keeper** left."), "{table}");
    assert!(table.contains("spoken: In nineteen ninety-nine the keeper left."), "{table}");
    assert!(table.contains("[pause] markup") && table.contains("end of manuscript"), "{table}");

    let o = render(&book, &out, &rep, &["--dry-run", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let listing: Value = serde_json::from_slice(&o.stdout).expect("listing json");
    assert_eq!(listing["schema"], "lectern.dry-run/1");
    let rows = listing["segments"].as_array().unwrap();
    let got: Vec<_> = rows
        .iter()
        .map(|r| {
            let s = |k: &str| r[k].as_str().unwrap().to_string();
            (
                n(&r["segment"]),
                n(&r["chapter"]),
                n(&r["line"]),
                s("source"),
                s("text"),
                s("boundary"),
            )
        })
        .collect();
    let row = |i, ch, line, src: &str, spoken: &str, b: &str| {
        (i, ch, line, src.to_string(), spoken.to_string(), b.to_string())
    };
    assert_eq!(
        got,
        [
            row(1, 1, 1, "The Keeper", "The Keeper.", "heading"),
            row(
                2,
                1,
                3,
                "In 1999 the **keeper** left.",
                "In nineteen ninety-nine the keeper left.",
                "pause"
            ),
            row(3, 1, 3, "Then he waited.", "Then he waited.", "chapter"),
            row(4, 2, 5, "Two", "Two.", "heading"),
            row(5, 2, 7, "The end.", "The end.", "end"),
        ]
    );
    // The demo model counts tokens with the real Qwen2 BPE, as a real model directory does.
    let qwen2 = lectern_text::Tokenizer::from_model_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/qwen2-tokenizer"),
    )
    .unwrap();
    for r in rows {
        assert_eq!(n(&r["tokens"]) as usize, qwen2.count(r["text"].as_str().unwrap()));
        assert_eq!(n(&r["limit"]), 80);
        assert_eq!(r["unit"], "tokens");
    }
    // The report file carries the same object; nothing is written.
    let report = ok_report(&o, &rep);
    assert_eq!(report["listing"], listing);
    assert!(!out.exists() && !dir.path().join("book.lectern").exists());
    // --json is a dry run's.
    let o = render(&book, &out, &rep, &["--json"]);
    assert!(!o.status.success());
}
