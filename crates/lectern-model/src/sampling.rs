//! Speech-token sampling exactly as upstream (spec/COSYVOICE3.md §6.5, §6.6).
//!
//! `ras_sampling`: nucleus sampling (top-p 0.8, top-k 25, stable sort, float32 running sum), a
//! repetition check over the last 10 emitted tokens and, when it fires, a re-draw from the full
//! softmax with the repeated candidate masked to −∞. The minimum-length guard reproduces
//! upstream's quirk by default (only id 6561 is masked, see [`MinLenRule`]).
//!
//! Randomness: every segment owns a `ChaCha8Rng` seeded with `seed_from_u64(segment_seed)`
//! (rand_chacha 0.3), so the tokens depend only on (inputs, seed) — never on which other
//! segments share a decode batch. Each draw consumes exactly one `f64` from the stream. PyTorch's
//! `multinomial` stream cannot be reproduced; parity tests force tokens or decode greedily.
//!
//! Softmax: exps correctly rounded, sum accumulated in f64; within 1e-7 of torch's probs on
//! every fixture case. Torch's vectorised exp can differ by 1 ulp, which matters only when the
//! running sum lands exactly on `top_p` (fixture case `boundary_cum_equals_top_p_f32`: torch
//! keeps 2 candidates, we keep 3); every other candidate list is identical.
//!
//! All functions work on host slices: the LM moves each step's log-prob row to the host once,
//! so nothing here touches a device. The vocabulary-wide loops (maximum, exponentials, sums,
//! the fallback's draw) run in `lectern_kernels::sampling`, vectorised with the plain loops'
//! results bit for bit (the tests below compare with plain loops).

use lectern_kernels::sampling as fast;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::SeedableRng;

/// Silent / breath tokens that the post-filter limits to runs of [`MAX_SILENT_RUN`] (§6.6).
pub const SILENT_TOKENS: [u32; 11] = [1, 2, 28, 29, 55, 248, 494, 2241, 2242, 2322, 2323];
/// Longest run of silent tokens that reaches the flow.
pub const MAX_SILENT_RUN: usize = 5;

/// Which ids the minimum-length guard masks while `step < min_len`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MinLenRule {
    /// Upstream CosyVoice3: only `speech_token_size` (6561, the sos id) is masked, so the other
    /// 199 stop ids can end a segment early. Bit-faithful default.
    #[default]
    SosOnly,
    /// The intended behaviour: every stop id (6561..6761) is masked below `min_len`.
    AllStopIds,
}

/// How a token is chosen from one step's log-probs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SamplingMode {
    /// Upstream `ras_sampling` (the default).
    #[default]
    Ras,
    /// Argmax (lowest id among ties), for tests and parity with the greedy fixtures.
    Greedy,
}

/// Sampling hyper-parameters (`cosyvoice3.yaml`: `ras_sampling(top_p 0.8, top_k 25, win_size
/// 10, tau_r 0.1)`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SamplingConfig {
    pub mode: SamplingMode,
    pub top_p: f32,
    pub top_k: usize,
    pub win_size: usize,
    pub tau_r: f32,
    pub min_len_rule: MinLenRule,
}

impl Default for SamplingConfig {
    fn default() -> Self {
        Self {
            mode: SamplingMode::Ras,
            top_p: 0.8,
            top_k: 25,
            win_size: 10,
            tau_r: 0.1,
            min_len_rule: MinLenRule::SosOnly,
        }
    }
}

impl SamplingConfig {
    pub fn greedy() -> Self {
        Self { mode: SamplingMode::Greedy, ..Self::default() }
    }
}

/// The per-segment random stream (see the module doc).
pub fn segment_rng(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed)
}

/// `softmax` in float32 like torch's CPU kernel: subtract the max, exponentiate, sum, divide.
/// `-inf` entries get probability 0. (Within 1e-7 of torch's probabilities on every fixture case.)
pub fn softmax(scores: &[f32]) -> Vec<f32> {
    Exps::of(scores).probs()
}

