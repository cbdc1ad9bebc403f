//! Mastering of the 24 kHz master for delivery: pure signal processing, no files.
//!
//! A delivery track is built from takes and pauses (see [`super::plan`]); this module owns the
//! steps applied to its samples, each deterministic (no clocks, no threads, seeded noise), so
//! the same project and options always give the same bytes:
//!
//! 1. [`voiced_range`]: a take's leading and trailing silence is trimmed, so the pause after a
//!    segment is what the manuscript's pause plan says, not the plan plus the model's silence;
//! 2. [`resample`]: 24 → 44.1 kHz with rubato's synchronous FFT resampler (band-limited, no
//!    random state), delay-compensated so sample k of the output is time k / 44 100 s;
//! 3. [`gain_to_rms`] then [`limit`]: the track's RMS is brought to a target inside ACX's
//!    −23…−18 dB window and peaks are held under a ceiling by a look-ahead limiter;
//! 4. [`RoomTone`]: a low-level bed (seeded noise, or the narrator's own room-tone recording)
//!    is added under the whole track, so no stretch of a delivery file is digital silence.
//!
//! Levels are in dBFS of `f32` samples (full scale ±1.0); RMS in dB is `20·log10(rms)`, as ACX
//! and Audacity's ACX check measure it (no +3 dB sine convention).

use rand::{Rng, SeedableRng};
use rubato::{FftFixedIn, Resampler};

/// Sample rate of every delivery file, Hz (ACX: 44.1 kHz).
pub const DELIVERY_RATE_HZ: u32 = 44_100;

/// A take's edges quieter than this (10 ms frame RMS) are silence to trim, dBFS.
pub const TRIM_THRESHOLD_DB: f64 = -50.0;
/// Kept before the first and after the last voiced frame when trimming, ms: soft consonants
/// and breaths start under the threshold.
pub const TRIM_GUARD_MS: u32 = 30;

/// Decibels to a linear gain.
#[must_use]
pub fn db_to_gain(db: f64) -> f64 {
    10f64.powf(db / 20.0)
}

/// A linear level to decibels (−∞ for 0).
#[must_use]
pub fn gain_to_db(gain: f64) -> f64 {
    20.0 * gain.log10()
}

/// RMS of `x`, dBFS (−∞ for silence or no samples).
#[must_use]
pub fn rms_db(x: &[f32]) -> f64 {
    if x.is_empty() {
        return f64::NEG_INFINITY;
    }
    let sum: f64 = x.iter().map(|&s| f64::from(s) * f64::from(s)).sum();
    gain_to_db((sum / x.len() as f64).sqrt())
}

/// Largest absolute sample, dBFS.
#[must_use]
pub fn peak_db(x: &[f32]) -> f64 {
    gain_to_db(f64::from(x.iter().fold(0f32, |m, &s| m.max(s.abs()))))
}

/// True peak (ITU-R BS.1770-4 annex 2: 4× oversampled below 96 kHz), dBTP, measured with the
/// `ebur128` crate.
pub fn true_peak_db(x: &[f32], rate_hz: u32) -> Result<f64, String> {
    let mut meter = ebur128::EbuR128::new(1, rate_hz, ebur128::Mode::TRUE_PEAK)
        .map_err(|e| format!("true-peak meter: {e}"))?;
    meter.add_frames_f32(x).map_err(|e| format!("true-peak meter: {e}"))?;
    let peak = meter.true_peak(0).map_err(|e| format!("true-peak meter: {e}"))?;
    Ok(gain_to_db(peak))
}

/// The range of `take` from its first to its last voiced 10 ms frame (frame RMS above
/// [`TRIM_THRESHOLD_DB`]), widened by [`TRIM_GUARD_MS`] each way; empty when nothing is voiced.
#[must_use]
pub fn voiced_range(take: &[f32], rate_hz: u32) -> std::ops::Range<usize> {
    let frame = (rate_hz / 100) as usize;
    let guard = (rate_hz * TRIM_GUARD_MS / 1000) as usize;
    let voiced = |c: &[f32]| rms_db(c) > TRIM_THRESHOLD_DB;
    let frames: Vec<&[f32]> = take.chunks(frame).collect();
    let Some(first) = frames.iter().position(|c| voiced(c)) else {
        return 0..0;
    };
    let last = frames.iter().rposition(|c| voiced(c)).unwrap_or(first);
    let start = (first * frame).saturating_sub(guard);
    let end = ((last + 1) * frame + guard).min(take.len());
    start..end
}

