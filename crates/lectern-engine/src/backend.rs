//! The backend the engine drives — the three model stages behind one small trait — and a
//! deterministic [`FakeBackend`] that is honest about the structure of the real ones.
//!
//! Shapes and units: speech tokens at 25 Hz; a [`Mel`] is `frames × 80` values, frame-major,
//! exactly 2 frames per token; the vocoder gives exactly 480 samples per frame at 24 kHz, so a
//! segment of n tokens is exactly n × 960 samples.

use std::thread::sleep;
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

use super::protocol::{LaneMemory, MinLenRule, Mode, Precision, SegmentId, paced_frames};
use super::telemetry::kv_bytes;
use super::{EngineError, Result};
use lectern_model::config::{N_MELS, SAMPLES_PER_FRAME, SPEECH_TOKEN_SIZE, TOKEN_MEL_RATIO};

/// One LM lane: a segment to decode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LmJob {
    pub segment_id: SegmentId,
    /// Normalised text as the LM receives it.
    pub text: String,
    /// The segment's own sampling seed: its tokens depend on nothing else but the text,
    /// the voice and the parameters.
    pub seed: u64,
    pub min_len_rule: MinLenRule,
    /// The voice whose prompt leads the lane (a name the backend holds).
    pub voice: String,
    /// How the prompt is assembled (zero-shot, instruct, cross-lingual).
    pub mode: Mode,
}

/// Mel frames, frame-major: `data[f * 80 + bin]`, `data.len() == frames * 80`.
#[derive(Debug, Clone, PartialEq)]
pub struct Mel {
    pub frames: usize,
    pub data: Vec<f32>, // (frames, 80)
}

impl Mel {
    /// A mel from frame-major data; errors unless `data.len() == frames × 80`.
    pub fn new(frames: usize, data: Vec<f32>) -> Result<Self> {
        if data.len() != frames * N_MELS {
            return Err(EngineError::Backend(format!(
                "mel of {frames} frames needs {} values, got {}",
                frames * N_MELS,
                data.len()
            )));
        }
        Ok(Self { frames, data })
    }

    /// The 80 bins of frame `f`.
    pub fn frame(&self, f: usize) -> &[f32] {
        &self.data[f * N_MELS..(f + 1) * N_MELS]
    }

    /// Frames `range` of this mel.
    pub fn slice(&self, range: std::ops::Range<usize>) -> Mel {
        let data = self.data[range.start * N_MELS..range.end * N_MELS].to_vec();
        Mel { frames: range.len(), data }
    }

    /// This mel spoken at `pace`: resampled in time to [`paced_frames`] frames by linear
    /// interpolation, exactly as upstream's `token2wav` does for its `speed`
    /// (`F.interpolate(mel, size=int(frames / speed), mode="linear")`, `align_corners=False`):
    /// output frame `i` reads the input at `max((i + ½)·in/out − ½, 0)`, between its two
    /// neighbours (the last frame repeats past the end), in f32 as torch computes it.
    #[must_use]
    pub fn paced(&self, pace: f64) -> Mel {
        let out = paced_frames(self.frames, pace);
        if out == self.frames || self.frames == 0 {
            return self.clone();
        }
        let scale = self.frames as f32 / out as f32;
        let mut data = Vec::with_capacity(out * N_MELS);
        for i in 0..out {
            let at = (scale * (i as f32 + 0.5) - 0.5).max(0.0);
            let i0 = (at as usize).min(self.frames - 1);
            let i1 = if i0 + 1 < self.frames { i0 + 1 } else { i0 };
            let w1 = at - i0 as f32;
            let w0 = 1.0 - w1;
            let (a, b) = (self.frame(i0), self.frame(i1));
            data.extend(a.iter().zip(b).map(|(x, y)| w0 * x + w1 * y));
        }
        Mel { frames: out, data }
    }

    /// Mels joined in time.
    pub fn concat(parts: &[Mel]) -> Mel {
        let frames = parts.iter().map(|m| m.frames).sum();
        Mel { frames, data: parts.iter().flat_map(|m| m.data.iter().copied()).collect() }
    }
}

