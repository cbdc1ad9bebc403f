//! Does a reference recording hold speech? A check on the audio itself, before `voice add`
//! spends the speech tokenizer and speaker model on it (issue #17: white noise was accepted as a
//! voice, and every render with it was noise).
//!
//! Two measures, computed on the reference resampled to [`ANALYSIS_RATE_HZ`], over frames of
//! [`WINDOW`] samples every [`HOP`] samples (10 ms):
//!
//! 1. **Voiced-frame ratio.** Of the *active* frames (within [`ACTIVE_RANGE_DB`] of the loudest
//!    frame and above −80 dBFS), the share that are periodic with a pitch between 60 and 400 Hz,
//!    by YIN (de Cheveigné & Kawahara 2002): the cumulative-mean-normalised difference function
//!    dips below [`YIN_THRESHOLD`] at some lag in that range. Speech alternates voiced sounds
//!    (vowels, voiced consonants) with unvoiced ones (s, f, t, breaths) and pauses; noise is
//!    never periodic, a steady tone or a held instrument note always is. Measured: the fixture's
//!    speech 0.56, white noise 0.00, 220 Hz and 1 kHz tones 1.00, a melody of plucked notes
//!    0.97 (unvoiced only where one note gives way to the next). Accepted: [`MIN_VOICED_RATIO`]
//!    (0.2) ≤ ratio ≤ [`MAX_VOICED_RATIO`] (0.9).
//! 2. **Syllabic modulation.** Speech's loudness rises and falls with its syllables, 2–8 times a
//!    second. The frame RMS envelope (100 Hz), divided by its mean, is taken to the frequency
//!    domain; the RMS of its 2–8 Hz part is the modulation depth. Measured: the fixture's speech
//!    0.73, white noise 0.02, the tones below 1e-6 (the melody, plucked four times a second,
//!    0.33). Accepted: ≥ [`MIN_SYLLABIC_MODULATION`] (0.15).
//!
//! Neither uses the model (its F0 predictor is random on the tiny model and unrelated to whether
//! the input is speech). The figures above are from tests/it/voice_speech.rs
//! (`fixtures/voice-prompt/prompt.wav` is espeak-ng speech; the rest is generated there); the
//! thresholds sit well inside the gaps. Music with singing or with silences between phrases can
//! still pass, and unusual speech (a whisper is unvoiced) can fail: a recording that fails can
//! still be used with `voice add --allow-non-speech`, which turns the refusal into a warning.

use super::dsp::resample;

/// Rate the analysis runs at, Hz: enough for pitch up to 400 Hz and for the syllable envelope,
/// and cheap (a 30 s reference is 240 000 samples).
pub const ANALYSIS_RATE_HZ: u32 = 8_000;
/// Frame hop, samples (10 ms at 8 kHz): the envelope's rate is 100 Hz.
pub const HOP: usize = 80;
/// YIN integration window and energy window, samples (25 ms).
pub const WINDOW: usize = 200;
/// Shortest and longest pitch period searched, samples: 400 Hz and 60 Hz.
pub const MIN_LAG: usize = 20;
pub const MAX_LAG: usize = 133;
/// A frame is voiced when YIN's normalised difference falls below this at some lag.
pub const YIN_THRESHOLD: f32 = 0.2;
/// Active frames are at most this far below the loudest frame, dB.
pub const ACTIVE_RANGE_DB: f32 = 35.0;
/// Active frames are louder than this RMS (−80 dBFS).
pub const ACTIVE_FLOOR_RMS: f32 = 1e-4;
/// Accepted voiced-frame ratio (of active frames).
pub const MIN_VOICED_RATIO: f32 = 0.2;
pub const MAX_VOICED_RATIO: f32 = 0.9;
/// Least accepted syllabic (2–8 Hz) modulation depth of the RMS envelope.
pub const MIN_SYLLABIC_MODULATION: f32 = 0.15;
/// The syllabic band, Hz.
const SYLLABIC_BAND_HZ: (f64, f64) = (2.0, 8.0);

/// The two measures of one recording, and what they say.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SpeechEvidence {
    /// Frames analysed, and of them active.
    pub frames: usize,
    pub active_frames: usize,
    /// Voiced share of the active frames, 0–1.
    pub voiced_ratio: f32,
    /// RMS of the envelope's 2–8 Hz part, relative to its mean.
    pub syllabic_modulation: f32,
}

impl SpeechEvidence {
    /// Measures `samples` (mono, at `rate_hz`).
    pub fn measure(samples: &[f32], rate_hz: u32) -> Self {
        let x = resample(samples, rate_hz, ANALYSIS_RATE_HZ);
        let frames: Vec<&[f32]> =
            frame_starts(x.len()).map(|s| &x[s..s + WINDOW + MAX_LAG]).collect();
        let rms: Vec<f32> = frames.iter().map(|f| frame_rms(&f[..WINDOW])).collect();
        let active = active_frames(&rms);
        let voiced = frames.iter().zip(&active).filter(|&(f, &a)| a && is_voiced(f)).count();
        let active_frames = active.iter().filter(|&&a| a).count();
        Self {
            frames: frames.len(),
            active_frames,
            voiced_ratio: voiced as f32 / active_frames.max(1) as f32,
            syllabic_modulation: syllabic_modulation(&rms),
        }
    }

