//! Generated audio that is not speech, for the voice checks: white noise, a pure tone, a
//! melody, a noise source for signals built sample by sample, and a 16-bit WAV writer.

use std::path::Path;

use rand::{Rng, SeedableRng};

/// `seconds` of seeded uniform white noise in ±0.3 at `rate` Hz.
pub fn white_noise(seed: u64, rate: u32, seconds: f64) -> Vec<f32> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    (0..samples(rate, seconds)).map(|_| rng.gen_range(-0.3f32..0.3)).collect()
}

/// A cheap seeded noise source (xorshift32 from `state`, which must not be 0): each call gives
/// the next value in [−0.5, 0.5). For test signals built sample by sample.
pub fn xorshift_noise(mut state: u32) -> impl FnMut() -> f32 {
    move || {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        state as f32 / u32::MAX as f32 - 0.5
    }
}

/// `seconds` of a sine at `hz`, amplitude 0.3.
pub fn tone(hz: f64, rate: u32, seconds: f64) -> Vec<f32> {
    let r = f64::from(rate);
    (0..samples(rate, seconds))
        .map(|i| (0.3 * (std::f64::consts::TAU * hz * i as f64 / r).sin()) as f32)
        .collect()
}

/// A melody of plucked notes, four a second, each decaying: tonal and loudness-modulated at a
/// syllable-like rate, but pitched without a break — music, not speech.
pub fn melody(rate: u32, seconds: f64) -> Vec<f32> {
    let notes = [220.0, 247.0, 262.0, 294.0, 330.0, 294.0, 262.0, 247.0];
    let note_len = rate as usize / 4;
    (0..samples(rate, seconds))
        .map(|i| {
            let (k, j) = (i / note_len, i % note_len);
            let t = j as f64 / f64::from(rate);
            let hz = notes[k % notes.len()];
            (0.3 * (-6.0 * t).exp() * (std::f64::consts::TAU * hz * t).sin()) as f32
        })
        .collect()
}

/// Writes `samples` as a mono 16-bit WAV at `rate` Hz.
pub fn write_wav(path: &Path, rate: u32, samples: &[f32]) {
    let spec = hound::WavSpec {
        channels: 1,
        sample_rate: rate,
        bits_per_sample: 16,
        sample_format: hound::SampleFormat::Int,
    };
    let mut w = hound::WavWriter::create(path, spec).unwrap();
    for &x in samples {
        w.write_sample((x * 32767.0) as i16).unwrap();
    }
    w.finalize().unwrap();
}

fn samples(rate: u32, seconds: f64) -> usize {
    (seconds * f64::from(rate)) as usize
}
