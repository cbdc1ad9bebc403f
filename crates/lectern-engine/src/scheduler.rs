//! The scheduler's pure logic: the queue of segments in manuscript order, which segments the
//! next LM batch decodes (lanes), which finished segments form the next flow group (frame
//! target), and where a group's audio is cut (480 samples per mel frame).
//!
//! Groups always come from the front of the queue, so takes leave in queue order; a group is
//! formed as soon as its members' tokens are known, so playback never waits for the whole
//! manuscript.

use std::collections::VecDeque;

use super::protocol::{SegmentId, SegmentSpec};
use super::{EngineError, Result};
use lectern_model::config::{SAMPLES_PER_FRAME, TOKEN_MEL_RATIO};

/// A queued segment, with its tokens once the LM has decoded it.
#[derive(Debug, Clone, PartialEq)]
pub struct Pending {
    pub spec: SegmentSpec,
    pub tokens: Option<Vec<u32>>,
    /// This segment's share of its LM batch's wall time, seconds.
    pub lm_s: f64,
    /// Handed to the LM, tokens not back yet.
    pub decoding: bool,
}

impl Pending {
    pub fn new(spec: SegmentSpec) -> Self {
        Self { spec, tokens: None, lm_s: 0.0, decoding: false }
    }

    /// Neither decoded nor being decoded.
    fn awaits_lm(&self) -> bool {
        self.tokens.is_none() && !self.decoding
    }
}

/// What the engine should do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plan {
    /// Nothing queued.
    Idle,
    /// Decode the next LM batch ([`Queue::lm_batch`]) before a group can be formed.
    Lm,
    /// Render the first n queued segments as one flow group.
    Group(usize),
}

/// Segments in manuscript order.
#[derive(Debug, Clone, Default)]
pub struct Queue {
    items: VecDeque<Pending>,
}

impl Queue {
    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub fn items(&self) -> impl Iterator<Item = &Pending> {
        self.items.iter()
    }

    pub fn push_back(&mut self, spec: SegmentSpec) {
        self.items.push_back(Pending::new(spec));
    }

    pub fn push_front(&mut self, spec: SegmentSpec) {
        self.items.push_front(Pending::new(spec));
    }

    /// Removes every entry of segment `id`; true if there was one.
    pub fn cancel(&mut self, id: SegmentId) -> bool {
        let before = self.items.len();
        self.items.retain(|p| p.spec.id != id);
        self.items.len() != before
    }

    /// Removes everything, returning the ids in queue order.
    pub fn clear(&mut self) -> Vec<SegmentId> {
        self.items.drain(..).map(|p| p.spec.id).collect()
    }

    /// Moves the planning unit that holds the first entry of segment `id` (tokens and all) to
    /// the front: the entries from just after the previous group break to the next one. Moving
    /// the whole unit keeps its groups what the plan makes them. True if `id` is queued.
    pub fn prioritise(&mut self, id: SegmentId) -> bool {
        let Some(at) = self.items.iter().position(|p| p.spec.id == id) else {
            return false;
        };
        let start = self.items.iter().take(at).rposition(|p| p.spec.group_break_after);
        let start = start.map_or(0, |i| i + 1);
        let end = self.items.iter().skip(at).position(|p| p.spec.group_break_after);
        let end = end.map_or(self.items.len(), |i| at + i + 1);
        let mut unit: Vec<Pending> = self.items.drain(start..end).collect();
        // A unit that the queue's end closed stays closed in front of the rest.
        if let Some(last) = unit.last_mut() {
            last.spec.group_break_after = true;
        }
        for p in unit.into_iter().rev() {
            self.items.push_front(p);
        }
        true
    }

    /// Gives the queued entry of `id` a new seed, dropping tokens decoded with the old one;
    /// false if `id` is not queued.
    pub fn reseed(&mut self, id: SegmentId, seed: u64) -> bool {
        let Some(p) = self.items.iter_mut().find(|p| p.spec.id == id) else {
            return false;
        };
        *p = Pending::new(SegmentSpec { seed, ..p.spec.clone() });
        true
    }