/// The numerator and denominator of [`softmax`]: each score's `exp(s − max)` and their sum.
/// Kept apart so that the repetition fallback, which masks one score, can reuse them.
struct Exps {
    max: f32,
    exps: Vec<f32>,
    sum: f32,
}

impl Exps {
    fn of(scores: &[f32]) -> Self {
        let max = fast::max(scores);
        // exp evaluated in f64 and rounded: the correctly rounded f32 result, as torch's
        // vectorised exp gives on the fixture cases (libm's expf is off by an ulp on some).
        let mut exps = vec![0f32; scores.len()];
        fast::exps_below(scores, max, &mut exps);
        Self { max, sum: f64_sum(&exps), exps }
    }

    /// The same numerators with `scores[masked]` set to −∞, when that leaves the max as it
    /// was: every other term is the same number and the masked one an exact 0, so the f64 sum
    /// over the same order is the same as a fresh [`Exps::of`]'s, bit for bit. `None` when the
    /// masked score was the only maximum (every term changes then) or the max is not finite.
    fn masked(mut self, scores: &[f32], masked: usize) -> Option<Self> {
        let max_after = fast::max(&scores[..masked]).max(fast::max(&scores[masked + 1..]));
        // A non-finite max (every score −∞) makes every term NaN, the masked one too.
        if max_after.to_bits() != self.max.to_bits() || !self.max.is_finite() {
            return None;
        }
        self.exps[masked] = 0.0;
        self.sum = f64_sum(&self.exps);
        Some(self)
    }

    /// [`softmax`]'s probabilities, keeping the numerators for [`Exps::masked`].
    fn probs_ref(&self) -> Vec<f32> {
        self.exps.iter().map(|&e| e / self.sum).collect()
    }

    fn probs(mut self) -> Vec<f32> {
        let sum = self.sum;
        self.exps.iter_mut().for_each(|p| *p /= sum);
        self.exps
    }
}

/// The sum accumulated in f64, in order, rounded to f32: torch's vectorised (multi-lane) f32
/// sum is far closer to the exact sum than a sequential f32 loop, which drifts when one term
/// dominates (docs/refutations.md). Computed by `lectern_kernels::sampling`, which gives the
/// in-order loop's bits without its dependency chain.
fn f64_sum(values: &[f32]) -> f32 {
    fast::f64_sum_as_f32(values)
}

/// Upstream `nucleus_sampling`'s candidate list, in sampling order: probabilities sorted
/// descending with a stable sort (ties keep ascending ids); an item is kept while the float32
/// running sum is `< top_p` and fewer than `top_k` are kept, so the item that crosses `top_p` is
/// included and the first item always is.
///
/// Only the first `top_k` of that order can be kept, so only they are found and sorted: the
/// `top_k`-th largest probability is found among the few ids that can be among the largest
/// (`top_k_superset`), the ids at or above it are sorted descending by probability, ties by
/// ascending id, which is exactly the stable sort's order, without sorting or selecting over
/// all 6761 ids per lane and step.
pub fn nucleus_candidates(probs: &[f32], top_p: f32, top_k: usize) -> Vec<u32> {
    let ids = top_k_superset(probs, top_k);
    let keys = ids.iter().map(|&id| order_key(probs[id as usize]));
    let Some(threshold) = kth_largest(keys, top_k) else {
        return Vec::new();
    };
    let mut order: Vec<u32> =
        ids.into_iter().filter(|&id| order_key(probs[id as usize]) >= threshold).collect();
    order.sort_unstable_by(|&a, &b| {
        order_key(probs[b as usize]).cmp(&order_key(probs[a as usize])).then(a.cmp(&b))
    });
    order.truncate(top_k);
    nucleus_prefix(order, probs, top_p, top_k)
}

/// Probabilities per chunk whose largest key [`top_k_superset`] looks at.
const KEY_CHUNK: usize = 32;

