//! Numeric options are checked where they enter (issue #17): an NFE of 0, lanes 0, a group
//! target or loudness out of range, NaN or infinite loudness and a negative seed are refused by
//! the argument parser with exit status 2 and a message saying what is accepted — before any
//! model is loaded or file written. `--precision`'s help is written for users.

use crate::cli_common::isolated_env;
use std::path::Path;
use std::process::{Command, Output};

fn lectern<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lectern"))
        .envs(isolated_env())
        .env("LECTERN_VOICES", "/nonexistent-lectern-voices")
        .args(args)
        .output()
        .expect("run lectern")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `lectern ARGS` must exit 2 naming the flag, the value and every `needle`.
fn refused<S: AsRef<std::ffi::OsStr> + std::fmt::Debug>(args: &[S], needles: &[&str]) {
    let o = lectern(args);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{args:?} was not refused: {err}");
    for needle in needles {
        assert!(err.contains(needle), "{args:?}: `{needle}` missing in: {err}");
    }
    assert!(!err.contains("-- -"), "{args:?}: clap's misleading `-- -N` tip: {err}");
}

#[test]
fn render_refuses_out_of_range_engine_settings() {
    let tmp = tempfile::tempdir().unwrap();
    let book = tmp.path().join("book.txt");
    std::fs::write(&book, "One sentence.\n").unwrap();
    let out = tmp.path().join("out.wav");
    let (book, out) = (book.to_str().unwrap(), out.to_str().unwrap());
    let render = |extra: &[&'static str]| -> Vec<String> {
        let base = ["render", book, "-o", out, "--dry-run"];
        base.iter().chain(extra).map(|s| s.to_string()).collect()
    };
    for (flag, value, rule) in [
        ("--nfe", "0", "from 1 to 64"),
        ("--nfe", "65", "from 1 to 64"),
        ("--nfe", "-3", "from 1 to 64"),
        ("--lanes", "0", "from 1 to 32"),
        ("--lanes", "33", "from 1 to 32"),
        ("--group-target", "10", "50 to 8000"),
        ("--group-target", "100000", "50 to 8000"),
        ("--seed", "-1", "no random seed"),
        ("--seed", "1.5", "whole number"),
    ] {
        refused(&render(&[flag, value]), &[flag, &format!("'{value}'"), rule]);
    }
    // The workstation takes the same flags with the same rules.
    refused(&["--nfe", "0"], &["--nfe", "from 1 to 64"]);
    refused(&["--lanes", "0"], &["--lanes", "from 1 to 32"]);
    // Values in range still pass (a dry run loads no model and writes nothing).
    let o = lectern(&render(&["--nfe", "64", "--lanes", "32", "--group-target", "0"]));
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!Path::new(out).exists());
}

#[test]
fn export_refuses_a_loudness_that_is_not_a_sane_target() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("book.wav");
    let out = out.to_str().unwrap();
    for value in ["NaN", "nan", "inf", "-inf", "-1e308", "10", "-4", "-71", "loud"] {
        let args = ["export", "book.lectern", "-o", out, "--loudness", value];
        refused(&args, &["--loudness", "LUFS from -70 to -5"]);
    }
    assert!(!Path::new(out).exists());
}

#[test]
fn threads_past_the_machine_are_refused_naming_the_maximum() {
    let max = 4 * std::thread::available_parallelism().unwrap().get();
    for value in ["0", "100000", &(max + 1).to_string()] {
        refused(&["config", "--threads", value], &["--threads", &format!("from 1 to {max}")]);
    }
    assert!(lectern(&["config", "--threads", &max.to_string()]).status.success());
}

#[test]
fn precision_help_is_written_for_users() {
    let o = lectern(&["render", "--help"]);
    let help = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success());
    assert!(help.contains("q8_0"), "{help}");
    assert!(!help.contains("clap would derive"), "a developer's note in the help: {help}");
    assert!(help.contains("quantized"), "{help}");
}

/// A missing file's cause was printed twice ("… (os error 2): No such file … (os error 2)"):
/// the error showed its cause and also returned it as its source, which `{:#}` prints again.
#[test]
fn a_missing_file_names_its_cause_once() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("missing.md");
    let out = tmp.path().join("out.wav");
    for dry_run in [false, true] {
        let mut args = vec!["render", missing.to_str().unwrap(), "-o", out.to_str().unwrap()];
        if dry_run {
            args.push("--dry-run");
        }
        let o = lectern(&args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(err.contains(&missing.display().to_string()), "{err}");
        assert_eq!(err.matches("No such file").count(), 1, "cause repeated: {err}");
    }
}