    /// Queue indices of the next LM batch: the first `lanes` entries that are neither decoded
    /// nor being decoded.
    pub fn lm_batch(&self, lanes: usize) -> Vec<usize> {
        self.items
            .iter()
            .enumerate()
            .filter(|(_, p)| p.awaits_lm())
            .map(|(i, _)| i)
            .take(lanes.max(1))
            .collect()
    }

    /// The LM batch while the listener waits for a run's first audio: the front entry alone
    /// when it is undecoded and its text is at most half as long as the next undecoded
    /// entry's (a lead sentence, a heading), otherwise [`Self::lm_batch`]. Batched with
    /// longer segments, a short opener's audio would wait for the longest lane; alone it is
    /// ready after its own tokens. Lane batching never changes tokens, so neither does this.
    pub fn first_audio_batch(&self, lanes: usize) -> Vec<usize> {
        let undecoded: Vec<(usize, &Pending)> =
            self.items.iter().enumerate().filter(|(_, p)| p.awaits_lm()).take(2).collect();
        match undecoded.as_slice() {
            [(0, front), (_, next)] if front.spec.text.len() * 2 <= next.spec.text.len() => {
                vec![0]
            }
            _ => self.lm_batch(lanes),
        }
    }

    /// Marks queue entry `at` as handed to the LM and returns its spec.
    pub fn start_decoding(&mut self, at: usize) -> Option<SegmentSpec> {
        let p = self.items.get_mut(at)?;
        p.decoding = true;
        Some(p.spec.clone())
    }

    /// Stores the LM's output for the entry it was decoded for: segment `spec.id` at seed
    /// `spec.seed`, still waiting for it. False when there is none (cancelled or re-seeded
    /// while the LM ran): the tokens are stale and dropped.
    pub fn set_tokens(&mut self, spec: &SegmentSpec, tokens: Vec<u32>, lm_s: f64) -> bool {
        let Some(p) = self.decoding_entry(spec) else {
            return false;
        };
        p.tokens = Some(tokens);
        p.lm_s = lm_s;
        p.decoding = false;
        true
    }

    /// Removes the entry whose decoding failed (see [`Self::set_tokens`]); true if it was there.
    pub fn fail_decoding(&mut self, spec: &SegmentSpec) -> bool {
        let Some(at) = self.items.iter().position(|p| p.decoding && same_take(&p.spec, spec))
        else {
            return false;
        };
        self.items.remove(at);
        true
    }

    /// True while an entry is handed to the LM.
    pub fn is_decoding(&self) -> bool {
        self.items.iter().any(|p| p.decoding)
    }

    fn decoding_entry(&mut self, spec: &SegmentSpec) -> Option<&mut Pending> {
        self.items.iter_mut().find(|p| p.decoding && same_take(&p.spec, spec))
    }

    /// The next step for a flow group target of `target_frames` (see [`plan_group`]). A group
    /// never reaches past an entry that closes its group ([`SegmentSpec::group_break_after`]),
    /// and never mixes voices or paces: a group's prompt mel and speaker embedding are one
    /// voice's, and its members' mels are resampled at one pace.
    pub fn plan(&self, target_frames: usize) -> Plan {
        let unit_end = self.items.iter().position(|p| p.spec.group_break_after);
        let mut unit_len = unit_end.map_or(self.items.len(), |i| i + 1);
        if let Some(front) = self.items.front() {
            let same = |p: &Pending| {
                p.spec.casting.voice == front.spec.casting.voice
                    && p.spec.casting.pace == front.spec.casting.pace
            };
            unit_len = self.items.iter().take(unit_len).take_while(|p| same(p)).count();
        }
        let known: Vec<Option<usize>> =
            self.items.iter().take(unit_len).map(|p| p.tokens.as_ref().map(Vec::len)).collect();
        plan_group(&known, target_frames)
    }

