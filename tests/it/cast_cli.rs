//! A cast on the tiny model, end to end through the real binary (#22): `cast.toml` and voicing
//! markup give each line its voice, mode and pace; a mixed-voice scene renders every line
//! exactly as that line rendered alone with its voice and seed; a cast edit re-renders exactly
//! the lines it changes; unknown voices and characters are errors naming the line.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::cli_common::isolated_env;

const REFERENCE: &str = "fixtures/voice-prompt/prompt.wav";
const TRANSCRIPT: &str = "The quick brown fox jumps over the lazy dog, while seven little birds \
                          sing a happy song in the morning sun.";

const SCENE: &str = "The door creaked open.

Anna: Who is there?

[voice:fox]Only the wind.

[voice][style:Speak in a whisper.]Nobody moved.

Tom: Then come in.
";

const CAST: &str = r#"
[characters.Anna]
voice = "fox"
pace = 1.25

[characters.Tom]
voice = "tiny-demo"
style = "Speak slowly and calmly."

[voices.fox]
cross_lingual = true
"#;

/// A voices directory holding `fox`, made once from the fixture recording.
struct Studio {
    dir: tempfile::TempDir,
}

impl Studio {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let studio = Self { dir };
        let o = studio
            .lectern()
            .args(["voice", "add", REFERENCE, "--text", TRANSCRIPT, "--name", "fox"])
            .output()
            .unwrap();
        assert!(o.status.success(), "voice add: {}", text(&o.stderr));
        studio
    }

    fn lectern(&self) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_lectern"));
        cmd.envs(isolated_env());
        cmd.env("LECTERN_VOICES", self.dir.path().join("voices"));
        cmd
    }

    /// A manuscript (and optionally its cast file) in a directory of its own.
    fn book(&self, name: &str, manuscript: &str, cast: Option<&str>) -> PathBuf {
        let dir = self.dir.path().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("book.txt"), manuscript).unwrap();
        if let Some(cast) = cast {
            std::fs::write(dir.join("cast.toml"), cast).unwrap();
        }
        dir.join("book.txt")
    }

    /// `lectern render BOOK -o BOOK.wav --report BOOK.json --group-target 0 ARGS…`.
    fn render(&self, book: &Path, args: &[&str]) -> Output {
        self.lectern()
            .arg("render")
            .arg(book)
            .arg("-o")
            .arg(book.with_extension("wav"))
            .arg("--report")
            .arg(book.with_extension("json"))
            .args(["--quiet", "--group-target", "0"])
            .args(args)
            .output()
            .unwrap()
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn report(book: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(book.with_extension("json")).unwrap()).unwrap()
}

/// Each segment's samples in the rendered WAV, by the report's lengths and pauses.
fn segment_audio(book: &Path) -> Vec<Vec<i32>> {
    let r = report(book);
    let mut reader = hound::WavReader::open(book.with_extension("wav")).unwrap();
    let all: Vec<i32> = match reader.spec().sample_format {
        hound::SampleFormat::Float => {
            reader.samples::<f32>().map(|s| s.unwrap().to_bits() as i32).collect()
        }
        hound::SampleFormat::Int => reader.samples::<i32>().map(Result::unwrap).collect(),
    };
    let mut at = r["lead_in_samples"].as_u64().unwrap() as usize;
    let mut out = Vec::new();
    for s in r["segments"].as_array().unwrap() {
        let n = s["samples"].as_u64().unwrap() as usize;
        out.push(all[at..at + n].to_vec());
        at += n + s["pause_samples"].as_u64().unwrap() as usize;
    }
    out
}

