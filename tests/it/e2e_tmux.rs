//! The real binary in a real terminal: `lectern book.md` on the bundled tiny model inside a
//! tmux pane (its own server socket), driven with send-keys and read back with capture-pane.
//! - Open → segments ready → play (to the file sink: no sound card here) → re-seed → change
//!   NFE → re-seed again with the new NFE → quit: exit status 0 and the terminal restored.
//! - The narrator's loop: render, re-seed one segment, choose the second take, approve it,
//!   quit; reopen — nothing renders, the choice and seeds are back, and the whole play-through
//!   written to the playback file equals `render`'s WAV sample for sample; insert a sentence —
//!   only it renders; `export` writes the chosen takes' master; a fresh `render` elsewhere
//!   makes byte-identical takes.
//! - A workstation killed inside a group's save resumes (through `render`) to the same bytes.
//! - A reopened book waits, paused, at the segment last listened to and marks nothing heard;
//!   a session that played nothing leaves no playback file.
//! - An approved segment edited in the manuscript while the workstation is open shows
//!   "edited since approval" in the list, its panel and the title, its note kept.
//!
//! Needs tmux (`apt-get install -y tmux`); without it the test fails and says so (see
//! `tmux_common`).

use crate::cli_common::isolated_env;
use crate::tmux_common::Tmux;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// The selected segment's take line: (take k, of n, seed, NFE).
fn take_info(screen: &str) -> Option<(usize, usize, u64, usize)> {
    let line = screen.lines().find(|l| l.contains("take ") && l.contains(" · seed "))?;
    let after = |key: &str| -> Option<&str> {
        let i = line.find(key)? + key.len();
        line[i..].split(|c: char| !c.is_ascii_alphanumeric() && c != '/').next()
    };
    let (k, n) = after("take ")?.split_once('/')?;
    Some((
        k.parse().ok()?,
        n.parse().ok()?,
        after("seed ")?.parse().ok()?,
        after("NFE ")?.parse().ok()?,
    ))
}

fn ready_rows(screen: &str) -> usize {
    screen.matches("● ready").count()
}

/// N of the list's `manuscript · N segments` title.
fn segment_count(screen: &str) -> usize {
    let i = screen.find("manuscript · ").expect("the list title") + "manuscript · ".len();
    screen[i..].split(' ').next().and_then(|n| n.parse().ok()).expect("a count")
}

fn quote(p: &Path) -> String {
    format!("'{}'", p.display().to_string().replace('\'', r"'\''"))
}

#[test]
fn workstation_in_tmux() {
    let tmux = Tmux::named("e2e");
    let dir = tempfile::tempdir().unwrap();
    let book = dir.path().join("book.md");
    std::fs::write(&book, "The lamp was lit.\n\nRain fell on the roof.\n\nShe turned the page.\n")
        .unwrap();
    let wav = dir.path().join("playback.wav");
    let status = dir.path().join("status");
    let stty = dir.path().join("stty");
    let script = workstation_script(&book, &wav, &status, &stty);
    tmux.open(dir.path(), &script);

    let s = tmux.wait_for("three ready segments", |s| ready_rows(s) == 3);
    assert!(s.contains("Lectern · book.md"), "title bar:\n{s}");
    assert!(s.contains("tiny random-weight model"), "tiny-model notice in the title:\n{s}");
    assert!(s.contains("manuscript · 3 segments"), "{s}");
    let (k, n, seed1, nfe1) = take_info(&s).unwrap_or_else(|| panic!("no take line:\n{s}"));
    assert_eq!((k, n, nfe1), (1, 1, 10), "{s}");

    // Play: no sound card here, so playback goes to the file and the UI says so.
    tmux.keys("Space");
    let s = tmux.wait_for("playback", |s| s.contains("▶ playing"));
    assert!(s.contains("playback.wav"), "the file-sink notice names the file:\n{s}");

    // Re-seed the selected (first) segment: a second take with another seed.
    tmux.keys("s");
    let s = tmux.wait_for("a second take", |s| take_info(s).is_some_and(|t| t.1 == 2));
    let (k, n, seed2, nfe2) = take_info(&s).unwrap();
    assert_eq!((k, n, nfe2), (2, 2, 10), "{s}");
    assert_ne!(seed2, seed1, "re-seed changes the seed:\n{s}");

    // NFE up: the parameter panel shows it and the next render's record carries it.
    tmux.keys("]");
    tmux.wait_for("NFE 11 in the parameter panel", |s| {
        s.lines().any(|l| l.split("NFE").skip(1).any(|r| r.trim_start().starts_with("11 ")))
    });
    tmux.keys("s");
    let s = tmux.wait_for("a third take", |s| take_info(s).is_some_and(|t| t.1 == 3));
    let (k, n, seed3, nfe3) = take_info(&s).unwrap();
    assert_eq!((k, n, nfe3), (3, 3, 11), "the new take was rendered with NFE 11:\n{s}");
    assert!(seed3 != seed2 && seed3 != seed1, "{s}");
    println!("workstation screen:\n{s}");

    tmux.keys("q");
    let s = tmux.wait_for("exit", |s| s.contains("LECTERN-EXITED"));
    let code = std::fs::read_to_string(&status).unwrap();
    assert_eq!(code.trim(), "0", "exit status; screen:\n{s}");
    // Restored: main screen (no UI left on it), cooked mode with echo.
    assert_eq!(tmux.pane_format("#{alternate_on}"), "0", "still on the alternate screen");
    assert!(!s.contains("manuscript · 3 segments"), "UI left on the main screen:\n{s}");
    let modes = std::fs::read_to_string(&stty).unwrap();
    for flag in ["icanon", "echo", "isig"] {
        assert!(
            modes.split_whitespace().any(|w| w == flag),
            "terminal left without {flag}: {modes}"
        );
    }
    assert!(std::fs::metadata(&wav).is_ok_and(|m| m.len() > 44), "playback reached the file");
}

