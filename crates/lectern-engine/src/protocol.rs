//! The engine's protocol: commands in, events out. These are the only engine types the UI and
//! the store import; everything crosses threads by value over channels.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use lectern_model::config::{SAMPLES_PER_FRAME, TOKEN_MEL_RATIO};

/// Stable id of a manuscript segment (assigned by the caller; survives re-segmentation when
/// the text is unchanged).
pub type SegmentId = u64;

/// Id of one take of a segment, unique within an engine run.
pub type TakeId = u64;

/// LM weight precision: the model's own type, under the name the engine's settings use.
pub use lectern_model::lm::LmPrecision as Precision;

/// Which stop ids the minimum-length guard blocks (spec §6.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum MinLenRule {
    /// Upstream exactly: only id 6561 is blocked, so the minimum is not enforced.
    #[default]
    Upstream,
    /// The intended rule: every stop id is blocked below min_len.
    AllStopIds,
}

/// Parameters that shape a render; live-adjustable, applied at the next group boundary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RenderParams {
    /// Flow Euler steps (NFE).
    pub nfe: usize,
    /// Target generated mel frames per flow group (0 = one segment per group).
    pub group_target_frames: usize,
    /// Max LM lanes decoded together.
    pub lanes: usize,
    pub precision: Precision,
    pub min_len_rule: MinLenRule,
    /// Decode the next LM batch on a thread of its own while the current group is in the flow
    /// and the vocoder, where the backend offers it ([`super::SynthBackend::lm_stage`]). Fixed
    /// when the engine starts; it changes no output, only when work happens. (Defaults to on
    /// in settings saved before it existed.)
    #[serde(default = "overlap_default")]
    pub overlap: bool,
}

fn plain_f32() -> String {
    "f32".into()
}

fn overlap_default() -> bool {
    true
}

impl RenderParams {
    /// The lanes a render decodes together unless told, by device: on CUDA more, since a long
    /// book renders faster with them for a little more device memory (docs/benchmarks.md,
    /// "H100, issue 50"); elsewhere [`Self::default`]'s, the CPU's cores being the flow's too.
    #[must_use]
    pub fn default_lanes(cuda: bool) -> usize {
        /// A decode step's batch on CUDA: the most the settings allow.
        const CUDA_LANES: usize = 32;
        if cuda { CUDA_LANES } else { Self::default().lanes }
    }
}

impl Default for RenderParams {
    fn default() -> Self {
        Self {
            nfe: 10,
            group_target_frames: 2000,
            lanes: 8,
            precision: Precision::F32,
            min_len_rule: MinLenRule::Upstream,
            overlap: overlap_default(),
        }
    }
}

/// One segment to synthesise.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SegmentSpec {
    pub id: SegmentId,
    /// Normalised text as the LM receives it.
    pub text: String,
    /// Sampling seed of this segment's take.
    pub seed: u64,
    /// The flow group that holds this segment closes after it. Groups are part of the plan
    /// (paragraph ends, the opener, a re-seeded segment alone), never of timing, so the same
    /// plan always forms the same groups.
    #[serde(default)]
    pub group_break_after: bool,
    /// What the take's audio is a function of besides its settings; copied into the record.
    #[serde(default)]
    pub content: TakeContent,
    /// Who speaks it and how (voice, mode, pace); the default is the engine's voice, zero-shot,
    /// at pace 1.
    #[serde(default)]
    pub casting: Casting,
}

/// How the LM is prompted (upstream's inference modes, spec §5.3).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// `inference_zero_shot`: the voice's transcript and prompt speech tokens lead the LM input.
    #[default]
    ZeroShot,
    /// `inference_instruct2`: the prompt text is `You are a helpful assistant. <instruction>
    /// <|endofprompt|>` and the LM gets no prompt speech tokens; the flow keeps the voice.
    Instruct(String),
    /// `inference_cross_lingual`: no prompt text and no prompt speech tokens in the LM; the
    /// text is led by `You are a helpful assistant.<|endofprompt|>`. For text in another
    /// language than the voice's reference.
    CrossLingual,
}

