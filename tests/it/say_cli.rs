//! `lectern say` end to end on the bundled tiny model: the line is rendered as a one-line
//! manuscript would be (the same samples as `render --no-project`), written with `-o` or, with
//! no audio device, to the fallback file; bad input fails clearly and writes nothing.

use std::path::Path;
use std::process::{Command, Output};

/// The developer's configuration and data stay out of the test (as in render_cli.rs).
fn lectern(cwd: &Path) -> Command {
    let home = Path::new(env!("CARGO_TARGET_TMPDIR")).join("lectern-test-home");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lectern"));
    cmd.env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .env("HOME", home)
        .env("LECTERN_VOICES", "/nonexistent-lectern-voices")
        .current_dir(cwd);
    cmd
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn samples(path: &Path) -> Vec<f32> {
    lectern::audio::wav::read(path).expect("a 24 kHz WAV")
}

const LINE: &str = "Nguyen paid 3 dollars.";

#[test]
fn say_writes_what_render_would_and_uses_the_pronunciations_here() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // A respelling (the tiny model's random weights may stop early on phone units).
    std::fs::write(dir.join("pronunciations.txt"), "Nguyen = Win\n").unwrap();
    let o = lectern(dir).args(["say", LINE, "-o", "said.wav"]).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("wrote said.wav"), "{}", stderr(&o));
    let said = samples(&dir.join("said.wav"));
    assert!(!said.is_empty() && said.len() % 960 == 0, "{} samples", said.len());
    // The same line as a manuscript beside the same list, rendered without a project.
    std::fs::write(dir.join("line.txt"), LINE).unwrap();
    let r = lectern(dir)
        .args(["render", "line.txt", "-o", "rendered.wav", "--quiet", "--no-project"])
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", stderr(&r));
    assert_eq!(said, samples(&dir.join("rendered.wav")));
    // Without the list the line is another LM input, hence other audio.
    std::fs::remove_file(dir.join("pronunciations.txt")).unwrap();
    let o = lectern(dir).args(["say", LINE, "-o", "plain.wav"]).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_ne!(said, samples(&dir.join("plain.wav")));
}

#[test]
fn say_without_an_audio_device_writes_the_fallback_file() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let o = lectern(dir)
        .args(["say", "Hi.", "--playback-device", "file", "--fallback-wav", "heard.wav"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("no audio device: wrote heard.wav instead"), "{}", stderr(&o));
    let o = lectern(dir).args(["say", "Hi.", "-o", "direct.wav"]).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let direct = samples(&dir.join("direct.wav"));
    let heard = samples(&dir.join("heard.wav"));
    // The file sink plays at the device's pace and may end on a block of silence.
    assert!(heard.len() >= direct.len(), "{} < {}", heard.len(), direct.len());
    assert_eq!(heard[..direct.len()], direct[..]);
}

#[test]
fn say_fails_clearly_on_bad_input() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let o = lectern(dir).args(["say", "  ", "-o", "x.wav"]).output().unwrap();
    assert!(!o.status.success());
    assert!(stderr(&o).contains("nothing to say"), "{}", stderr(&o));
    std::fs::write(dir.join("pronunciations.txt"), "ok = fine\nNguyen = [N][W][IY7][N]\n").unwrap();
    let o = lectern(dir).args(["say", LINE, "-o", "x.wav"]).output().unwrap();
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("pronunciations.txt:2: bad pronunciation entry: `[IY7]`"),
        "{}",
        stderr(&o)
    );
    let o = lectern(dir)
        .args(["say", LINE, "-o", "x.wav", "--pronunciations", "none.txt"])
        .output()
        .unwrap();
    assert!(stderr(&o).contains("pronunciation list none.txt not found"), "{}", stderr(&o));
    assert!(!dir.join("x.wav").exists());
}

#[test]
fn a_take_without_speech_is_tried_again_with_its_next_seed() {
    // On phone units the tiny model's random weights stop at once, 0 speech tokens, when its
    // LM reads byte ids (the fixture model directory, which has no tokenizer files) at the
    // line's first seed. That is no take of the line: say and render try the next seed of its
    // sequence by themselves, say so, and write the take that has speech.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let model = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/cosyvoice3-tiny-a/model");
    let on_bytes = ["--model", model.to_str().unwrap(), "--voice", "tiny-demo"];
    let line = "[N][W][IY1][N] paid three dollars.";
    let o = lectern(dir).args(["say", line, "-o", "said.wav"]).args(on_bytes).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let retried = "segment 1: no speech with seed 956200; trying seed 629380 (try 2 of 3)";
    assert!(stderr(&o).contains(retried), "{}", stderr(&o));
    assert!(!samples(&dir.join("said.wav")).is_empty());

    std::fs::write(dir.join("book.txt"), format!("The keeper left.\n\n{line}\n")).unwrap();
    let r = lectern(dir)
        .args(["render", "book.txt", "-o", "book.wav", "--quiet"])
        .args(on_bytes)
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", stderr(&r));
    assert!(stderr(&r).contains("segment 2: no speech with seed"), "{}", stderr(&r));
    assert!(dir.join("book.wav").exists());
}
