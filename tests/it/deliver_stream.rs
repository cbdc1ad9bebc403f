//! Streaming delivery (#49): every delivery kind exported from one fixture project, its audio
//! fingerprinted (MP3 frames without the ID3 tag, the M4B's decoded PCM) so the streaming
//! pipeline can be compared with the whole-buffer one it replaced; and spans that say where
//! each segment is heard in each file.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::deliver_common::{self, project_with, write_wav};
use lectern::deliver::{
    self, BookMeta, DeliveryFormat, DeliveryOptions, HEAD_S, Heard, RoomToneSource, SampleSpan,
    TAIL_S,
};

fn meta() -> BookMeta {
    BookMeta {
        title: "The Lighthouse".into(),
        author: "Ada Writer".into(),
        narrator: "Nell Reader".into(),
        ..BookMeta::default()
    }
}

/// Takes of varied level: loud ones with clicks (the limiter works, over several rounds),
/// quiet ones, and digital silence around some (trimming works).
fn shaped(take: &[f32]) -> Vec<f32> {
    let n = take.len();
    let gain = match n % 3 {
        0 => 3.5,
        1 => 0.2,
        _ => 1.0,
    };
    let click = |i: usize| if n % 3 != 1 && i % 1500 < 3 { 0.9 } else { 0.0 };
    let mut out = vec![0f32; if n % 2 == 0 { 6000 } else { 0 }];
    out.extend(take.iter().enumerate().map(|(i, s)| s * gain + click(i)));
    out.extend(std::iter::repeat_n(0f32, 3000));
    out
}

/// A credits recording: 1 s of quiet, 2 s of a tone, 1 s of quiet, 48 kHz stereo.
fn credit(path: &Path) -> PathBuf {
    let mut c = vec![0f32; 48_000];
    c.extend((0..96_000).map(|i| 0.3 * (i as f32 * 0.05).sin()));
    c.extend(vec![0f32; 48_000]);
    write_wav(path, &c, 48_000, 2);
    path.to_path_buf()
}

/// The audio of a delivery file: an MP3's bytes after its ID3v2 tag (tags may change without
/// the audio changing), an M4B's PCM as ffmpeg decodes it.
fn audio_digest(path: &Path) -> String {
    let bytes = std::fs::read(path).unwrap();
    let audio = if path.extension().is_some_and(|e| e == "m4b") {
        let (_, pcm) = deliver_common::ffmpeg_decode(path);
        pcm.iter().flat_map(|s| s.to_le_bytes()).collect()
    } else {
        let skip = if bytes.starts_with(b"ID3") {
            let size = bytes[6..10].iter().fold(0usize, |n, &b| (n << 7) | usize::from(b & 0x7F));
            10 + size
        } else {
            0
        };
        bytes[skip..].to_vec()
    };
    format!("{:x}", Sha256::digest(&audio))
}

/// Every delivery kind of one fixture project: (kind, file name, digest, samples, figures).
fn every_kind(tmp: &Path) -> Vec<String> {
    let (p, _, _) = project_with(&tmp.join("p"), 9, 3, shaped);
    let opening = credit(&tmp.join("opening.wav"));
    let closing = credit(&tmp.join("closing.wav"));
    let tone: Vec<f32> = (0..30_000).map(|i| 0.0004 * ((i * 7919) % 200) as f32 / 100.0).collect();
    write_wav(&tmp.join("tone.wav"), &tone, 44_100, 1);
    let base = |name: &str| DeliveryOptions {
        out_dir: tmp.join(name),
        meta: meta(),
        ..DeliveryOptions::default()
    };
    let kinds = [
        (
            "acx",
            DeliveryOptions {
                opening_credits: Some(opening.clone()),
                closing_credits: Some(closing.clone()),
                sample: Some(SampleSpan::chapter(2)),
                ..base("acx")
            },
        ),
        (
            "one-mp3",
            DeliveryOptions { split_chapters: false, enforce_acx: false, ..base("one-mp3") },
        ),
        (
            "m4b",
            DeliveryOptions {
                format: DeliveryFormat::M4b,
                split_chapters: false,
                enforce_acx: false,
                opening_credits: Some(opening),
                closing_credits: Some(closing),
                ..base("m4b")
            },
        ),
        (
            "tone",
            DeliveryOptions {
                room_tone: RoomToneSource::Recording(tmp.join("tone.wav")),
                enforce_acx: false,
                ..base("tone")
            },
        ),
    ];
    let mut lines = Vec::new();
    for (kind, opts) in kinds {
        let report = deliver::export(&p, &opts).unwrap();
        for f in &report.files {
            let name = f.path.file_name().unwrap().to_string_lossy().into_owned();
            lines.push(format!(
                "{kind} {name} {} samples={} ceiling={:.4} rms={:.6} peak={:.6} tp={:.6} \
                 floor={:.6} head={:.4} tail={:.4}",
                audio_digest(&f.path),
                f.samples,
                f.ceiling_db,
                f.check.levels.rms_db,
                f.check.levels.peak_db,
                f.check.levels.true_peak_db,
                f.check.levels.noise_floor_db,
                f.check.levels.head_s,
                f.check.levels.tail_s
            ));
        }
    }
    lines
}

