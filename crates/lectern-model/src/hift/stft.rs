//! The vocoder's short-time Fourier transforms (spec/COSYVOICE3.md §8.3, §8.5): `n_fft` 16,
//! hop 4, periodic Hann, `center=True` with reflect padding, one-sided bins.
//!
//! Transforms run in f64 through `rustfft` and round once to f32, which keeps us within an ulp
//! of PyTorch's f32 FFT.

use std::f64::consts::PI;
use std::sync::Arc;

use rayon::prelude::*;
use rustfft::num_complex::Complex;

/// Hops of the inverse STFT's output per parallel task: 1024 hops of 4 samples are 0.17 s of
/// audio, enough work to be worth a task (each task also transforms the few frames before its
/// range that reach into it).
const FRAMES_PER_TASK: usize = 1024;

/// Periodic Hann window `0.5 − 0.5·cos(2πi/n)`, computed in f64 and rounded to f32.
pub fn hann_periodic(n: usize) -> Vec<f32> {
    (0..n).map(|i| (0.5 - 0.5 * (2.0 * PI * i as f64 / n as f64).cos()) as f32).collect()
}

/// `torch.stft`/`torch.istft` with `center=True` for one window size.
#[derive(Clone)]
pub struct Stft {
    pub n_fft: usize,
    pub hop: usize,
    window: Vec<f64>,
    forward: Arc<dyn rustfft::Fft<f64>>,
    inverse: Arc<dyn rustfft::Fft<f64>>,
}

impl std::fmt::Debug for Stft {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stft").field("n_fft", &self.n_fft).field("hop", &self.hop).finish()
    }
}

impl Stft {
    pub fn new(n_fft: usize, hop: usize) -> Self {
        let window = hann_periodic(n_fft).into_iter().map(f64::from).collect();
        let mut planner = rustfft::FftPlanner::new();
        let forward = planner.plan_fft_forward(n_fft);
        let inverse = planner.plan_fft_inverse(n_fft);
        Self { n_fft, hop, window, forward, inverse }
    }

    pub fn bins(&self) -> usize {
        self.n_fft / 2 + 1
    }

    /// Frames of a `center=True` STFT of `len_samples` samples.
    pub fn frames(&self, len_samples: usize) -> usize {
        len_samples / self.hop + 1
    }

    /// Forward STFT of `signal` (reflect pad `n_fft/2` each side). Returns `(re, im)`, each
    /// `(bins, frames)` row-major. `signal` must be longer than `n_fft/2` samples. One loop
    /// over the frames: run in parallel tasks it was slower on two cores (the blocks' copy into
    /// this layout), and it is the smallest of the vocoder's host passes.
    pub fn forward(&self, signal: &[f32]) -> (Vec<f32>, Vec<f32>) {
        let (n_fft, pad) = (self.n_fft, self.n_fft / 2);
        let padded = reflect_pad(signal, pad);
        let (bins, frames) = (self.bins(), self.frames(signal.len()));
        let mut re = vec![0f32; bins * frames];
        let mut im = vec![0f32; bins * frames];
        let mut buf = vec![Complex::new(0f64, 0f64); n_fft];
        let mut scratch = vec![Complex::new(0f64, 0f64); self.forward.get_inplace_scratch_len()];
        for f in 0..frames {
            let start = f * self.hop;
            for (i, b) in buf.iter_mut().enumerate() {
                *b = Complex::new(f64::from(padded[start + i]) * self.window[i], 0.0);
            }
            self.forward.process_with_scratch(&mut buf, &mut scratch);
            for (k, x) in buf[..bins].iter().enumerate() {
                re[k * frames + f] = x.re as f32;
                im[k * frames + f] = x.im as f32;
            }
        }
        (re, im)
    }

