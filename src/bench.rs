//! `lectern bench --workload smoke|short|long`: end-to-end runs of the real engine
//! ([`Engine::spawn`]: LM lanes, flow groups, cuts, telemetry) over the standard workloads of
//! ../shared/bench/README.md, on seeded random weights.
//!
//! - Weights (seed 0): the per-stage builders of [`lectern_bench::lm`], [`lectern_bench::flow`] and
//!   [`lectern_bench::hift`]. The flow shares one weight set across its 22 blocks (each block is 60 MB,
//!   far beyond any cache, so the cost per block is unchanged; it keeps memory and set-up small).
//! - Voice prompt (seed 1): 31 prompt-text ids + `<|endofprompt|>` (32), 294 speech tokens,
//!   588 mel frames, a 192-d speaker embedding.
//! - Text: the full-size model's tokenizer files are not on our machines, so the text ids come
//!   from [`stand_in_text_ids`]: one id per word (two or more for words over 7 letters) plus one
//!   per punctuation mark, hashed into the Qwen2 text vocabulary — about 1.2–1.3 ids per word
//!   like the real BPE on English prose. Segmentation is the project's text frontend
//!   ([`Manuscript::parse`]).
//! - Lengths: random weights stop at random places, so [`ForcedBackend`] decodes each segment to
//!   exactly `tokens_per_word` (10, the real model's rate) × its words: every stop id is masked
//!   for the whole segment (`min_len = max_len`, all stop ids) and `ignore_stop` is set.
//!   Segment k uses seed 1000 + k.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::{Context, bail, ensure};
use candle::{Device, Tensor};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};

use lectern_bench::roofline;
use lectern_engine::Engine;
use lectern_engine::backend::{BackendInfo, LmJob, LmStage, Mel, SynthBackend};
use lectern_engine::cosyvoice::{CosyVoiceBackend, LmHandle, PreparedVoice, lm_device};
use lectern_engine::protocol::{
    EngineEvent, LaneMemory, MinLenRule, Precision, RenderParams, Request, SegmentId, SegmentSpec,
    SegmentState,
};
use lectern_engine::telemetry::probe_memory;
use lectern_model::Weights;
use lectern_model::config::{ModelConfig, SAMPLE_RATE_HZ, SAMPLES_PER_TOKEN, TOKEN_MEL_RATIO};
use lectern_model::flow::{CausalMaskedDiffWithDiT, FlowMatmul, FlowPrompt, NoiseSource};
use lectern_model::hift::Hift;
use lectern_model::lm::{END_OF_PROMPT_ID, LaneRequest, SpeechLm};
use lectern_model::sampling::{self, SamplingConfig};
use lectern_text::hashing::stable_hash as fnv1a;
use lectern_text::{Manuscript, ParseOptions, Tokenizer};
use sha2::{Digest, Sha256};

use crate::store::takes::audio_hash;

/// The standard bench passage (a copy of ../shared/bench/passage-132.txt).
pub const PASSAGE: &str = include_str!("../fixtures/text/passage-132.txt");
/// Prompt shapes of the standard workloads.
pub const PROMPT_TEXT_TOKENS: usize = 32;
pub const PROMPT_SPEECH_TOKENS: usize = 294;
pub const SPEAKER_EMBEDDING_DIM: usize = 192;
/// The real model's speech rate on English prose.
pub const TOKENS_PER_WORD: usize = 10;
/// Segment k is sampled with seed `SEGMENT_SEED_BASE + k`.
pub const SEGMENT_SEED_BASE: u64 = 1000;
/// Text ids below this are ordinary Qwen2 text tokens (151643.. are special).
const TEXT_VOCAB: u64 = 151_643;
const VOICE: &str = "bench-random";

/// A standard workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Workload {
    /// The first two sentences of the passage.
    Smoke,
    /// The 132-word passage.
    Short,
    /// The passage 20 times (2640 words).
    Long,
}

impl Workload {
    pub fn name(self) -> &'static str {
        match self {
            Workload::Smoke => "smoke",
            Workload::Short => "short",
            Workload::Long => "long",
        }
    }

    /// The workload's manuscript text.
    pub fn text(self) -> String {
        let passage = PASSAGE.trim();
        match self {
            Workload::Smoke => first_sentences(passage, 2).to_string(),
            Workload::Short => passage.to_string(),
            Workload::Long => vec![passage; 20].join("\n\n"),
        }
    }
}

/// The first `n` sentences of `text` (a sentence ends at `.`, `!` or `?` before a space).
fn first_sentences(text: &str, n: usize) -> &str {
    let mut seen = 0;
    for (i, c) in text.char_indices() {
        let next = text[i + c.len_utf8()..].chars().next();
        if matches!(c, '.' | '!' | '?') && next.is_none_or(char::is_whitespace) {
            seen += 1;
            if seen == n {
                return &text[..i + c.len_utf8()];
            }
        }
    }
    text
}