/// Ascending ids that include the `top_k` largest probabilities (and a few more): the `top_k`-th
/// largest of the chunks' maxima is a floor under the `top_k`-th largest probability (those
/// maxima are `top_k` distinct entries at or above it), so only entries at or above that floor,
/// in chunks whose maximum reaches it, can be among the largest. All ids when there are fewer
/// chunks than `top_k`.
fn top_k_superset(probs: &[f32], top_k: usize) -> Vec<u32> {
    let chunk_max: Vec<i32> = probs
        .chunks(KEY_CHUNK)
        .map(|c| c.iter().map(|&p| order_key(p)).fold(i32::MIN, i32::max))
        .collect();
    if top_k == 0 || chunk_max.len() < top_k {
        return (0..probs.len() as u32).collect();
    }
    let floor = kth_largest(chunk_max.iter().copied(), top_k).unwrap_or(i32::MIN);
    let mut ids = Vec::new();
    for (c, _) in chunk_max.iter().enumerate().filter(|&(_, &m)| m >= floor) {
        let start = c * KEY_CHUNK;
        let chunk = &probs[start..(start + KEY_CHUNK).min(probs.len())];
        ids.extend(
            (start as u32..).zip(chunk).filter(|&(_, &p)| order_key(p) >= floor).map(|(id, _)| id),
        );
    }
    ids
}

/// `f32::total_cmp`'s order as an integer: a sort on this key is a sort on `total_cmp`.
fn order_key(p: f32) -> i32 {
    let bits = p.to_bits() as i32;
    bits ^ (((bits >> 31) as u32) >> 1) as i32
}

/// The `k`-th largest of `keys` (counting equal keys separately); `None` when `k` is 0 or
/// there are no keys. Fewer than `k`: the smallest.
fn kth_largest(keys: impl IntoIterator<Item = i32>, k: usize) -> Option<i32> {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    if k == 0 {
        return None;
    }
    // A min-heap of the k largest so far: after the first k, most keys lose to its top in
    // one comparison.
    let mut largest: BinaryHeap<Reverse<i32>> = BinaryHeap::with_capacity(k + 1);
    for key in keys {
        if largest.len() < k {
            largest.push(Reverse(key));
        } else if largest.peek().is_some_and(|&Reverse(min)| key > min) {
            largest.pop();
            largest.push(Reverse(key));
        }
    }
    largest.peek().map(|&Reverse(key)| key)
}

/// The kept prefix of candidates in sampling `order`: while the float32 running sum is below
/// `top_p` and fewer than `top_k` are kept.
fn nucleus_prefix(order: Vec<u32>, probs: &[f32], top_p: f32, top_k: usize) -> Vec<u32> {
    let mut cum = 0f32;
    let mut cands = Vec::with_capacity(top_k);
    for id in order {
        if cum < top_p && cands.len() < top_k {
            cum += probs[id as usize];
            cands.push(id);
        } else {
            break;
        }
    }
    cands
}

/// One multinomial draw over non-negative `weights` (not necessarily normalised). Consumes one
/// `f64` from `rng`; never returns an index of weight 0.
pub fn draw(weights: &[f32], rng: &mut ChaCha8Rng) -> usize {
    fast::draw_at(weights, rng.r#gen::<f64>())
}

/// How many times `pick` occurs in the last `win_size` tokens of `history`.
pub fn repetition_count(history: &[u32], pick: u32, win_size: usize) -> usize {
    let start = history.len().saturating_sub(win_size);
    history[start..].iter().filter(|&&t| t == pick).count()
}

/// Whether upstream's repetition-aware fallback fires: `rep_num >= win_size · tau_r`, compared
/// in float32 as Python does with the product 10·0.1 = 1.0.
pub fn ras_triggers(rep_num: usize, cfg: &SamplingConfig) -> bool {
    rep_num as f32 >= cfg.win_size as f32 * cfg.tau_r
}

/// The fallback distribution: sets `scores[pick] = -inf` in place (as upstream does) and
/// returns the softmax over the whole vocabulary.
pub fn fallback_distribution(scores: &mut [f32], pick: u32) -> Vec<f32> {
    scores[pick as usize] = f32::NEG_INFINITY;
    softmax(scores)
}

/// What one `ras_sampling` call did (for tests and telemetry).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RasTrace {
    pub nucleus_pick: u32,
    pub rep_num: usize,
    pub resampled: bool,
    pub returned: u32,
}

