//! Generation: the decoding loop over lanes ([`SpeechLm::generate`]), its requests, options
//! and results, and each lane's sampling state.

use super::{DEFAULT_MAX_LANES, KvCache, LaneBatch, LaneMode, SpeechLm, graph};
use crate::error::{ModelError, Result};
use crate::sampling::{SamplingConfig, SilentFilter, sampling_ids, segment_rng};

impl SpeechLm {
    /// Decodes several segments together (at most `opts.max_lanes` at a time; a finished lane's
    /// slot is refilled from the queue). Results are in request order.
    pub fn generate(
        &self,
        requests: &[LaneRequest],
        opts: &GenerateOptions,
    ) -> Result<Vec<Generated>> {
        self.generate_streaming(requests, opts, &mut |_, _| {})
    }

    /// [`Self::generate`], calling `on_done(request index, result)` the moment each lane
    /// finishes (its tokens are final then), so a caller can use them while the other lanes
    /// are still decoding.
    pub fn generate_streaming(
        &self,
        requests: &[LaneRequest],
        opts: &GenerateOptions,
        on_done: &mut dyn FnMut(usize, &Generated),
    ) -> Result<Vec<Generated>> {
        let max_lanes = opts.max_lanes.max(1);
        let mut results: Vec<Option<Generated>> = (0..requests.len()).map(|_| None).collect();
        let mut queue = 0usize;
        let mut active: Vec<LaneState> = Vec::new();
        // Batched: the active lanes' caches joined, in `active` order (request indices in
        // `joined_ids`); lanes join once prefilled and leave when they finish.
        let capacity = requests.iter().map(|r| self.prompt_len(r) + r.max_len).max().unwrap_or(1);
        let mut joined: Option<LaneBatch> = None;
        let mut joined_ids: Vec<usize> = Vec::new();
        let mut graph = graph::GraphSlot::default();
        loop {
            while active.len() < max_lanes && queue < requests.len() {
                active.push(LaneState::start(self, queue, &requests[queue], capacity)?);
                queue += 1;
            }
            if active.is_empty() {
                break;
            }
            // Sample every lane from its pending log-probs, in turn (on a thread pool they slowed
            // the flow beside them: docs/refutations.md); finished lanes leave.
            let mut tokens = Vec::with_capacity(active.len());
            let mut i = 0;
            while i < active.len() {
                let req = &requests[active[i].index];
                match active[i].sample(self, req) {
                    Some(tok) if active[i].out.step_choice.len() < req.max_len => {
                        tokens.push(tok);
                        i += 1;
                    }
                    _ => {
                        let done = active.remove(i);
                        let index = done.index;
                        let generated = done.finish();
                        on_done(index, &generated);
                        results[index] = Some(generated);
                    }
                }
            }
            if active.is_empty() {
                continue;
            }
            let logp = match opts.mode {
                LaneMode::Batched => {
                    let batch = sync_joined(&mut joined, &mut joined_ids, &mut active)?;
                    self.decode_step(batch, &tokens, &mut graph)?
                }
                LaneMode::Solo => {
                    let mut caches: Vec<&mut KvCache> =
                        active.iter_mut().filter_map(|l| l.cache.as_mut()).collect();
                    self.step(&mut caches, &tokens, opts.mode)?
                }
            };
            let rows = logp.to_vec2::<f32>()?; // the one device→host move per step
            for (lane, row) in active.iter_mut().zip(rows) {
                lane.logp = row;
            }
        }
        results
            .into_iter()
            .enumerate()
            .map(|(i, r)| {
                r.ok_or_else(|| ModelError::InvalidInput(format!("lane {i} did not finish")))
            })
            .collect()
    }
}

/// Brings the joined batch in line with `active` (lanes only ever leave from anywhere and join
/// at the end): finished lanes are dropped from it, newly prefilled ones moved into it.
fn sync_joined<'a>(
    joined: &'a mut Option<LaneBatch>,
    ids: &mut Vec<usize>,
    active: &mut [LaneState],
) -> Result<&'a mut LaneBatch> {
    let keep: Vec<bool> = ids.iter().map(|id| active.iter().any(|l| l.index == *id)).collect();
    if let Some(batch) = joined.as_mut() {
        batch.retain(&keep)?;
    }
    ids.retain(|id| active.iter().any(|l| l.index == *id));
    for lane in active.iter_mut() {
        if let Some(cache) = lane.cache.take() {
            match joined.as_mut() {
                Some(batch) => batch.push(cache)?,
                None => *joined = Some(LaneBatch::join(vec![cache])?),
            }
            ids.push(lane.index);
        }
    }
    let order: Vec<usize> = active.iter().map(|l| l.index).collect();
    if *ids != order {
        return Err(ModelError::InvalidInput(format!(
            "joined lanes {ids:?} out of step with the active lanes {order:?}"
        )));
    }
    joined.as_mut().ok_or_else(|| ModelError::InvalidInput("no lane to decode".into()))
}

