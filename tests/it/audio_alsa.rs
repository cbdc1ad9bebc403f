//! Real playback through cpal into ALSA, routed to a file: an ALSA config whose default PCM is
//! the `file` plugin over a `null` slave writes the raw stream the device would have played.
//! Each case runs in a child process of this test binary so `ALSA_CONFIG_PATH` is set before
//! alsa-lib reads its configuration. Linux only.
#![cfg(target_os = "linux")]

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use lectern::audio::player::{AudioCommand, Cue, Playback, Player, PlayerConfig, SinkInfo};

const CHILD_ENV: &str = "LECTERN_ALSA_CASE";

/// A take with a recognisable, non-repeating shape (nothing like silence).
fn take(n: usize) -> Vec<f32> {
    (0..n as u32)
        .map(|i| {
            let h = i.wrapping_mul(2_654_435_761).rotate_left(7);
            (h % 2000) as f32 / 2000.0 - 0.5
        })
        .collect()
}

/// (ALSA config, player rate, player channels, raw sample format, file channels, file rate)
fn case(name: &str, raw: &Path) -> (String, Option<u32>, Option<u16>, &'static str, usize, u32) {
    let raw = raw.display();
    match name {
        "f32_mono" => (
            format!(
                "pcm.!default {{ type file slave.pcm {{ type null }} file \"{raw}\" format \"raw\" }}\n"
            ),
            None,
            Some(1),
            "f32",
            1,
            24_000,
        ),
        "s16_stereo" => (
            format!(
                "pcm.!default {{ type plug slave {{ pcm \"tofile\" format S16_LE channels 2 }} }}\n\
                 pcm.tofile {{ type file slave.pcm {{ type null }} file \"{raw}\" format \"raw\" }}\n"
            ),
            None,
            None,
            "s16",
            2,
            24_000,
        ),
        "f32_48k" => (
            format!(
                "pcm.!default {{ type file slave.pcm {{ type null }} file \"{raw}\" format \"raw\" }}\n"
            ),
            Some(48_000),
            Some(1),
            "f32",
            1,
            48_000,
        ),
        other => panic!("unknown case {other}"),
    }
}

fn read_raw(path: &Path, format: &str) -> Vec<f32> {
    let bytes = std::fs::read(path).unwrap();
    match format {
        "f32" => {
            bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
        }
        "s16" => bytes
            .chunks_exact(2)
            .map(|b| f32::from(i16::from_le_bytes([b[0], b[1]])) / 32768.0)
            .collect(),
        _ => unreachable!(),
    }
}

/// Index where `needle` starts in `hay`, comparing within `tol`.
fn find(hay: &[f32], needle: &[f32], tol: f32) -> Option<usize> {
    let n = needle.len();
    (0..=hay.len().checked_sub(n)?)
        .find(|&i| hay[i..i + n].iter().zip(needle).all(|(a, b)| (a - b).abs() <= tol))
}

#[test]
fn plays_a_take_through_alsa_into_a_file() {
    if std::env::var_os(CHILD_ENV).is_some() {
        return;
    }
    let exe = std::env::current_exe().unwrap();
    for name in ["f32_mono", "s16_stereo", "f32_48k"] {
        let dir = tempfile::tempdir().unwrap();
        let raw = dir.path().join("out.raw");
        let conf = dir.path().join("asound.conf");
        std::fs::write(&conf, case(name, &raw).0).unwrap();
        let out = Command::new(&exe)
            .args(["--exact", "child_plays_one_case", "--ignored", "--nocapture"])
            .env(CHILD_ENV, name)
            .env("LECTERN_ALSA_RAW", &raw)
            .env("ALSA_CONFIG_PATH", format!("/usr/share/alsa/alsa.conf:{}", conf.display()))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        for line in stderr.lines().filter(|l| l.contains("take found")) {
            eprintln!("{line}");
        }
        assert!(
            out.status.success(),
            "case {name} failed:\n{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
#[ignore = "run by plays_a_take_through_alsa_into_a_file in a child process"]
fn child_plays_one_case() {
    let name = std::env::var(CHILD_ENV).expect("run through the parent test");
    let raw = std::path::PathBuf::from(std::env::var("LECTERN_ALSA_RAW").unwrap());
    let (_, rate, channels, format, file_ch, file_rate) = case(&name, &raw);
    let t = take(9600);
    let cfg = PlayerConfig {
        rate_hz: rate,
        channels,
        ring_ms: 1000,
        fallback_wav: raw.with_extension("wav"),
        ..PlayerConfig::default()
    };
    let player = Player::open(cfg).unwrap();
    let s = player.status();
    let SinkInfo::Device { rate_hz, channels: ch, .. } = &s.sink else {
        panic!("{name}: expected the ALSA device, got {s:?}");
    };
    assert_eq!(*rate_hz, file_rate, "{name}: {s:?}");
    player.command(AudioCommand::Play(Cue {
        take_id: 1,
        segment_id: 1,
        samples: Arc::new(t.clone()),
    }));
    std::thread::sleep(Duration::from_millis(50));
    assert!(player.wait_idle(Duration::from_secs(20)), "{name}: playback did not finish");
    drop(player);
    let data = read_raw(&raw, format);
    assert!(!data.is_empty(), "{name}: nothing written");
    let ch = usize::from(*ch);
    assert_eq!(ch, file_ch, "{name}: channels");
    let chan = |c: usize| -> Vec<f32> { data.iter().skip(c).step_by(ch).copied().collect() };
    let left = chan(0);
    let (tol, want) = match (format, file_rate) {
        ("s16", _) => (2.5 / 32768.0, t.clone()),
        (_, 48_000) => (0.0, lectern::audio::resample::linear(&t, 24_000, 48_000)),
        _ => (0.0, t.clone()),
    };
    let at = find(&left, &want, tol)
        .unwrap_or_else(|| panic!("{name}: take not found in {} frames", left.len()));
    if file_rate == 48_000 {
        // Every other device frame is an original sample, exactly.
        for i in 0..t.len() {
            assert_eq!(left[at + 2 * i], t[i]);
        }
    }
    for c in 1..ch {
        assert_eq!(chan(c)[at..at + want.len()], left[at..at + want.len()], "{name}: channel {c}");
    }
    eprintln!(
        "{name}: take found at frame {at} of {} ({} bytes)",
        left.len(),
        std::fs::metadata(&raw).unwrap().len()
    );
}