    /// Removes and returns the first `n` entries.
    pub fn take_front(&mut self, n: usize) -> Vec<Pending> {
        self.items.drain(..n.min(self.items.len())).collect()
    }
}

/// The same segment at the same seed: LM output for one is valid for the other.
fn same_take(a: &SegmentSpec, b: &SegmentSpec) -> bool {
    a.id == b.id && a.seed == b.seed && a.text == b.text
}

/// Decides the next step from the token counts of the queue (in order; `None` = not yet
/// decoded). A group takes segments from the front while its generated frames (2 per token)
/// stay within `target_frames`, always at least one; `target_frames == 0` means one segment per
/// group. A group closes when the next segment would overflow the target or the queue ends;
/// if a segment whose fit is still unknown is in the way, the LM runs first.
pub fn plan_group(known_tokens: &[Option<usize>], target_frames: usize) -> Plan {
    let Some(&first) = known_tokens.first() else {
        return Plan::Idle;
    };
    let Some(first) = first else {
        return Plan::Lm;
    };
    if target_frames == 0 {
        return Plan::Group(1);
    }
    let mut frames = first * TOKEN_MEL_RATIO;
    for (n, next) in known_tokens.iter().enumerate().skip(1) {
        match next {
            None => return Plan::Lm,
            Some(t) if frames + t * TOKEN_MEL_RATIO > target_frames => return Plan::Group(n),
            Some(t) => frames += t * TOKEN_MEL_RATIO,
        }
    }
    Plan::Group(known_tokens.len())
}

/// Cuts a group's audio into its segments' takes by their mel frame counts (480 samples per
/// frame; a paced segment has other than 2 frames per token); errors unless the audio is
/// exactly that long.
pub fn cut_group(samples: &[f32], frames: &[usize]) -> Result<Vec<Vec<f32>>> {
    let total: usize = frames.iter().sum();
    if samples.len() != total * SAMPLES_PER_FRAME {
        return Err(EngineError::Backend(format!(
            "group of {total} mel frames needs {} samples, vocoder gave {}",
            total * SAMPLES_PER_FRAME,
            samples.len()
        )));
    }
    let mut start = 0;
    Ok(frames
        .iter()
        .map(|&n| {
            let cut = samples[start..start + n * SAMPLES_PER_FRAME].to_vec();
            start += n * SAMPLES_PER_FRAME;
            cut
        })
        .collect())
}