/// A pane script: lectern with `args`, then its exit status into `status` and an end marker.
/// The workstation on `book` (playback to `wav`); afterwards the pane's shell records the exit
/// status and the terminal modes, prints the end marker and keeps the pane open so the restored
/// screen can be read.
fn workstation_script(book: &Path, wav: &Path, status: &Path, stty: &Path) -> String {
    format!(
        "{bin} {book} --fallback-wav {wav}; echo $? > {status}; stty -a > {stty}; \
         echo LECTERN-EXITED; sleep 60",
        bin = isolated_bin(),
        book = quote(book),
        wav = quote(wav),
        status = quote(status),
        stty = quote(stty),
    )
}

fn lectern_script(args: &[&Path], extra: &str, status: &Path) -> String {
    let quoted: Vec<String> = args.iter().map(|a| quote(a)).collect();
    format!(
        "{bin} {} {extra}; echo $? > {status}; echo LECTERN-EXITED; sleep 60",
        quoted.join(" "),
        bin = isolated_bin(),
        status = quote(status),
    )
}

fn run_lectern(args: &[&str], cwd: &Path) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_lectern"))
        .envs(isolated_env())
        .args(args)
        .current_dir(cwd)
        .env("LECTERN_VOICES", "/nonexistent-lectern-voices")
        .output()
        .unwrap();
    assert!(out.status.success(), "lectern {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    out
}

fn wav_f32(path: &Path) -> Vec<f32> {
    let r = hound::WavReader::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(r.spec().sample_rate, 24_000);
    r.into_samples::<f32>().map(Result::unwrap).collect()
}

/// (segment text, take seed) → audio hash, for every take of a project.
fn takes_by_text_and_seed(project: &Path) -> std::collections::HashMap<(String, u64), String> {
    let p = lectern::store::Project::open(project).unwrap();
    let mut out = std::collections::HashMap::new();
    for s in p.proofed_segments().unwrap() {
        for t in p.takes_of_key(s.key).unwrap() {
            out.insert((s.segment.text.clone(), t.record.seed), t.audio_hash);
        }
    }
    out
}

/// Three paragraphs; the first has three segments (the opener alone, then a sentence of 63 LM
/// tokens that no other joins, then one of 20), so a flow group holds more than one segment.
const LOOP_BOOK: &str = "The lamp was lit before the storm came in from the sea. The keeper \
climbed the stairs again, as he had done every evening for thirty years, past the old charts, \
the brass barometer and the window where his wife had once waited for the boats, and he trimmed \
the wick with the small knife his father gave him on the day he first came to the island. \
Nobody in the village slept that night, and the boats stayed tied up in the harbour until \
morning.\n\n\
Rain fell on the roof all night long, and the wind pulled at the shutters.\n\n\
She turned the page.\n";

/// The binary as a pane's shell runs it, with [`isolated_env`].
fn isolated_bin() -> String {
    let env: Vec<String> =
        isolated_env().iter().map(|(k, v)| format!("{k}={}", quote(v))).collect();
    format!("env {} {}", env.join(" "), quote(&PathBuf::from(env!("CARGO_BIN_EXE_lectern"))))
}

