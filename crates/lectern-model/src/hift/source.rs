//! Harmonic-plus-noise source (`SourceModuleHnNSF` with the causal `SineGen2`,
//! spec/COSYVOICE3.md §8.2), in plain f32 with upstream's exact op order.
//!
//! The phase reaches thousands of radians, where one f32 ulp is about 1e-3 rad, so the order
//! of operations is part of the contract: `rad = (f0·h / 24000) mod 1` in f32, cumulative sum
//! over frames accumulated in f64 and rounded to f32 per partial sum (PyTorch's CPU cumsum),
//! then `·2`, `·f32(π)`, `·480`, then `sin` in f32. The sine is constant over each frame.

use std::sync::Mutex;

use crate::config::{HiftConfig, MAX_VOCODER_SAMPLES};
use crate::error::{ModelError, Result};
use crate::noise::Mt19937;
use crate::weights::Weights;

/// Harmonics including the fundamental (`nb_harmonics + 1`).
pub type Harmonics = usize;

/// The fixed uniform buffer `sine_waves` (1, 7 200 000, width), generated lazily: only the rows
/// a call needs, kept for later calls.
struct NoiseCache {
    rng: Mt19937,
    rows: Vec<f32>,
}

impl std::fmt::Debug for NoiseCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NoiseCache").field("cached_values", &self.rows.len()).finish()
    }
}

/// Where the source noise comes from.
#[derive(Debug)]
enum NoiseBuffer {
    /// Upstream's buffer rebuilt from the seed-0 MT19937 stream at this word offset (§10.3).
    Rebuilt(Box<Mutex<NoiseCache>>),
    /// An explicit buffer `(rows, width)` row-major (a parity case's `buffer.sine_waves`).
    Explicit(Vec<f32>),
}

/// Mel frames per parallel task of the source: one second of audio (24 000 samples of nine
/// harmonics), worth a task; calls of a second or less stay on one thread.
const FRAMES_PER_TASK: usize = 50;

/// One frame's share of the parity taps: its `(spf, harmonics)` sine waves and `spf` flags.
struct FrameTaps<'a> {
    sine_waves: &'a mut [f32],
    uv: &'a mut [f32],
}

/// What one source call produced. `sine_waves` is only kept when asked for (parity taps).
#[derive(Debug, Clone)]
pub struct SourceOutput {
    /// `(L, harmonics)` row-major: `sine·uv + noise`, when requested.
    pub sine_waves: Option<Vec<f32>>,
    /// Voiced flag per sample (0/1), when requested.
    pub uv: Option<Vec<f32>>,
    /// `tanh(l_linear(sine_waves))`, L samples.
    pub source: Vec<f32>,
}

#[derive(Debug)]
pub struct SourceModuleHnNsf {
    /// `l_linear.weight` (1, harmonics) and `.bias`.
    l_linear_weight: Vec<f32>,
    l_linear_bias: f32,
    harmonics: Harmonics,
    sampling_rate: f32,
    sine_amp: f32,
    noise_std: f32,
    voiced_threshold: f32,
    samples_per_frame: usize,
    noise: NoiseBuffer,
}

impl SourceModuleHnNsf {
    /// `w` is the `m_source` view; `noise_word_offset` places the uniform buffer in the seed-0
    /// stream (`noise::hift_sine_word_offset`).
    pub fn new(cfg: &HiftConfig, w: &Weights, noise_word_offset: u64) -> Result<Self> {
        let harmonics = cfg.nb_harmonics + 1;
        let l_linear_weight =
            w.get("l_linear.weight", &[1, harmonics])?.flatten_all()?.to_vec1::<f32>()?;
        let l_linear_bias = w.get("l_linear.bias", &[1])?.to_vec1::<f32>()?[0];
        let mut rng = Mt19937::new(0);
        rng.skip(noise_word_offset);
        Ok(Self {
            l_linear_weight,
            l_linear_bias,
            harmonics,
            sampling_rate: cfg.sampling_rate as f32,
            sine_amp: cfg.nsf_alpha as f32,
            noise_std: cfg.nsf_sigma as f32,
            voiced_threshold: cfg.nsf_voiced_threshold as f32,
            samples_per_frame: cfg.upsample_scale(),
            noise: NoiseBuffer::Rebuilt(Box::new(Mutex::new(NoiseCache { rng, rows: Vec::new() }))),
        })
    }

    pub fn harmonics(&self) -> Harmonics {
        self.harmonics
    }

    /// Replaces the rebuilt noise with an explicit `(rows, harmonics)` buffer.
    pub fn set_noise_buffer(&mut self, buffer: Vec<f32>) {
        self.noise = NoiseBuffer::Explicit(buffer);
    }