/// Splits `total_s` over items in proportion to their weights (equally if all weights are 0).
pub fn shares(total_s: f64, weights: &[usize]) -> Vec<f64> {
    let sum: usize = weights.iter().sum();
    if sum == 0 {
        let n = weights.len().max(1) as f64;
        return weights.iter().map(|_| total_s / n).collect();
    }
    weights.iter().map(|&w| total_s * w as f64 / sum as f64).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(id: u64) -> SegmentSpec {
        SegmentSpec::new(id, format!("segment {id}"), id)
    }

    #[test]
    fn groups_fill_up_to_the_frame_target() {
        // 100, 200, 300, 400 tokens = 200, 400, 600, 800 frames.
        let k = [Some(100), Some(200), Some(300), Some(400)];
        assert_eq!(plan_group(&k, 600), Plan::Group(2)); // 200 + 400 = 600 fits exactly
        assert_eq!(plan_group(&k, 599), Plan::Group(1));
        assert_eq!(plan_group(&k, 1200), Plan::Group(3));
        assert_eq!(plan_group(&k, 10_000), Plan::Group(4)); // queue end closes the group
        assert_eq!(plan_group(&k, 0), Plan::Group(1)); // 0 = one segment per group
        assert_eq!(plan_group(&k, 50), Plan::Group(1)); // always at least one
    }

    #[test]
    fn unknown_fit_runs_the_lm_first() {
        assert_eq!(plan_group(&[], 2000), Plan::Idle);
        assert_eq!(plan_group(&[None, Some(5)], 2000), Plan::Lm);
        assert_eq!(plan_group(&[Some(100), None], 2000), Plan::Lm);
        // The unknown segment is beyond the point where the group closes anyway.
        assert_eq!(plan_group(&[Some(100), Some(1000), None], 2000), Plan::Group(1));
        assert_eq!(plan_group(&[Some(100), None], 0), Plan::Group(1));
    }

    #[test]
    fn cuts_are_exact_multiples_of_480() {
        let samples: Vec<f32> = (0..8 * 960).map(|i| i as f32).collect();
        let cuts = cut_group(&samples, &[6, 0, 10]).unwrap();
        assert_eq!(cuts.iter().map(Vec::len).collect::<Vec<_>>(), vec![2880, 0, 4800]);
        assert_eq!(cuts[2][0], 2880.0);
        assert_eq!(cuts.concat(), samples);
        assert!(cut_group(&samples[1..], &[6, 0, 10]).is_err());
        // Paced segments have any number of frames, 480 samples each.
        let cuts = cut_group(&samples, &[7, 9]).unwrap();
        assert_eq!(cuts.iter().map(Vec::len).collect::<Vec<_>>(), vec![3360, 4320]);
    }

    /// A group's prompt mel and embedding are one voice's, and its mels are paced alike: a
    /// change of either closes the group, however much room the target leaves.
    #[test]
    fn groups_never_mix_voices_or_paces() {
        let cast = |id: u64, voice: &str, pace: f64| {
            let mut s = spec(id);
            s.casting.voice = voice.into();
            s.casting.pace = pace;
            s
        };
        let mut q = Queue::default();
        for s in [cast(0, "a", 1.0), cast(1, "a", 1.0), cast(2, "b", 1.0), cast(3, "b", 0.9)] {
            q.push_back(s);
        }
        for at in 0..4 {
            let spec = q.start_decoding(at).unwrap();
            q.set_tokens(&spec, vec![1; 10], 0.0);
        }
        assert_eq!(q.plan(100_000), Plan::Group(2));
        q.take_front(2);
        assert_eq!(q.plan(100_000), Plan::Group(1));
        q.take_front(1);
        assert_eq!(q.plan(100_000), Plan::Group(1));
    }

    #[test]
    fn lm_batch_takes_the_first_undecoded_in_order() {
        let mut q = Queue::default();
        for id in 0..6 {
            q.push_back(spec(id));
        }
        decode(&mut q, 1, vec![1, 2], 0.0);
        assert_eq!(q.lm_batch(3), vec![0, 2, 3]);
        assert_eq!(q.lm_batch(0), vec![0]); // at least one lane
        assert_eq!(q.lm_batch(99), vec![0, 2, 3, 4, 5]);
    }

    #[test]
    fn a_short_front_segment_decodes_alone_for_first_audio() {
        let mut q = Queue::default();
        let texts = ["A short opener.", "A much longer second segment of the manuscript.", "c"];
        for (id, text) in texts.iter().enumerate() {
            q.push_back(SegmentSpec::new(id as u64, *text, 0));
        }
        assert_eq!(q.first_audio_batch(8), vec![0]);
        assert_eq!(q.lm_batch(8), vec![0, 1, 2]);
        // A front segment as long as the next one shares the batch.
        let mut even = Queue::default();
        even.push_back(spec(0));
        even.push_back(spec(1));
        assert_eq!(even.first_audio_batch(8), vec![0, 1]);
        // Once the front is decoded, the plain batch applies.
        decode(&mut q, 0, vec![1], 0.0);
        assert_eq!(q.first_audio_batch(8), vec![1, 2]);
    }

    #[test]
    fn queue_order_cancel_prioritise_reseed() {
        let mut q = Queue::default();
        for id in 0..5 {
            q.push_back(spec(id).with_group_break());
        }
        decode(&mut q, 3, vec![7; 4], 0.5);
        assert!(q.prioritise(3));
        assert!(!q.prioritise(42));
        assert!(q.cancel(1));
        assert!(!q.cancel(1));
        let ids: Vec<u64> = q.items().map(|p| p.spec.id).collect();
        assert_eq!(ids, vec![3, 0, 2, 4]);
        assert_eq!(q.items().next().unwrap().tokens, Some(vec![7; 4])); // kept its tokens
        assert!(q.reseed(3, 99));
        let front = q.items().next().unwrap();
        assert_eq!((front.spec.seed, front.tokens.is_none()), (99, true));
        let taken = q.take_front(2);
        assert_eq!(taken.iter().map(|p| p.spec.id).collect::<Vec<_>>(), vec![3, 0]);
        assert_eq!(q.clear(), vec![2, 4]);
        assert!(q.is_empty());
    }

    /// Hands entry `at` to the LM and stores its output, as the engine does.
    fn decode(q: &mut Queue, at: usize, tokens: Vec<u32>, lm_s: f64) {
        let spec = q.start_decoding(at).unwrap();
        assert!(q.set_tokens(&spec, tokens, lm_s));
    }

    #[test]
    fn entries_being_decoded_are_skipped_and_stale_output_is_dropped() {
        let mut q = Queue::default();
        for id in 0..4 {
            q.push_back(spec(id));
        }
        let in_flight: Vec<SegmentSpec> =
            q.lm_batch(2).into_iter().map(|at| q.start_decoding(at).unwrap()).collect();
        assert!(q.is_decoding());
        assert_eq!(q.lm_batch(8), vec![2, 3]);
        assert_eq!(q.plan(0), Plan::Lm); // the front waits for its tokens
        // Segment 0 is re-seeded and segment 1 cancelled while the LM runs.
        assert!(q.reseed(0, 77));
        assert!(q.cancel(1));
        assert!(!q.set_tokens(&in_flight[0], vec![1], 0.1)); // decoded at the old seed
        assert!(!q.set_tokens(&in_flight[1], vec![2], 0.1)); // gone
        assert!(!q.is_decoding());
        assert_eq!(q.lm_batch(8), vec![0, 1, 2]); // 0 again, at seed 77
        let again = q.start_decoding(0).unwrap();
        assert_eq!(again.seed, 77);
        assert!(q.set_tokens(&again, vec![5, 6], 0.2));
        assert_eq!(q.plan(0), Plan::Group(1));
        // A failed decode removes its entry.
        let failed = q.start_decoding(1).unwrap();
        assert!(q.fail_decoding(&failed));
        assert!(!q.fail_decoding(&failed));
        assert_eq!(q.items().map(|p| p.spec.id).collect::<Vec<_>>(), vec![0, 3]);
    }

    #[test]
    fn groups_close_at_planned_breaks_and_units_move_whole() {
        let mut q = Queue::default();
        // Units: [0, 1] [2] [3, 4].
        for id in 0..5 {
            let s = spec(id);
            q.push_back(if id == 1 || id == 2 { s.with_group_break() } else { s });
        }
        for at in 0..5 {
            decode(&mut q, at, vec![1; 10], 0.0);
        }
        assert_eq!(q.plan(10_000), Plan::Group(2)); // not past the break after 1
        assert!(q.prioritise(4)); // the unit [3, 4] moves, in order
        let ids: Vec<u64> = q.items().map(|p| p.spec.id).collect();
        assert_eq!(ids, vec![3, 4, 0, 1, 2]);
        assert_eq!(q.plan(10_000), Plan::Group(2));
        assert!(q.prioritise(2));
        assert_eq!(q.items().map(|p| p.spec.id).collect::<Vec<_>>(), vec![2, 3, 4, 0, 1]);
        assert_eq!(q.plan(10_000), Plan::Group(1));
    }

    #[test]
    fn shares_are_proportional() {
        assert_eq!(shares(3.0, &[1, 2]), vec![1.0, 2.0]);
        assert_eq!(shares(2.0, &[0, 0]), vec![1.0, 1.0]);
    }
}