#[test]
fn narrator_loop_in_tmux() {
    let dir = tempfile::tempdir().unwrap();
    let book = dir.path().join("book.md");
    std::fs::write(&book, LOOP_BOOK).unwrap();
    let project = dir.path().join("book.lectern");
    let playback = dir.path().join("play.wav");
    let status = dir.path().join("status");
    let fallback = format!("--fallback-wav {}", quote(&playback));

    // Session 1: render, re-seed segment 2, choose its second take, approve it, quit.
    let tmux = Tmux::named("loop");
    tmux.open(dir.path(), &lectern_script(&[&book], &fallback, &status));
    let s = tmux.wait_for("every segment ready", |s| s.contains("all rendered"));
    let n = segment_count(&s);
    assert!(n >= 4, "{s}");
    tmux.keys("j");
    let (_, _, seed1, _) = tmux
        .wait_for("segment 2 selected", |s| s.contains("segment 2 "))
        .lines()
        .find_map(take_info)
        .expect("take line");
    tmux.keys("s");
    let s = tmux.wait_for("a second take", |s| take_info(s).is_some_and(|t| t.1 == 2));
    let (k, _, seed2, _) = take_info(&s).unwrap();
    assert_eq!(k, 2, "the new take is auditioned:\n{s}");
    assert_ne!(seed1, seed2);
    tmux.keys("c");
    tmux.wait_for("take 2 chosen", |s| s.contains("take 2/2 (chosen)"));
    tmux.keys("a");
    tmux.wait_for("approved", |s| s.contains("approved"));
    tmux.keys("q");
    let s = tmux.close_after_exit();
    assert_eq!(std::fs::read_to_string(&status).unwrap().trim(), "0", "{s}");
    assert!(playback.exists());

    // Session 2: nothing renders; the choice, the approval and the seeds are back; the book
    // waits, paused; played from the top, the whole play-through goes to a new playback file.
    let tmux = Tmux::named("loop2");
    tmux.open(dir.path(), &lectern_script(&[&book], &fallback, &status));
    let s = tmux.wait_for("the stored takes", |s| {
        s.contains("all rendered") && s.contains("listening: paused at segment")
    });
    assert!(s.contains(&format!("1/{n} approved")), "{s}");
    assert!(!s.contains("◔ LM") && !s.contains("○ queued"), "nothing renders:\n{s}");
    tmux.keys("g");
    tmux.wait_for("segment 1 selected", |s| s.contains("segment 1 "));
    tmux.keys("j");
    let s = tmux.wait_for("segment 2's chosen take", |s| s.contains("take 2/2 (chosen)"));
    assert_eq!(take_info(&s).map(|t| t.2), Some(seed2), "{s}");
    let row2 = s.lines().find(|l| l.contains("  2 ")).unwrap_or_default().to_string();
    assert!(row2.contains('✓') && row2.contains("2/2*"), "approved, take 2 chosen: {row2}");
    tmux.keys("g");
    tmux.wait_for("segment 1 selected", |s| s.contains("segment 1 "));
    tmux.keys("Space");
    tmux.wait_for("play from the top", |s| s.contains("▶ playing"));
    let s = tmux.wait_longer("the play-through to end", Duration::from_secs(240), |s| {
        s.contains("■ stopped")
    });
    tmux.keys("q");
    tmux.close_after_exit();
    let second = dir.path().join("play-2.wav");
    assert!(second.exists(), "a new playback file, the first kept: {s}");

    // `render` of the same project writes the master of the same takes: the play-through
    // equals it sample for sample.
    let out = run_lectern(&["render", "book.md", "-o", "master.wav", "--quiet"], dir.path());
    assert!(String::from_utf8_lossy(&out.stderr).contains("reused"));
    let master = wav_f32(&dir.path().join("master.wav"));
    let heard = wav_f32(&second);
    assert_eq!(heard.len(), master.len(), "playback and render differ in length");
    assert!(heard == master, "playback differs from render's WAV");

    // Session 3: a new sentence (its own paragraph): only it renders.
    std::fs::write(
        &book,
        LOOP_BOOK.replace("She turned", "The sea was calm by morning.\n\nShe turned"),
    )
    .unwrap();
    let tmux = Tmux::named("loop3");
    tmux.open(dir.path(), &lectern_script(&[&book], &fallback, &status));
    let s = tmux.wait_for("the new sentence rendered", |s| s.contains("all rendered"));
    assert!(s.contains(&format!("{n} segment(s) have their takes, 1 to render")), "{s}");
    tmux.keys("q");
    tmux.close_after_exit();

    // Export: the chosen takes' master (segment 2 is the chosen second take).
    run_lectern(&["export", "book.md", "-o", "book-export.wav", "--bits", "32"], dir.path());
    let exported = wav_f32(&dir.path().join("book-export.wav"));
    let rendered = {
        run_lectern(&["render", "book.md", "-o", "again.wav", "--quiet"], dir.path());
        wav_f32(&dir.path().join("again.wav"))
    };
    assert!(exported == rendered, "export is the master render writes");
    let p = lectern::store::Project::open(&project).unwrap();
    let segs = p.proofed_segments().unwrap();
    let chosen2 = p.chosen_of_key(segs[1].key).unwrap().unwrap();
    assert_eq!(chosen2.record.seed, seed2);
    let take2 = p.load_samples(chosen2.id).unwrap();
    let start: usize = segs[..1]
        .iter()
        .map(|s| {
            let t = p.chosen_of_key(s.key).unwrap().unwrap();
            t.num_samples as usize + lectern::audio::master::ms_to_samples(s.segment.pause_after_ms)
        })
        .sum();
    let mut want = take2.clone();
    lectern::audio::master::fade_edges(&mut want);
    assert!(exported[start..start + want.len()] == want[..], "segment 2 is its chosen take");
    drop(p);

    // A fresh render elsewhere makes byte-identical takes for every segment and seed.
    let fresh = tempfile::tempdir().unwrap();
    std::fs::copy(&book, fresh.path().join("book.md")).unwrap();
    run_lectern(&["render", "book.md", "-o", "fresh.wav", "--quiet"], fresh.path());
    let ours = takes_by_text_and_seed(&project);
    let theirs = takes_by_text_and_seed(&fresh.path().join("book.lectern"));
    assert_eq!(theirs.len(), n + 1);
    for (key, hash) in &theirs {
        assert_eq!(ours.get(key), Some(hash), "take of {key:?} differs from the workstation's");
    }
}

