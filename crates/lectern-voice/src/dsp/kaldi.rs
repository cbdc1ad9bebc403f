//! CAM++'s input: `torchaudio.compliance.kaldi.fbank(w, num_mel_bins=80, dither=0,
//! sample_frequency=16000)` (all other options default), then per-bin mean removal.
//!
//! Frames of 400 samples every 160 (snip_edges), DC removal, pre-emphasis 0.97, povey window,
//! zero-pad to 512, power spectrum, 80 Kaldi mel triangles (20 Hz – 8 kHz), `ln(max(·, f32 eps))`.
//! The waveform stays in [−1, 1] (no int16 scaling), so the log floor `ln(eps) ≈ −15.94` is hit
//! on digital silence. Computed in f64 with torchaudio's f32 banks; within ~3.5e-4 of torch
//! (near the floor), a few 1e-6 elsewhere.

use std::f64::consts::PI;

use lectern_model::mel::Fft;

/// Frame length (25 ms at 16 kHz).
pub const FRAME_LEN: usize = 400;
/// Frame shift (10 ms at 16 kHz).
pub const FRAME_SHIFT: usize = 160;
/// FFT size: the frame rounded up to a power of two.
pub const PADDED_LEN: usize = 512;
/// One-sided bins of the padded frame.
pub const N_BINS: usize = PADDED_LEN / 2 + 1;
/// Mel bins (CAM++).
pub const N_MELS: usize = 80;
/// Sample rate, Hz.
pub const SAMPLE_RATE_HZ: f32 = 16_000.0;
/// Lower edge of the first triangle, Hz (Kaldi default).
const LOW_FREQ_HZ: f64 = 20.0;
/// Pre-emphasis coefficient (Kaldi default).
const PREEMPHASIS: f64 = 0.97;
/// `torch.finfo(torch.float32).eps`: the floor before the log.
pub const LOG_FLOOR: f64 = f32::EPSILON as f64;

/// Frames for `n` samples with snip_edges: `1 + (n − 400)//160`, zero below 400 samples
/// (torchaudio returns an empty fbank there).
pub fn n_frames(n: usize) -> usize {
    if n < FRAME_LEN { 0 } else { 1 + (n - FRAME_LEN) / FRAME_SHIFT }
}

/// `torch.hann_window(400, periodic=False) ** 0.85`, Kaldi's "povey" window, in f64.
pub fn povey_window() -> Vec<f64> {
    let denom = (FRAME_LEN - 1) as f64;
    (0..FRAME_LEN).map(|i| (0.5 - 0.5 * (2.0 * PI * i as f64 / denom).cos()).powf(0.85)).collect()
}

/// Kaldi's mel scale on f32 data, as torchaudio's tensor `mel_scale`: `1127·ln(1 + f/700)`.
fn mel_scale_f32(hz: f32) -> f32 {
    1127.0f32 * (1.0f32 + hz / 700.0f32).ln()
}

/// Kaldi's mel scale on a Python float (torchaudio's `mel_scale_scalar`), f64.
fn mel_scale_f64(hz: f64) -> f64 {
    1127.0 * (1.0 + hz / 700.0).ln()
}

/// torchaudio's `get_mel_banks(80, 512, 16000, 20, 0, …)` padded with a zero last column:
/// `(80, 257)` row-major.
///
/// torchaudio evaluates the triangles in float32 (python-float edges times an integer tensor),
/// so this does too; the f64 triangles differ by up to 1.4e-5.
pub fn mel_banks_80() -> Vec<f32> {
    let nyquist = 0.5 * f64::from(SAMPLE_RATE_HZ);
    let (mel_low, mel_high) = (mel_scale_f64(LOW_FREQ_HZ), mel_scale_f64(nyquist));
    let delta = ((mel_high - mel_low) / (N_MELS + 1) as f64) as f32;
    let low = mel_low as f32;
    let bin_width = SAMPLE_RATE_HZ / PADDED_LEN as f32;
    let mel: Vec<f32> = (0..N_BINS - 1).map(|k| mel_scale_f32(bin_width * k as f32)).collect();
    let mut banks = vec![0f32; N_MELS * N_BINS];
    for b in 0..N_MELS {
        let left = low + b as f32 * delta;
        let center = low + (b as f32 + 1.0) * delta;
        let right = low + (b as f32 + 2.0) * delta;
        for (k, &m) in mel.iter().enumerate() {
            let up = (m - left) / (center - left);
            let down = (right - m) / (right - center);
            banks[b * N_BINS + k] = up.min(down).max(0.0);
        }
    }
    banks
}

