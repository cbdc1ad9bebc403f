//! `lectern voice add` refuses noise, a tone and a melody as a voice reference (issue #17),
//! or warns with `--allow-non-speech`. The speech measure itself is tested in lectern-engine.

use std::path::Path;
use std::process::{Command, Output};

use crate::cli_common::isolated_env;
use rand::{Rng, SeedableRng};

const RATE: u32 = 22_050;

const SECONDS: f64 = 4.0;

fn white_noise(seed: u64) -> Vec<f32> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    (0..(SECONDS * f64::from(RATE)) as usize).map(|_| rng.gen_range(-0.3f32..0.3)).collect()
}

fn tone(hz: f64) -> Vec<f32> {
    let n = (SECONDS * f64::from(RATE)) as usize;
    (0..n)
        .map(|i| (0.3 * (std::f64::consts::TAU * hz * i as f64 / f64::from(RATE)).sin()) as f32)
        .collect()
}

fn write_wav(path: &Path, samples: &[f32]) {
    let spec = hound::WavSpec {
        channels: 1,
        sample_rate: RATE,
        bits_per_sample: 16,
        sample_format: hound::SampleFormat::Int,
    };
    let mut w = hound::WavWriter::create(path, spec).unwrap();
    for &x in samples {
        w.write_sample((x * 32767.0) as i16).unwrap();
    }
    w.finalize().unwrap();
}

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
    write_wav(&noise, &white_noise(3));
    let o = add(&voices, &noise, &[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains(&noise.display().to_string()) && err.contains("no speech"), "{err}");
    assert!(err.contains("--allow-non-speech"), "{err}");
    assert!(!voices.join("v").exists());
    let tone_wav = tmp.path().join("tone.wav");
    write_wav(&tone_wav, &tone(220.0));
    let o = add(&voices, &tone_wav, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", String::from_utf8_lossy(&o.stderr));
    // The override makes the voice and says what is wrong with it.
    let o = add(&voices, &noise, &["--allow-non-speech"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("warning:") && err.contains("does not sound like speech"), "{err}");
    assert!(voices.join("v").is_dir());
}