#[test]
fn a_workstation_killed_inside_a_group_save_resumes_to_the_same_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let book = dir.path().join("book.md");
    std::fs::write(&book, LOOP_BOOK).unwrap();
    // The uninterrupted render.
    run_lectern(
        &["render", "book.md", "-o", "clean.wav", "--project", "clean.lectern", "--quiet"],
        dir.path(),
    );
    let clean = std::fs::read(dir.path().join("clean.wav")).unwrap();
    // The workstation, aborted (as by kill -9) after writing the second group's files and
    // before committing its rows.
    let status = dir.path().join("status");
    let killed = dir.path().join("killed.lectern");
    let tmux = Tmux::named("kill");
    let script = format!(
        "LECTERN_FAULT=abort-before-group-commit:2 {}",
        lectern_script(&[&book], &format!("--project {}", quote(&killed)), &status)
    );
    tmux.open(dir.path(), &script);
    tmux.close_after_exit();
    assert_ne!(std::fs::read_to_string(&status).unwrap().trim(), "0", "it was aborted");
    let files_left = std::fs::read_dir(killed.join("takes")).unwrap().count();
    assert!(files_left > 0, "the first group was saved");
    // Resumed by render: the same bytes as the uninterrupted run.
    run_lectern(
        &["render", "book.md", "-o", "resumed.wav", "--project", "killed.lectern", "--quiet"],
        dir.path(),
    );
    assert!(std::fs::read(dir.path().join("resumed.wav")).unwrap() == clean, "resume differs");
}

#[test]
fn sigterm_quits_like_q_and_restores_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let book = dir.path().join("book.md");
    std::fs::write(&book, "The lamp was lit.\n\nRain fell on the roof.\n").unwrap();
    let status = dir.path().join("status");
    let stty = dir.path().join("stty");
    let wav = dir.path().join("play.wav");
    let tmux = Tmux::named("term");
    let script = workstation_script(&book, &wav, &status, &stty);
    tmux.open(dir.path(), &script);
    tmux.wait_for("the workstation", |s| s.contains("manuscript · 2 segments"));
    // Autoplay has played a take to its end: the playback file holds audio (one nothing was
    // played to is removed at exit).
    tmux.wait_for("a take heard", |s| {
        s.lines().any(|l| l.starts_with("│  1 ") && l.contains(" h "))
    });
    let shell = tmux.pane_format("#{pane_pid}");
    let kill = Command::new("pkill").args(["-TERM", "-P", &shell, "lectern"]).status().unwrap();
    assert!(kill.success(), "no lectern process under the pane's shell {shell}");
    let s = tmux.close_after_exit();
    assert_eq!(std::fs::read_to_string(&status).unwrap().trim(), "0", "{s}");
    let modes = std::fs::read_to_string(&stty).unwrap();
    assert!(modes.split_whitespace().any(|w| w == "icanon"), "terminal not restored: {modes}");
    // The playback file was finalised: a valid WAV header, and what was played.
    let played = hound::WavReader::open(&wav).map(|r| r.duration());
    assert!(played.as_ref().is_ok_and(|n| *n > 0), "playback file not finalised: {played:?}");
}