impl Mode {
    /// The name written into take records (`zero_shot`, `instruct`, `cross_lingual`).
    #[must_use]
    pub fn name(&self) -> &'static str {
        match self {
            Mode::ZeroShot => "zero_shot",
            Mode::Instruct(_) => "instruct",
            Mode::CrossLingual => "cross_lingual",
        }
    }

    /// The instruction of [`Mode::Instruct`].
    #[must_use]
    pub fn instruction(&self) -> Option<&str> {
        match self {
            Mode::Instruct(i) => Some(i),
            _ => None,
        }
    }
}

/// Who speaks a segment and how: the engine-side form of a cast's decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Casting {
    /// Voice name (as the engine's voices are keyed); empty: the engine's default voice.
    #[serde(default)]
    pub voice: String,
    #[serde(default)]
    pub mode: Mode,
    /// Speaking pace as upstream's `speed`: the segment's mel is resampled in time to
    /// `frames / pace` frames before the vocoder. 1 leaves it as the flow made it.
    #[serde(default = "unit_pace")]
    pub pace: f64,
}

fn unit_pace() -> f64 {
    1.0
}

impl Default for Casting {
    fn default() -> Self {
        Self { voice: String::new(), mode: Mode::ZeroShot, pace: 1.0 }
    }
}

/// Mel frames of a segment of `frames` flow frames spoken at `pace` (upstream's
/// `int(frames / speed)`).
#[must_use]
pub fn paced_frames(frames: usize, pace: f64) -> usize {
    if pace == 1.0 { frames } else { (frames as f64 / pace) as usize }
}

impl SegmentSpec {
    /// A segment with no recorded content (tests, benches); groups close only at the target.
    pub fn new(id: SegmentId, text: impl Into<String>, seed: u64) -> Self {
        Self {
            id,
            text: text.into(),
            seed,
            group_break_after: false,
            content: TakeContent::default(),
            casting: Casting::default(),
        }
    }

    /// The same segment, closing its flow group.
    #[must_use]
    pub fn with_group_break(mut self) -> Self {
        self.group_break_after = true;
        self
    }
}

/// The content half of a take's key: everything its audio depends on that comes from the
/// manuscript, the voice and the model (the settings half — seed, NFE, precision, backend,
/// group — is the rest of the record). A take whose content differs from what the manuscript,
/// voice and model give now is stale.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct TakeContent {
    /// The segment's text ids exactly as the LM receives them (between the prompt text's ids
    /// and the task token).
    pub text_ids: Vec<u32>,
    /// SHA-256 of the voice's files (prompt tokens, mel, embedding and transcript).
    pub voice_hash: String,
    /// SHA-256 of the model's weights, configuration and tokenizer files.
    pub model_hash: String,
    /// Synthesis mode: `zero_shot`, `instruct` or `cross_lingual` ([`Mode::name`]).
    pub mode: String,
    /// Instruction text of instruct modes.
    #[serde(default)]
    pub instruction: Option<String>,
    /// Version of the text frontend (normalisation and segmentation rules).
    pub frontend_version: String,
    /// The language of the segment's Latin-script text when not English (`[lang:fr]` markup or
    /// the book's language): a change of it is a change of content, even where the text ids
    /// stay the same. Absent from the key when `None`, so English takes keep their keys.
    #[serde(default)]
    pub language: Option<String>,
    /// The pace the segment is spoken at, when not 1 (written as the narrator gave it, e.g.
    /// `0.9`): absent from the key at pace 1, so takes made before pace existed keep their keys.
    #[serde(default)]
    pub pace: Option<String>,
}

impl TakeContent {
    /// This content with the mode, instruction and pace of `casting` (the voice is in
    /// `voice_hash`, set by whoever knows the voice's files).
    #[must_use]
    pub fn with_casting(mut self, casting: &Casting) -> Self {
        self.mode = casting.mode.name().to_string();
        self.instruction = casting.mode.instruction().map(str::to_string);
        self.pace = (casting.pace != 1.0).then(|| format!("{}", casting.pace));
        self
    }

