//! `lectern voice add` end to end: the real binary makes a voice from the fixture recording with
//! the bundled tiny model's stand-in ONNX models, `voice show` / `voice list` describe it, and
//! `lectern render` on the tiny model speaks with it. Bad references fail with a message naming
//! the file and leave no voice behind; an existing voice is only replaced with `--force`.

use crate::cli_common::isolated_env;
use std::path::Path;
use std::process::{Command, Output};

const REFERENCE: &str = "fixtures/voice-prompt/prompt.wav";
const TRANSCRIPT: &str = "The quick brown fox jumps over the lazy dog, while seven little birds \
                          sing a happy song in the morning sun.";

fn lectern(voices: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lectern"));
    cmd.envs(isolated_env());
    cmd.env("LECTERN_VOICES", voices);
    cmd
}

fn add(voices: &Path, reference: &Path, name: &str, extra: &[&str]) -> Output {
    lectern(voices)
        .args(["voice", "add"])
        .arg(reference)
        .args(["--text", TRANSCRIPT, "--name", name])
        .args(extra)
        .output()
        .expect("run lectern")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn voice_add_then_render_with_it() {
    let tmp = tempfile::tempdir().unwrap();
    let voices = tmp.path().join("voices");
    let o = add(&voices, Path::new(REFERENCE), "fox", &[]);
    assert!(o.status.success(), "voice add failed: {}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(out.contains("tokens:       165"), "{out}");
    assert!(out.contains("aligned:      165 of 166 tokens, 330 of 331 mel frames"), "{out}");
    assert!(out.contains("random weights"), "the tiny model must say so: {out}");
    assert!(
        voices.join("fox/voice.json").is_file() && voices.join("fox/prompt.safetensors").is_file()
    );

    let show = lectern(&voices).args(["voice", "show", "fox"]).output().unwrap();
    let show_out = text(&show.stdout);
    assert!(show.status.success(), "{}", text(&show.stderr));
    for needle in
        ["voice:        fox", "duration:     6.60 s (reference 6.63 s)", "22050 Hz", "prompt.wav"]
    {
        assert!(show_out.contains(needle), "`{needle}` missing in: {show_out}");
    }
    let list = lectern(&voices).args(["voice", "list"]).output().unwrap();
    assert!(text(&list.stdout).contains("fox"), "{}", text(&list.stdout));

    // A second add under the same name is refused; --force replaces it.
    let again = add(&voices, Path::new(REFERENCE), "fox", &[]);
    assert!(!again.status.success());
    assert!(text(&again.stderr).contains("--force"), "{}", text(&again.stderr));
    let forced = add(&voices, Path::new(REFERENCE), "fox", &["--force"]);
    assert!(forced.status.success(), "{}", text(&forced.stderr));

    let book = tmp.path().join("book.txt");
    std::fs::write(&book, "A fox spoke these words.\n").unwrap();
    let wav = tmp.path().join("book.wav");
    let r = lectern(&voices)
        .args(["render"])
        .arg(&book)
        .arg("-o")
        .arg(&wav)
        .args(["--quiet", "--no-project", "--voice", "fox"])
        .output()
        .unwrap();
    assert!(r.status.success(), "render with the new voice failed: {}", text(&r.stderr));
    let reader = hound::WavReader::open(&wav).expect("rendered wav");
    assert!(reader.duration() > 0);
}

/// A 16-bit WAV of `seconds` of a 220 Hz tone at `rate` with `channels` channels.
fn tone(path: &Path, rate: u32, channels: u16, seconds: f64) {
    let spec = hound::WavSpec {
        channels,
        sample_rate: rate,
        bits_per_sample: 16,
        sample_format: hound::SampleFormat::Int,
    };
    let mut w = hound::WavWriter::create(path, spec).unwrap();
    for i in 0..(seconds * f64::from(rate)) as usize {
        let x = (i as f64 * 220.0 * std::f64::consts::TAU / f64::from(rate)).sin() * 0.3;
        for _ in 0..channels {
            w.write_sample((x * 32767.0) as i16).unwrap();
        }
    }
    w.finalize().unwrap();
}

#[test]
fn voice_add_uses_the_model_config_toml_names() {
    // The model `lectern model download` recorded is the one a voice is made for, with no
    // --model: a config naming a folder that does not exist is refused naming that folder.
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("config");
    std::fs::create_dir_all(config.join("lectern")).unwrap();
    let missing = tmp.path().join("models/not-downloaded");
    std::fs::write(
        config.join("lectern/config.toml"),
        format!("model = \"{}\"\n", missing.display()),
    )
    .unwrap();
    let reference = Path::new(env!("CARGO_MANIFEST_DIR")).join(REFERENCE);
    let o = lectern(&tmp.path().join("voices"))
        .env("XDG_CONFIG_HOME", &config)
        .args(["voice", "add"])
        .arg(&reference)
        .args(["--text", TRANSCRIPT, "--name", "configured"])
        .output()
        .unwrap();
    let err = text(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(err.contains("models/not-downloaded"), "{err}");
    assert!(!tmp.path().join("voices/configured").exists());
}

#[test]
fn bad_references_fail_clearly_and_write_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let voices = tmp.path().join("voices");
    let short = tmp.path().join("short.wav");
    tone(&short, 24_000, 1, 0.2);
    let long = tmp.path().join("long.wav");
    tone(&long, 16_000, 1, 40.0);
    let narrow = tmp.path().join("phone.wav");
    tone(&narrow, 8_000, 1, 3.0);
    let notes = tmp.path().join("notes.wav");
    std::fs::write(&notes, "these are not samples\n").unwrap();
    for (file, needle) in
        [(&short, "at least"), (&long, "30"), (&narrow, "8000"), (&notes, "not a WAV")]
    {
        let o = add(&voices, file, "bad", &[]);
        let err = text(&o.stderr);
        assert!(!o.status.success(), "{} was accepted", file.display());
        assert!(err.contains(&file.display().to_string()), "file not named: {err}");
        assert!(err.contains(needle), "`{needle}` missing: {err}");
        assert!(!voices.join("bad").exists(), "a voice was written for {}", file.display());
    }
    let o = add(&voices, Path::new(REFERENCE), "../escape", &[]);
    assert!(!o.status.success() && text(&o.stderr).contains("voice name"));
    let o = lectern(&voices)
        .args(["voice", "add", REFERENCE, "--text", "  ", "--name", "blank"])
        .output()
        .unwrap();
    assert!(!o.status.success() && text(&o.stderr).contains("--text is empty"));
}

#[test]
fn a_model_without_onnx_models_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let model = tmp.path().join("model");
    let src = Path::new("fixtures/cosyvoice3-tiny-a/model");
    std::fs::create_dir_all(model.join("CosyVoice-BlankEN")).unwrap();
    for f in std::fs::read_dir(src.join("CosyVoice-BlankEN")).unwrap() {
        let f = f.unwrap().path();
        std::fs::copy(&f, model.join("CosyVoice-BlankEN").join(f.file_name().unwrap())).unwrap();
    }
    std::fs::copy(src.join("tiny.json"), model.join("tiny.json")).unwrap();
    let voices = tmp.path().join("voices");
    let o = add(&voices, Path::new(REFERENCE), "fox", &["--model", model.to_str().unwrap()]);
    assert!(!o.status.success());
    assert!(text(&o.stderr).contains("speech_tokenizer_v3.onnx"), "{}", text(&o.stderr));
    assert!(!voices.join("fox").exists());
}