// ---------------------------------------------------------------------------------------------
// Soak: 1,000 segments through `render` and through the workstation on the tiny model, with the
// process's resident memory sampled as takes land. Minutes long, so ignored by default:
//   cargo test --test it soak -- --ignored --nocapture --test-threads 1
// Each asserts RSS at take 1,000 within 50 MiB of RSS at take 200 and prints the figures.

/// One RSS sample: take files in the project, resident KiB, seconds since the start.
#[derive(Debug, Clone, Copy)]
struct RssSample {
    takes: usize,
    rss_kib: u64,
    t: f64,
}

fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn finished_takes(project: &Path) -> usize {
    std::fs::read_dir(project.join("takes")).map_or(0, |d| {
        d.filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().ends_with(".wav"))
            .count()
    })
}

/// Samples `pid` every 200 ms until `done` or the process is gone.
fn sample_rss(pid: u32, project: &Path, done: impl Fn(usize) -> bool) -> Vec<RssSample> {
    let start = Instant::now();
    let mut samples = Vec::new();
    while let Some(rss_kib) = rss_kib(pid) {
        let takes = finished_takes(project);
        samples.push(RssSample { takes, rss_kib, t: start.elapsed().as_secs_f64() });
        if done(takes) {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(3600), "soak took over an hour");
        std::thread::sleep(Duration::from_millis(200));
    }
    samples
}

/// RSS at the first sample with at least 200 and with at least 1,000 takes, the peak; asserts
/// the 50 MiB bound and prints the figures.
fn check_soak(what: &str, samples: &[RssSample]) {
    let at = |n: usize| samples.iter().find(|s| s.takes >= n).copied();
    let (Some(s200), Some(s1000)) = (at(200), at(1000)) else {
        panic!("{what}: the soak did not reach 1,000 takes: {:?}", samples.last());
    };
    let peak = samples.iter().map(|s| s.rss_kib).max().unwrap_or(0);
    let growth_mib = (s1000.rss_kib as f64 - s200.rss_kib as f64) / 1024.0;
    eprintln!(
        "soak {what}: RSS {:.1} MiB at take {} ({:.0} s), {:.1} MiB at take {} ({:.0} s), \
         growth {growth_mib:+.1} MiB, peak {:.1} MiB, {} samples",
        s200.rss_kib as f64 / 1024.0,
        s200.takes,
        s200.t,
        s1000.rss_kib as f64 / 1024.0,
        s1000.takes,
        s1000.t,
        peak as f64 / 1024.0,
        samples.len()
    );
    assert!(growth_mib <= 50.0, "{what}: RSS grew {growth_mib:.1} MiB from take 200 to 1,000");
}

/// 1,000 one-sentence paragraphs (each its own segment), all different.
fn soak_book(dir: &Path) -> PathBuf {
    let words = ["lamp", "keeper", "stairs", "rain", "roof", "night", "page", "river", "stone"];
    let mut text = String::new();
    for i in 0..1000usize {
        let sentence: Vec<&str> = (0..6).map(|k| words[(i * 7 + k * 3 + i / 9) % 9]).collect();
        text.push_str(&format!("Line {}: the {}.\n\n", i + 1, sentence.join(" ")));
    }
    let book = dir.join("book.txt");
    std::fs::write(&book, text).unwrap();
    book
}

#[test]
#[ignore = "soak: minutes long; run with --ignored"]
fn soak_render_1000_segments_in_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let book = soak_book(dir.path());
    let mut child = Command::new(env!("CARGO_BIN_EXE_lectern"))
        .arg("render")
        .arg(&book)
        .arg("-o")
        .arg(dir.path().join("book.wav"))
        .arg("--quiet")
        .env("LECTERN_VOICES", "/nonexistent-lectern-voices")
        .spawn()
        .unwrap();
    let project = dir.path().join("book.lectern");
    let samples = sample_rss(child.id(), &project, |_| false);
    assert!(child.wait().unwrap().success());
    check_soak("render", &samples);
}

#[test]
#[ignore = "soak: minutes long; run with --ignored"]
fn soak_workstation_1000_segments_in_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let book = soak_book(dir.path());
    let status = dir.path().join("status");
    let wav = dir.path().join("play.wav");
    let tmux = Tmux::named("soak");
    let script = lectern_script(&[&book], &format!("--fallback-wav {}", quote(&wav)), &status);
    tmux.open(dir.path(), &script);
    tmux.wait_for("the workstation", |s| s.contains("segments"));
    let shell = tmux.pane_format("#{pane_pid}");
    let pid = Command::new("pgrep").args(["-P", &shell, "lectern"]).output().unwrap();
    let pid: u32 = String::from_utf8_lossy(&pid.stdout).trim().parse().expect("lectern's pid");
    let project = dir.path().join("book.lectern");
    let samples = sample_rss(pid, &project, |takes| takes >= 1000);
    tmux.keys("q");
    let s = tmux.close_after_exit();
    assert_eq!(std::fs::read_to_string(&status).unwrap().trim(), "0", "{s}");
    check_soak("workstation", &samples);
}