    /// `torch.istft(center=True)` of `X = mag·(cos φ + i sin φ)`, `mag`/`phase` `(bins, frames)`
    /// row-major. The imaginary parts of the DC and Nyquist bins are ignored (as a real inverse
    /// FFT does); overlap-added frames are divided sample-wise by the squared-window envelope;
    /// returns `hop·(frames − 1)` samples. The output runs in parallel tasks of
    /// `FRAMES_PER_TASK` hops; each task overlap-adds every frame reaching its samples (the
    /// few before its range again), in frame order from zero: the same f64 sums, in the same
    /// order, as one loop over the frames.
    pub fn inverse(&self, mag: &[f32], phase: &[f32], frames: usize) -> Vec<f32> {
        let (n_fft, hop) = (self.n_fft, self.hop);
        let mut out = vec![0f32; hop * frames.saturating_sub(1)];
        out.par_chunks_mut(hop * FRAMES_PER_TASK).enumerate().for_each(|(task, out)| {
            // Samples p0..p1 of the overlap-added signal (`n_fft/2` of padding before sample 0).
            let p0 = n_fft / 2 + task * hop * FRAMES_PER_TASK;
            let p1 = p0 + out.len();
            // Frame f covers f·hop … f·hop + n_fft − 1.
            let frames_reaching =
                (p0 + 1).saturating_sub(n_fft).div_ceil(hop)..=((p1 - 1) / hop).min(frames - 1);
            let (mut acc, mut env) = (vec![0f64; out.len()], vec![0f64; out.len()]);
            let mut buf = vec![Complex::new(0f64, 0f64); n_fft];
            let mut scratch =
                vec![Complex::new(0f64, 0f64); self.inverse.get_inplace_scratch_len()];
            for f in frames_reaching {
                self.inverse_frame(mag, phase, frames, f, &mut buf, &mut scratch);
                for (n, (v, w)) in buf.iter().zip(&self.window).enumerate() {
                    if let Some(i) = (f * hop + n).checked_sub(p0).filter(|&i| i < out.len()) {
                        acc[i] += v.re / n_fft as f64 * w;
                        env[i] += w * w;
                    }
                }
            }
            for (o, (a, e)) in out.iter_mut().zip(acc.iter().zip(&env)) {
                *o = (a / e) as f32;
            }
        });
        out
    }

    /// Frame `f`'s inverse FFT into `buf` (unscaled, unwindowed).
    fn inverse_frame(
        &self,
        mag: &[f32],
        phase: &[f32],
        frames: usize,
        f: usize,
        buf: &mut [Complex<f64>],
        scratch: &mut [Complex<f64>],
    ) {
        let (n_fft, bins) = (self.n_fft, self.bins());
        for k in 0..bins {
            let (m, p) = (mag[k * frames + f], phase[k * frames + f]);
            // PyTorch forms the complex spectrum in f32.
            let x = Complex::new(f64::from(m * p.cos()), f64::from(m * p.sin()));
            // A real inverse: the DC and Nyquist bins' imaginary parts are ignored and the
            // upper half is the conjugate mirror.
            if k == 0 || k == bins - 1 {
                buf[k] = Complex::new(x.re, 0.0);
            } else {
                buf[k] = x;
                buf[n_fft - k] = x.conj();
            }
        }
        self.inverse.process_with_scratch(buf, scratch);
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

    /// The inverse as one loop over the frames, overlap-adding each in turn (before the
    /// output ran in parallel tasks); each frame's spectrum and FFT are the transform's own.
    fn serial_inverse(stft: &Stft, mag: &[f32], phase: &[f32], frames: usize) -> Vec<f32> {
        let (n_fft, hop) = (stft.n_fft, stft.hop);
        let total = n_fft + hop * (frames - 1);
        let (mut acc, mut env) = (vec![0f64; total], vec![0f64; total]);
        let mut buf = vec![Complex::new(0f64, 0f64); n_fft];
        let mut scratch = vec![Complex::new(0f64, 0f64); stft.inverse.get_inplace_scratch_len()];
        for f in 0..frames {
            stft.inverse_frame(mag, phase, frames, f, &mut buf, &mut scratch);
            for (n, v) in buf.iter().enumerate() {
                let w = stft.window[n];
                acc[f * hop + n] += v.re / n_fft as f64 * w;
                env[f * hop + n] += w * w;
            }
        }
        let pad = n_fft / 2;
        (pad..pad + hop * (frames - 1)).map(|p| (acc[p] / env[p]) as f32).collect()
    }

    /// The inverse's output split over tasks (three whole tasks and a partial one, each
    /// overlap-adding the frames before its range again) gives the one loop's bits.
    #[test]
    fn parallel_frames_give_the_serial_bits() {
        let stft = Stft::new(16, 4);
        let n = 4 * (3 * FRAMES_PER_TASK + 123);
        let x: Vec<f32> =
            (0..n).map(|i| ((i as f32) * 0.37).sin() * 0.5 + (i % 7) as f32 * 1e-3).collect();
        let (re, im) = stft.forward(&x);
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        let frames = stft.frames(x.len());
        assert!(frames > 3 * FRAMES_PER_TASK);
        let mag: Vec<f32> = re.iter().zip(&im).map(|(r, i)| r.hypot(*i).min(100.0)).collect();
        let phase: Vec<f32> = re.iter().zip(&im).map(|(r, i)| (i.atan2(*r) * 3.0).sin()).collect();
        let y = stft.inverse(&mag, &phase, frames);
        assert_eq!(bits(&y), bits(&serial_inverse(&stft, &mag, &phase, frames)));
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