/// The scene's lines as each would be written alone, with its voice (and fox's cross-lingual
/// mode) given on the command line.
fn alone(line: usize) -> (&'static str, &'static [&'static str]) {
    match line {
        0 => ("The door creaked open.\n", &[]),
        1 => ("[pace:1.25]Who is there?\n", &["--voice", "fox", "--cross-lingual"]),
        2 => ("Only the wind.\n", &["--voice", "fox", "--cross-lingual"]),
        3 => ("[style:Speak in a whisper.]Nobody moved.\n", &[]),
        _ => ("[style:Speak slowly and calmly.]Then come in.\n", &[]),
    }
}

#[test]
fn a_two_character_scene_renders_each_line_as_it_would_alone() {
    let studio = Studio::new();
    let scene = studio.book("scene", SCENE, Some(CAST));
    let o = studio.render(&scene, &[]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let r = report(&scene);
    let segments = r["segments"].as_array().unwrap();
    let who: Vec<(&str, &str, f64)> = segments
        .iter()
        .map(|s| {
            (s["voice"].as_str().unwrap(), s["mode"].as_str().unwrap(), s["pace"].as_f64().unwrap())
        })
        .collect();
    assert_eq!(
        who,
        vec![
            ("tiny-demo", "zero_shot", 1.0),
            ("fox", "cross_lingual", 1.25),
            ("fox", "cross_lingual", 1.0),
            ("tiny-demo", "instruct", 1.0),
            ("tiny-demo", "instruct", 1.0),
        ]
    );
    assert_eq!(segments[1]["character"], "Anna");
    assert_eq!(segments[4]["instruction"], "Speak slowly and calmly.");
    let mixed = segment_audio(&scene);
    for (i, segment) in segments.iter().enumerate() {
        let (line, args) = alone(i);
        let book = studio.book(&format!("alone{i}"), line, None);
        let o = studio.render(&book, args);
        assert!(o.status.success(), "line {i}: {}", text(&o.stderr));
        let solo = &report(&book)["segments"][0];
        assert_eq!(solo["seed"], segment["seed"], "line {i}");
        assert_eq!(solo["tokens"], segment["tokens"], "line {i}");
        assert_eq!(segment_audio(&book)[0], mixed[i], "line {i}: other audio");
    }
    // A paced line is its tokens' frames resampled: int(2n / 1.25) frames of 480 samples.
    let tokens = segments[1]["tokens"].as_u64().unwrap() as f64;
    assert_eq!(mixed[1].len(), ((2.0 * tokens / 1.25) as usize) * 480);
}

#[test]
fn a_cast_edit_rerenders_exactly_the_lines_it_changes() {
    let studio = Studio::new();
    let scene = studio.book("scene", SCENE, Some(CAST));
    assert!(studio.render(&scene, &[]).status.success());
    let counts = |book: &Path| {
        let r = report(book);
        (r["reused"].as_u64().unwrap(), r["rendered"].as_u64().unwrap())
    };
    // Anna now speaks with the book's voice: her one line is stale.
    let cast_file = scene.with_file_name("cast.toml");
    std::fs::write(&cast_file, CAST.replacen("voice = \"fox\"", "voice = \"tiny-demo\"", 1))
        .unwrap();
    let o = studio.render(&scene, &[]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(counts(&scene), (4, 1));
    assert_eq!(report(&scene)["segments"][1]["voice"], "tiny-demo");
    // Tom's instruction changes: his line only.
    let edited = std::fs::read_to_string(&cast_file).unwrap().replace("slowly", "briskly");
    std::fs::write(&cast_file, edited).unwrap();
    assert!(studio.render(&scene, &[]).status.success());
    assert_eq!(counts(&scene), (4, 1));
    // Nothing changed: everything is reused.
    assert!(studio.render(&scene, &[]).status.success());
    assert_eq!(counts(&scene), (5, 0));
    // `export book.txt` syncs with the cast as the render did: every take is current, and the
    // master is as long as the render's.
    let exported = scene.with_file_name("exported.wav");
    let o = studio.lectern().arg("export").arg(&scene).arg("-o").arg(&exported).output().unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let frames = |p: &Path| hound::WavReader::open(p).unwrap().duration();
    assert_eq!(frames(&exported), frames(&scene.with_extension("wav")));
}

#[test]
fn unknown_voices_and_characters_are_errors_naming_the_line() {
    let studio = Studio::new();
    let cases = [
        ("Fine.\n\n[voice:nobody]Who?\n", None, vec!["book.txt:3", "unknown voice `nobody`"]),
        ("Fine.\n\n[as:Zed]Who?[/as]\n", Some(CAST), vec!["3:", "Zed"]),
        (
            "Fine.\n",
            Some("[characters.Ann]\nvoice = \"nobody\"\n"),
            vec!["cast.toml: character `Ann`", "unknown voice `nobody`"],
        ),
        ("Fine.\n\n[pace:3]Fast.\n", None, vec!["3:", "pace"]),
    ];
    for (i, (manuscript, cast, needles)) in cases.into_iter().enumerate() {
        let book = studio.book(&format!("bad{i}"), manuscript, cast);
        let o = studio.render(&book, &[]);
        let err = text(&o.stderr);
        assert!(!o.status.success(), "case {i} passed: {err}");
        for needle in needles {
            assert!(err.contains(needle), "case {i}: `{needle}` missing in: {err}");
        }
        assert!(!book.with_extension("wav").exists(), "case {i} wrote audio");
    }
}

/// The dry run lists who speaks each line, without loading a voice.
#[test]
fn the_dry_run_lists_the_cast() {
    let studio = Studio::new();
    let scene = studio.book("scene", SCENE, Some(CAST));
    let o = studio.lectern().arg("render").arg(&scene).arg("--dry-run").output().unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let listing = format!("{}{}", text(&o.stdout), text(&o.stderr));
    for needle in [
        "voice:  fox (Anna) · cross-lingual · pace 1.25",
        "voice:  fox · cross-lingual\n",
        "voice:  tiny-demo · instruct “Speak in a whisper.”",
        "voice:  tiny-demo (Tom) · instruct “Speak slowly and calmly.”",
    ] {
        assert!(listing.contains(needle), "`{needle}` missing in:\n{listing}");
    }
}