    /// The pace recorded in [`Self::pace`] (1 when absent or unreadable).
    #[must_use]
    pub fn pace_value(&self) -> f64 {
        self.pace.as_deref().and_then(|p| p.parse().ok()).unwrap_or(1.0)
    }

    /// A stable key of the content: SHA-256 (hex) of its fields in a fixed order.
    #[must_use]
    pub fn key(&self) -> String {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        h.update(b"lectern-take-content-v1\0");
        for id in &self.text_ids {
            h.update(id.to_le_bytes());
        }
        for field in [&self.voice_hash, &self.model_hash, &self.mode, &self.frontend_version] {
            h.update(b"\0");
            h.update(field.as_bytes());
        }
        h.update(b"\0");
        if let Some(i) = &self.instruction {
            h.update(b"i");
            h.update(i.as_bytes());
        }
        if let Some(l) = &self.language {
            h.update(b"\0l");
            h.update(l.as_bytes());
        }
        if let Some(p) = &self.pace {
            h.update(b"\0p");
            h.update(p.as_bytes());
        }
        h.finalize().iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// Commands to the engine thread. None blocks the sender.
#[derive(Debug, Clone)]
pub enum Request {
    /// Append segments to the queue, in order.
    Enqueue(Vec<SegmentSpec>),
    /// Drop queued or in-flight work for these segments.
    Cancel(Vec<SegmentId>),
    CancelAll,
    /// Move a queued segment to the front.
    Prioritise(SegmentId),
    /// Render a new take of a segment (another seed, or the same seed under new settings);
    /// the old take is kept by the caller. A queued segment just changes seed; otherwise the
    /// spec is queued at the front as a flow group of its own.
    Reseed(Box<SegmentSpec>),
    SetNfe(usize),
    SetGroupTarget(usize),
    SetLanes(usize),
    Pause,
    Resume,
    /// Re-render a take from its record (bit-identical on the same backend).
    Regenerate(Box<TakeRecord>),
    Shutdown,
}

/// Where a segment is in the pipeline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum SegmentState {
    Queued,
    Lm,
    Flow,
    Vocoder,
    Ready,
    Cancelled,
    Failed(String),
}

/// Wall time per stage, seconds, device synchronised before each clock read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct StageTimings {
    pub lm_s: f64,
    pub flow_s: f64,
    pub vocoder_s: f64,
}

/// The flow group a take was rendered in: its audio depends on the whole group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupInfo {
    /// Segments of the group, in order.
    pub segment_ids: Vec<SegmentId>,
    /// Speech tokens of each segment of the group, in order.
    pub token_counts: Vec<usize>,
    /// This take's index within the group.
    pub index: usize,
    /// Speech tokens of every segment of the group, in order (added by the engine branch):
    /// regenerating a group member bit for bit re-runs the whole group's flow, which needs its
    /// lane-mates' tokens. Empty in records written before this field existed.
    #[serde(default)]
    pub tokens: Vec<Vec<u32>>,
}

/// Everything a take's audio is a function of, plus how long it took.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TakeRecord {
    pub segment_id: SegmentId,
    pub text: String,
    pub voice_id: String,
    pub model_id: String,
    pub seed: u64,
    pub nfe: usize,
    pub cfg_rate: f64,
    pub precision: Precision,
    pub min_len_rule: MinLenRule,
    /// e.g. "cpu", "cuda:0".
    pub backend: String,
    /// How the flow's large matmuls ran ("f32", "tf32x3", "bf16", …: `FlowMatmul::label`;
    /// records written before this field existed ran plain f32).
    #[serde(default = "plain_f32")]
    pub flow_matmul: String,
    pub group: GroupInfo,
    /// The flow noise buffer used, e.g. "mt19937-seed0" (rebuilt) or a file path.
    pub noise_source: String,
    pub engine_version: String,
    /// The speech tokens the LM produced (after the silent-run filter).
    pub tokens: Vec<u32>,
    /// This take's share of the group's stage times.
    pub timings: StageTimings,
    /// What the audio is a function of besides the settings above (empty in records written
    /// before it existed: such takes count as stale).
    #[serde(default)]
    pub content: TakeContent,
}