/// Casting in the workstation (#22): the list tags Anna's line, `V` lists the cast, `v` gives
/// the narration's first segment the voice `alto` and `i` an instruction — each a new take,
/// kept — and a `render` afterwards reuses those takes (the choice is the project's).
#[test]
fn casting_in_tmux() {
    let dir = tempfile::tempdir().unwrap();
    let alto = dir.path().join("alto");
    std::fs::create_dir_all(&alto).unwrap();
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("voices/tiny-demo");
    std::fs::copy(demo.join("prompt.safetensors"), alto.join("prompt.safetensors")).unwrap();
    let mut manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(demo.join("voice.json")).unwrap()).unwrap();
    manifest["name"] = "alto".into();
    manifest["prompt_text"] = "Another voice, another recording.".into();
    std::fs::write(alto.join("voice.json"), manifest.to_string()).unwrap();
    let cast = format!("[characters.Anna]\nvoice = {:?}\nstyle = \"Speak softly.\"\n", alto);
    std::fs::write(dir.path().join("cast.toml"), cast).unwrap();
    let book = dir.path().join("book.md");
    std::fs::write(&book, "The lamp was lit.\n\nAnna: Is anyone there?\n\nRain fell.\n").unwrap();
    let status = dir.path().join("status");
    let fallback = format!("--fallback-wav {}", quote(&dir.path().join("play.wav")));

    let tmux = Tmux::named("cast");
    tmux.open(dir.path(), &lectern_script(&[&book], &fallback, &status));
    // Each wait is for the whole of what is checked next: tmux may capture a screen mid-draw.
    let tagged = |s: &str, tag: &str, text: &str| {
        s.lines().any(|l| l.contains(&format!("{tag} ")) && l.contains(text))
    };
    tmux.wait_for("every segment ready, Anna's line tagged", |s| {
        s.contains("all rendered") && tagged(s, "anna·style", "Is anyone")
    });
    tmux.keys("V");
    tmux.wait_for("the voices panel with Anna", |s| {
        s.contains("voices · any key closes") && s.contains("Anna") && s.contains("“Speak softly.”")
    });
    tmux.keys("Escape");
    tmux.wait_for("the panel closed", |s| !s.contains("voices · any key closes"));

    // Segment 1: voice alto (the picker: as written, tiny-demo, alto).
    tmux.keys("v");
    tmux.wait_for("the voice picker", |s| s.contains("voice:  as written"));
    tmux.keys("Right");
    tmux.keys("Right");
    tmux.keys("Enter");
    tmux.wait_for("a take in alto, tagged and described", |s| {
        take_info(s).is_some_and(|t| t.1 == 2)
            && tagged(s, "alto✎", "The lamp was lit.")
            && s.contains("voice alto · zero-shot · pace 1 · ✎ voice chosen here")
    });
    tmux.keys("i");
    tmux.wait_for("the style prompt", |s| s.contains("style: "));
    tmux.keys("Whisper.");
    tmux.keys("Enter");
    tmux.wait_for("a whispered take", |s| {
        take_info(s).is_some_and(|t| t.1 == 3) && s.contains("instruct “Whisper.”")
    });
    tmux.wait_for("all rendered again", |s| s.contains("all rendered"));
    tmux.keys("q");
    let s = tmux.close_after_exit();
    assert_eq!(std::fs::read_to_string(&status).unwrap().trim(), "0", "{s}");

    // `render` uses the choice: the workstation's take is current, nothing new is made.
    let project = dir.path().join("book.lectern");
    let count = || lectern::store::Project::open(&project).unwrap().all_takes().unwrap().len();
    let before = count();
    run_lectern(&["render", "book.md", "-o", "master.wav", "--quiet"], dir.path());
    assert_eq!(count(), before, "render made no take");
    let p = lectern::store::Project::open(&project).unwrap();
    let first = p.proofed_segments().unwrap()[0].key;
    let chosen = p.chosen_of_key(first).unwrap().unwrap();
    assert_eq!(chosen.record.voice_id, "alto");
    assert_eq!(chosen.record.content.instruction.as_deref(), Some("Whisper."));
}