/// Resamples mono `input` from `from_hz` to `to_hz` with rubato's synchronous FFT resampler;
/// the output has `ceil(n · to / from)` samples and no added delay.
pub fn resample(input: &[f32], from_hz: u32, to_hz: u32) -> Result<Vec<f32>, String> {
    if from_hz == to_hz {
        return Ok(input.to_vec());
    }
    const CHUNK_IN: usize = 1024;
    let mut r = FftFixedIn::<f32>::new(from_hz as usize, to_hz as usize, CHUNK_IN, 1, 1)
        .map_err(|e| format!("resampler: {e}"))?;
    let delay = r.output_delay();
    let want = (input.len() as u64 * u64::from(to_hz)).div_ceil(u64::from(from_hz)) as usize;
    let mut out = Vec::with_capacity(want + delay + 2 * CHUNK_IN * 2);
    let mut pos = 0;
    while out.len() < want + delay {
        let need = r.input_frames_next();
        let chunk = if pos + need <= input.len() {
            let c = r.process(&[&input[pos..pos + need]], None);
            pos += need;
            c
        } else if pos < input.len() {
            let c = r.process_partial(Some(&[&input[pos..]]), None);
            pos = input.len();
            c
        } else {
            r.process_partial::<&[f32]>(None, None)
        };
        out.extend_from_slice(&chunk.map_err(|e| format!("resampler: {e}"))?[0]);
    }
    out.drain(..delay);
    out.truncate(want);
    Ok(out)
}

/// Scales `x` so its RMS is `target_db`; returns the gain applied, dB (0 for silence).
pub fn gain_to_rms(x: &mut [f32], target_db: f64) -> f64 {
    let now = rms_db(x);
    if !now.is_finite() {
        return 0.0;
    }
    let gain_db = target_db - now;
    let g = db_to_gain(gain_db) as f32;
    x.iter_mut().for_each(|s| *s *= g);
    gain_db
}

/// Look-ahead time of [`limit`], ms: the gain is fully down before the peak arrives.
pub const LIMITER_LOOKAHEAD_MS: u32 = 2;
/// Release time constant of [`limit`], ms.
pub const LIMITER_RELEASE_MS: u32 = 80;

/// A look-ahead peak limiter: no sample of the result exceeds `ceiling` (linear) in magnitude.
///
/// The gain each sample needs (`ceiling / |x|`, at most 1) is taken as a sliding minimum over
/// the look-ahead window, released slowly (one-pole, [`LIMITER_RELEASE_MS`]), then smoothed by
/// a moving average as long as the window. The average at a peak only covers values that are
/// each at most that peak's needed gain, so the ceiling holds while the gain moves without
/// steps (no clicks). Written by hand: the one limiter crate found (`truepeak`) needs a newer
/// Rust than this project's.
pub fn limit(x: &mut [f32], ceiling: f32, rate_hz: u32) {
    let n = x.len();
    let window = ((rate_hz * LIMITER_LOOKAHEAD_MS / 1000) as usize).max(1);
    let needed: Vec<f32> =
        x.iter().map(|&s| if s.abs() > ceiling { ceiling / s.abs() } else { 1.0 }).collect();
    if needed.iter().all(|&g| g >= 1.0) {
        return;
    }
    // Sliding minimum over needed[i .. i + window] (monotonic deque of indices).
    let mut ahead_min = vec![1.0f32; n];
    let mut deque = std::collections::VecDeque::new();
    for j in (0..n).rev() {
        while deque.back().is_some_and(|&k: &usize| needed[k] >= needed[j]) {
            deque.pop_back();
        }
        deque.push_back(j);
        while deque.front().is_some_and(|&k| k >= j + window) {
            deque.pop_front();
        }
        ahead_min[j] = needed[deque[0]];
    }
    // Release: the gain may fall at once but rises back towards 1 with a time constant.
    let release =
        1.0 - (-1.0 / (f64::from(rate_hz) * f64::from(LIMITER_RELEASE_MS) / 1000.0)).exp();
    let release = release as f32;
    let mut held = vec![1.0f32; n];
    let mut g = 1.0f32;
    for i in 0..n {
        g = ahead_min[i].min(g + (1.0 - g) * release);
        held[i] = g;
    }
    // Moving average over the `window` samples ending at i.
    let mut sum = 0f64;
    for i in 0..n {
        sum += f64::from(held[i]);
        if i >= window {
            sum -= f64::from(held[i - window]);
        }
        let count = (i + 1).min(window);
        x[i] *= ((sum / count as f64) as f32).min(1.0);
        // The average is at most the needed gain; this only catches its last-bit rounding.
        if x[i].abs() > ceiling {
            x[i] = ceiling.copysign(x[i]);
        }
    }
}

