//! Engine integration tests on the fake backend: event order, take order, cancel and
//! prioritise mid-render, live NFE and group changes, re-seed, regeneration, and the pipelining
//! proof (lanes and group size never change tokens; audio only depends on group composition).

use crate::common;

use std::collections::HashMap;
use std::time::Duration;

use common::Gated;
use lectern_engine::protocol::{
    EngineEvent, RenderParams, Request, SegmentSpec, SegmentState, Take, TakeRecord,
};
use lectern_engine::{Engine, EngineHandle, FakeBackend};

const WAIT: Duration = Duration::from_secs(60);

fn manuscript(n: u64) -> Vec<SegmentSpec> {
    (0..n)
        .map(|i| SegmentSpec {
            id: i,
            text: format!(
                "Segment {i}. {}",
                "and then the words ".repeat(1 + (i as usize * 7) % 5)
            ),
            seed: 1000 + i,
            ..SegmentSpec::default()
        })
        .collect()
}

fn params(lanes: usize, group_target_frames: usize) -> RenderParams {
    RenderParams { lanes, group_target_frames, ..RenderParams::default() }
}

/// Events until the engine reports Idle.
fn until_idle(h: &EngineHandle) -> Vec<EngineEvent> {
    let mut events = Vec::new();
    loop {
        let e = h.rx.recv_timeout(WAIT).expect("engine event");
        if matches!(e, EngineEvent::Idle) {
            return events;
        }
        events.push(e);
    }
}

fn takes(events: &[EngineEvent]) -> Vec<Take> {
    events
        .iter()
        .filter_map(|e| match e {
            EngineEvent::TakeReady(t) => Some((**t).clone()),
            _ => None,
        })
        .collect()
}

fn render(segments: Vec<SegmentSpec>, p: RenderParams) -> Vec<Take> {
    let h = Engine::spawn(FakeBackend::new(), "narrator", p);
    h.tx.send(Request::Enqueue(segments)).unwrap();
    let t = takes(&until_idle(&h));
    h.shutdown();
    t
}

fn ids(takes: &[Take]) -> Vec<u64> {
    takes.iter().map(|t| t.record.segment_id).collect()
}

#[test]
fn twelve_segments_render_in_order_with_sane_states() {
    let _one = common::one_at_a_time();
    let h = Engine::spawn(FakeBackend::new(), "narrator", params(4, 2000));
    h.tx.send(Request::Enqueue(manuscript(12))).unwrap();
    let events = until_idle(&h);
    h.shutdown();
    let mut states: HashMap<u64, Vec<SegmentState>> = HashMap::new();
    for e in &events {
        if let EngineEvent::SegmentState { id, state } = e {
            states.entry(*id).or_default().push(state.clone());
        }
    }
    use SegmentState::*;
    for id in 0..12 {
        assert_eq!(states[&id], vec![Queued, Lm, Flow, Vocoder, Ready], "segment {id}");
    }
    let t = takes(&events);
    assert_eq!(ids(&t), (0..12).collect::<Vec<_>>());
    let mut groups = 0;
    for take in &t {
        let r = &take.record;
        assert_eq!(take.samples.len(), r.tokens.len() * 960);
        assert_eq!(r.group.segment_ids[r.group.index], r.segment_id);
        assert_eq!(r.group.tokens[r.group.index], r.tokens);
        let frames: usize = r.group.token_counts.iter().sum::<usize>() * 2;
        assert!(r.group.segment_ids.len() == 1 || frames <= 2000, "group over target");
        groups += usize::from(r.group.index == 0);
    }
    assert!(groups > 1 && groups < 12, "{groups} groups: grouping should be exercised");
    // Each take is sent as soon as its group is done: a telemetry sample follows every group,
    // so the first take comes long before the last group.
    let first_take = events.iter().position(|e| matches!(e, EngineEvent::TakeReady(_))).unwrap();
    let telemetry = events.iter().filter(|e| matches!(e, EngineEvent::Telemetry(_))).count();
    assert_eq!(telemetry, groups);
    let last_flow = events
        .iter()
        .rposition(|e| matches!(e, EngineEvent::SegmentState { state: SegmentState::Flow, .. }))
        .unwrap();
    assert!(first_take < last_flow, "the first take must not wait for the last group");
}