/// Words of a normalised segment: whitespace-separated pieces holding a letter or digit.
pub fn word_count(text: &str) -> usize {
    text.split_whitespace().filter(|w| w.chars().any(char::is_alphanumeric)).count()
}

/// Deterministic text ids with the real token count's rate (see the module doc): one id per
/// word, one more per further 7 letters, one per punctuation mark; ids hashed into the text
/// vocabulary.
pub fn stand_in_text_ids(text: &str) -> Vec<u32> {
    let id = |piece: &str| (fnv1a(piece.as_bytes()) % TEXT_VOCAB) as u32;
    let mut ids = Vec::new();
    for word in text.split_whitespace() {
        let core: String = word.chars().filter(|c| c.is_alphanumeric() || *c == '\'').collect();
        if !core.is_empty() {
            let chars: Vec<char> = core.chars().collect();
            for piece in chars.chunks(7) {
                ids.push(id(&piece.iter().collect::<String>()));
            }
        }
        for c in word.chars().filter(|c| !c.is_alphanumeric() && *c != '\'') {
            ids.push(id(&c.to_string()));
        }
    }
    ids
}

/// One segment of a workload.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkloadSegment {
    pub spec: SegmentSpec,
    pub words: usize,
    pub text_ids: Vec<u32>,
    /// Speech tokens the LM is forced to decode.
    pub forced_tokens: usize,
}

/// Segments `text` with the text frontend (a one-sentence first segment when `lead_sentence`);
/// ids from 0, seeds 1000 + index, flow groups closing where the session's plan closes them.
pub fn segments(
    text: &str,
    tokens_per_word: usize,
    max_segments: Option<usize>,
    lead_sentence: bool,
) -> anyhow::Result<Vec<WorkloadSegment>> {
    let opts = ParseOptions::default().with_lead_sentence(lead_sentence);
    let book = Manuscript::parse(text, &opts).context("segmenting")?;
    let segs: Vec<WorkloadSegment> = book
        .segments()
        .filter(|s| word_count(&s.text) > 0)
        .take(max_segments.unwrap_or(usize::MAX))
        .enumerate()
        .map(|(i, s)| {
            let words = word_count(&s.text);
            WorkloadSegment {
                spec: SegmentSpec {
                    id: i as u64,
                    text: s.text.clone(),
                    seed: SEGMENT_SEED_BASE + i as u64,
                    // The product's plan: the opener alone, no group across a paragraph.
                    group_break_after: crate::session::plan::closes_group(i, s.ends_paragraph),
                    ..SegmentSpec::default()
                },
                words,
                text_ids: stand_in_text_ids(&s.text),
                forced_tokens: words * tokens_per_word,
            }
        })
        .collect();
    ensure!(!segs.is_empty(), "the workload has no speakable segment");
    Ok(segs)
}

/// LM batches as the engine asked for them (for tokens/s per lane).
#[derive(Debug, Clone, Default)]
pub struct LmBatchLog {
    /// (lanes, decode steps = longest lane, tokens) per batch.
    pub batches: Vec<(usize, usize, usize)>,
}

/// The real backend with forced LM lengths (see the module doc). Shares the backend through a
/// mutex so one set of weights serves several engine runs; the LM is reached through its own
/// handle ([`ForcedLm`]), so the engine's LM thread never waits for the flow's lock.
pub struct ForcedBackend {
    inner: Arc<Mutex<CosyVoiceBackend>>,
    lm: ForcedLm,
    info: BackendInfo,
}

/// The forced-length LM: builds each lane's request from the workload plan and checks that
/// every lane decoded exactly its forced count.
#[derive(Clone)]
pub struct ForcedLm {
    lm: LmHandle,
    prompt_text_ids: Vec<u32>,
    prompt_speech_tokens: Vec<u32>,
    /// Forced speech tokens and text ids per segment text.
    plan: Arc<std::collections::HashMap<String, (usize, Vec<u32>)>>,
    log: Arc<Mutex<LmBatchLog>>,
}

