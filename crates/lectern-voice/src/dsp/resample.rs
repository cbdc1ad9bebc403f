//! torchaudio 2.5.1 `transforms.Resample(orig, new)` with every default: `sinc_interp_hann`,
//! `lowpass_filter_width = 6`, `rolloff = 0.99`. Upstream's `load_wav` uses it to bring the
//! reference to 16 kHz (tokenizer, CAM++) and 24 kHz (prompt mel).
//!
//! The kernel is built in f64 and stored as f32, like torchaudio's; the convolution accumulates
//! in f64 (within ~1.5e-7 of torch's f32 conv1d).

use std::f64::consts::PI;

/// `lowpass_filter_width`: zero crossings of the sinc on each side.
const LOWPASS_FILTER_WIDTH: f64 = 6.0;
/// `rolloff`: the cutoff as a fraction of the lower Nyquist rate.
const ROLLOFF: f64 = 0.99;

/// A polyphase resampling kernel: `n` output phases of `taps = 2·width + orig` weights each,
/// applied with stride `orig` (torchaudio's `(new, 1, 2·width + orig)` conv1d weight).
#[derive(Debug, Clone, PartialEq)]
pub struct Kernel {
    /// Output phases: the new rate divided by gcd(orig, new).
    pub n: usize,
    /// Input stride: the original rate divided by gcd(orig, new).
    pub orig: usize,
    /// Zero padding on the left (and `width + orig` on the right), samples.
    pub width: usize,
    /// Weights per phase, `2·width + orig`.
    pub taps: usize,
    /// `(n, taps)` row-major.
    pub weights: Vec<f32>,
}

fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// torchaudio's `_get_sinc_resample_kernel(from_hz, to_hz, gcd)` with the defaults.
///
/// The phase offset `φ_j = −j/n` is computed in **f32** and widened: torchaudio builds it as an
/// integer `arange / n`, which is float32, before adding the float64 tap positions. Reproducing
/// that makes the kernel bit-identical; a pure-f64 phase is off by up to 7.4e-6.
///
/// # Panics
/// If either rate is zero.
pub fn kernel(from_hz: u32, to_hz: u32) -> Kernel {
    assert!(from_hz > 0 && to_hz > 0, "resample rates must be positive");
    let g = gcd(from_hz, to_hz);
    let (orig, n) = ((from_hz / g) as usize, (to_hz / g) as usize);
    let base = orig.min(n) as f64 * ROLLOFF;
    let width = (LOWPASS_FILTER_WIDTH * orig as f64 / base).ceil() as usize;
    let taps = 2 * width + orig;
    let scale = base / orig as f64;
    let mut weights = Vec::with_capacity(n * taps);
    for j in 0..n {
        let phase = f64::from(-(j as f32) / n as f32);
        for i in 0..taps {
            let idx = (i as f64 - width as f64) / orig as f64;
            weights.push(tap(phase, idx, base, scale) as f32);
        }
    }
    Kernel { n, orig, width, taps, weights }
}

/// One Hann-windowed sinc weight, in torchaudio's operation order (which matters at the ulp).
fn tap(phase: f64, idx: f64, base: f64, scale: f64) -> f64 {
    let t = ((phase + idx) * base).clamp(-LOWPASS_FILTER_WIDTH, LOWPASS_FILTER_WIDTH);
    let c = (t * PI / LOWPASS_FILTER_WIDTH / 2.0).cos();
    let window = c * c;
    let t = t * PI;
    let sinc = if t == 0.0 { 1.0 } else { t.sin() / t };
    sinc * (window * scale)
}

/// Output length for `n_in` input samples: `ceil(n·N/orig)`.
pub fn output_len(n_in: usize, from_hz: u32, to_hz: u32) -> usize {
    if from_hz == to_hz {
        return n_in;
    }
    let g = gcd(from_hz, to_hz);
    let (orig, n) = (u64::from(from_hz / g), u64::from(to_hz / g));
    (n * n_in as u64).div_ceil(orig) as usize
}

/// Resamples mono audio from `from_hz` to `to_hz` exactly like torchaudio's `Resample`
/// (a copy when the rates are equal, as upstream skips the transform then).
///
/// Zero-pads `width` samples on the left and `width + orig` on the right, correlates each phase
/// with stride `orig`, interleaves the phases (`out[b·n + j]`) and keeps `ceil(n·N/orig)`.
pub fn resample(wave: &[f32], from_hz: u32, to_hz: u32) -> Vec<f32> {
    if from_hz == to_hz {
        return wave.to_vec();
    }
    let k = kernel(from_hz, to_hz);
    apply(&k, wave, output_len(wave.len(), from_hz, to_hz))
}

/// Applies `k` to `wave`, producing the first `len` output samples.
fn apply(k: &Kernel, wave: &[f32], len: usize) -> Vec<f32> {
    let mut padded = vec![0f64; k.width + wave.len() + k.width + k.orig];
    for (p, &x) in padded[k.width..].iter_mut().zip(wave) {
        *p = f64::from(x);
    }
    let weights: Vec<f64> = k.weights.iter().map(|&w| f64::from(w)).collect();
    (0..len)
        .map(|m| {
            let (block, phase) = (m / k.n, m % k.n);
            let row = &weights[phase * k.taps..][..k.taps];
            let seg = &padded[block * k.orig..][..k.taps];
            row.iter().zip(seg).map(|(w, x)| w * x).sum::<f64>() as f32
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_shapes_match_torchaudio() {
        let k = kernel(22_050, 16_000);
        assert_eq!((k.n, k.orig, k.width, k.taps), (320, 441, 9, 459));
        let k = kernel(22_050, 24_000);
        assert_eq!((k.n, k.orig, k.width, k.taps), (160, 147, 7, 161));
        let k = kernel(48_000, 16_000);
        assert_eq!((k.n, k.orig), (1, 3));
    }

    #[test]
    fn equal_rates_copy() {
        let x = [0.1f32, -0.2, 0.3];
        assert_eq!(resample(&x, 16_000, 16_000), x.to_vec());
    }

    #[test]
    fn output_length_is_ceil() {
        assert_eq!(output_len(146_221, 22_050, 16_000), 106_102);
        assert_eq!(output_len(146_221, 22_050, 24_000), 159_153);
        assert_eq!(resample(&vec![0.0; 1001], 48_000, 16_000).len(), 334);
    }

    #[test]
    fn dc_passes_with_unit_gain() {
        let y = resample(&vec![0.5f32; 4800], 48_000, 16_000);
        let mid = &y[200..1400];
        assert!(mid.iter().all(|v| (v - 0.5).abs() < 1e-3), "{:?}", &mid[..4]);
    }
}