/// Upstream `ras_sampling(weighted_scores, decoded_tokens, ...)`. `scores` is modified in place
/// exactly as upstream does when the fallback fires.
pub fn ras_sampling(
    scores: &mut [f32],
    history: &[u32],
    cfg: &SamplingConfig,
    rng: &mut ChaCha8Rng,
) -> RasTrace {
    let exps = Exps::of(scores);
    let probs = exps.probs_ref();
    let cands = nucleus_candidates(&probs, cfg.top_p, cfg.top_k);
    let cand_probs: Vec<f32> = cands.iter().map(|&i| probs[i as usize]).collect();
    let nucleus_pick = cands[draw(&cand_probs, rng)];
    let rep_num = repetition_count(history, nucleus_pick, cfg.win_size);
    if !ras_triggers(rep_num, cfg) {
        return RasTrace { nucleus_pick, rep_num, resampled: false, returned: nucleus_pick };
    }
    // `fallback_distribution`, reusing this step's exponentials where masking leaves them be.
    let full = match exps.masked(scores, nucleus_pick as usize) {
        Some(masked) => {
            scores[nucleus_pick as usize] = f32::NEG_INFINITY;
            masked.probs()
        }
        None => fallback_distribution(scores, nucleus_pick),
    };
    let returned = draw(&full, rng) as u32;
    RasTrace { nucleus_pick, rep_num, resampled: true, returned }
}

/// Argmax, lowest id among ties (torch.argmax).
pub fn argmax(scores: &[f32]) -> u32 {
    let mut best = 0;
    for (i, &s) in scores.iter().enumerate() {
        if s > scores[best] {
            best = i;
        }
    }
    best as u32
}

/// The ids the minimum-length guard masks (upstream `sampling_ids(ignore_eos=True)`).
pub fn min_len_masked_ids(
    rule: MinLenRule,
    speech_token_size: usize,
    speech_vocab: usize,
) -> Vec<u32> {
    match rule {
        MinLenRule::SosOnly => vec![speech_token_size as u32],
        MinLenRule::AllStopIds => (speech_token_size as u32..speech_vocab as u32).collect(),
    }
}

/// Upstream `CosyVoice3LM.sampling_ids`: masks the guarded ids while `ignore_eos`, then samples
/// (or takes the argmax in greedy mode). `scores` is the step's log-prob row, modified in place.
pub fn sampling_ids(
    scores: &mut [f32],
    history: &[u32],
    cfg: &SamplingConfig,
    ignore_eos: bool,
    speech_token_size: usize,
    rng: &mut ChaCha8Rng,
) -> u32 {
    if ignore_eos {
        for id in min_len_masked_ids(cfg.min_len_rule, speech_token_size, scores.len()) {
            scores[id as usize] = f32::NEG_INFINITY;
        }
    }
    match cfg.mode {
        SamplingMode::Greedy => argmax(scores),
        SamplingMode::Ras => ras_sampling(scores, history, cfg, rng).returned,
    }
}

/// The silent-run post-filter of `CosyVoice3Model.llm_job` (§6.6): the 6th and later tokens of
/// a run of silent tokens are dropped from the stream sent to the flow. The LM is unaffected.
#[derive(Debug, Clone, Default)]
pub struct SilentFilter {
    run: usize,
}

impl SilentFilter {
    /// Whether `token` is kept.
    pub fn keep(&mut self, token: u32) -> bool {
        if SILENT_TOKENS.contains(&token) {
            self.run += 1;
            self.run <= MAX_SILENT_RUN
        } else {
            self.run = 0;
            true
        }
    }

