//! `lectern voice add` refuses noise, a tone and a melody as a voice reference (issue #17),
//! or warns with `--allow-non-speech`. The speech measure itself is tested in lectern-engine.

use std::path::Path;
use std::process::{Command, Output};

use crate::cli_common::isolated_env;
use lectern_test_support::signals::{self, tone, white_noise};

const RATE: u32 = 22_050;

const SECONDS: f64 = 4.0;

fn add(voices: &Path, reference: &Path, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lectern"))
        .envs(isolated_env())
        .env("LECTERN_VOICES", voices)
        .args(["voice", "add"])
        .arg(reference)
        .args(["--text", "Hello there.", "--name", "v"])
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn voice_add_refuses_noise_unless_allowed() {
    let tmp = tempfile::tempdir().unwrap();
    let voices = tmp.path().join("voices");
    let noise = tmp.path().join("noise.wav");
    signals::write_wav(&noise, RATE, &white_noise(3, RATE, SECONDS));
    let o = add(&voices, &noise, &[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains(&noise.display().to_string()) && err.contains("no speech"), "{err}");
    assert!(err.contains("--allow-non-speech"), "{err}");
    assert!(!voices.join("v").exists());
    let tone_wav = tmp.path().join("tone.wav");
    signals::write_wav(&tone_wav, RATE, &tone(220.0, RATE, SECONDS));
    let o = add(&voices, &tone_wav, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", String::from_utf8_lossy(&o.stderr));
    // The override makes the voice and says what is wrong with it.
    let o = add(&voices, &noise, &["--allow-non-speech"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("warning:") && err.contains("does not sound like speech"), "{err}");
    assert!(voices.join("v").is_dir());
}
