//! The 24 kHz log-mel of prompt audio (spec/COSYVOICE3.md §5.6), the same features the flow
//! generates: matcha's `mel_spectrogram(n_fft 1920, 80 mels, hop 480, win 1920, fmin 0,
//! fmax None, center=False)`.
//!
//! Reflect-pad 720 each side, periodic Hann(1920) frames every 480 samples, magnitude
//! `sqrt(re² + im² + 1e-9)`, Slaney mel filter bank (librosa, Slaney norm), `ln(max(·, 1e-5))`.
//! Everything runs in f64 (a mixed-radix FFT, 1920 = 2⁷·3·5) and rounds once at the end; the
//! f32 reference sits within about 1.5e-5 of that.

use std::f64::consts::PI;

use super::config::{N_MELS, SAMPLE_RATE_HZ};
use crate::error::{ModelError, Result};

/// FFT size and window length, samples.
pub const N_FFT: usize = 1920;
/// Frame hop, samples (50 frames per second).
pub const HOP_SAMPLES: usize = 480;
/// One-sided bins.
pub const N_BINS: usize = N_FFT / 2 + 1;
/// Reflect padding on each side, `(n_fft − hop)/2`.
pub const PAD_SAMPLES: usize = (N_FFT - HOP_SAMPLES) / 2;

/// Frames produced for `n_samples` input samples, `floor(n/480)`.
pub fn n_frames(n_samples: usize) -> usize {
    (n_samples + 2 * PAD_SAMPLES).saturating_sub(N_FFT) / HOP_SAMPLES + 1
}

/// Log-mel of 24 kHz mono audio: returns `(mel, n_frames)` with `mel` laid out `(80, n_frames)`
/// row-major (upstream's `(1, 80, T)` without the batch).
///
/// Errors on audio too short to reflect-pad (≤ 720 samples) and on non-finite samples.
pub fn log_mel_24k(wav: &[f32]) -> Result<(Vec<f32>, usize)> {
    if wav.len() <= PAD_SAMPLES {
        return Err(ModelError::InvalidInput(format!(
            "prompt audio has {} samples; the 24 kHz mel needs more than {PAD_SAMPLES}",
            wav.len()
        )));
    }
    if let Some(i) = wav.iter().position(|x| !x.is_finite()) {
        return Err(ModelError::InvalidInput(format!("prompt audio sample {i} is not finite")));
    }
    let basis = mel_basis();
    let window = hann_window();
    let padded = super::hift::stft::reflect_pad(wav, PAD_SAMPLES);
    let frames = n_frames(wav.len());
    let mut mel = vec![0f32; N_MELS * frames];
    let mut mag = vec![0f64; N_BINS];
    for_each_frame_spectrum(&padded, &window, HOP_SAMPLES, frames, |t, spec| {
        for (m, &(re, im)) in mag.iter_mut().zip(spec) {
            *m = (re * re + im * im + 1e-9).sqrt();
        }
        for (m, row) in basis.chunks_exact(N_BINS).enumerate() {
            let v: f64 = row.iter().zip(&mag).map(|(a, b)| a * b).sum();
            mel[m * frames + t] = v.max(1e-5).ln() as f32;
        }
    });
    Ok((mel, frames))
}

/// `torch.hann_window(1920)` (periodic), in f64.
pub fn hann_window() -> Vec<f64> {
    hann_periodic_f64(N_FFT)
}

/// `torch.hann_window(n)` (periodic), in f64.
pub fn hann_periodic_f64(n: usize) -> Vec<f64> {
    (0..n).map(|i| 0.5 - 0.5 * (2.0 * PI * i as f64 / n as f64).cos()).collect()
}

/// Hands `each(t, spectrum)` the one-sided spectrum (bins `0..=n/2`) of every windowed frame
/// `padded[t·hop..][..n]`, `t < frames`, `n = window.len()`: the framing shared by the prompt
/// mel and whisper's log-mel, with one FFT plan and one buffer for all frames.
pub fn for_each_frame_spectrum(
    padded: &[f32],
    window: &[f64],
    hop: usize,
    frames: usize,
    mut each: impl FnMut(usize, &[(f64, f64)]),
) {
    let n = window.len();
    let fft = Fft::new(n);
    let mut buf = vec![(0f64, 0f64); n];
    for t in 0..frames {
        let seg = &padded[t * hop..][..n];
        for ((b, &x), &w) in buf.iter_mut().zip(seg).zip(window) {
            *b = (f64::from(x) * w, 0.0);
        }
        each(t, &fft.forward(&buf)[..n / 2 + 1]);
    }
}

fn hz_to_mel(hz: f64) -> f64 {
    let f_sp = 200.0 / 3.0;
    let (min_log_hz, min_log_mel, logstep) = (1000.0, 1000.0 / f_sp, 6.4f64.ln() / 27.0);
    if hz >= min_log_hz { min_log_mel + (hz / min_log_hz).ln() / logstep } else { hz / f_sp }
}