/// What a backend is, as written into take records.
#[derive(Debug, Clone, PartialEq)]
pub struct BackendInfo {
    pub model_id: String,
    /// e.g. "cpu", "cuda:0", "metal".
    pub backend: String,
    /// Seeded random weights (benchmarks, fixtures) rather than a real checkpoint.
    pub is_tiny_random: bool,
    /// The flow noise buffer, e.g. "mt19937-seed0" or a file path.
    pub noise_source: String,
    /// The voices it holds, by name, the default first; empty for a backend that takes any
    /// name (the fake).
    pub voices: Vec<String>,
    pub cfg_rate: f64,
    /// LM weight precision actually loaded.
    pub precision: Precision,
    /// How the flow's large matmuls run: "f32", "tf32x3" (three TF32 tensor-core products
    /// per f32 product, within the fixture tolerances) or "bf16" (CUDA's default), as
    /// `FlowMatmul::label` names them.
    pub flow_matmul: String,
}

/// The LM stage alone, as the engine drives it from a thread of its own so that the next
/// batch decodes while the current group is in the flow and the vocoder (see
/// [`SynthBackend::lm_stage`]).
pub trait LmStage {
    /// [`SynthBackend::lm_generate`] (same contract), also calling `done(job index, tokens)`
    /// the moment each lane's tokens are final, so its flow can start while the other lanes
    /// decode.
    fn lm_generate_streaming(
        &mut self,
        jobs: &[LmJob],
        done: &mut dyn FnMut(usize, &[u32]),
    ) -> Result<Vec<Vec<u32>>>;
    /// Waits for this stage's queued device work only (on CUDA, the LM's own stream).
    fn synchronize(&self) -> Result<()>;
    /// KV-cache memory of the lanes of the last batch, by arithmetic.
    fn kv_lane_memory(&self) -> Vec<LaneMemory>;
}

/// The three model stages as the engine uses them. Called only from the engine thread.
///
/// Contract (the engine checks the lengths and fails the group otherwise):
/// - `lm_generate` decodes the jobs together (one lane each, each with its own voice and mode)
///   and returns one token list per job, in order. A lane's tokens depend only on (text, voice,
///   mode, seed, params), never on its lane-mates or the batch size.
/// - `flow_group` runs one flow call over the concatenation of the group's tokens, all of one
///   voice, and returns the group's mel: exactly 2 × total tokens frames. The mel of a segment
///   depends on its group (attention across segments, noise offset); a group of one must equal
///   upstream.
/// - `vocode` turns a mel into exactly 480 × frames samples at 24 kHz.
/// - `synchronize` waits for queued device work, so a clock read after it is honest.
pub trait SynthBackend {
    fn lm_generate(&mut self, jobs: &[LmJob]) -> Result<Vec<Vec<u32>>>;
    fn flow_group(&mut self, voice: &str, tokens: &[Vec<u32>], nfe: usize) -> Result<Mel>;
    fn vocode(&mut self, mel: &Mel) -> Result<Vec<f32>>;
    fn synchronize(&self) -> Result<()>;
    /// KV-cache memory of the lanes of the last LM batch, by arithmetic.
    fn kv_lane_memory(&self) -> Vec<LaneMemory>;
    /// Device memory in use, where the backend can report it.
    fn device_memory_bytes(&self) -> Option<u64> {
        None
    }
    fn describe(&self) -> BackendInfo;
    /// A handle on the LM that may run on another thread while `flow_group` and `vocode` run
    /// here, without either waiting for the other (on CUDA: its own stream). `None` (the
    /// default) when the stages share what they run on; the engine then decodes inline.
    /// Overlap changes no output: only the LM consumes randomness, each lane from its own seed.
    fn lm_stage(&mut self) -> Option<Box<dyn LmStage + Send>> {
        None
    }
}

/// Optional sleeps of the fake backend, to give the telemetry something to measure.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct FakeDelays {
    /// Per LM decode step (one step serves all lanes, as batched decoding does).
    pub lm_per_step: Duration,
    /// Per mel frame per Euler step (NFE).
    pub flow_per_frame_step: Duration,
    /// Per mel frame.
    pub vocoder_per_frame: Duration,
}

/// KV-cache shape of the fake LM (the real 0.5B shape by default).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FakeKvShape {
    pub kv_heads: usize,
    pub head_dim: usize,
    pub layers: usize,
    pub bytes_per_value: usize,
    /// Positions taken by the voice prompt (text + speech tokens) before the segment's text.
    pub prompt_positions: usize,
    /// Capacity grows in blocks of this many positions.
    pub capacity_block: usize,
}