/// Log mel energies `(Tk, 80)` row-major, Tk = [`n_frames`]: Kaldi fbank before mean removal.
pub fn fbank_80(wave_16k: &[f32]) -> (Vec<f32>, usize) {
    let frames = n_frames(wave_16k.len());
    let banks: Vec<f64> = mel_banks_80().iter().map(|&v| f64::from(v)).collect();
    let window = povey_window();
    let fft = Fft::new(PADDED_LEN);
    let mut out = Vec::with_capacity(frames * N_MELS);
    let mut frame = vec![0f64; FRAME_LEN];
    let mut buf = vec![(0f64, 0f64); PADDED_LEN];
    let mut power = vec![0f64; N_BINS];
    for t in 0..frames {
        let seg = &wave_16k[t * FRAME_SHIFT..][..FRAME_LEN];
        prepare_frame(seg, &window, &mut frame);
        for (b, &x) in buf.iter_mut().zip(&frame) {
            *b = (x, 0.0);
        }
        let spec = fft.forward(&buf);
        for (p, &(re, im)) in power.iter_mut().zip(&spec[..N_BINS]) {
            *p = re * re + im * im;
        }
        for row in banks.chunks_exact(N_BINS) {
            let e: f64 = row.iter().zip(&power).map(|(a, b)| a * b).sum();
            out.push(e.max(LOG_FLOOR).ln() as f32);
        }
    }
    (out, frames)
}

/// Kaldi's per-frame processing before the FFT: remove the DC offset, pre-emphasise (the
/// sample before the first is the first itself), multiply by the povey window.
fn prepare_frame(seg: &[f32], window: &[f64], frame: &mut [f64]) {
    let mean = seg.iter().map(|&x| f64::from(x)).sum::<f64>() / seg.len() as f64;
    for (f, &x) in frame.iter_mut().zip(seg) {
        *f = f64::from(x) - mean;
    }
    for i in (1..frame.len()).rev() {
        frame[i] -= PREEMPHASIS * frame[i - 1];
    }
    frame[0] -= PREEMPHASIS * frame[0];
    for (f, &w) in frame.iter_mut().zip(window) {
        *f *= w;
    }
}

/// Subtracts each column's mean over rows, in place, on a row-major `(rows, bins)` matrix:
/// upstream's `feat - feat.mean(dim=0, keepdim=True)` before CAM++.
///
/// # Panics
/// If `bins` is zero or does not divide `feats.len()`.
pub fn subtract_column_mean(feats: &mut [f32], bins: usize) {
    assert!(bins > 0 && feats.len() % bins == 0, "feats length is not a multiple of bins");
    let rows = feats.len() / bins;
    if rows == 0 {
        return;
    }
    let mut mean = vec![0f64; bins];
    for row in feats.chunks_exact(bins) {
        for (m, &v) in mean.iter_mut().zip(row) {
            *m += f64::from(v);
        }
    }
    for m in &mut mean {
        *m /= rows as f64;
    }
    for row in feats.chunks_exact_mut(bins) {
        for (v, &m) in row.iter_mut().zip(&mean) {
            *v = (f64::from(*v) - m) as f32;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_count_snips_edges() {
        assert_eq!(n_frames(106_102), 661);
        assert_eq!(n_frames(399), 0);
        assert_eq!(n_frames(400), 1);
        assert_eq!(n_frames(8000), 48);
    }

    #[test]
    fn silence_hits_the_log_floor() {
        let (f, t) = fbank_80(&vec![0.0; 720]);
        assert_eq!(t, 3);
        assert!(f.iter().all(|&v| v == LOG_FLOOR.ln() as f32));
    }

    #[test]
    fn column_mean_is_removed() {
        let mut m = vec![1.0f32, 10.0, 3.0, 20.0];
        subtract_column_mean(&mut m, 2);
        assert_eq!(m, vec![-1.0, -5.0, 1.0, 5.0]);
    }

    #[test]
    fn preemphasis_uses_the_first_sample_twice() {
        let seg = vec![1.0f32; FRAME_LEN];
        let mut frame = vec![0.0; FRAME_LEN];
        prepare_frame(&seg, &vec![1.0; FRAME_LEN], &mut frame);
        assert!(frame.iter().all(|&v| v == 0.0), "DC removed, nothing left");
    }
}