/// The bed under a delivery track: never digital silence.
#[derive(Debug, Clone)]
pub enum RoomTone {
    /// Seeded noise at this RMS level, dBFS (must be under ACX's −60 dB noise floor).
    Noise { level_db: f64, seed: u64 },
    /// A room-tone recording at 44.1 kHz mono, looped with crossfades under the whole track.
    Recording(Vec<f32>),
}

/// Crossfade between repeats of a looped room-tone recording, samples (50 ms at 44.1 kHz).
const LOOP_CROSSFADE: usize = 2205;

impl RoomTone {
    /// `len` samples of the bed for track number `track` (each track gets its own noise).
    #[must_use]
    pub fn bed(&self, len: usize, track: u64) -> Vec<f32> {
        match self {
            Self::Noise { level_db, seed } => {
                noise_bed(len, *level_db, seed ^ track.wrapping_mul(0x9E37_79B9_7F4A_7C15))
            }
            Self::Recording(tone) => looped(tone, len),
        }
    }

    /// Adds the bed to `x`.
    pub fn add_under(&self, x: &mut [f32], track: u64) {
        let bed = self.bed(x.len(), track);
        x.iter_mut().zip(bed).for_each(|(s, b)| *s += b);
    }
}

/// Gaussian-ish (sum of 4 uniforms) noise, low-passed (one pole at ~3 kHz: room tone is
/// mostly low-frequency air and hum, not hiss), scaled to exactly `level_db` RMS.
fn noise_bed(len: usize, level_db: f64, seed: u64) -> Vec<f32> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let a = (-2.0 * std::f64::consts::PI * 3000.0 / f64::from(DELIVERY_RATE_HZ)).exp() as f32;
    let mut y = 0f32;
    let mut bed: Vec<f32> = (0..len)
        .map(|_| {
            let white: f32 = (0..4).map(|_| rng.r#gen::<f32>() - 0.5).sum();
            y = a * y + (1.0 - a) * white;
            y
        })
        .collect();
    gain_to_rms(&mut bed, level_db);
    bed
}