impl TakeRecord {
    /// Samples of this take's audio: its tokens' mel frames (2 each) at its pace, 480
    /// samples each (so n × 960 at pace 1).
    #[must_use]
    pub fn sample_count(&self) -> usize {
        paced_frames(self.tokens.len() * TOKEN_MEL_RATIO, self.content.pace_value())
            * SAMPLES_PER_FRAME
    }

    /// The key of [`Self::content`].
    #[must_use]
    pub fn content_key(&self) -> String {
        self.content.key()
    }

    /// The settings that made this take, for comparison with the current ones.
    #[must_use]
    pub fn settings(&self) -> TakeSettings {
        TakeSettings {
            nfe: self.nfe,
            precision: self.precision,
            min_len_rule: self.min_len_rule,
            backend: self.backend.clone(),
            flow_matmul: self.flow_matmul.clone(),
        }
    }
}

/// The settings of a take that a narrator sets for the whole run (its seed and group are
/// per take). A chosen take made with other settings stays chosen; `render` counts them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TakeSettings {
    pub nfe: usize,
    pub precision: Precision,
    pub min_len_rule: MinLenRule,
    pub backend: String,
    pub flow_matmul: String,
}

/// A finished take: record + 24 kHz mono samples (exactly tokens × 960).
#[derive(Debug, Clone)]
pub struct Take {
    pub id: TakeId,
    pub record: TakeRecord,
    pub samples: Arc<Vec<f32>>,
}

/// KV-cache memory of one LM lane.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LaneMemory {
    pub lane: usize,
    /// By arithmetic: 2 × kv_heads × used positions × head_dim × bytes × layers.
    pub used_bytes: u64,
    /// Bytes allocated for the lane's capacity.
    pub capacity_bytes: u64,
}

/// Process and device memory, bytes; `None` where the platform has no such metric.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct MemorySample {
    pub rss: Option<u64>,
    pub swap: Option<u64>,
    pub pss: Option<u64>,
    /// macOS phys_footprint (the metric Activity Monitor and jetsam use).
    pub phys_footprint: Option<u64>,
    pub device_used: Option<u64>,
    /// The metric stayed identical while inputs changed: do not trust it.
    pub suspect: bool,
}

/// One telemetry sample, emitted after each group.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TelemetrySample {
    /// Milliseconds since the engine started.
    pub at_ms: u64,
    /// Per-stage RTF of the last group (stage time / audio seconds produced).
    pub lm_rtf: f64,
    pub flow_rtf: f64,
    pub vocoder_rtf: f64,
    /// Wall time / audio seconds of the last group.
    pub total_rtf: f64,
    /// Moving averages over the last few groups (sum of stage times / sum of audio seconds);
    /// added by the engine branch.
    #[serde(default)]
    pub avg_lm_rtf: f64,
    #[serde(default)]
    pub avg_flow_rtf: f64,
    #[serde(default)]
    pub avg_vocoder_rtf: f64,
    #[serde(default)]
    pub avg_total_rtf: f64,
    pub lm_tokens_per_s: f64,
    pub flow_frames_per_s: f64,
    /// Time to first audio of this run, once known.
    pub time_to_first_audio_ms: Option<u64>,
    pub audio_s_total: f64,
    pub lanes: Vec<LaneMemory>,
    pub memory: MemorySample,
}

/// Events from the engine thread.
#[derive(Debug, Clone)]
pub enum EngineEvent {
    SegmentState {
        id: SegmentId,
        state: SegmentState,
    },
    /// A finished take (boxed: it is by far the largest event).
    TakeReady(Box<Take>),
    Telemetry(TelemetrySample),
    ParamsChanged(RenderParams),
    /// Nothing queued or in flight.
    Idle,
    Log(String),
}