impl Default for FakeKvShape {
    fn default() -> Self {
        Self {
            kv_heads: 2,
            head_dim: 64,
            layers: 24,
            bytes_per_value: 4,
            prompt_positions: 150,
            capacity_block: 256,
        }
    }
}

/// A deterministic stand-in for the model:
/// - tokens come from a ChaCha20 RNG seeded by (seed, text hash), with a length derived from
///   the text (plus RNG jitter), so they depend on nothing else;
/// - the mel is a function of the group's concatenated tokens: each frame mixes its neighbours
///   across segment boundaries and adds noise indexed by the frame's position in the group, so
///   group composition visibly matters, as in the real flow;
/// - the vocoder maps each frame to 480 samples.
#[derive(Debug, Clone, Default)]
pub struct FakeBackend {
    pub delays: FakeDelays,
    pub kv: FakeKvShape,
    /// Hand the LM out as a stage of its own ([`SynthBackend::lm_stage`]), so the engine
    /// overlaps it with the flow and the vocoder as it does a GPU backend's.
    pub detached_lm: bool,
    lanes: Vec<LaneMemory>,
}

/// The fake LM as a stage of its own thread (see [`FakeBackend::detached_lm`]).
struct FakeLm(FakeBackend);

impl LmStage for FakeLm {
    /// Like batched decoding: the shortest lane is done first, each after its own steps.
    fn lm_generate_streaming(
        &mut self,
        jobs: &[LmJob],
        done: &mut dyn FnMut(usize, &[u32]),
    ) -> Result<Vec<Vec<u32>>> {
        let out: Vec<Vec<u32>> = jobs.iter().map(FakeBackend::tokens_for).collect();
        let mut order: Vec<usize> = (0..out.len()).collect();
        order.sort_by_key(|&i| out[i].len());
        let mut steps = 0;
        for i in order {
            sleep(self.0.delays.lm_per_step * (out[i].len() - steps) as u32);
            steps = out[i].len();
            done(i, &out[i]);
        }
        self.0.record_lanes(jobs, &out);
        Ok(out)
    }
    fn synchronize(&self) -> Result<()> {
        Ok(())
    }
    fn kv_lane_memory(&self) -> Vec<LaneMemory> {
        self.0.lanes.clone()
    }
}

impl FakeBackend {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn with_delays(delays: FakeDelays) -> Self {
        Self { delays, ..Self::default() }
    }

    /// This backend with its LM handed out as a stage of its own (see `detached_lm`).
    pub fn detached(self) -> Self {
        Self { detached_lm: true, ..self }
    }

    /// Text positions the fake LM puts in a lane's KV cache: one per character.
    pub fn text_positions(text: &str) -> usize {
        text.chars().count()
    }

    /// Tokens from (seed, text, voice, mode) alone: each mode prompts the LM differently, so
    /// each gives other tokens, as the real LM's do.
    fn tokens_for(job: &LmJob) -> Vec<u32> {
        let mut seed = [0u8; 32];
        seed[..8].copy_from_slice(&job.seed.to_le_bytes());
        seed[8..16].copy_from_slice(&fnv1a(job.text.as_bytes()).to_le_bytes());
        seed[16..24].copy_from_slice(&fnv1a(job.voice.as_bytes()).to_le_bytes());
        let mode = match &job.mode {
            Mode::ZeroShot => 0,
            Mode::Instruct(i) => fnv1a(i.as_bytes()) | 1,
            Mode::CrossLingual => 2,
        };
        seed[24..].copy_from_slice(&u64::to_le_bytes(mode));
        let mut rng = ChaCha20Rng::from_seed(seed);
        let n_tokens = 3 + 2 * Self::text_positions(&job.text) + rng.gen_range(0..4);
        (0..n_tokens).map(|_| rng.gen_range(0..SPEECH_TOKEN_SIZE as u32)).collect()
    }

    fn record_lanes(&mut self, jobs: &[LmJob], out: &[Vec<u32>]) {
        self.lanes = jobs
            .iter()
            .zip(out)
            .enumerate()
            .map(|(lane, (job, toks))| self.lane_memory(lane, &job.text, toks.len()))
            .collect();
    }