impl ForcedLm {
    fn lane_request(&self, job: &LmJob) -> lectern_engine::Result<LaneRequest> {
        let (forced, text_ids) = self.plan.get(&job.text).cloned().ok_or_else(|| {
            lectern_engine::EngineError::InvalidInput(format!(
                "segment {} is not part of the workload",
                job.segment_id
            ))
        })?;
        let mut req = LaneRequest::new(
            self.prompt_text_ids.clone(),
            text_ids,
            self.prompt_speech_tokens.clone(),
            job.seed,
        );
        req.sampling =
            SamplingConfig { min_len_rule: sampling::MinLenRule::AllStopIds, ..Default::default() };
        req.min_len = forced;
        req.max_len = forced;
        req.ignore_stop = true;
        Ok(req)
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl LmStage for ForcedLm {
    fn lm_generate_streaming(
        &mut self,
        jobs: &[LmJob],
        done: &mut dyn FnMut(usize, &[u32]),
    ) -> lectern_engine::Result<Vec<Vec<u32>>> {
        let reqs: Vec<LaneRequest> =
            jobs.iter().map(|j| self.lane_request(j)).collect::<lectern_engine::Result<_>>()?;
        // A lane of the wrong length is not reported early: the whole batch fails below.
        let out = self.lm.generate_requests(&reqs, &mut |i, toks| {
            if toks.len() == reqs[i].max_len {
                done(i, toks);
            }
        })?;
        for (req, toks) in reqs.iter().zip(&out) {
            if toks.len() != req.max_len {
                return Err(lectern_engine::EngineError::Backend(format!(
                    "forced {} tokens, got {} (the silent-run filter dropped some)",
                    req.max_len,
                    toks.len()
                )));
            }
        }
        let steps = reqs.iter().map(|r| r.max_len).max().unwrap_or(0);
        lock(&self.log).batches.push((jobs.len(), steps, out.iter().map(Vec::len).sum()));
        Ok(out)
    }

    fn synchronize(&self) -> lectern_engine::Result<()> {
        LmStage::synchronize(&self.lm)
    }

    fn kv_lane_memory(&self) -> Vec<LaneMemory> {
        self.lm.kv_lane_memory()
    }
}

impl SynthBackend for ForcedBackend {
    fn lm_generate(&mut self, jobs: &[LmJob]) -> lectern_engine::Result<Vec<Vec<u32>>> {
        self.lm.lm_generate_streaming(jobs, &mut |_, _| {})
    }

    fn flow_group(
        &mut self,
        _voice: &str,
        tokens: &[Vec<u32>],
        nfe: usize,
    ) -> lectern_engine::Result<Mel> {
        lock(&self.inner).flow_group(VOICE, tokens, nfe)
    }

    fn vocode(&mut self, mel: &Mel) -> lectern_engine::Result<Vec<f32>> {
        lock(&self.inner).vocode(mel)
    }

    /// The flow and vocoder's device, as the real backend's.
    fn synchronize(&self) -> lectern_engine::Result<()> {
        lock(&self.inner).synchronize()
    }

    fn kv_lane_memory(&self) -> Vec<LaneMemory> {
        self.lm.kv_lane_memory()
    }

    fn device_memory_bytes(&self) -> Option<u64> {
        lock(&self.inner).device_memory_bytes()
    }

    fn describe(&self) -> BackendInfo {
        self.info.clone()
    }

    fn lm_stage(&mut self) -> Option<Box<dyn LmStage + Send>> {
        Some(Box::new(self.lm.clone()))
    }
}

/// Options of a workload run.
#[derive(Debug, Clone)]
pub struct WorkloadOptions {
    pub device: Device,
    pub workload: Workload,
    /// One engine run per entry, on the same weights (ratios within one run are comparable).
    pub lanes: Vec<usize>,
    pub group_target_frames: usize,
    pub nfe: usize,
    pub precision: Precision,
    pub max_segments: Option<usize>,
    pub tokens_per_word: usize,
    /// The text frontend's fast start (the first segment is the first sentence), as the
    /// workstation segments a manuscript.
    pub lead_sentence: bool,
    /// The engine's LM thread ([`RenderParams::overlap`]).
    pub overlap: bool,
    /// LM decode steps replayed as CUDA graphs ([`SpeechLm::set_decode_graphs`]).
    pub cuda_graphs: bool,
    /// The LM's own CUDA kernels for decode steps ([`lectern_kernels::cuda::lm`]).
    pub lm_kernels: bool,
    /// The DiT's own CUDA kernels ([`lectern_kernels::cuda::flow`]).
    pub flow_kernels: bool,
    /// The vocoder's own CUDA kernels ([`lectern_kernels::cuda::hift`]).
    pub vocoder_kernels: bool,
    /// How the flow's large matmuls run; `None`: the device's default
    /// (plain f32).
    pub flow_matmul: Option<FlowMatmul>,
    /// Model shapes: `ModelConfig::full_size()` for benchmarks, a tiny config for tests.
    pub config: ModelConfig,
    pub weights_seed: u64,
    /// Print the table (off for `--json` and tests).
    pub print: bool,
    /// Only this share of the workload's segments (`render --shard`'s split).
    pub shard: Option<crate::session::plan::Shard>,
}

impl WorkloadOptions {
    pub fn new(workload: Workload) -> Self {
        Self {
            device: Device::Cpu,
            workload,
            lanes: vec![8],
            group_target_frames: RenderParams::default().group_target_frames,
            nfe: 10,
            precision: Precision::F32,
            max_segments: None,
            tokens_per_word: TOKENS_PER_WORD,
            lead_sentence: true,
            overlap: RenderParams::default().overlap,
            cuda_graphs: true,
            flow_matmul: None,
            lm_kernels: true,
            flow_kernels: true,
            vocoder_kernels: true,
            config: ModelConfig::full_size(),
            weights_seed: 0,
            print: true,
            shard: None,
        }
    }
}

/// The seeded random voice prompt (seed 1).
fn random_voice(cfg: &ModelConfig, device: &Device) -> anyhow::Result<PreparedVoice> {
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let mut prompt_text_ids: Vec<u32> =
        (0..PROMPT_TEXT_TOKENS - 1).map(|_| rng.gen_range(0..TEXT_VOCAB as u32)).collect();
    prompt_text_ids.push(END_OF_PROMPT_ID);
    let sts = cfg.lm.speech_token_size as u32;
    let speech: Vec<u32> = (0..PROMPT_SPEECH_TOKENS).map(|_| rng.gen_range(0..sts)).collect();
    let frames = PROMPT_SPEECH_TOKENS * TOKEN_MEL_RATIO;
    let mel: Vec<f32> = (0..frames * 80).map(|_| rng.gen_range(-8.0f32..2.0)).collect();
    let emb: Vec<f32> = (0..SPEAKER_EMBEDDING_DIM).map(|_| rng.gen_range(-1.0f32..1.0)).collect();
    Ok(PreparedVoice {
        name: VOICE.into(),
        prompt_text_ids,
        prompt_speech_tokens: speech.clone(),
        flow_prompt: FlowPrompt {
            prompt_token: speech,
            prompt_feat: Tensor::from_vec(mel, (1, frames, 80), device)?, // (1, 2P, 80)
            embedding: Tensor::from_vec(emb, (1, SPEAKER_EMBEDDING_DIM), device)?,
        },
    })
}

/// Builds the backend from seeded random weights.
fn build_backend(
    opts: &WorkloadOptions,
    voice: PreparedVoice,
    all_text_ids: &[u32],
) -> anyhow::Result<CosyVoiceBackend> {
    let cfg = &opts.config;
    let dev = &opts.device;
    let lm_ckpt = lectern_bench::lm::random_checkpoint(
        cfg,
        opts.weights_seed,
        all_text_ids,
        &lm_device(dev)?,
    )?;
    let mut lm = SpeechLm::new(&cfg.lm, &Weights::root(Arc::new(lm_ckpt)), opts.precision)?;
    lm.set_decode_graphs(opts.cuda_graphs);
    lm.set_kernels(opts.lm_kernels);
    let flow_ckpt = lectern_bench::flow::random_flow(&cfg.flow, opts.weights_seed, dev)?;
    let mut flow = CausalMaskedDiffWithDiT::new(
        &cfg.flow,
        &Weights::root(Arc::new(flow_ckpt)),
        &NoiseSource::Rebuilt,
    )?;
    flow.set_matmul(opts.flow_matmul.unwrap_or_else(|| FlowMatmul::default_for(dev)))?;
    flow.set_kernels(opts.flow_kernels);
    let mut hift =
        Hift::new(cfg, &lectern_bench::hift::random_weights(cfg, opts.weights_seed, dev)?)?;
    hift.set_kernels(opts.vocoder_kernels);
    // Never used: the forced backend builds its own lane requests from the stand-in ids.
    let tokenizer = Tokenizer::tiny_fallback(std::path::Path::new("bench-stand-in"));
    Ok(CosyVoiceBackend::with_prepared_voices(
        format!("{} (seeded random weights, seed {})", cfg.name, opts.weights_seed),
        true,
        dev,
        opts.precision,
        lm,
        flow,
        hift,
        tokenizer,
        vec![voice],
    )?)
}

/// Peak resident set of this process (`VmHWM`), where the platform has it.
fn peak_rss_bytes() -> Option<u64> {
    lectern_engine::telemetry::peak_resident_bytes()
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string())
}

/// Runs the workload (one engine run per lanes value); prints a table unless `opts.print` is
/// off; returns the figures as JSON.
pub fn run(opts: &WorkloadOptions) -> anyhow::Result<Value> {
    ensure!(!opts.lanes.is_empty(), "no lanes given");
    let mut segs = segments(
        &opts.workload.text(),
        opts.tokens_per_word,
        opts.max_segments,
        opts.lead_sentence,
    )?;
    if let Some(shard) = opts.shard {
        let sizes = segs.iter().map(|s| (s.spec.text.chars().count(), s.spec.group_break_after));
        let mask = crate::session::plan::shard_mask(sizes, shard);
        let mut keep = mask.into_iter();
        segs.retain(|_| keep.next().unwrap_or(false));
        ensure!(!segs.is_empty(), "shard {shard} of this workload has no segment");
    }
    let words: usize = segs.iter().map(|s| s.words).sum();
    let text_ids: usize = segs.iter().map(|s| s.text_ids.len()).sum();
    let forced_tokens: usize = segs.iter().map(|s| s.forced_tokens).sum();
    let audio_s = (forced_tokens * SAMPLES_PER_TOKEN) as f64 / f64::from(SAMPLE_RATE_HZ);
    let say = |s: String| {
        if opts.print {
            println!("{s}");
        }
    };
    say(format!(
        "workload {}{}: {} segments, {words} words, {text_ids} stand-in text ids ({:.2}/word), \
         {forced_tokens} forced speech tokens ({} per word), {audio_s:.1} s of audio",
        opts.workload.name(),
        opts.shard.map_or(String::new(), |k| format!(" shard {k}")),
        segs.len(),
        text_ids as f64 / words as f64,
        opts.tokens_per_word
    ));

    let t0 = Instant::now();
    let voice = random_voice(&opts.config, &opts.device)?;
    let (prompt_text_ids, prompt_speech_tokens) =
        (voice.prompt_text_ids.clone(), voice.prompt_speech_tokens.clone());
    let all_ids: Vec<u32> = prompt_text_ids
        .iter()
        .chain(segs.iter().flat_map(|s| s.text_ids.iter()))
        .copied()
        .collect();
    let backend = build_backend(opts, voice, &all_ids)?;
    let info = backend.describe();
    let inner = Arc::new(Mutex::new(backend));
    let build_s = t0.elapsed().as_secs_f64();
    say(format!(
        "{} · {} · precision {:?} · flow matmuls {} · {} threads · NFE {} · group target {} \
         frames · weights built in {build_s:.1} s (flow blocks share one weight set)",
        info.model_id,
        cpu_model(),
        opts.precision,
        info.flow_matmul,
        candle::utils::get_num_threads(),
        opts.nfe,
        opts.group_target_frames
    ));
    if opts.print {
        println!(
            "{:>5} {:>8} {:>7} {:>7} {:>7} {:>7} {:>9} {:>9} {:>9} {:>9} {:>8} {:>9} {:>9}",
            "lanes",
            "wall s",
            "RTF",
            "LM RTF",
            "flowRTF",
            "voc RTF",
            "tok/s/ln",
            "tok/s agg",
            "flow f/s",
            "voc as/s",
            "TTFA s",
            "peak MiB",
            "KV/ln MiB"
        );
    }

    let plan: Arc<std::collections::HashMap<String, (usize, Vec<u32>)>> = Arc::new(
        segs.iter().map(|s| (s.spec.text.clone(), (s.forced_tokens, s.text_ids.clone()))).collect(),
    );
    let lm = lock(&inner).lm_handle();
    let mut runs = Vec::new();
    for &lanes in &opts.lanes {
        let log = Arc::new(Mutex::new(LmBatchLog::default()));
        let forced = ForcedBackend {
            inner: inner.clone(),
            lm: ForcedLm {
                lm: lm.clone(),
                prompt_text_ids: prompt_text_ids.clone(),
                prompt_speech_tokens: prompt_speech_tokens.clone(),
                plan: plan.clone(),
                log: log.clone(),
            },
            info: info.clone(),
        };
        let run = run_engine(opts, forced, lanes, &segs, &log)?;
        if opts.print {
            print_row(lanes, &run);
        }
        runs.push(run);
    }
    if opts.print && runs.len() > 1 {
        let base = runs[0]["wall_s"].as_f64().unwrap_or(f64::NAN);
        for (l, r) in opts.lanes.iter().zip(&runs).skip(1) {
            println!(
                "lanes {l} vs {}: wall {:.2}x faster",
                opts.lanes[0],
                base / r["wall_s"].as_f64().unwrap_or(f64::NAN)
            );
        }
    }
    Ok(json!({
        "workload": opts.workload.name(),
        "shard": opts.shard.map(|k| k.to_string()),
        "model": info.model_id,
        "weights": "seeded random (seed 0), flow blocks share one weight set",
        "text_ids": "stand-in: one id per word (+1 per further 7 letters) and per punctuation mark",
        "machine": {
            "cpu_model": cpu_model(),
            "threads": candle::utils::get_num_threads(),
            "os": std::env::consts::OS,
            "arch": std::env::consts::ARCH,
        },
        "backend": info.backend,
        "precision": opts.precision,
        "nfe": opts.nfe,
        "group_target_frames": opts.group_target_frames,
        "tokens_per_word": opts.tokens_per_word,
        "lead_sentence": opts.lead_sentence,
        "overlap": opts.overlap,
        "cuda_graphs": opts.cuda_graphs,
        "lm_kernels": opts.lm_kernels,
        "flow_kernels": opts.flow_kernels,
        "vocoder_kernels": opts.vocoder_kernels,
        "cuda_kernel_compile_failures": lectern_kernels::cuda::lm::compile_failures(),
        "flow_matmul": info.flow_matmul,
        "segments": segs.len(),
        "words": words,
        "text_ids_total": text_ids,
        "speech_tokens": forced_tokens,
        "mel_frames": forced_tokens * TOKEN_MEL_RATIO,
        "audio_s": audio_s,
        "weights_build_s": build_s,
        "runs": runs,
    }))
}

fn print_row(lanes: usize, r: &Value) {
    let f = |k: &str| r[k].as_f64().unwrap_or(f64::NAN);
    let mib = |k: &str| r[k].as_f64().map_or(f64::NAN, |b| b / 1048576.0);
    println!(
        "{lanes:>5} {:>8.1} {:>7.2} {:>7.2} {:>7.2} {:>7.2} {:>9.2} {:>9.2} {:>9.1} {:>9.2} {:>8.1} \
         {:>9.0} {:>9.1}",
        f("wall_s"),
        f("total_rtf"),
        f("lm_rtf"),
        f("flow_rtf"),
        f("vocoder_rtf"),
        f("lm_tokens_per_s_per_lane"),
        f("lm_tokens_per_s_aggregate"),
        f("flow_frames_per_s"),
        f("vocoder_audio_s_per_s"),
        f("time_to_first_audio_s"),
        mib("peak_rss_bytes"),
        mib("kv_bytes_per_lane"),
    );
    let share = |k: &str| 100.0 * r["stage_share"][k].as_f64().unwrap_or(f64::NAN);
    println!(
        "      stage time: LM {:.0} %, flow {:.0} %, vocoder {:.0} %",
        share("lm"),
        share("flow"),
        share("vocoder")
    );
    let first = &r["first_take"];
    if let Some(ready) = first["ready_s"].as_f64() {
        let g = |k: &str| first[k].as_f64().unwrap_or(f64::NAN);
        println!(
            "      first take at {ready:.3} s (LM {:.3} s, flow {:.3} s, vocoder {:.3} s), the \
             second at {:.3} s",
            g("lm_s"),
            g("flow_s"),
            g("vocoder_s"),
            g("second_ready_s")
        );
    }
    let limits = &r["limits"];
    if let Some(device) = limits["device"].as_str() {
        let g = |k: &str| limits[k].as_f64().unwrap_or(f64::NAN);
        println!(
            "      {device} limits: LM {:.1}x its bandwidth bound ({:.2} s), flow {:.1}x its bf16 \
             tensor-core bound ({:.2} s)",
            g("lm_times_limit"),
            g("lm_limit_s"),
            g("flow_times_limit"),
            g("flow_limit_s")
        );
    }
}

/// One engine run over the segments; collects takes and telemetry.
fn run_engine(
    opts: &WorkloadOptions,
    backend: ForcedBackend,
    lanes: usize,
    segs: &[WorkloadSegment],
    log: &Arc<Mutex<LmBatchLog>>,
) -> anyhow::Result<Value> {
    let params = RenderParams {
        nfe: opts.nfe,
        group_target_frames: opts.group_target_frames,
        lanes,
        precision: opts.precision,
        min_len_rule: MinLenRule::AllStopIds,
        overlap: opts.overlap,
    };
    // Device memory before this run's first group (weights, voice, earlier runs' caches): the
    // baseline the per-group figures are read against.
    let device_at_start = backend.device_memory_bytes();
    let handle = Engine::spawn(backend, VOICE, params);
    let start = Instant::now();
    handle
        .tx
        .send(Request::Enqueue(segs.iter().map(|s| s.spec.clone()).collect()))
        .context("engine stopped")?;
    let mut first_audio_s = None;
    let (mut lm_s, mut flow_s, mut vocoder_s) = (0.0, 0.0, 0.0);
    let mut samples_total = 0usize;
    // Mel frames of each flow group (keyed by its segments), for the flow's FLOP count.
    let mut group_frames: std::collections::BTreeMap<Vec<_>, usize> = Default::default();
    let mut seg_figs = Vec::new();
    let mut outputs = OutputDigest::default();
    let mut kv: Vec<LaneMemory> = Vec::new();
    let mut peak_sampled = 0u64;
    // Per flow group, in order: process RSS and device memory in use (CUDA), to see whether
    // memory settles after the first groups or keeps growing.
    let (mut rss_by_group, mut device_by_group) = (Vec::new(), Vec::new());
    let mut telemetry_ttfa = None;
    let mut groups = 0usize;
    let mut ready = 0usize;
    let mut wall_s = 0.0;
    // The last group's telemetry follows its takes; `Idle` closes the run.
    loop {
        let ev = handle.rx.recv().context("the engine stopped before the workload finished")?;
        match ev {
            EngineEvent::Idle if ready == segs.len() => break,
            EngineEvent::TakeReady(take) => {
                let ready_s = start.elapsed().as_secs_f64();
                first_audio_s.get_or_insert(ready_s);
                let r = &take.record;
                lm_s += r.timings.lm_s;
                flow_s += r.timings.flow_s;
                vocoder_s += r.timings.vocoder_s;
                samples_total += take.samples.len();
                *group_frames.entry(r.group.segment_ids.clone()).or_default() +=
                    r.tokens.len() * TOKEN_MEL_RATIO;
                seg_figs.push(json!({
                    "id": r.segment_id,
                    "words": segs.iter().find(|s| s.spec.id == r.segment_id).map_or(0, |s| s.words),
                    "tokens": r.tokens.len(),
                    "samples": take.samples.len(),
                    "group_size": r.group.segment_ids.len(),
                    // When the take left the engine: with the stage times, where the flow
                    // waited for the LM (a timeline of the run).
                    "ready_s": ready_s,
                    "lm_s": r.timings.lm_s,
                    "flow_s": r.timings.flow_s,
                    "vocoder_s": r.timings.vocoder_s,
                }));
                ready += 1;
                if ready == segs.len() {
                    wall_s = start.elapsed().as_secs_f64();
                }
                // After the clock: hashing the last take is not the engine's time.
                outputs.add(r.segment_id, &r.tokens, &take.samples);
            }
            EngineEvent::SegmentState { id, state: SegmentState::Failed(e) } => {
                bail!("segment {id} failed: {e}")
            }
            EngineEvent::Telemetry(t) => {
                groups += 1;
                telemetry_ttfa = t.time_to_first_audio_ms.or(telemetry_ttfa);
                peak_sampled = peak_sampled.max(t.memory.rss.unwrap_or(0));
                rss_by_group.push(t.memory.rss);
                device_by_group.push(t.memory.device_used);
                for l in t.lanes {
                    if l.used_bytes > kv.get(l.lane).map_or(0, |m| m.used_bytes) {
                        if kv.len() <= l.lane {
                            kv.resize(l.lane + 1, LaneMemory::default());
                        }
                        kv[l.lane] = l;
                    }
                }
            }
            EngineEvent::Log(m) if m.starts_with("engine backend failed") => bail!("{m}"),
            _ => {}
        }
    }
    handle.shutdown();
    let settled = probe_memory();
    let audio_s = samples_total as f64 / f64::from(SAMPLE_RATE_HZ);
    let tokens = samples_total / SAMPLES_PER_TOKEN;
    let frames = tokens * TOKEN_MEL_RATIO;
    let batches = lock(log).batches.clone();
    let steps: usize = batches.iter().map(|b| b.1).sum();
    let kv_used = kv.iter().map(|l| l.used_bytes).max().unwrap_or(0);
    let kv_cap = kv.iter().map(|l| l.capacity_bytes).max().unwrap_or(0);
    let peak = peak_rss_bytes().unwrap_or(0).max(peak_sampled);
    let busy_s = lm_s + flow_s + vocoder_s;
    let gap = roofline_gap(opts, steps, group_frames.values(), lm_s, flow_s);
    Ok(json!({
        "lanes": lanes,
        "wall_s": wall_s,
        "audio_s": audio_s,
        "speech_tokens": tokens,
        "mel_frames": frames,
        "total_rtf": wall_s / audio_s,
        "lm_s": lm_s,
        "flow_s": flow_s,
        "vocoder_s": vocoder_s,
        "lm_rtf": lm_s / audio_s,
        "flow_rtf": flow_s / audio_s,
        "vocoder_rtf": vocoder_s / audio_s,
        "lm_tokens_per_s_per_lane": steps as f64 / lm_s,
        "lm_tokens_per_s_aggregate": tokens as f64 / lm_s,
        "lm_batches": batches.iter().map(|b| json!({"lanes": b.0, "steps": b.1, "tokens": b.2})).collect::<Vec<_>>(),
        "flow_groups": groups,
        "flow_frames_per_s": frames as f64 / flow_s,
        "vocoder_audio_s_per_s": audio_s / vocoder_s,
        "time_to_first_audio_s": first_audio_s,
        "engine_time_to_first_audio_ms": telemetry_ttfa,
        "peak_rss_bytes": peak,
        "settled_rss_bytes": settled.rss,
        "rss_bytes_by_group": rss_by_group,
        "device_used_bytes_at_start": device_at_start,
        "device_used_bytes_by_group": device_by_group,
        "device_used_bytes_peak": device_by_group.iter().flatten().max(),
        "kv_bytes_per_lane": kv_used,
        "kv_capacity_bytes_per_lane": kv_cap,
        "first_take": first_take(&seg_figs),
        "segments": seg_figs,
        "output_digest": outputs.hex(),
        "cuda_graph_stats": format!("{:?}", lectern_model::lm::graph_stats()),
        "stage_share": {
            "lm": lm_s / busy_s,
            "flow": flow_s / busy_s,
            "vocoder": vocoder_s / busy_s,
        },
        "limits": gap.map(|g| g.to_json()),
    }))
}

/// The run's first take (what first audio was made of: its LM, flow and vocoder seconds) and
/// when the second one followed, from the segments' figures in the order their takes came.
fn first_take(segments: &[Value]) -> Value {
    let Some(first) = segments.first() else { return Value::Null };
    json!({
        "ready_s": first["ready_s"],
        "lm_s": first["lm_s"],
        "flow_s": first["flow_s"],
        "vocoder_s": first["vocoder_s"],
        "second_ready_s": segments.get(1).map(|s| s["ready_s"].clone()),
    })
}

/// A digest of every segment's tokens and samples, in segment order: two binaries, lane
/// counts or kernel paths that give the same digest on a workload gave the same bits, which is
/// what a speed-up must show before its figures count.
#[derive(Default)]
struct OutputDigest {
    /// Segment id → its tokens and its samples' hash as a take's file records it
    /// ([`audio_hash`]).
    segments: std::collections::BTreeMap<SegmentId, (Vec<u32>, String)>,
}

impl OutputDigest {
    fn add(&mut self, segment_id: SegmentId, tokens: &[u32], samples: &[f32]) {
        self.segments.insert(segment_id, (tokens.to_vec(), audio_hash(samples)));
    }

