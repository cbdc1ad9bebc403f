//! Shared helpers of the delivery tests: a project of chosen takes, ffprobe/ffmpeg (Debian's,
//! installed by `.ci/run`) as the independent decoder, and the binary with an isolated home.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use lectern::store::{Project, StoredSegment};
use lectern_engine::protocol::Take;

use crate::store_common::{manuscript, sentences, synthetic_take};

/// A project of `n` segments, `per_chapter` per chapter, each with a chosen synthetic take
/// surrounded by `edge_silence` samples of digital silence (what trimming must remove).
pub fn project(
    dir: &Path,
    n: usize,
    per_chapter: usize,
    edge_silence: usize,
) -> (Project, Vec<StoredSegment>, Vec<Take>) {
    project_with(dir, n, per_chapter, |take| {
        let mut samples = vec![0f32; edge_silence];
        samples.extend(take);
        samples.extend(std::iter::repeat_n(0f32, edge_silence));
        samples
    })
}

/// A project like [`project`] whose synthetic takes are first passed through `shape`.
pub fn project_with(
    dir: &Path,
    n: usize,
    per_chapter: usize,
    shape: impl Fn(&[f32]) -> Vec<f32>,
) -> (Project, Vec<StoredSegment>, Vec<Take>) {
    let segments = manuscript(&sentences(n), per_chapter, 1);
    let mut p = Project::open(dir).unwrap();
    p.sync_manuscript(&segments).unwrap();
    let mut takes = Vec::new();
    for (k, s) in segments.iter().enumerate() {
        let mut take = synthetic_take(k as u64, s, 3);
        take.samples = std::sync::Arc::new(shape(&take.samples));
        let id = p.save_take(&take).unwrap();
        p.choose_take(s.id, id).unwrap();
        takes.push(take);
    }
    (p, segments, takes)
}

/// A 3×2 RGB PNG.
pub const PNG: &[u8] =
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR\x00\x00\x00\x03\x00\x00\x00\x02\x08\x02\
    \x00\x00\x00\x12\x16\xf1\x4d\x00\x00\x00\x10IDAT\x78\x9c\x63\x38\x21\x27\x07\x41\x0c\x70\x16\
    \x00\x41\x00\x06\x19\x3c\x45\x41\x96\x00\x00\x00\x00IEND\xae\x42\x60\x82";

pub fn program(name: &str) -> Command {
    let ok = Command::new(name).arg("-version").output().is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "the delivery tests decode with Debian's {name}: `apt install ffmpeg` (.ci/run does)"
    );
    Command::new(name)
}

/// `ffprobe -show_format -show_streams -show_chapters` as JSON.
pub fn ffprobe(path: &Path) -> serde_json::Value {
    let out = program("ffprobe")
        .args([
            "-v",
            "error",
            "-print_format",
            "json",
            "-show_format",
            "-show_streams",
            "-show_chapters",
        ])
        .arg(path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "ffprobe {}: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Decodes any audio file to mono f32 at its own rate with ffmpeg; returns (rate, samples).
pub fn ffmpeg_decode(path: &Path) -> (u32, Vec<f32>) {
    let rate = ffprobe(path)["streams"][0]["sample_rate"].as_str().unwrap().parse().unwrap();
    let out = program("ffmpeg")
        .args(["-v", "error", "-nostdin", "-i"])
        .arg(path)
        .args(["-ac", "1", "-f", "f32le", "-"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let samples =
        out.stdout.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
    (rate, samples)
}

/// Runs ffmpeg with `args` (input and output included) and asserts it succeeded.
pub fn ffmpeg(args: &[&str]) {
    let out =
        program("ffmpeg").args(["-v", "error", "-nostdin", "-y"]).args(args).output().unwrap();
    assert!(out.status.success(), "ffmpeg {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// Writes mono or stereo 16-bit WAV.
pub fn write_wav(path: &Path, samples: &[f32], rate: u32, channels: u16) {
    let spec = hound::WavSpec {
        channels,
        sample_rate: rate,
        bits_per_sample: 16,
        sample_format: hound::SampleFormat::Int,
    };
    let mut w = hound::WavWriter::create(path, spec).unwrap();
    for &s in samples {
        for _ in 0..channels {
            w.write_sample((s * 32767.0).round() as i16).unwrap();
        }
    }
    w.finalize().unwrap();
}

/// The binary with HOME and the XDG folders in the build's temp dir.
pub fn lectern() -> Command {
    let home = Path::new(env!("CARGO_TARGET_TMPDIR")).join("lectern-test-home");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lectern"));
    cmd.env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .env("HOME", home);
    cmd
}

/// The files of `dir`, sorted, by name.
/// The delivery files in `dir` (not the folder's hidden `.lectern-output` list).
pub fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.'))
        .collect();
    v.sort();
    v
}

pub fn paths(dir: &Path) -> Vec<PathBuf> {
    names(dir).into_iter().map(|n| dir.join(n)).collect()
}
