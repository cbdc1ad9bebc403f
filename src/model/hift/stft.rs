//! The vocoder's short-time Fourier transforms (spec/COSYVOICE3.md §8.3, §8.5): `n_fft` 16,
//! hop 4, periodic Hann, `center=True` with reflect padding, one-sided bins.
//!
//! With 16 points a direct DFT against a precomputed basis is cheaper than any FFT set-up;
//! sums run in f64 and round once to f32, which keeps us within an ulp of PyTorch's f32 FFT.

use std::f64::consts::PI;

/// Periodic Hann window `0.5 − 0.5·cos(2πi/n)`, computed in f64 and rounded to f32.
pub fn hann_periodic(n: usize) -> Vec<f32> {
    (0..n).map(|i| (0.5 - 0.5 * (2.0 * PI * i as f64 / n as f64).cos()) as f32).collect()
}

/// `torch.stft`/`torch.istft` with `center=True` for one window size.
#[derive(Debug, Clone)]
pub struct Stft {
    pub n_fft: usize,
    pub hop: usize,
    window: Vec<f64>,
    /// `cos(2πkn/N)`, `sin(2πkn/N)` for bins `k ≤ N/2`, row-major `(bins, n_fft)`.
    cos: Vec<f64>,
    sin: Vec<f64>,
}

impl Stft {
    pub fn new(n_fft: usize, hop: usize) -> Self {
        let window = hann_periodic(n_fft).into_iter().map(f64::from).collect();
        let bins = n_fft / 2 + 1;
        let mut cos = Vec::with_capacity(bins * n_fft);
        let mut sin = Vec::with_capacity(bins * n_fft);
        for k in 0..bins {
            for n in 0..n_fft {
                // Reduce k·n mod N first so the angle stays in [0, 2π).
                let ang = 2.0 * PI * ((k * n) % n_fft) as f64 / n_fft as f64;
                cos.push(ang.cos());
                sin.push(ang.sin());
            }
        }
        Self { n_fft, hop, window, cos, sin }
    }

    pub fn bins(&self) -> usize {
        self.n_fft / 2 + 1
    }

    /// Frames of a `center=True` STFT of `len_samples` samples.
    pub fn frames(&self, len_samples: usize) -> usize {
        len_samples / self.hop + 1
    }

    /// Forward STFT of `signal` (reflect pad `n_fft/2` each side). Returns `(re, im)`, each
    /// `(bins, frames)` row-major. `signal` must be longer than `n_fft/2` samples.
    pub fn forward(&self, signal: &[f32]) -> (Vec<f32>, Vec<f32>) {
        let (n_fft, pad) = (self.n_fft, self.n_fft / 2);
        let padded = reflect_pad(signal, pad);
        let (bins, frames) = (self.bins(), self.frames(signal.len()));
        let mut re = vec![0f32; bins * frames];
        let mut im = vec![0f32; bins * frames];
        let mut seg = vec![0f64; n_fft];
        for f in 0..frames {
            let start = f * self.hop;
            for (i, s) in seg.iter_mut().enumerate() {
                *s = f64::from(padded[start + i]) * self.window[i];
            }
            for k in 0..bins {
                let (c, s) = (&self.cos[k * n_fft..][..n_fft], &self.sin[k * n_fft..][..n_fft]);
                let (mut r, mut j) = (0f64, 0f64);
                for i in 0..n_fft {
                    r += seg[i] * c[i];
                    j -= seg[i] * s[i];
                }
                re[k * frames + f] = r as f32;
                im[k * frames + f] = j as f32;
            }
        }
        (re, im)
    }

    /// `torch.istft(center=True)` of `X = mag·(cos φ + i sin φ)`, `mag`/`phase` `(bins, frames)`
    /// row-major. The imaginary parts of the DC and Nyquist bins are ignored (as a real inverse
    /// FFT does); overlap-added frames are divided sample-wise by the squared-window envelope;
    /// returns `hop·(frames − 1)` samples.
    pub fn inverse(&self, mag: &[f32], phase: &[f32], frames: usize) -> Vec<f32> {
        let (n_fft, hop, bins) = (self.n_fft, self.hop, self.bins());
        let total = n_fft + hop * (frames - 1);
        let mut acc = vec![0f64; total];
        let mut env = vec![0f64; total];
        let mut re = vec![0f64; bins];
        let mut im = vec![0f64; bins];
        for f in 0..frames {
            for k in 0..bins {
                let (m, p) = (mag[k * frames + f], phase[k * frames + f]);
                // PyTorch forms the complex spectrum in f32.
                re[k] = f64::from(m * p.cos());
                im[k] = f64::from(m * p.sin());
            }
            for n in 0..n_fft {
                let mut v = re[0] + if n % 2 == 0 { re[bins - 1] } else { -re[bins - 1] };
                for k in 1..bins - 1 {
                    let idx = k * n_fft + n;
                    v += 2.0 * (re[k] * self.cos[idx] - im[k] * self.sin[idx]);
                }
                let w = self.window[n];
                acc[f * hop + n] += v / n_fft as f64 * w;
                env[f * hop + n] += w * w;
            }
        }
        let pad = n_fft / 2;
        (pad..pad + hop * (frames - 1)).map(|p| (acc[p] / env[p]) as f32).collect()
    }
}

/// Reflect padding without repeating the edge sample (`pad < signal.len()`).
pub fn reflect_pad(signal: &[f32], pad: usize) -> Vec<f32> {
    let n = signal.len();
    let mut out = Vec::with_capacity(n + 2 * pad);
    out.extend((1..=pad).rev().map(|i| signal[i]));
    out.extend_from_slice(signal);
    out.extend((0..pad).map(|i| signal[n - 2 - i]));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reflect_pad_excludes_edge() {
        assert_eq!(
            reflect_pad(&[1.0, 2.0, 3.0, 4.0], 2),
            vec![3.0, 2.0, 1.0, 2.0, 3.0, 4.0, 3.0, 2.0]
        );
    }

    #[test]
    fn inverse_undoes_forward() {
        let stft = Stft::new(16, 4);
        let x: Vec<f32> = (0..400).map(|i| ((i as f32) * 0.37).sin() * 0.5).collect();
        let (re, im) = stft.forward(&x);
        let frames = stft.frames(x.len());
        let mag: Vec<f32> = re.iter().zip(&im).map(|(r, i)| r.hypot(*i)).collect();
        let phase: Vec<f32> = re.iter().zip(&im).map(|(r, i)| i.atan2(*r)).collect();
        let y = stft.inverse(&mag, &phase, frames);
        assert_eq!(y.len(), x.len());
        let max = x.iter().zip(&y).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
        assert!(max < 1e-5, "{max}");
    }
}