fn mel_to_hz(mel: f64) -> f64 {
    let f_sp = 200.0 / 3.0;
    let (min_log_hz, min_log_mel, logstep) = (1000.0, 1000.0 / f_sp, 6.4f64.ln() / 27.0);
    if mel >= min_log_mel { min_log_hz * (logstep * (mel - min_log_mel)).exp() } else { f_sp * mel }
}

/// librosa `filters.mel(sr=24000, n_fft=1920, n_mels=80, fmin=0, fmax=12000)`, Slaney scale and
/// Slaney norm, `(80, 961)` row-major, in f64.
pub fn mel_basis() -> Vec<f64> {
    slaney_mel_basis(f64::from(SAMPLE_RATE_HZ), N_FFT, N_MELS, f64::from(SAMPLE_RATE_HZ) / 2.0)
}

/// librosa `filters.mel(sr, n_fft, n_mels, fmin=0, fmax)` with the Slaney mel scale and Slaney
/// area normalisation, `(n_mels, n_fft/2 + 1)` row-major, in f64.
///
/// Shared by the 24 kHz prompt mel (matcha) and whisper's 128-bin filters (`sr 16000`,
/// `n_fft 400`, `fmax 8000`), which both come from this librosa function.
pub fn slaney_mel_basis(sr: f64, n_fft: usize, n_mels: usize, fmax: f64) -> Vec<f64> {
    let n_bins = n_fft / 2 + 1;
    let n_points = n_mels + 2;
    let (lo, hi) = (hz_to_mel(0.0), hz_to_mel(fmax));
    // numpy.linspace: start + i·step, with the last point set exactly to `stop`.
    let step = (hi - lo) / (n_points - 1) as f64;
    let mel_f: Vec<f64> = (0..n_points)
        .map(|i| mel_to_hz(if i == n_points - 1 { hi } else { lo + i as f64 * step }))
        .collect();
    let fft_freqs: Vec<f64> = (0..n_bins).map(|k| k as f64 * sr / n_fft as f64).collect();
    let mut basis = vec![0f64; n_mels * n_bins];
    for i in 0..n_mels {
        let (d0, d1) = (mel_f[i + 1] - mel_f[i], mel_f[i + 2] - mel_f[i + 1]);
        let enorm = 2.0 / (mel_f[i + 2] - mel_f[i]);
        for (k, &f) in fft_freqs.iter().enumerate() {
            let lower = (f - mel_f[i]) / d0;
            let upper = (mel_f[i + 2] - f) / d1;
            basis[i * n_bins + k] = lower.min(upper).max(0.0) * enorm;
        }
    }
    basis
}

/// A complex FFT of one size in f64 (`rustfft`: mixed-radix, any length — the mel's 1920
/// points as well as whisper's 400 and Kaldi's 512).
///
/// Shared with the voice front end (`lectern_voice::dsp`), so every feature uses the same f64
/// arithmetic.
pub struct Fft {
    plan: std::sync::Arc<dyn rustfft::Fft<f64>>,
}

impl Fft {
    pub fn new(n: usize) -> Self {
        Self { plan: rustfft::FftPlanner::new().plan_fft_forward(n) }
    }

    /// The DFT `X_k = Σ_j x_j·exp(−2πijk/n)` of `input` (`n` values).
    pub fn forward(&self, input: &[(f64, f64)]) -> Vec<(f64, f64)> {
        let mut buf: Vec<rustfft::num_complex::Complex<f64>> =
            input.iter().map(|&(re, im)| rustfft::num_complex::Complex::new(re, im)).collect();
        self.plan.process(&mut buf);
        buf.into_iter().map(|c| (c.re, c.im)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fft_matches_naive_dft() {
        for n in [1, 2, 6, 15, 60, 400, 512, 1920] {
            let x: Vec<(f64, f64)> =
                (0..n).map(|i| ((i as f64 * 0.7).sin(), (i as f64 * 0.3).cos())).collect();
            let got = Fft::new(n).forward(&x);
            for (k, g) in got.iter().enumerate() {
                let (mut re, mut im) = (0.0, 0.0);
                for (j, &(a, b)) in x.iter().enumerate() {
                    let ang = -2.0 * PI * ((j * k) % n) as f64 / n as f64;
                    re += a * ang.cos() - b * ang.sin();
                    im += a * ang.sin() + b * ang.cos();
                }
                assert!((g.0 - re).abs() < 1e-9 && (g.1 - im).abs() < 1e-9, "n {n} k {k}");
            }
        }
    }

    #[test]
    fn frame_count_is_floor_of_hops() {
        assert_eq!(n_frames(72_000), 150);
        assert_eq!(n_frames(10_000), 20);
        assert_eq!(n_frames(959), 1);
    }

    #[test]
    fn short_and_non_finite_audio_are_rejected() {
        assert!(matches!(log_mel_24k(&[0.0; 720]), Err(ModelError::InvalidInput(_))));
        let mut wav = vec![0.1f32; 2000];
        wav[7] = f32::NAN;
        assert!(matches!(log_mel_24k(&wav), Err(ModelError::InvalidInput(_))));
    }
}