    fn lane_memory(&self, lane: usize, text: &str, n_tokens: usize) -> LaneMemory {
        let k = &self.kv;
        let used = k.prompt_positions + Self::text_positions(text) + n_tokens;
        let capacity = used.div_ceil(k.capacity_block) * k.capacity_block;
        let bytes = |pos| kv_bytes(k.kv_heads, pos, k.head_dim, k.bytes_per_value, k.layers);
        LaneMemory { lane, used_bytes: bytes(used), capacity_bytes: bytes(capacity) }
    }
}

impl SynthBackend for FakeBackend {
    fn lm_generate(&mut self, jobs: &[LmJob]) -> Result<Vec<Vec<u32>>> {
        let out: Vec<Vec<u32>> = jobs.iter().map(Self::tokens_for).collect();
        let steps = out.iter().map(Vec::len).max().unwrap_or(0);
        sleep(self.delays.lm_per_step * steps as u32);
        self.record_lanes(jobs, &out);
        Ok(out)
    }

    fn flow_group(&mut self, voice: &str, tokens: &[Vec<u32>], nfe: usize) -> Result<Mel> {
        if nfe == 0 {
            return Err(EngineError::InvalidInput("NFE must be at least 1".into()));
        }
        let all: Vec<u32> = tokens.iter().flatten().copied().collect();
        let frames = all.len() * TOKEN_MEL_RATIO;
        let voice_h = fnv1a(voice.as_bytes());
        let value = |f: usize, bin: usize| {
            unit(splitmix(voice_h ^ (u64::from(all[f / TOKEN_MEL_RATIO]) << 8) ^ bin as u64))
        };
        let step_bias = 0.05 / nfe as f32;
        let mut data = Vec::with_capacity(frames * N_MELS);
        for f in 0..frames {
            let prev = f.saturating_sub(1);
            let next = (f + 1).min(frames - 1);
            for bin in 0..N_MELS {
                let noise = unit(splitmix(((f as u64) << 16) ^ bin as u64 ^ 0xA5A5));
                let mix = 0.5 * value(f, bin) + 0.25 * value(prev, bin) + 0.25 * value(next, bin);
                data.push(mix + 0.1 * noise + step_bias);
            }
        }
        sleep(self.delays.flow_per_frame_step * (frames * nfe) as u32);
        Mel::new(frames, data)
    }

    fn vocode(&mut self, mel: &Mel) -> Result<Vec<f32>> {
        let mut out = Vec::with_capacity(mel.frames * SAMPLES_PER_FRAME);
        for f in 0..mel.frames {
            let bins = mel.frame(f);
            let level = (bins.iter().sum::<f32>() / N_MELS as f32).tanh();
            let pitch = 1.0 + (bins[0].abs() * 8.0).floor();
            for i in 0..SAMPLES_PER_FRAME {
                let phase = std::f32::consts::TAU * pitch * i as f32 / SAMPLES_PER_FRAME as f32;
                out.push(0.5 * level * phase.sin() + 0.1 * bins[i % N_MELS]);
            }
        }
        sleep(self.delays.vocoder_per_frame * mel.frames as u32);
        Ok(out)
    }

    fn synchronize(&self) -> Result<()> {
        Ok(())
    }

    fn kv_lane_memory(&self) -> Vec<LaneMemory> {
        self.lanes.clone()
    }

    fn describe(&self) -> BackendInfo {
        BackendInfo {
            model_id: "fake".into(),
            backend: "cpu".into(),
            is_tiny_random: true,
            noise_source: "fake-splitmix".into(),
            voices: Vec::new(),
            cfg_rate: 0.7,
            precision: Precision::F32,
            flow_matmul: "f32".into(),
        }
    }

    fn lm_stage(&mut self) -> Option<Box<dyn LmStage + Send>> {
        self.detached_lm.then(|| Box::new(FakeLm(self.clone())) as Box<dyn LmStage + Send>)
    }
}

use lectern_text::hashing::{splitmix64 as splitmix, stable_hash as fnv1a};

/// Maps a hash to [-1, 1).
fn unit(h: u64) -> f32 {
    (h >> 40) as f32 / (1u64 << 23) as f32 - 1.0
}