    /// SHA-256 over the segments in id order, the first 16 hex digits.
    fn hex(&self) -> String {
        let mut h = Sha256::new();
        for (id, (tokens, audio)) in &self.segments {
            h.update(id.to_le_bytes());
            h.update((tokens.len() as u64).to_le_bytes());
            tokens.iter().for_each(|t| h.update(t.to_le_bytes()));
            h.update(audio.as_bytes());
        }
        h.finalize().iter().take(8).map(|b| format!("{b:02x}")).collect()
    }
}

/// The run's distance from the GPU's limits (`lectern_bench::roofline`), where the GPU's peaks
/// are known: decode steps at the bandwidth limit, the flow groups' FLOPs (each group after the
/// voice prompt's frames) at the bf16 tensor-core peak.
fn roofline_gap<'a>(
    opts: &WorkloadOptions,
    decode_steps: usize,
    group_frames: impl Iterator<Item = &'a usize>,
    lm_s: f64,
    flow_s: f64,
) -> Option<roofline::Gap> {
    let peaks = roofline::peaks_for(&roofline::device_name(&opts.device)?)?;
    let prompt_frames = PROMPT_SPEECH_TOKENS * TOKEN_MEL_RATIO;
    let per_call: f64 =
        group_frames.map(|&f| roofline::dit_call_flops(&opts.config, prompt_frames + f)).sum();
    let flow_flops = per_call * opts.nfe as f64;
    let step_bytes = roofline::lm_step_weight_bytes(&opts.config, opts.precision);
    Some(roofline::gap(peaks, step_bytes, decode_steps, flow_flops, lm_s, flow_s))
}

#[cfg(test)]
mod tests {
    use super::OutputDigest;

    #[test]
    fn output_digest_follows_segment_order_and_every_bit() {
        let digest = |takes: &[(u64, &[u32], &[f32])]| {
            let mut d = OutputDigest::default();
            for &(id, tokens, samples) in takes {
                d.add(id, tokens, samples);
            }
            d.hex()
        };
        let (a, b): (&[u32], &[f32]) = (&[1, 2, 3], &[0.25, -0.5]);
        let in_order = digest(&[(1, a, b), (2, a, b)]);
        // Takes arrive as groups finish: the digest is the same in any arrival order.
        assert_eq!(digest(&[(2, a, b), (1, a, b)]), in_order);
        // One sample's last bit, or a token, changes it.
        let nudged = f32::from_bits(0.25f32.to_bits() + 1);
        assert_ne!(digest(&[(1, a, &[nudged, -0.5]), (2, a, b)]), in_order);
        assert_ne!(digest(&[(1, &[1, 2, 4], b), (2, a, b)]), in_order);
        assert_eq!(in_order.len(), 16);
    }
}
