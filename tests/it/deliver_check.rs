//! `lectern check`: files made to break each ACX rule fail with that rule's figure named; a
//! passing file passes; the CLI prints a table or JSON and exits non-zero on a failure.

use std::path::Path;

use crate::deliver_common;

use deliver_common::{ffmpeg, lectern, project, write_wav};
use lectern::deliver::check::{self, FileCheck};
use lectern::deliver::mastering::{RoomTone, db_to_gain, gain_to_rms};
use lectern::deliver::mp3;

const RATE: u32 = 44_100;

/// What a crafted file holds: room tone at `floor_db` (None: digital silence), `head_s` of it,
/// 3 s of voice at `rms_db` (a 200 Hz tone with a 1 s pause inside), `tail_s` of it; a click
/// at `click_db` in the middle of the voice if given.
#[derive(Clone, Copy)]
struct Spec {
    floor_db: Option<f64>,
    head_s: f64,
    tail_s: f64,
    rms_db: f64,
    click_db: Option<f64>,
}

const GOOD: Spec =
    Spec { floor_db: Some(-70.0), head_s: 0.75, tail_s: 2.5, rms_db: -20.0, click_db: None };

fn signal(s: Spec) -> Vec<f32> {
    let n = |secs: f64| (secs * f64::from(RATE)) as usize;
    let tone = |len: usize| -> Vec<f32> {
        (0..len)
            .map(|i| (2.0 * std::f32::consts::PI * 200.0 * i as f32 / RATE as f32).sin())
            .collect()
    };
    let mut voice = tone(n(1.0));
    voice.extend(vec![0f32; n(1.0)]);
    voice.extend(tone(n(1.0)));
    // The whole file's RMS is the rule; the voice takes all but the room tone's share.
    let whole = n(s.head_s) + voice.len() + n(s.tail_s);
    let share_db = 10.0 * (whole as f64 / voice.len() as f64).log10();
    gain_to_rms(&mut voice, s.rms_db + share_db);
    if let Some(db) = s.click_db {
        // 20 ms of a 1 kHz tone at that peak (an MP3 smears a single-sample click).
        let peak = db_to_gain(db) as f32;
        for i in 0..n(0.02) {
            voice[n(0.5) + i] =
                peak * (2.0 * std::f32::consts::PI * 1000.0 * i as f32 / RATE as f32).sin();
        }
    }
    let mut x = vec![0f32; n(s.head_s)];
    x.extend(voice);
    x.extend(vec![0f32; n(s.tail_s)]);
    if let Some(level_db) = s.floor_db {
        RoomTone::Noise { level_db, seed: 1 }.add_under(&mut x, 0);
    }
    x
}

/// Encodes `s` with Lectern's MP3 encoder to `dir/name`.
fn mp3_file(dir: &Path, name: &str, s: Spec) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, mp3::encode(&mp3::to_i16(&signal(s))).unwrap()).unwrap();
    path
}

/// Encodes `s` (as `channels` identical channels) with ffmpeg's libmp3lame and `args` (rate,
/// bitrate) to `dir/name`.
fn ffmpeg_file(
    dir: &Path,
    name: &str,
    s: Spec,
    channels: u16,
    args: &[&str],
) -> std::path::PathBuf {
    let wav = dir.join(format!("{name}.wav"));
    write_wav(&wav, &signal(s), RATE, channels);
    let path = dir.join(name);
    let mut all = vec!["-i", wav.to_str().unwrap(), "-c:a", "libmp3lame"];
    all.extend_from_slice(args);
    all.push(path.to_str().unwrap());
    ffmpeg(&all);
    std::fs::remove_file(wav).unwrap();
    path
}

fn rules(c: &FileCheck) -> Vec<&'static str> {
    c.failures.iter().map(|f| f.rule).collect()
}

/// Checks one file and asserts it fails exactly `rule`, with `figure` in the message.
fn fails_only(path: &Path, rule: &str, figure: &str) {
    let c = check::check_file(path).unwrap();
    assert_eq!(rules(&c), [rule], "{}", check::table(std::slice::from_ref(&c)));
    assert!(c.failures[0].detail.contains(figure), "{}: {}", rule, c.failures[0].detail);
}

#[test]
fn a_well_made_file_passes() {
    let tmp = tempfile::tempdir().unwrap();
    let c = check::check_file(&mp3_file(tmp.path(), "good.mp3", GOOD)).unwrap();
    assert!(c.passes(), "{}", check::table(std::slice::from_ref(&c)));
    assert_eq!((c.sample_rate_hz, c.channels, c.bitrates_kbps.as_slice()), (44_100, 1, &[192][..]));
    assert!((c.levels.rms_db + 20.0).abs() < 0.3, "{}", c.levels.rms_db);
    assert!((c.levels.noise_floor_db + 70.0).abs() < 3.0, "{}", c.levels.noise_floor_db);
    assert!(
        (c.levels.head_s - 0.75).abs() < 0.05 && (c.levels.tail_s - 2.5).abs() < 0.05,
        "{} {}",
        c.levels.head_s,
        c.levels.tail_s
    );
}