    /// Harmonic phases `Φ[i, h]` per frame, `(frames, harmonics)` row-major, upstream op order.
    pub fn phases(&self, f0: &[f32]) -> Vec<f32> {
        let hn = self.harmonics;
        let two_pi_scale = std::f32::consts::PI;
        let spf = self.samples_per_frame as f32;
        let mut acc = vec![0f64; hn];
        let mut out = Vec::with_capacity(f0.len() * hn);
        for &f in f0 {
            for (h, a) in acc.iter_mut().enumerate() {
                let x = f * (h + 1) as f32 / self.sampling_rate;
                let rad = x - x.floor();
                *a += f64::from(rad);
                out.push((*a as f32) * 2.0 * two_pi_scale * spf);
            }
        }
        out
    }

    /// The source for frame-rate `f0` (Hz): `L = 480·frames` samples.
    pub fn forward(&self, f0: &[f32], keep_taps: bool) -> Result<SourceOutput> {
        let len = f0.len() * self.samples_per_frame;
        match &self.noise {
            NoiseBuffer::Explicit(buf) => {
                if buf.len() < len * self.harmonics {
                    return Err(ModelError::InvalidInput(format!(
                        "source noise buffer has {} rows, the call needs {len}",
                        buf.len() / self.harmonics
                    )));
                }
                Ok(self.forward_with_noise(f0, &buf[..len * self.harmonics], keep_taps))
            }
            NoiseBuffer::Rebuilt(cache) => {
                if len > MAX_VOCODER_SAMPLES {
                    return Err(ModelError::InvalidInput(format!(
                        "{} mel frames need {len} samples of source noise; upstream's buffer \
                         holds {MAX_VOCODER_SAMPLES}",
                        f0.len()
                    )));
                }
                let mut cache = cache.lock().unwrap_or_else(|p| p.into_inner());
                let want = len * self.harmonics;
                if cache.rows.len() < want {
                    let extra = want - cache.rows.len();
                    let NoiseCache { rng, rows } = &mut *cache;
                    rows.extend((0..extra).map(|_| rng.next_uniform_f32()));
                }
                Ok(self.forward_with_noise(f0, &cache.rows[..want], keep_taps))
            }
        }
    }

    /// The source given the noise rows `(L, harmonics)`. Frames are independent once their
    /// phases are known (the cumulative sum runs first, in order), so without taps they run in
    /// parallel, `FRAMES_PER_TASK` a task: each sample's arithmetic is the serial loop's, so
    /// the bits do not depend on the split or the thread count.
    pub fn forward_with_noise(&self, f0: &[f32], noise: &[f32], keep_taps: bool) -> SourceOutput {
        use rayon::prelude::*;
        let (hn, spf) = (self.harmonics, self.samples_per_frame);
        let phases = self.phases(f0);
        let mut source = vec![0f32; f0.len() * spf];
        if !keep_taps {
            source.par_chunks_mut(spf * FRAMES_PER_TASK).enumerate().for_each(|(task, out)| {
                let first = task * FRAMES_PER_TASK;
                for (j, out) in out.chunks_exact_mut(spf).enumerate() {
                    let i = first + j;
                    let noise = &noise[i * spf * hn..(i + 1) * spf * hn];
                    self.frame(f0[i], &phases[i * hn..(i + 1) * hn], noise, out, None);
                }
            });
            return SourceOutput { sine_waves: None, uv: None, source };
        }
        let mut sine_waves = vec![0f32; f0.len() * spf * hn];
        let mut uv = vec![0f32; f0.len() * spf];
        for (i, &f) in f0.iter().enumerate() {
            let samples = i * spf..(i + 1) * spf;
            let taps = FrameTaps {
                sine_waves: &mut sine_waves[i * spf * hn..(i + 1) * spf * hn],
                uv: &mut uv[samples.clone()],
            };
            let noise = &noise[i * spf * hn..(i + 1) * spf * hn];
            self.frame(f, &phases[i * hn..(i + 1) * hn], noise, &mut source[samples], Some(taps));
        }
        SourceOutput { sine_waves: Some(sine_waves), uv: Some(uv), source }
    }

    /// One frame's `spf` source samples from its F0, its harmonics' phases and its noise rows
    /// `(spf, harmonics)`, optionally with its taps.
    fn frame(
        &self,
        f0: f32,
        phases: &[f32],
        noise: &[f32],
        out: &mut [f32],
        mut taps: Option<FrameTaps<'_>>,
    ) {
        let hn = self.harmonics;
        let sines: Vec<f32> = phases.iter().map(|p| self.sine_amp * p.sin()).collect();
        let uv = if f0 > self.voiced_threshold { 1f32 } else { 0f32 };
        let amp = uv * self.noise_std + (1.0 - uv) * (self.sine_amp / 3.0);
        let mut e = vec![0f32; hn];
        for (n, sample) in out.iter_mut().enumerate() {
            let u = &noise[n * hn..(n + 1) * hn];
            let mut acc = 0f32;
            for h in 0..hn {
                e[h] = sines[h] * uv + amp * u[h];
                acc += e[h] * self.l_linear_weight[h];
            }
            *sample = (acc + self.l_linear_bias).tanh();
            if let Some(t) = taps.as_mut() {
                t.sine_waves[n * hn..(n + 1) * hn].copy_from_slice(&e);
                t.uv[n] = uv;
            }
        }
    }
}