/// Delivery is a deterministic mastering of the takes: every kind exported again from the same
/// project gives the same audio and the same figures. With `$LECTERN_DELIVERY_DIGESTS` set the
/// fingerprints are also written there, to compare two builds of the pipeline by hand.
#[test]
fn every_delivery_kind_is_the_same_audio_when_exported_again() {
    let (first, second) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let lines = every_kind(first.path());
    // ACX: 3 chapters, 2 credits and the sample; one MP3; one M4B; 3 chapters on a tone.
    assert_eq!(lines.len(), 6 + 1 + 1 + 3);
    assert_eq!(lines, every_kind(second.path()));
    if let Some(out) = std::env::var_os("LECTERN_DELIVERY_DIGESTS") {
        std::fs::write(out, lines.join("\n") + "\n").unwrap();
    }
}

/// The spans of a file's segments, as (segment id, start, end).
fn segment_spans(f: &deliver::DeliveredFile) -> Vec<(u64, u64, u64)> {
    f.spans
        .iter()
        .filter_map(|s| match &s.what {
            Heard::Segment { id, .. } => Some((*id, s.start, s.end)),
            Heard::Credits { .. } => None,
        })
        .collect()
}

#[test]
fn spans_say_where_each_segment_and_credit_is_heard() {
    let tmp = tempfile::tempdir().unwrap();
    // 0.5 s of digital silence around every take: spans cover only the trimmed voice.
    let (p, segments, takes) = crate::deliver_common::project(&tmp.path().join("p"), 6, 3, 12_000);
    let opening = credit(&tmp.path().join("opening.wav"));
    let opts = DeliveryOptions {
        out_dir: tmp.path().join("acx"),
        meta: meta(),
        opening_credits: Some(opening.clone()),
        opening_credits_text: Some("The Lighthouse.".into()),
        sample: Some(SampleSpan::chapter(2)),
        ..DeliveryOptions::default()
    };
    let report = deliver::export(&p, &opts).unwrap();
    let head = (HEAD_S * 44_100.0) as u64;
    let tail = (TAIL_S * 44_100.0) as u64;
    let at_44k = |n: u64| (n * 147).div_ceil(80);
    // The opening credits: one span, the whole voice between head and tail, with its text.
    let credits = &report.files[0];
    assert_eq!(credits.spans.len(), 1);
    assert_eq!((credits.spans[0].start, credits.spans[0].end), (head, credits.samples - tail));
    assert_eq!(
        credits.spans[0].what,
        Heard::Credits { title: "Opening Credits".into(), text: Some("The Lighthouse.".into()) }
    );
    // Each chapter file: its segments in order, each the length of its trimmed take (voiced
    // edge to edge, plus a 30 ms guard each side), separated by the manuscript's pauses.
    let guard = 720u64;
    for (c, f) in report.files[1..3].iter().enumerate() {
        let spans = segment_spans(f);
        let expected: Vec<u64> = segments[c * 3..c * 3 + 3].iter().map(|s| s.id).collect();
        assert_eq!(spans.iter().map(|s| s.0).collect::<Vec<_>>(), expected);
        assert_eq!(spans[0].1, head);
        assert_eq!(spans[2].2, f.samples - tail);
        let mut voice_24k = 0u64;
        for (k, &(_, start, end)) in spans.iter().enumerate() {
            let seg = &segments[c * 3 + k];
            let voiced = takes[c * 3 + k].samples.len() as u64 - 24_000 + 2 * guard;
            assert_eq!((start - head, end - head), (at_44k(voice_24k), at_44k(voice_24k + voiced)));
            voice_24k += voiced + u64::from(seg.pause_after_ms) * 24;
            let Heard::Segment { chapter, text, .. } = &f.spans[k].what else { panic!() };
            assert_eq!((*chapter, text), (seg.chapter + 1, &seg.text));
        }
    }
    // The sample is chapter 2 whole: the same spans as its file.
    let sample = report.files.iter().find(|f| f.path.ends_with("sample.mp3")).unwrap();
    assert_eq!(sample.spans, report.files[2].spans);
    // One M4B of the same book: each track's spans moved to where its chapter starts.
    let m4b_opts = DeliveryOptions {
        out_dir: tmp.path().join("m4b"),
        format: DeliveryFormat::M4b,
        split_chapters: false,
        enforce_acx: false,
        sample: None,
        ..opts
    };
    let book = &deliver::export(&p, &m4b_opts).unwrap().files[0];
    let mut expected = Vec::new();
    for (f, (_, start_s)) in report.files[..3].iter().zip(&book.chapters) {
        let at = (start_s * 44_100.0).round() as u64;
        expected.extend(f.spans.iter().map(|s| (s.start + at, s.end + at, s.what.clone())));
    }
    let got: Vec<_> = book.spans.iter().map(|s| (s.start, s.end, s.what.clone())).collect();
    assert_eq!(got, expected);
    // And what the spans say is voice is voice: loud inside, room tone between them.
    let (_, decoded) = deliver_common::ffmpeg_decode(&book.path);
    let level = |a: u64, b: u64| {
        let x = &decoded[a as usize..b as usize];
        10.0 * (x.iter().map(|&s| f64::from(s).powi(2)).sum::<f64>() / x.len() as f64).log10()
    };
    for pair in book.spans.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        let mid = (a.start + a.end) / 2;
        assert!(level(mid - 2000, mid + 2000) > -40.0, "{a:?}");
        if b.start > a.end + 4000 {
            let gap = (a.end + b.start) / 2;
            assert!(level(gap - 1000, gap + 1000) < -55.0, "between {a:?} and {b:?}");
        }
    }
}