/// The column of the playhead's mark under the segment panel's waveform, and whether a
/// sparkline row (block characters) sits above it.
fn playhead_column(screen: &str) -> Option<(usize, bool)> {
    let lines: Vec<&str> = screen.lines().collect();
    let at = lines.iter().position(|l| l.contains(lectern::tui::view::waveform::PLAYHEAD_MARK))?;
    let column = lines[at]
        .chars()
        .position(|c| c.to_string() == lectern::tui::view::waveform::PLAYHEAD_MARK)?;
    let wave =
        at.checked_sub(1).is_some_and(|i| lines[i].chars().any(|c| ('▁'..='█').contains(&c)));
    Some((column, wave))
}

/// #53: the selected take's waveform shows in the segment panel and, while the take plays (to
/// the file sink, in real time), its playhead moves along it.
#[test]
fn the_waveform_and_its_playhead_move_while_a_take_plays() {
    let tmux = Tmux::named("wave");
    let dir = tempfile::tempdir().unwrap();
    let book = dir.path().join("book.md");
    std::fs::write(
        &book,
        "The keeper climbed the stairs again, as he had done every evening for thirty years, \
         past the old charts, the brass barometer and the window where his wife had once \
         waited for the boats.\n",
    )
    .unwrap();
    let wav = dir.path().join("playback.wav");
    let status = dir.path().join("status");
    let stty = dir.path().join("stty");
    tmux.open(dir.path(), &workstation_script(&book, &wav, &status, &stty));
    let s = tmux.wait_for("the segment ready", |s| ready_rows(s) >= 1 && s.contains("take 1/1"));
    assert!(!s.contains("manuscript · 0 segments"), "{s}");
    // The tiny model's takes are short (under a second): play the selected take alone from
    // its start, watching the mark, until one play shows it at two places or more.
    let mut plays = Vec::new();
    for _ in 0..5 {
        // The take also plays by itself as it is rendered: let that play end first, so the
        // marks watched are of this play alone.
        let idle = Instant::now();
        while playhead_column(&tmux.screen()).is_some() && idle.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(30));
        }
        tmux.keys("r");
        let mut seen = watch_playhead(&tmux);
        // A mark going back is a play starting over: the mark left at its last place seen
        // before `r` restarts the play, or a play the render started itself (seen on a busy
        // CI machine: [74, 77, 74, 81, …]), once; within a play it only moves forward.
        let restarts = seen.windows(2).filter(|w| w[0] > w[1]).count();
        assert!(restarts <= 1, "it moves forward: {seen:?}");
        if let Some(restart) = seen.windows(2).rposition(|w| w[0] > w[1]) {
            seen.drain(..=restart);
        }
        if seen.len() >= 2 {
            break;
        }
        plays.push(seen);
    }
    assert!(plays.len() < 5, "the playhead did not move along the waveform: {plays:?}");
    tmux.keys("q");
    tmux.close_after_exit();
}

/// The playhead's columns while one play lasts (from its mark's first sighting to its end),
/// each new position once; panics if no waveform sits above the mark.
fn watch_playhead(tmux: &Tmux) -> Vec<usize> {
    let mut seen: Vec<usize> = Vec::new();
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(10) {
        let s = tmux.screen();
        match playhead_column(&s) {
            Some((column, wave)) => {
                assert!(wave, "no waveform above the playhead:\n{s}");
                if seen.last() != Some(&column) {
                    seen.push(column);
                }
            }
            None if !seen.is_empty() => break,
            None => {}
        }
        std::thread::sleep(Duration::from_millis(30));
    }
    seen
}

/// Every segment's review state, in manuscript order.
fn reviews(project: &Path) -> Vec<lectern::review::Review> {
    let p = lectern::store::Project::open(project).unwrap();
    p.proofed_segments().unwrap().iter().map(|s| p.review_of_key(s.key).unwrap()).collect()
}

