//! `lectern doctor`: every section on this machine, and a damaged model named by its file.

use std::path::Path;
use std::process::{Command, Output};

use crate::cli_common::{copy_dir, isolated_env};

const SECTIONS: &[&str] =
    &["config", "folders", "model", "tokenizer", "voice", "device", "cpu", "audio", "ffmpeg"];

fn doctor(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lectern"))
        .envs(isolated_env())
        .env("LECTERN_VOICES", "/nonexistent-lectern-voices")
        .arg("doctor")
        .args(args)
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn doctor_names_every_section_and_passes_on_the_demo_model() {
    let o = doctor(&[]);
    let out = text(&o.stdout);
    assert!(o.status.success(), "{out}{}", text(&o.stderr));
    for section in SECTIONS {
        let line = out.lines().find(|l| l.split_whitespace().nth(1) == Some(section));
        let line = line.unwrap_or_else(|| panic!("no {section} line:\n{out}"));
        let status = line.split_whitespace().next().unwrap();
        assert!(["OK", "WARN"].contains(&status), "{line}");
    }
    // The demo model is a valid model directory, and doctor says what it is not.
    assert!(out.contains("demo tiny model") && out.contains("lectern model download"), "{out}");

    let o = doctor(&["--json"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["ok"], true);
    let checks = v["checks"].as_array().unwrap();
    for section in SECTIONS {
        assert!(checks.iter().any(|c| c["section"] == *section), "{section}: {v}");
    }
}

#[test]
fn a_truncated_model_is_named_by_doctor_and_refused_by_render() {
    let tmp = tempfile::tempdir().unwrap();
    let model = tmp.path().join("model");
    copy_dir(Path::new("fixtures/cosyvoice3-tiny-a/model"), &model);
    let flow = model.join("flow.pt");
    let len = std::fs::metadata(&flow).unwrap().len();
    std::fs::OpenOptions::new().write(true).open(&flow).unwrap().set_len(len - 1000).unwrap();

    let o = doctor(&["--model", model.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stdout));
    let out = text(&o.stdout);
    let fail = out.lines().find(|l| l.starts_with("FAIL") && l.contains("model")).unwrap_or("");
    assert!(fail.contains(&model.display().to_string()), "{out}");
    assert!(out.contains("flow.pt: truncated or damaged"), "{out}");
    assert!(text(&o.stderr).contains("1 check(s) failed"), "{}", text(&o.stderr));

    let book = tmp.path().join("book.txt");
    std::fs::write(&book, "One sentence.\n").unwrap();
    let out = tmp.path().join("book.wav");
    let o = Command::new(env!("CARGO_BIN_EXE_lectern"))
        .envs(isolated_env())
        .args(["render", "--quiet", "--no-project", "--voice", "voices/tiny-demo", "--model"])
        .arg(&model)
        .arg(&book)
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = text(&o.stderr);
    assert!(err.contains("is incomplete") && err.contains("flow.pt: truncated"), "{err}");
    assert!(!out.exists());
}

#[test]
fn a_parent_folder_given_as_the_model_is_explained() {
    let tmp = tempfile::tempdir().unwrap();
    let model = tmp.path().join("Fun-CosyVoice3");
    copy_dir(Path::new("fixtures/cosyvoice3-tiny-a/model"), &model);
    let o = doctor(&["--model", tmp.path().to_str().unwrap()]);
    assert!(!o.status.success());
    let out = text(&o.stdout);
    assert!(out.contains(&format!("pass --model {}", model.display())), "{out}");
}
