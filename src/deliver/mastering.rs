//! Mastering of the 24 kHz master for delivery: pure signal processing, no files.
//!
//! A delivery track is built from takes and pauses (see `super::plan`); this module owns the
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

/// What mastering aims at and what the delivery must meet.
#[derive(Debug, Clone, PartialEq)]
pub struct MasteringTargets {
    /// RMS the gain-and-limit rounds aim at, dBFS.
    pub rms_db: f64,
    /// The limiter's first ceiling, dBFS (lowered per file when the encoder overshoots).
    pub first_ceiling_db: f64,
    /// Highest true peak accepted after encoding, dBTP.
    pub true_peak_max_db: f64,
    /// Highest sample peak accepted after encoding, dBFS.
    pub peak_max_db: f64,
    /// Room tone at the head and the tail of each file, seconds.
    pub head_s: f64,
    pub tail_s: f64,
    /// Sample rate of the delivery files, Hz.
    pub rate_hz: u32,
    /// MP3 bitrate, kbps (constant).
    pub mp3_kbps: u32,
}

impl MasteringTargets {
    /// ACX's: RMS in the middle of its −23…−18 dB window, peaks under −3 dB with room for the
    /// encoder's overshoot, 0.75 s head and 2.5 s tail (ACX: 0.5–1 and 1–5), 44.1 kHz,
    /// 192 kbps CBR.
    #[must_use]
    pub fn acx() -> Self {
        Self {
            rms_db: -20.0,
            first_ceiling_db: -4.0,
            true_peak_max_db: -3.0,
            peak_max_db: -3.0,
            head_s: 0.75,
            tail_s: 2.5,
            rate_hz: DELIVERY_RATE_HZ,
            mp3_kbps: 192,
        }
    }

    /// Samples of room tone at the head of each file.
    #[must_use]
    pub fn head_samples(&self) -> usize {
        (self.head_s * f64::from(self.rate_hz)) as usize
    }

    /// Samples of room tone at the tail of each file.
    #[must_use]
    pub fn tail_samples(&self) -> usize {
        (self.tail_s * f64::from(self.rate_hz)) as usize
    }
}

impl Default for MasteringTargets {
    fn default() -> Self {
        Self::acx()
    }
}

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

/// Input chunk of the resampler, samples: [`StreamResampler`] gives the same samples as
/// [`resample`] only with the same chunks.
const RESAMPLE_CHUNK: usize = 1024;