/// `tone` repeated to `len` samples, each repeat crossfaded (equal-gain) into the next.
fn looped(tone: &[f32], len: usize) -> Vec<f32> {
    let fade = LOOP_CROSSFADE.min(tone.len() / 4);
    let step = tone.len() - fade;
    let mut out = vec![0f32; len];
    let mut start = 0;
    while start < len {
        for (i, &s) in tone.iter().enumerate() {
            let Some(o) = out.get_mut(start + i) else { break };
            let w_in = if start > 0 && i < fade { i as f32 / fade as f32 } else { 1.0 };
            let w_out = if i >= step { (tone.len() - i) as f32 / fade as f32 } else { 1.0 };
            *o += s * w_in.min(w_out);
        }
        start += step.max(1);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sine(freq: f32, amp: f32, n: usize, rate: u32) -> Vec<f32> {
        (0..n)
            .map(|i| amp * (2.0 * std::f32::consts::PI * freq * i as f32 / rate as f32).sin())
            .collect()
    }

    #[test]
    fn levels_in_db() {
        assert!((rms_db(&[0.5; 100]) - gain_to_db(0.5)).abs() < 1e-9);
        assert!((peak_db(&[0.1, -0.5, 0.2]) + 6.0206).abs() < 1e-3);
        assert_eq!(rms_db(&[0.0; 10]), f64::NEG_INFINITY);
        // A full-scale sine: RMS 1/√2 (−3.01 dB), peak 0 dB.
        let s = sine(1000.0, 1.0, 44_100, 44_100);
        assert!((rms_db(&s) + 3.0103).abs() < 1e-3);
    }

    #[test]
    fn trimming_keeps_the_voiced_part_and_a_guard() {
        let rate = 24_000;
        let mut take = vec![0f32; 2400]; // 100 ms of silence
        take.extend(sine(200.0, 0.3, 4800, rate)); // 200 ms of voice
        take.extend(vec![0f32; 7200]); // 300 ms of silence
        let r = voiced_range(&take, rate);
        assert_eq!(r.start, 2400 - 720);
        assert_eq!(r.end, 2400 + 4800 + 720);
        assert_eq!(voiced_range(&[0.0; 1000], rate), 0..0);
    }

    #[test]
    fn resampling_keeps_length_time_and_level() {
        let x = sine(440.0, 0.5, 24_000, 24_000);
        let y = resample(&x, 24_000, 44_100).unwrap();
        assert_eq!(y.len(), 44_100);
        // Same tone at the same time (within half an output sample: a 1-sample shift of this
        // tone would differ by 0.031) and the same level, away from the edges.
        let ideal = sine(440.0, 0.5, 44_100, 44_100);
        let err = y[2000..42_000].iter().zip(&ideal[2000..42_000]).map(|(a, b)| (a - b).abs());
        let err = err.fold(0f32, f32::max);
        assert!(err < 0.02, "{err}");
        assert!((rms_db(&y[2000..42_000]) - rms_db(&ideal[2000..42_000])).abs() < 0.01);
        // Deterministic.
        assert_eq!(y, resample(&x, 24_000, 44_100).unwrap());
    }

    #[test]
    fn limiter_holds_the_ceiling_and_leaves_quiet_audio_alone() {
        let mut x = sine(300.0, 0.2, 44_100, 44_100);
        let quiet = x.clone();
        limit(&mut x, 0.5, 44_100);
        assert_eq!(x, quiet);
        // A loud burst in the middle.
        for s in &mut x[20_000..21_000] {
            *s *= 4.5;
        }
        let ceiling = db_to_gain(-3.5) as f32;
        limit(&mut x, ceiling, 44_100);
        assert!(peak_db(&x) <= -3.5 + 1e-6, "{}", peak_db(&x));
        // Far from the burst the signal is untouched.
        assert_eq!(&x[..15_000], &quiet[..15_000]);
    }

    #[test]
    fn noise_bed_is_seeded_at_its_level_and_never_silent() {
        let bed = RoomTone::Noise { level_db: -68.0, seed: 7 };
        let a = bed.bed(44_100, 1);
        assert!((rms_db(&a) + 68.0).abs() < 1e-3);
        assert_eq!(a, bed.bed(44_100, 1));
        assert_ne!(a, bed.bed(44_100, 2));
        assert!(a.chunks(441).all(|c| rms_db(c) > -90.0));
    }

    #[test]
    fn a_recording_loops_without_gaps() {
        let tone = vec![0.001f32; 10_000];
        let bed = RoomTone::Recording(tone).bed(35_000, 0);
        assert_eq!(bed.len(), 35_000);
        // Equal-gain crossfades of a constant: constant everywhere.
        assert!(
            bed.iter().all(|&s| (s - 0.001).abs() < 1e-6),
            "{:?}",
            bed.iter().fold(1f32, |m, &s| m.min(s))
        );
    }
}
