//! The speech tokenizer's input: openai-whisper 20231117 `log_mel_spectrogram(audio, n_mels=128)`
//! at 16 kHz, **without** the 30 s padding (upstream passes the raw prompt).
//!
//! Centred STFT (reflect 200 each side), periodic Hann(400), hop 160, power, last frame dropped,
//! 128 Slaney mel filters (fmax 8000), `log10(max(·, 1e-10))`, floor at the global max − 8, then
//! `(L + 4)/4`. Computed in f64 and rounded once; torch's f32 sits within ~3.5e-5.

use lectern_model::hift::stft::reflect_pad;
use lectern_model::mel::{for_each_frame_spectrum, hann_periodic_f64, slaney_mel_basis};

/// Sample rate of the input, Hz.
pub const SAMPLE_RATE_HZ: u32 = 16_000;
/// FFT size and window length (25 ms).
pub const N_FFT: usize = 400;
/// Frame hop (10 ms).
pub const HOP: usize = 160;
/// Mel bins of CosyVoice3's tokenizer (whisper large-v3 layout).
pub const N_MELS: usize = 128;
/// One-sided bins.
pub const N_BINS: usize = N_FFT / 2 + 1;

/// Frames for `n` samples: `⌊n/160⌋` (the centred STFT gives one more; whisper drops it).
/// Zero when the input is too short to reflect-pad (≤ 200 samples), where torch would error.
pub fn n_frames(n: usize) -> usize {
    if n <= N_FFT / 2 { 0 } else { n / HOP }
}

/// whisper's `mel_filters(n_mels=128)`: librosa Slaney, sr 16000, n_fft 400, fmax 8000,
/// `(128, 201)` row-major. Rounded to f32 as whisper stores them in `mel_filters.npz`.
pub fn mel_filters_128() -> Vec<f32> {
    let sr = f64::from(SAMPLE_RATE_HZ);
    slaney_mel_basis(sr, N_FFT, N_MELS, sr / 2.0).iter().map(|&v| v as f32).collect()
}

/// Mel power `filters @ |STFT|²`, `(128, T)` row-major in f64, T = [`n_frames`].
pub fn mel_power(wave_16k: &[f32]) -> (Vec<f64>, usize) {
    let frames = n_frames(wave_16k.len());
    if frames == 0 {
        return (Vec::new(), 0);
    }
    let filters: Vec<f64> = mel_filters_128().iter().map(|&v| f64::from(v)).collect();
    let window = hann_periodic_f64(N_FFT);
    let padded = reflect_pad(wave_16k, N_FFT / 2);
    let mut mel = vec![0f64; N_MELS * frames];
    let mut power = vec![0f64; N_BINS];
    for_each_frame_spectrum(&padded, &window, HOP, frames, |t, spec| {
        for (p, &(re, im)) in power.iter_mut().zip(spec) {
            *p = re * re + im * im;
        }
        for (m, row) in filters.chunks_exact(N_BINS).enumerate() {
            mel[m * frames + t] = row.iter().zip(&power).map(|(a, b)| a * b).sum();
        }
    });
    (mel, frames)
}

/// The tokenizer's `feats`: `(128, T)` row-major, T = ⌊N/160⌋ (upstream's `(1, 128, T)`
/// without the batch); `feats_length` is T.
///
/// The `max − 8` floor uses the maximum over the whole prompt, so values are not frame-local.
pub fn log_mel_128(wave_16k: &[f32]) -> (Vec<f32>, usize) {
    let (power, frames) = mel_power(wave_16k);
    let mut log: Vec<f64> = power.iter().map(|&p| p.max(1e-10).log10()).collect();
    let floor = log.iter().copied().fold(f64::NEG_INFINITY, f64::max) - 8.0;
    for v in &mut log {
        *v = v.max(floor);
    }
    (log.iter().map(|&v| ((v + 4.0) / 4.0) as f32).collect(), frames)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_drop_the_last_stft_frame() {
        assert_eq!(n_frames(106_102), 663);
        assert_eq!(n_frames(8000), 50);
        assert_eq!(n_frames(150), 0);
        assert_eq!(log_mel_128(&vec![0.1; 1600]).1, 10);
    }

    #[test]
    fn silence_sits_on_the_floor() {
        let (m, t) = log_mel_128(&vec![0.0; 800]);
        assert_eq!(t, 5);
        assert!(m.iter().all(|&v| (v - (-10.0 + 4.0) / 4.0).abs() < 1e-6));
    }
}