#[test]
fn a_reopened_book_waits_paused_at_the_last_position_and_marks_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let book = dir.path().join("book.md");
    std::fs::write(&book, LOOP_BOOK).unwrap();
    let project = dir.path().join("book.lectern");
    let status = dir.path().join("status");
    let fallback = format!("--fallback-wav {}", quote(&dir.path().join("play.wav")));

    // Session 1: render, then listen to segment 3.
    let tmux = Tmux::named("resume");
    tmux.open(dir.path(), &lectern_script(&[&book], &fallback, &status));
    tmux.wait_for("every segment ready", |s| s.contains("all rendered"));
    tmux.keys("g");
    tmux.keys("j");
    tmux.keys("j");
    tmux.wait_for("segment 3 selected", |s| s.contains("segment 3 "));
    // Segment 3 alone (autoplay, if still going, stops); the tiny model's takes are under a
    // second: it has played well before the quit.
    tmux.keys("r");
    std::thread::sleep(Duration::from_secs(3));
    tmux.keys("q");
    let s = tmux.close_after_exit();
    assert_eq!(std::fs::read_to_string(&status).unwrap().trim(), "0", "{s}");
    let p = lectern::store::Project::open(&project).unwrap();
    let third = p.proofed_segments().unwrap()[2].key;
    assert_eq!(p.listening_position().unwrap(), Some(third), "the position is kept");
    drop(p);
    let before = reviews(&project);

    // Session 2: paused at segment 3, selected; left alone, nothing plays and nothing is
    // marked.
    let tmux = Tmux::named("resume2");
    tmux.open(dir.path(), &lectern_script(&[&book], &fallback, &status));
    let s = tmux.wait_for("paused at segment 3", |s| {
        s.contains("listening: paused at segment 3") && s.contains("segment 3 ")
    });
    assert!(s.contains("■ stopped"), "{s}");
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(5) {
        let s = tmux.screen();
        assert!(!s.contains("▶ playing"), "a reopened book plays by itself:\n{s}");
        std::thread::sleep(Duration::from_millis(200));
    }
    tmux.keys("q");
    tmux.close_after_exit();
    assert_eq!(reviews(&project), before, "opening and waiting marked something");
    let p = lectern::store::Project::open(&project).unwrap();
    assert_eq!(p.listening_position().unwrap(), Some(third));
    assert!(!dir.path().join("play-2.wav").exists(), "a session that played nothing keeps no file");
    assert!(dir.path().join("play.wav").exists(), "the first session's playback is kept");
}

#[test]
fn an_approved_segment_edited_in_the_manuscript_shows_edited_since_approval_with_its_note() {
    let dir = tempfile::tempdir().unwrap();
    let book = dir.path().join("book.md");
    std::fs::write(&book, LOOP_BOOK).unwrap();
    let status = dir.path().join("status");
    let fallback = format!("--fallback-wav {}", quote(&dir.path().join("play.wav")));
    let note = "Breath noise before the keeper, redo";

    let tmux = Tmux::named("edited");
    tmux.open(dir.path(), &lectern_script(&[&book], &fallback, &status));
    let s = tmux.wait_for("every segment ready", |s| s.contains("all rendered"));
    let n = segment_count(&s);
    tmux.keys("g");
    tmux.keys("j");
    tmux.wait_for("segment 2 selected", |s| s.contains("segment 2 "));
    tmux.keys("a");
    tmux.wait_for("approved", |s| s.contains(&format!("1/{n} approved")));
    tmux.keys("N");
    tmux.wait_for("the note prompt", |s| s.contains("note: "));
    tmux.keys(note);
    tmux.keys("Enter");
    tmux.wait_for("the note", |s| s.contains(&format!("note: {note}")));

    // Two words of segment 2 change in the manuscript, saved while the workstation is open.
    std::fs::write(&book, LOOP_BOOK.replace("thirty years", "forty winters")).unwrap();
    let s = tmux.wait_for("edited since approval", |s| {
        s.contains(&format!("0/{n} approved")) && s.contains("1 edited since approval")
    });
    let row2 = s.lines().find(|l| l.starts_with("│  2 ")).unwrap_or_default();
    assert!(row2.contains(" e "), "the list marks it: {row2}\n{s}");
    assert!(s.contains("segment 2 "), "still selected:\n{s}");
    let s = tmux.wait_for("the panel names it, the note kept", |s| {
        s.contains("· edited since approval") && s.contains(&format!("note: {note}"))
    });
    assert!(s.contains("forty winters"), "the new text is shown:\n{s}");
    assert!(s.contains("manuscript: ") && s.contains("1 note carried"), "the log says so:\n{s}");
    tmux.wait_for("its new take", |s| s.contains("all rendered"));
    tmux.keys("q");
    let s = tmux.close_after_exit();
    assert_eq!(std::fs::read_to_string(&status).unwrap().trim(), "0", "{s}");

    // Reopened: still edited since approval, said in the log and the title, the note kept.
    let tmux = Tmux::named("edited2");
    tmux.open(dir.path(), &lectern_script(&[&book], &fallback, &status));
    let s = tmux.wait_for("the reopened book", |s| s.contains("listening: paused at segment"));
    assert!(s.contains("project: 1 segment(s) edited since approval"), "{s}");
    assert!(s.contains("1 edited since approval") && s.contains(&format!("0/{n} approved")), "{s}");
    tmux.keys("g");
    tmux.keys("j");
    tmux.wait_for("segment 2 with its note", |s| {
        s.contains("segment 2 ")
            && s.contains("· edited since approval")
            && s.contains(&format!("note: {note}"))
    });
    tmux.keys("q");
    tmux.close_after_exit();
}