#[test]
fn each_level_rule_fails_with_its_figure() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    fails_only(&mp3_file(d, "loud.mp3", Spec { rms_db: -15.0, ..GOOD }), "rms", "RMS -15.");
    fails_only(&mp3_file(d, "quiet.mp3", Spec { rms_db: -26.0, ..GOOD }), "rms", "RMS -26.");
    fails_only(&mp3_file(d, "click.mp3", Spec { click_db: Some(-1.0), ..GOOD }), "peak", "> -3 dB");
    fails_only(
        &mp3_file(d, "noisy.mp3", Spec { floor_db: Some(-50.0), ..GOOD }),
        "noise_floor",
        "noise floor -50.",
    );
    fails_only(
        &mp3_file(d, "dead.mp3", Spec { floor_db: None, ..GOOD }),
        "room_tone",
        "digital silence",
    );
    fails_only(&mp3_file(d, "short-head.mp3", Spec { head_s: 0.2, ..GOOD }), "head", "0.2");
    fails_only(&mp3_file(d, "long-head.mp3", Spec { head_s: 1.6, ..GOOD }), "head", "1.6");
    fails_only(&mp3_file(d, "short-tail.mp3", Spec { tail_s: 0.5, ..GOOD }), "tail", "0.4");
    fails_only(&mp3_file(d, "long-tail.mp3", Spec { tail_s: 6.0, ..GOOD }), "tail", "5.9");
}

#[test]
fn each_format_rule_fails_with_its_figure() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    // Another encoder (ffmpeg's libmp3lame) made to the rules passes.
    let ok = ffmpeg_file(d, "ok.mp3", GOOD, 1, &["-b:a", "192k"]);
    let c = check::check_file(&ok).unwrap();
    assert!(c.passes(), "{}", check::table(std::slice::from_ref(&c)));
    fails_only(
        &ffmpeg_file(d, "48k.mp3", GOOD, 1, &["-b:a", "192k", "-ar", "48000"]),
        "sample_rate",
        "48000 Hz",
    );
    fails_only(&ffmpeg_file(d, "128k.mp3", GOOD, 1, &["-b:a", "128k"]), "bitrate", "128 kbps");
    let vbr = check::check_file(&ffmpeg_file(d, "vbr.mp3", GOOD, 1, &["-q:a", "0"])).unwrap();
    assert!(rules(&vbr).contains(&"cbr"), "{}", check::table(std::slice::from_ref(&vbr)));
    // A stereo file among mono ones breaks "all mono or all stereo", for every file.
    let dir = d.join("mixed");
    std::fs::create_dir(&dir).unwrap();
    mp3_file(&dir, "01.mp3", GOOD);
    ffmpeg_file(&dir, "02.mp3", GOOD, 2, &["-b:a", "192k"]);
    let checks = check::check_dir(&dir).unwrap();
    assert_eq!(checks[1].channels, 2);
    assert!(checks.iter().all(|c| rules(c) == ["channels"]), "{}", check::table(&checks));
}

#[test]
fn the_cli_prints_a_table_or_json_and_fails_on_a_failing_file() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    mp3_file(d, "01-good.mp3", GOOD);
    let o = lectern().arg("check").arg(d).output().unwrap();
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{table}{}", String::from_utf8_lossy(&o.stderr));
    assert!(table.contains("01-good.mp3") && table.contains("pass"), "{table}");
    mp3_file(d, "02-loud.mp3", Spec { rms_db: -15.0, ..GOOD });
    let o = lectern().arg("check").arg(d).arg("--json").output().unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("1 of 2 file(s) fail"));
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(json[0]["failures"].as_array().unwrap().len(), 0);
    assert_eq!(json[1]["failures"][0]["rule"], "rms");
    assert!(json[1]["rms_db"].as_f64().unwrap() > -16.0);
    // One flat object per file: the loudness figures sit beside the file's own.
    let keys: Vec<&str> = json[1].as_object().unwrap().keys().map(String::as_str).collect();
    let want = [
        "bitrates_kbps",
        "channels",
        "duration_s",
        "failures",
        "file",
        "head_s",
        "noise_floor_db",
        "peak_db",
        "rms_db",
        "sample_rate_hz",
        "tail_s",
        "true_peak_db",
    ];
    assert_eq!(keys, want);
    // Nothing to check is an error naming the folder.
    let empty = d.join("empty");
    std::fs::create_dir(&empty).unwrap();
    let o = lectern().arg("check").arg(&empty).output().unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("no .mp3 or .m4b files"));
}

#[test]
fn export_preset_acx_from_the_cli_checks_what_it_wrote() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("book.lectern");
    drop(project(&dir, 4, 2, 0));
    let out = tmp.path().join("out");
    let o = lectern()
        .args([
            "export",
            "--preset",
            "acx",
            "--author",
            "A. Writer",
            "--narrator",
            "N. Reader",
            "-o",
        ])
        .arg(&out)
        .arg(&dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{stdout}{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(stdout.matches(" pass\n").count(), 2, "{stdout}");
    assert_eq!(deliver_common::names(&out).len(), 2);
    // A file of an earlier export in the folder is named, not removed.
    std::fs::copy(out.join(&deliver_common::names(&out)[0]), out.join("00-old.mp3")).unwrap();
    let o =
        lectern().args(["export", "--preset", "acx", "-o"]).arg(&out).arg(&dir).output().unwrap();
    assert!(o.status.success());
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("00-old.mp3 is not from this export"), "{stderr}");
    assert!(out.join("00-old.mp3").is_file());
    std::fs::remove_file(out.join("00-old.mp3")).unwrap();
    // The title defaults to the project's name.
    assert_eq!(
        deliver_common::ffprobe(&out.join(&deliver_common::names(&out)[0]))["format"]["tags"]["album"],
        "book"
    );
    // ACX sets its own levels: --loudness with it is an error, and nothing is written.
    let o = lectern()
        .args(["export", "--preset", "acx", "--loudness", "-18", "-o"])
        .arg(tmp.path().join("x"))
        .arg(&dir)
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("leave out --loudness"));
    assert!(!tmp.path().join("x").exists());
    // A room tone above ACX's noise floor is refused before anything is written.
    let o = lectern()
        .args(["export", "--preset", "acx", "--room-tone-db", "-50", "-o"])
        .arg(tmp.path().join("y"))
        .arg(&dir)
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("room tone level -50 dB"));
}