/// Takes of about 8 s: the synthetic take tiled, at speech level with some loud clicks.
fn eight_seconds(take: &[f32]) -> Vec<f32> {
    let n = 8 * 24_000;
    (0..n).map(|i| take[i % take.len()] + if i % 4_001 < 2 { 0.8 } else { 0.0 }).collect()
}

/// A project of `n` takes of about 8 s, chapters of 40 minutes at most (ACX's files are 2
/// hours at most, one per chapter), built one take at a time.
fn long_project(dir: &Path, n: usize) -> lectern::store::Project {
    use crate::store_common::{manuscript, sentences, synthetic_take};
    let segments = manuscript(&sentences(n), 300, 1);
    let mut p = lectern::store::Project::open(dir).unwrap();
    p.sync_manuscript(&segments).unwrap();
    for (k, s) in segments.iter().enumerate() {
        let mut take = synthetic_take(k as u64, s, 3);
        take.samples = std::sync::Arc::new(eight_seconds(&take.samples));
        let id = p.save_take(&take).unwrap();
        p.choose_take(s.id, id).unwrap();
    }
    p
}

/// This process's peak resident set, KiB (Linux `VmHWM`).
fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// The export of a long synthetic book, in its own process (started by the tests below with
/// `LECTERN_LONG_EXPORT=MINUTES,KIND`, KIND `acx`, `mp3` (one file) or `m4b`): builds the
/// project one take at a time, exports it, prints its peak resident set.
#[test]
#[ignore = "run in a process of its own by the memory tests"]
fn long_export_child() {
    let Ok(spec) = std::env::var("LECTERN_LONG_EXPORT") else { return };
    let (minutes, kind) = spec.split_once(',').unwrap();
    let minutes: usize = minutes.parse().unwrap();
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let p = long_project(&tmp.path().join("p"), minutes * 60 / 8);
    // What building the project left resident is not the export's: measure from here.
    std::fs::write("/proc/self/clear_refs", "5").unwrap();
    let built_kib = peak_rss_kib();
    let opts = DeliveryOptions {
        out_dir: tmp.path().join("out"),
        meta: meta(),
        format: if kind == "m4b" { DeliveryFormat::M4b } else { DeliveryFormat::Mp3 },
        split_chapters: kind == "acx",
        enforce_acx: kind == "acx",
        ..DeliveryOptions::default()
    };
    let started = std::time::Instant::now();
    let report = deliver::export(&p, &opts).unwrap();
    let samples: u64 = report.files.iter().map(|f| f.samples).sum();
    println!(
        "LONG_EXPORT kind={kind} minutes={minutes} files={} audio_s={:.0} export_s={:.1} \
         built_kib={built_kib} peak_kib={}",
        report.files.len(),
        samples as f64 / 44_100.0,
        started.elapsed().as_secs_f64(),
        peak_rss_kib()
    );
}

/// Runs [`long_export_child`] for `minutes` of `kind`; returns its peak resident set, KiB.
fn long_export_peak_kib(minutes: usize, kind: &str) -> u64 {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["deliver_stream::long_export_child", "--exact", "--ignored", "--nocapture"])
        .env("LECTERN_LONG_EXPORT", format!("{minutes},{kind}"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    let line = stdout.lines().find(|l| l.starts_with("LONG_EXPORT")).expect("no figures");
    println!("{line}");
    line.rsplit("peak_kib=").next().unwrap().trim().parse().unwrap()
}

/// A book four times as long needs no more memory to deliver as one file: the audio streams
/// (mastered take by take into the encoder, decoded frame by frame by the check). Mastering a
/// whole book in one buffer would need 4 bytes per 44.1 kHz sample: about 95 MB more here.
#[test]
fn a_long_book_is_delivered_in_bounded_memory() {
    const GROWTH_MAX_KIB: u64 = 40 * 1024;
    for kind in ["mp3", "m4b"] {
        let short = long_export_peak_kib(3, kind);
        let long = long_export_peak_kib(12, kind);
        assert!(
            long < short + GROWTH_MAX_KIB,
            "{kind}: 12 minutes peaked at {long} KiB, 3 minutes at {short} KiB"
        );
    }
}