    /// Filters a whole token list.
    pub fn apply(tokens: &[u32]) -> Vec<u32> {
        let mut f = Self::default();
        tokens.iter().copied().filter(|&t| f.keep(t)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draw_never_returns_zero_weight() {
        let mut rng = segment_rng(3);
        for _ in 0..1000 {
            let i = draw(&[0.0, 0.5, 0.0, 0.5, 0.0], &mut rng);
            assert!(i == 1 || i == 3);
        }
    }

    /// The selected-then-sorted candidates are the stable full sort's, ties included.
    #[test]
    fn nucleus_candidates_follow_the_stable_sort() {
        let reference = |probs: &[f32], top_p: f32, top_k: usize| {
            let mut order: Vec<u32> = (0..probs.len() as u32).collect();
            order.sort_by(|&a, &b| probs[b as usize].total_cmp(&probs[a as usize]));
            nucleus_prefix(order, probs, top_p, top_k)
        };
        let mut rng = segment_rng(11);
        for case in 0..200 {
            let n = [1, 2, 30, 6761][case % 4];
            // Coarse values make many ties; a few cases are nearly one-hot.
            let scores: Vec<f32> = (0..n)
                .map(|_| (rng.r#gen::<f32>() * if case % 5 == 0 { 40.0 } else { 4.0 }).round())
                .collect();
            let probs = softmax(&scores);
            for (top_p, top_k) in [(0.8, 25), (1.0, 25), (0.8, 1), (0.99, 6761), (0.5, 0)] {
                assert_eq!(
                    nucleus_candidates(&probs, top_p, top_k),
                    reference(&probs, top_p, top_k),
                    "case {case}, n {n}, top_p {top_p}, top_k {top_k}"
                );
            }
        }
    }

    /// The softmax as plain loops: libm's exp per entry, the f64 sum in order.
    fn plain_softmax(scores: &[f32]) -> Vec<f32> {
        let max = scores.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let exps: Vec<f32> = scores.iter().map(|&s| ((s - max) as f64).exp() as f32).collect();
        let sum = exps.iter().map(|&e| e as f64).sum::<f64>() as f32;
        exps.iter().map(|&e| e / sum).collect()
    }

    fn plain_draw(weights: &[f32], rng: &mut ChaCha8Rng) -> usize {
        fast::draw_at_in_order(weights, rng.r#gen::<f64>())
    }

    /// The largest probabilities gathered in one chunk, spread one per chunk, or all equal:
    /// the chunk-maximum floor still finds the stable sort's candidates.
    #[test]
    fn nucleus_candidates_wherever_the_largest_lie() {
        let reference = |probs: &[f32], top_k: usize| {
            let mut order: Vec<u32> = (0..probs.len() as u32).collect();
            order.sort_by(|&a, &b| probs[b as usize].total_cmp(&probs[a as usize]));
            nucleus_prefix(order, probs, 1.0, top_k)
        };
        let n = 6761;
        let layouts: [Box<dyn Fn(usize) -> f32>; 5] = [
            Box::new(|i| if i < 40 { 1.0 + i as f32 } else { 0.5 }), // all in the first chunk
            Box::new(|i| if i % KEY_CHUNK == 7 { 2.0 } else { 1.0 }), // one per chunk, tied
            Box::new(|_| 1.0),                                       // every id tied
            Box::new(|i| -(i as f32)),                               // descending ids
            Box::new(|i| if i >= n - 30 { 3.0 } else { (i % 5) as f32 }), // the tail chunk
        ];
        for (l, layout) in layouts.iter().enumerate() {
            let probs = softmax(&(0..n).map(layout).collect::<Vec<f32>>());
            for top_k in [1, 25, 212, 213, 400] {
                assert_eq!(
                    nucleus_candidates(&probs, 1.0, top_k),
                    reference(&probs, top_k),
                    "layout {l}, top_k {top_k}"
                );
            }
        }
    }

    /// `ras_sampling` as upstream writes it, in plain loops: a fresh softmax for the nucleus, a
    /// stable full sort, and a fresh softmax over the masked scores when the fallback fires.
    fn reference_ras(
        scores: &mut [f32],
        history: &[u32],
        cfg: &SamplingConfig,
        rng: &mut ChaCha8Rng,
    ) -> RasTrace {
        let probs = plain_softmax(scores);
        let mut order: Vec<u32> = (0..probs.len() as u32).collect();
        order.sort_by(|&a, &b| probs[b as usize].total_cmp(&probs[a as usize]));
        let cands = nucleus_prefix(order, &probs, cfg.top_p, cfg.top_k);
        let cand_probs: Vec<f32> = cands.iter().map(|&i| probs[i as usize]).collect();
        let nucleus_pick = cands[plain_draw(&cand_probs, rng)];
        let rep_num = repetition_count(history, nucleus_pick, cfg.win_size);
        if !ras_triggers(rep_num, cfg) {
            return RasTrace { nucleus_pick, rep_num, resampled: false, returned: nucleus_pick };
        }
        scores[nucleus_pick as usize] = f32::NEG_INFINITY;
        let full = plain_softmax(scores);
        RasTrace { nucleus_pick, rep_num, resampled: true, returned: plain_draw(&full, rng) as u32 }
    }

    /// The fallback's reused exponentials and the one-pass candidate search give upstream's
    /// choices and leave the scores as upstream does, through both fallback paths (the pick the
    /// only maximum, or not) and with ties at the maximum and at the `top_k`-th place.
    #[test]
    fn ras_sampling_matches_the_reference_through_the_fallback() {
        let cfg = SamplingConfig::default();
        let mut rng = segment_rng(23);
        let (mut fallbacks, mut reused, mut fresh) = (0, 0, 0);
        for case in 0..600 {
            let n = [6761, 40, 3][case % 3];
            let coarse = case % 4 == 0; // many ties
            let mut scores: Vec<f32> = (0..n)
                .map(|_| {
                    let u: f32 = rng.r#gen();
                    let s = u * u * 12.0 - 12.0;
                    if coarse { s.round() } else { s }
                })
                .collect();
            if case % 7 == 0 {
                let top = argmax(&scores) as usize;
                scores[(top + 1) % n] = scores[top]; // a second maximum
            }
            // A history holding likely picks, so the fallback fires on most cases.
            let mut by_score: Vec<u32> = (0..n as u32).collect();
            by_score.sort_by(|&a, &b| scores[b as usize].total_cmp(&scores[a as usize]));
            let history: Vec<u32> = by_score.iter().take(case % 12).copied().collect();
            let seed = rng.r#gen::<u64>();
            let (mut ours, mut theirs) = (scores.clone(), scores.clone());
            let got = ras_sampling(&mut ours, &history, &cfg, &mut segment_rng(seed));
            let want = reference_ras(&mut theirs, &history, &cfg, &mut segment_rng(seed));
            assert_eq!(got, want, "case {case}");
            assert_eq!(
                ours.iter().map(|s| s.to_bits()).collect::<Vec<_>>(),
                theirs.iter().map(|s| s.to_bits()).collect::<Vec<_>>(),
                "case {case}: scores left differently"
            );
            if got.resampled {
                fallbacks += 1;
                let only_max =
                    scores.iter().filter(|&&s| s == scores[got.nucleus_pick as usize]).count() == 1
                        && argmax(&scores) == got.nucleus_pick;
                if only_max { fresh += 1 } else { reused += 1 }
            }
        }
        assert!(fallbacks > 200 && reused > 50 && fresh > 50, "{fallbacks} {reused} {fresh}");
    }

    #[test]
    fn argmax_takes_lowest_id_on_ties() {
        assert_eq!(argmax(&[0.0, 2.0, 1.0, 2.0]), 1);
    }
}