#[test]
fn cancel_prioritise_nfe_and_group_changes_apply_at_the_next_group() {
    let _one = common::one_at_a_time();
    let (backend, at_flow, go) = Gated::new(FakeBackend::new());
    let h = Engine::spawn(backend, "narrator", params(4, 0));
    // Planning units (group breaks after 0, 8 and 9): [0] [1 … 8] [9] [10 11].
    let specs: Vec<SegmentSpec> = manuscript(12)
        .into_iter()
        .map(|s| if [0, 8, 9].contains(&s.id) { s.with_group_break() } else { s })
        .collect();
    h.tx.send(Request::Enqueue(specs)).unwrap();
    // The first group (segment 0 alone) is in the flow: change everything now.
    assert_eq!(at_flow.recv_timeout(WAIT).unwrap().len(), 1);
    for r in [
        Request::Pause,
        Request::Cancel(vec![3, 5]),
        Request::Prioritise(9),
        Request::SetNfe(4),
        Request::SetGroupTarget(100_000),
    ] {
        h.tx.send(r).unwrap();
    }
    go.send(()).unwrap();
    // Group 0 finishes as started; then the engine is paused.
    let mut events = Vec::new();
    while !events
        .iter()
        .any(|e| matches!(e, EngineEvent::ParamsChanged(p) if p.group_target_frames == 100_000))
    {
        events.push(h.rx.recv_timeout(WAIT).unwrap());
    }
    assert!(at_flow.recv_timeout(Duration::from_millis(200)).is_err(), "paused: no new group");
    for _ in 0..20 {
        go.send(()).unwrap(); // permits for the rest
    }
    h.tx.send(Request::Resume).unwrap();
    events.extend(until_idle(&h));
    h.shutdown();
    let t = takes(&events);
    assert_eq!(ids(&t), vec![0, 9, 1, 2, 4, 6, 7, 8, 10, 11]);
    assert_eq!((t[0].record.nfe, t[0].record.group.segment_ids.len()), (10, 1));
    // The prioritised unit moved whole; groups never reach across a break.
    for take in &t[1..] {
        assert_eq!(take.record.nfe, 4);
        let want: Vec<u64> = match take.record.segment_id {
            9 => vec![9],
            10 | 11 => vec![10, 11],
            _ => vec![1, 2, 4, 6, 7, 8],
        };
        assert_eq!(take.record.group.segment_ids, want);
    }
    for id in [3, 5] {
        assert!(events.iter().any(|e| matches!(e, EngineEvent::SegmentState { id: i, state: SegmentState::Cancelled } if *i == id)));
    }
}

#[test]
fn reseed_makes_a_new_take_and_keeps_the_old() {
    let _one = common::one_at_a_time();
    let h = Engine::spawn(FakeBackend::new(), "narrator", params(8, 2000));
    let specs = manuscript(3);
    h.tx.send(Request::Enqueue(specs.clone())).unwrap();
    let first = takes(&until_idle(&h));
    let old = first[1].clone();
    let old_samples = old.samples.to_vec();
    h.tx.send(Request::Reseed(Box::new(SegmentSpec { seed: 77, ..specs[1].clone() }))).unwrap();
    let second = takes(&until_idle(&h));
    h.shutdown();
    assert_eq!(ids(&second), vec![1]);
    let new = &second[0];
    assert_ne!(new.id, old.id);
    assert!(first.iter().all(|t| t.id != new.id));
    assert_eq!(new.record.seed, 77);
    assert_eq!(new.record.text, old.record.text);
    assert_ne!(new.record.tokens, old.record.tokens);
    assert_eq!(*old.samples, old_samples, "old take untouched");
}

#[test]
fn regeneration_from_a_record_is_bit_identical() {
    let _one = common::one_at_a_time();
    let h = Engine::spawn(FakeBackend::new(), "narrator", params(8, 2000));
    h.tx.send(Request::Enqueue(manuscript(6))).unwrap();
    let first = takes(&until_idle(&h));
    let original = first.iter().find(|t| t.record.group.index == 1).expect("a group of two+");
    // Through JSON, as the store keeps it; and with other live parameters meanwhile.
    let json = serde_json::to_string(&original.record).unwrap();
    let record: TakeRecord = serde_json::from_str(&json).unwrap();
    h.tx.send(Request::SetNfe(3)).unwrap();
    h.tx.send(Request::SetGroupTarget(0)).unwrap();
    h.tx.send(Request::Regenerate(Box::new(record))).unwrap();
    let again = takes(&until_idle(&h));
    h.shutdown();
    assert_eq!(again.len(), 1);
    let regen = &again[0];
    assert_ne!(regen.id, original.id);
    assert_eq!(regen.samples.len(), original.samples.len());
    assert!(
        regen.samples.iter().zip(original.samples.iter()).all(|(a, b)| a.to_bits() == b.to_bits())
    );
    let mut expected = original.record.clone();
    expected.timings = regen.record.timings;
    assert_eq!(regen.record, expected);
}

#[test]
fn regenerating_a_broken_record_fails_cleanly() {
    let _one = common::one_at_a_time();
    let h = Engine::spawn(FakeBackend::new(), "narrator", params(8, 2000));
    h.tx.send(Request::Enqueue(manuscript(1))).unwrap();
    let mut record = takes(&until_idle(&h))[0].record.clone();
    record.tokens.push(1); // no longer the group's tokens of the take
    h.tx.send(Request::Regenerate(Box::new(record))).unwrap();
    let e = h.rx.recv_timeout(WAIT).unwrap();
    assert!(matches!(e, EngineEvent::SegmentState { id: 0, state: SegmentState::Failed(_) }));
    h.shutdown();
}