/// One segment to decode.
#[derive(Debug, Clone)]
pub struct LaneRequest {
    pub prompt_text_ids: Vec<u32>,
    pub text_ids: Vec<u32>,
    pub prompt_speech_tokens: Vec<u32>,
    /// Seeds this segment's own random stream (`sampling::segment_rng`).
    pub seed: u64,
    pub sampling: SamplingConfig,
    /// Steps below this mask the min-length ids (upstream `2·N_text`).
    pub min_len: usize,
    /// At most this many decode steps (upstream `20·N_text`).
    pub max_len: usize,
    /// Benchmarks: never stop on a stop id; decode exactly `max_len` tokens (stop ids are fed
    /// back like any other token).
    pub ignore_stop: bool,
    /// Keep every step's unmasked log-prob row in [`Generated::step_logp`] (parity).
    pub record_logp: bool,
}

impl LaneRequest {
    /// A request with upstream's length rule (`min_len = 2·N_text`, `max_len = 20·N_text`).
    pub fn new(
        prompt_text_ids: Vec<u32>,
        text_ids: Vec<u32>,
        prompt_speech_tokens: Vec<u32>,
        seed: u64,
    ) -> Self {
        let n = text_ids.len();
        Self {
            prompt_text_ids,
            text_ids,
            prompt_speech_tokens,
            seed,
            sampling: SamplingConfig::default(),
            min_len: 2 * n,
            max_len: 20 * n,
            ignore_stop: false,
            record_logp: false,
        }
    }
}

/// Options of [`SpeechLm::generate`].
#[derive(Debug, Clone, Copy)]
pub struct GenerateOptions {
    pub max_lanes: usize,
    pub mode: LaneMode,
}

impl Default for GenerateOptions {
    fn default() -> Self {
        Self { max_lanes: DEFAULT_MAX_LANES, mode: LaneMode::Batched }
    }
}

/// Why a lane ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    StopToken(u32),
    MaxLen,
}

/// The result of one segment.
#[derive(Debug, Clone)]
pub struct Generated {
    /// Tokens for the flow: after the silent-run filter (§6.6).
    pub tokens: Vec<u32>,
    /// Every token the LM emitted (its history), stop id excluded.
    pub lm_tokens: Vec<u32>,
    /// The id chosen at each step, including a final stop id.
    pub step_choice: Vec<u32>,
    pub stop: StopReason,
    /// Unmasked log-probs of each step (`record_logp` only).
    pub step_logp: Vec<Vec<f32>>,
    pub prompt_len: usize,
    pub kv_capacity: usize,
    pub kv_allocated_bytes: usize,
}

/// A lane in flight inside [`SpeechLm::generate`].
struct LaneState {
    index: usize,
    /// Its own cache until it joins a [`LaneBatch`] (batched decoding).
    cache: Option<KvCache>,
    logp: Vec<f32>,
    rng: rand_chacha::ChaCha8Rng,
    filter: SilentFilter,
    out: Generated,
}

impl LaneState {
    /// Prefills the lane's prompt into a cache of `capacity` positions (at least its prompt
    /// and `max_len`; lanes decoded together share one capacity).
    fn start(lm: &SpeechLm, index: usize, req: &LaneRequest, capacity: usize) -> Result<Self> {
        let input = lm.lm_input(&req.prompt_text_ids, &req.text_ids, &req.prompt_speech_tokens)?;
        let prompt_len = input.dim(0)?;
        let capacity = capacity.max(prompt_len + req.max_len);
        let mut cache = lm.new_cache(capacity)?;
        let logp = lm.prefill(&input, &mut cache)?.to_vec1::<f32>()?;
        let kv_allocated_bytes = cache.allocated_bytes();
        Ok(Self {
            index,
            cache: Some(cache),
            logp,
            rng: segment_rng(req.seed),
            filter: SilentFilter::default(),
            out: Generated {
                tokens: Vec::new(),
                lm_tokens: Vec::new(),
                step_choice: Vec::new(),
                stop: StopReason::MaxLen,
                step_logp: Vec::new(),
                prompt_len,
                kv_capacity: capacity,
                kv_allocated_bytes,
            },
        })
    }

    /// Chooses this step's token from `self.logp`; `None` when the lane is done.
    fn sample(&mut self, lm: &SpeechLm, req: &LaneRequest) -> Option<u32> {
        let step = self.out.step_choice.len();
        if step >= req.max_len {
            return None; // stop stays MaxLen
        }
        if req.record_logp {
            self.out.step_logp.push(self.logp.clone());
        }
        let ignore_eos = step < req.min_len;
        let tok = sampling_ids(
            &mut self.logp,
            &self.out.lm_tokens,
            &req.sampling,
            ignore_eos,
            lm.cfg.speech_token_size,
            &mut self.rng,
        );
        self.out.step_choice.push(tok);
        if lm.cfg.is_stop(tok) && !req.ignore_stop {
            self.out.stop = StopReason::StopToken(tok);
            return None;
        }
        self.out.lm_tokens.push(tok);
        if self.filter.keep(tok) {
            self.out.tokens.push(tok);
        }
        Some(tok)
    }

    fn finish(self) -> Generated {
        self.out
    }
}