/// Resamples mono `input` from `from_hz` to `to_hz` with rubato's synchronous FFT resampler;
/// the output has `ceil(n · to / from)` samples and no added delay.
pub fn resample(input: &[f32], from_hz: u32, to_hz: u32) -> Result<Vec<f32>, String> {
    if from_hz == to_hz {
        return Ok(input.to_vec());
    }
    const CHUNK_IN: usize = RESAMPLE_CHUNK;
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

/// [`resample`] fed in pieces: the same rubato resampler given the same 1024-sample chunks
/// of the whole signal (its state carried across pieces), so the output is the same samples
/// as resampling the joined input at once, while holding one chunk.
pub struct StreamResampler {
    /// `None` when the rates are equal (samples pass through).
    fft: Option<FftFixedIn<f32>>,
    /// Input waiting for a full chunk.
    pending: Vec<f32>,
    /// Output samples of the resampler's delay still to drop.
    delay_left: usize,
    /// The resampler's delay, output samples.
    delay: usize,
    /// Input samples taken, and output samples the resampler gave (the delay counted).
    consumed: u64,
    produced: u64,
    from_hz: u32,
    to_hz: u32,
}

impl StreamResampler {
    pub fn new(from_hz: u32, to_hz: u32) -> Result<Self, String> {
        let fft = if from_hz == to_hz {
            None
        } else {
            let r = FftFixedIn::<f32>::new(from_hz as usize, to_hz as usize, RESAMPLE_CHUNK, 1, 1)
                .map_err(|e| format!("resampler: {e}"))?;
            Some(r)
        };
        let delay = fft.as_ref().map_or(0, Resampler::output_delay);
        Ok(Self {
            fft,
            pending: Vec::with_capacity(RESAMPLE_CHUNK),
            delay_left: delay,
            delay,
            consumed: 0,
            produced: 0,
            from_hz,
            to_hz,
        })
    }

    /// Takes `input`; appends the output it completes to `out`.
    pub fn push(&mut self, mut input: &[f32], out: &mut Vec<f32>) -> Result<(), String> {
        self.consumed += input.len() as u64;
        let Some(mut fft) = self.fft.take() else {
            out.extend_from_slice(input);
            return Ok(());
        };
        let mut result = Ok(());
        while !input.is_empty() && result.is_ok() {
            let need = fft.input_frames_next();
            let take = (need - self.pending.len()).min(input.len());
            self.pending.extend_from_slice(&input[..take]);
            input = &input[take..];
            if self.pending.len() == need {
                let chunk = fft.process(&[&self.pending], None);
                self.pending.clear();
                result = chunk
                    .map(|c| self.emit(&c[0], u64::MAX, out))
                    .map_err(|e| format!("resampler: {e}"));
            }
        }
        self.fft = Some(fft);
        result
    }

    /// Resamples what is pending and the resampler's tail, up to `ceil(n · to / from)`
    /// samples in all for `n` samples in, as [`resample`] does.
    pub fn finish(mut self, out: &mut Vec<f32>) -> Result<(), String> {
        let want = (self.consumed * u64::from(self.to_hz)).div_ceil(u64::from(self.from_hz));
        let Some(mut fft) = self.fft.take() else { return Ok(()) };
        let err = |e: rubato::ResampleError| format!("resampler: {e}");
        let end = want + self.delay as u64;
        if self.produced < end && !self.pending.is_empty() {
            let chunk = fft.process_partial(Some(&[&self.pending]), None).map_err(err)?;
            self.emit(&chunk[0], want, out);
        }
        while self.produced < end {
            let chunk = fft.process_partial::<&[f32]>(None, None).map_err(err)?;
            self.emit(&chunk[0], want, out);
        }
        Ok(())
    }

    /// Appends `chunk` after the delay, without passing `want` samples out in all.
    fn emit(&mut self, chunk: &[f32], want: u64, out: &mut Vec<f32>) {
        let given_before = self.produced.saturating_sub(self.delay as u64);
        self.produced += chunk.len() as u64;
        let skip = self.delay_left.min(chunk.len());
        self.delay_left -= skip;
        let room = want.saturating_sub(given_before) as usize;
        let rest = &chunk[skip..];
        out.extend_from_slice(&rest[..rest.len().min(room)]);
    }
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

/// [`limit`] fed in pieces: the same gains, sample for sample, holding only the look-ahead
/// window. Output lags input by the window; [`StreamLimiter::finish`] gives the rest.
pub struct StreamLimiter {
    ceiling: f32,
    window: usize,
    release: f32,
    /// Input samples not yet given out (at most one window).
    waiting: std::collections::VecDeque<f32>,
    /// Sliding minimum of the needed gains ahead: (sample index, needed gain), rising.
    minima: std::collections::VecDeque<(u64, f32)>,
    /// Index of the next sample in, and of the next sample out.
    next_in: u64,
    next_out: u64,
    /// The released gain, and the last window of it with its running sum.
    gain: f32,
    held: std::collections::VecDeque<f32>,
    sum: f64,
}

impl StreamLimiter {
    /// A limiter holding peaks under `ceiling` (linear) at `rate_hz`.
    #[must_use]
    pub fn new(ceiling: f32, rate_hz: u32) -> Self {
        let window = ((rate_hz * LIMITER_LOOKAHEAD_MS / 1000) as usize).max(1);
        let release =
            1.0 - (-1.0 / (f64::from(rate_hz) * f64::from(LIMITER_RELEASE_MS) / 1000.0)).exp();
        Self {
            ceiling,
            window,
            release: release as f32,
            waiting: std::collections::VecDeque::with_capacity(window + 1),
            minima: std::collections::VecDeque::with_capacity(window + 1),
            next_in: 0,
            next_out: 0,
            gain: 1.0,
            held: std::collections::VecDeque::with_capacity(window + 1),
            sum: 0.0,
        }
    }

    /// Takes `input`; appends every sample whose look-ahead window is complete to `out`.
    pub fn push(&mut self, input: &[f32], out: &mut Vec<f32>) {
        for &x in input {
            let needed = if x.abs() > self.ceiling { self.ceiling / x.abs() } else { 1.0 };
            while self.minima.back().is_some_and(|&(_, g)| g >= needed) {
                self.minima.pop_back();
            }
            self.minima.push_back((self.next_in, needed));
            self.waiting.push_back(x);
            self.next_in += 1;
            if self.next_in >= self.window as u64 {
                out.push(self.next());
            }
        }
    }

    /// Appends the samples still waiting (their window cut at the end of the signal).
    pub fn finish(&mut self, out: &mut Vec<f32>) {
        while !self.waiting.is_empty() {
            out.push(self.next());
        }
    }

    /// The next sample out: its look-ahead minimum released, averaged over the window as
    /// [`limit`] does (the same operations in the same order, so the same bits).
    fn next(&mut self) -> f32 {
        let i = self.next_out;
        self.next_out += 1;
        while self.minima.front().is_some_and(|&(k, _)| k < i) {
            self.minima.pop_front();
        }
        let ahead_min = self.minima.front().map_or(1.0, |&(_, g)| g);
        self.gain = ahead_min.min(self.gain + (1.0 - self.gain) * self.release);
        self.sum += f64::from(self.gain);
        self.held.push_back(self.gain);
        if self.held.len() > self.window {
            if let Some(old) = self.held.pop_front() {
                self.sum -= f64::from(old);
            }
        }
        let count = (i as usize + 1).min(self.window);
        let x = self.waiting.pop_front().unwrap_or(0.0);
        let mut y = x * ((self.sum / count as f64) as f32).min(1.0);
        if y.abs() > self.ceiling {
            y = self.ceiling.copysign(y);
        }
        y
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

impl RoomTone {
    /// The bed of [`RoomTone::bed`] sample by sample, for a track of `len` samples.
    #[must_use]
    pub fn stream(&self, len: usize, track: u64) -> BedStream<'_> {
        match self {
            Self::Noise { level_db, seed } => {
                let seed = seed ^ track.wrapping_mul(0x9E37_79B9_7F4A_7C15);
                BedStream::Noise(Box::new(NoiseStream::new(len, *level_db, seed)))
            }
            Self::Recording(tone) => {
                let fade = LOOP_CROSSFADE.min(tone.len() / 4);
                BedStream::Loop { tone, fade, step: tone.len() - fade, pos: 0 }
            }
        }
    }
}

/// A room-tone bed given sample by sample (see [`RoomTone::stream`]).
pub enum BedStream<'a> {
    /// Boxed: the generator's state is large beside a loop's few fields.
    Noise(Box<NoiseStream>),
    /// A recording looped as `looped` loops it: its crossfade and the step between
    /// repeats, samples, and the position of the next sample.
    Loop { tone: &'a [f32], fade: usize, step: usize, pos: usize },
}

impl BedStream<'_> {
    /// Adds the next `x.len()` samples of the bed to `x`.
    pub fn add_under(&mut self, x: &mut [f32]) {
        match self {
            Self::Noise(noise) => x.iter_mut().for_each(|s| *s += noise.next_sample()),
            Self::Loop { tone, fade, step, pos } => {
                for s in x {
                    *s += looped_at(tone, *fade, *step, *pos);
                    *pos += 1;
                }
            }
        }
    }
}

/// The seeded noise of `noise_bed`, sample by sample: the generator runs once over the
/// whole length to measure its RMS, then again from its seed, scaled.
pub struct NoiseStream {
    rng: rand_chacha::ChaCha8Rng,
    /// The low-pass filter's coefficient and state.
    a: f32,
    y: f32,
    /// The gain to the level (none for a bed of no samples).
    gain: Option<f32>,
}

impl NoiseStream {
    fn new(len: usize, level_db: f64, seed: u64) -> Self {
        let a = (-2.0 * std::f64::consts::PI * 3000.0 / f64::from(DELIVERY_RATE_HZ)).exp() as f32;
        let mut probe =
            Self { rng: rand_chacha::ChaCha8Rng::seed_from_u64(seed), a, y: 0.0, gain: None };
        let mut sum = 0f64;
        for _ in 0..len {
            let s = f64::from(probe.next_sample());
            sum += s * s;
        }
        // As `gain_to_rms` on the whole bed: no gain where its level is not finite.
        let now = if len == 0 { f64::NEG_INFINITY } else { gain_to_db((sum / len as f64).sqrt()) };
        let gain = now.is_finite().then(|| db_to_gain(level_db - now) as f32);
        Self { rng: rand_chacha::ChaCha8Rng::seed_from_u64(seed), a, y: 0.0, gain }
    }

    fn next_sample(&mut self) -> f32 {
        let white: f32 = (0..4).map(|_| self.rng.r#gen::<f32>() - 0.5).sum();
        self.y = self.a * self.y + (1.0 - self.a) * white;
        self.gain.map_or(self.y, |g| self.y * g)
    }
}

/// Sample `pos` of [`looped`]: the repeats of `tone` (each `step` after the last) that cover
/// it, weighted by their crossfades, added in the order `looped` adds them.
fn looped_at(tone: &[f32], fade: usize, step: usize, pos: usize) -> f32 {
    let step = step.max(1);
    let first = if pos + 1 > tone.len() { (pos + 1 - tone.len()).div_ceil(step) } else { 0 };
    let mut acc = 0f32;
    for k in first..=pos / step {
        let start = k * step;
        let i = pos - start;
        let w_in = if start > 0 && i < fade { i as f32 / fade as f32 } else { 1.0 };
        let w_out =
            if i >= tone.len() - fade { (tone.len() - i) as f32 / fade as f32 } else { 1.0 };
        acc += tone[i] * w_in.min(w_out);
    }
    acc
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

    /// A signal with speech-like bursts, clicks and silences (deterministic).
    fn varied(n: usize, seed: u32) -> Vec<f32> {
        let mut next =
            lectern_test_support::signals::xorshift_noise(seed.wrapping_mul(2_654_435_761).max(1));
        (0..n)
            .map(|i| {
                let noise = next() * 0.05;
                let burst = if (i / 3000) % 4 == 3 { 0.0 } else { 1.0 };
                let click = if i % 1777 < 2 { 0.95 } else { 0.0 };
                burst * (0.4 * (i as f32 * 0.031).sin() + noise) + click
            })
            .collect()
    }

    /// Pieces of `x` of sizes that vary (1 sample, odd sizes, large blocks).
    fn pieces(x: &[f32]) -> Vec<&[f32]> {
        let sizes = [1, 7, 1023, 1024, 1025, 5000, 3, 20_000];
        let mut out = Vec::new();
        let mut at = 0;
        for k in 0.. {
            if at >= x.len() {
                break;
            }
            let n = sizes[k % sizes.len()].min(x.len() - at);
            out.push(&x[at..at + n]);
            at += n;
        }
        out
    }

    #[test]
    fn streamed_resampling_is_the_whole_signal_resampled() {
        for (n, from, to) in [
            (0, 24_000, 44_100),
            (1, 24_000, 44_100),
            (1024, 24_000, 44_100),
            (50_001, 24_000, 44_100),
            (30_000, 48_000, 44_100),
            (777, 44_100, 44_100),
        ] {
            let x = varied(n, n as u32 + 1);
            let whole = resample(&x, from, to).unwrap();
            let mut r = StreamResampler::new(from, to).unwrap();
            let mut got = Vec::new();
            for p in pieces(&x) {
                r.push(p, &mut got).unwrap();
            }
            r.finish(&mut got).unwrap();
            assert_eq!(got.len(), whole.len(), "{n} {from}→{to}");
            assert!(got.iter().zip(&whole).all(|(a, b)| a.to_bits() == b.to_bits()), "{n}");
        }
    }

    #[test]
    fn the_streamed_limiter_is_the_whole_buffer_limiter() {
        for (n, gain, ceiling_db) in [
            (0, 1.0, -4.0),
            (50, 3.0, -4.0),
            (100_000, 1.0, -4.0),
            (100_000, 4.0, -6.0),
            (30_000, 0.1, -4.0),
        ] {
            let x: Vec<f32> = varied(n, 9).iter().map(|s| s * gain).collect();
            let ceiling = db_to_gain(ceiling_db) as f32;
            let mut whole = x.clone();
            limit(&mut whole, ceiling, 44_100);
            let mut l = StreamLimiter::new(ceiling, 44_100);
            let mut got = Vec::new();
            for p in pieces(&x) {
                l.push(p, &mut got);
            }
            l.finish(&mut got);
            assert_eq!(got.len(), whole.len());
            assert!(got.iter().zip(&whole).all(|(a, b)| a.to_bits() == b.to_bits()), "{n}");
        }
    }

    #[test]
    fn streamed_beds_are_the_whole_beds() {
        let tone = varied(9_000, 3).iter().map(|s| s * 0.001).collect::<Vec<_>>();
        for bed in [RoomTone::Noise { level_db: -70.0, seed: 5 }, RoomTone::Recording(tone)] {
            for len in [0, 1, 20_000, 70_001] {
                let whole = bed.bed(len, 3);
                let mut x = vec![0.25f32; len];
                let mut stream = bed.stream(len, 3);
                for p in x.chunks_mut(4_097) {
                    stream.add_under(p);
                }
                let want: Vec<f32> = whole.iter().map(|b| 0.25 + b).collect();
                assert!(x.iter().zip(&want).all(|(a, b)| a.to_bits() == b.to_bits()), "{len}");
            }
        }
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