#[test]
fn lanes_and_group_size_never_change_tokens_and_audio_follows_group_composition() {
    let _one = common::one_at_a_time();
    let segs = manuscript(12);
    let solo_1 = render(segs.clone(), params(1, 0));
    let solo_4 = render(segs.clone(), params(4, 0));
    let big_1 = render(segs.clone(), params(1, 1500));
    let big_4 = render(segs, params(4, 1500));
    let tokens = |t: &[Take]| t.iter().map(|t| t.record.tokens.clone()).collect::<Vec<_>>();
    let audio = |t: &[Take]| t.iter().map(|t| t.samples.to_vec()).collect::<Vec<_>>();
    let groups = |t: &[Take]| t.iter().map(|t| t.record.group.clone()).collect::<Vec<_>>();
    for run in [&solo_4, &big_1, &big_4] {
        assert_eq!(tokens(run), tokens(&solo_1));
    }
    // Same composition, any lanes: identical audio.
    assert_eq!(groups(&solo_1), groups(&solo_4));
    assert_eq!(audio(&solo_1), audio(&solo_4));
    assert_eq!(groups(&big_1), groups(&big_4));
    assert_eq!(audio(&big_1), audio(&big_4));
    // Other composition: a member of a larger group sounds different, a group of one the same.
    for (solo, big) in solo_1.iter().zip(&big_1) {
        let alone = big.record.group.segment_ids.len() == 1;
        assert_eq!(solo.samples == big.samples, alone, "segment {}", solo.record.segment_id);
    }
    assert!(big_1.iter().any(|t| t.record.group.segment_ids.len() > 1));
}

/// The fake backend, with its `fail_call`-th flow call failing (a device error in one group).
struct FlakyFlow {
    inner: FakeBackend,
    calls: usize,
    fail_call: usize,
}

impl lectern_engine::SynthBackend for FlakyFlow {
    fn lm_generate(
        &mut self,
        jobs: &[lectern_engine::LmJob],
    ) -> lectern_engine::Result<Vec<Vec<u32>>> {
        self.inner.lm_generate(jobs)
    }
    fn flow_group(
        &mut self,
        voice: &str,
        tokens: &[Vec<u32>],
        nfe: usize,
    ) -> lectern_engine::Result<lectern_engine::Mel> {
        self.calls += 1;
        if self.calls == self.fail_call {
            let why = format!("simulated device error in flow call {}", self.calls);
            return Err(lectern_engine::EngineError::Backend(why));
        }
        self.inner.flow_group(voice, tokens, nfe)
    }
    fn vocode(&mut self, mel: &lectern_engine::Mel) -> lectern_engine::Result<Vec<f32>> {
        self.inner.vocode(mel)
    }
    fn synchronize(&self) -> lectern_engine::Result<()> {
        self.inner.synchronize()
    }
    fn kv_lane_memory(&self) -> Vec<lectern_engine::protocol::LaneMemory> {
        self.inner.kv_lane_memory()
    }
    fn describe(&self) -> lectern_engine::BackendInfo {
        self.inner.describe()
    }
}

/// A backend error in one group fails that group's segment, names the error, and the engine
/// goes on with the rest — and renders the failed segment when it is asked again.
#[test]
fn a_backend_error_in_one_segment_fails_it_and_the_engine_goes_on() {
    let _one = common::one_at_a_time();
    let backend = FlakyFlow { inner: FakeBackend::new(), calls: 0, fail_call: 3 };
    // Group target 0: one segment per flow group, so exactly one segment meets the error.
    let h = Engine::spawn(backend, "narrator", params(4, 0));
    let segments = manuscript(8);
    h.tx.send(Request::Enqueue(segments.clone())).unwrap();
    let events = until_idle(&h);
    let failed: Vec<(u64, String)> = events
        .iter()
        .filter_map(|e| match e {
            EngineEvent::SegmentState { id, state: SegmentState::Failed(why) } => {
                Some((*id, why.clone()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert!(failed[0].1.contains("simulated device error"), "{failed:?}");
    let done = ids(&takes(&events));
    assert_eq!(done.len(), 7);
    assert!(!done.contains(&failed[0].0));
    // Asked again, the failed segment renders.
    let again: Vec<SegmentSpec> = segments.into_iter().filter(|s| s.id == failed[0].0).collect();
    h.tx.send(Request::Enqueue(again)).unwrap();
    assert_eq!(ids(&takes(&until_idle(&h))), vec![failed[0].0]);
    h.shutdown();
}