    /// Whether both measures are in the accepted ranges.
    pub fn is_speech(&self) -> bool {
        self.problem().is_none()
    }

    /// What looks wrong, in words, or `None` for speech.
    pub fn problem(&self) -> Option<String> {
        if self.voiced_ratio < MIN_VOICED_RATIO {
            return Some(format!(
                "only {:.0}% of its sounding frames have a speaking pitch (60–400 Hz; speech has \
                 {:.0}% or more): it sounds like noise",
                100.0 * self.voiced_ratio,
                100.0 * MIN_VOICED_RATIO
            ));
        }
        if self.voiced_ratio > MAX_VOICED_RATIO {
            return Some(format!(
                "{:.0}% of its sounding frames are pitched without a break (speech has unvoiced \
                 consonants and pauses): it sounds like a tone or an instrument",
                100.0 * self.voiced_ratio
            ));
        }
        if self.syllabic_modulation < MIN_SYLLABIC_MODULATION {
            return Some(format!(
                "its loudness barely moves at syllable rate (2–8 Hz modulation {:.2}, speech has \
                 {MIN_SYLLABIC_MODULATION} or more): it sounds like a steady sound, not speech",
                self.syllabic_modulation
            ));
        }
        None
    }
}

/// Start of every full analysis frame (window plus the longest lag).
fn frame_starts(len: usize) -> impl Iterator<Item = usize> {
    let n = (len + HOP).saturating_sub(WINDOW + MAX_LAG) / HOP;
    (0..n).map(|i| i * HOP)
}

fn frame_rms(xs: &[f32]) -> f32 {
    (xs.iter().map(|&x| x * x).sum::<f32>() / xs.len() as f32).sqrt()
}

/// Frames loud enough to judge: within [`ACTIVE_RANGE_DB`] of the loudest and above the floor.
fn active_frames(rms: &[f32]) -> Vec<bool> {
    let loudest = rms.iter().fold(0f32, |m, &r| m.max(r));
    let gate = (loudest * 10f32.powf(-ACTIVE_RANGE_DB / 20.0)).max(ACTIVE_FLOOR_RMS);
    rms.iter().map(|&r| r > gate).collect()
}

/// YIN's voicing decision on one frame of `WINDOW + MAX_LAG` samples: the cumulative-mean-
/// normalised difference d′(τ) = d(τ)·τ / Σ_{k≤τ} d(k) dips below [`YIN_THRESHOLD`] for some
/// lag τ in [`MIN_LAG`]..=[`MAX_LAG`].
fn is_voiced(frame: &[f32]) -> bool {
    let w = &frame[..WINDOW];
    let mut cumulative = 0f32;
    for lag in 1..=MAX_LAG {
        let d: f32 = w.iter().zip(&frame[lag..lag + WINDOW]).map(|(a, b)| (a - b) * (a - b)).sum();
        cumulative += d;
        if lag >= MIN_LAG && cumulative > 0.0 && d * lag as f32 / cumulative < YIN_THRESHOLD {
            return true;
        }
    }
    false
}

/// RMS of the 2–8 Hz part of the envelope `rms` (100 Hz), relative to the envelope's mean: by
/// Parseval, √(2 Σ_band |X_k|²) / N for the DFT X of the mean-normalised envelope.
fn syllabic_modulation(rms: &[f32]) -> f32 {
    let n = rms.len();
    let mean = rms.iter().map(|&r| f64::from(r)).sum::<f64>() / n.max(1) as f64;
    if n < 2 || mean <= 0.0 {
        return 0.0;
    }
    let env: Vec<f64> = rms.iter().map(|&r| f64::from(r) / mean - 1.0).collect();
    let frame_rate_hz = f64::from(ANALYSIS_RATE_HZ) / HOP as f64;
    let (lo, hi) = SYLLABIC_BAND_HZ;
    let bins = (lo * n as f64 / frame_rate_hz).ceil() as usize
        ..=((hi * n as f64 / frame_rate_hz).floor() as usize).min(n / 2);
    let power: f64 = bins
        .map(|k| {
            let w = std::f64::consts::TAU * k as f64 / n as f64;
            let (re, im) = env.iter().enumerate().fold((0.0, 0.0), |(re, im), (t, &e)| {
                let a = w * t as f64;
                (re + e * a.cos(), im - e * a.sin())
            });
            re * re + im * im
        })
        .sum();
    ((2.0 * power).sqrt() / n as f64) as f32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn silence_and_short_input_have_no_evidence() {
        let e = SpeechEvidence::measure(&[0.0; 16_000], 16_000);
        assert_eq!((e.active_frames, e.voiced_ratio, e.syllabic_modulation), (0, 0.0, 0.0));
        assert!(!e.is_speech());
        assert_eq!(SpeechEvidence::measure(&[0.1; 10], 16_000).frames, 0);
    }

    #[test]
    fn a_sine_at_full_modulation_has_the_expected_depth() {
        // An envelope 1 + 0.5·sin(2π·4 t) has a 4 Hz part of RMS 0.5/√2.
        let env: Vec<f32> = (0..1000)
            .map(|i| 1.0 + 0.5 * (std::f32::consts::TAU * 4.0 * i as f32 / 100.0).sin())
            .collect();
        let m = syllabic_modulation(&env);
        assert!((m - 0.5 / 2f32.sqrt()).abs() < 1e-3, "{m}");
    }
}
