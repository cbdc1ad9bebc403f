//! The engine's overlap of the LM with the flow and the vocoder ([`RenderParams::overlap`]):
//! the takes are the same as without it, the LM really decodes while a group is in the flow,
//! lanes are handed to the flow as soon as they finish, and a segment cancelled or re-seeded
//! while the LM decodes it never gets the stale tokens.

use crate::common;

use std::sync::mpsc::{Receiver, Sender, channel};
use std::time::Duration;

use common::Gated;
use lectern_engine::backend::LmStage;
use lectern_engine::protocol::{
    EngineEvent, LaneMemory, RenderParams, Request, SegmentSpec, SegmentState, Take,
};
use lectern_engine::{Engine, EngineHandle, FakeBackend, LmJob, SynthBackend};

const WAIT: Duration = Duration::from_secs(60);

fn manuscript(n: u64) -> Vec<SegmentSpec> {
    (0..n)
        .map(|i| SegmentSpec {
            id: i,
            text: format!(
                "Segment {i}. {}",
                "and then the words ".repeat(1 + (i as usize * 3) % 4)
            ),
            seed: 1000 + i,
            ..SegmentSpec::default()
        })
        .collect()
}

fn params(lanes: usize, group_target_frames: usize, overlap: bool) -> RenderParams {
    RenderParams { lanes, group_target_frames, overlap, ..RenderParams::default() }
}

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

fn position(events: &[EngineEvent], id: u64, state: &SegmentState) -> usize {
    events
        .iter()
        .position(|e| matches!(e, EngineEvent::SegmentState { id: i, state: s } if *i == id && s == state))
        .unwrap_or_else(|| panic!("segment {id} never reached {state:?}"))
}

fn params_event(events: &[EngineEvent]) -> RenderParams {
    events
        .iter()
        .find_map(|e| match e {
            EngineEvent::ParamsChanged(p) => Some(p.clone()),
            _ => None,
        })
        .expect("ParamsChanged first")
}

fn render(backend: FakeBackend, segments: Vec<SegmentSpec>, p: RenderParams) -> Vec<EngineEvent> {
    let h = Engine::spawn(backend, "narrator", p);
    h.tx.send(Request::Enqueue(segments)).unwrap();
    let events = until_idle(&h);
    h.shutdown();
    events
}

#[test]
fn overlap_changes_no_take() {
    let _one = common::one_at_a_time();
    for (lanes, target) in [(1, 0), (3, 0), (4, 300), (8, 2000)] {
        let serial = render(FakeBackend::new(), manuscript(9), params(lanes, target, false));
        let overlapped =
            render(FakeBackend::new().detached(), manuscript(9), params(lanes, target, true));
        assert!(!params_event(&serial).overlap);
        assert!(params_event(&overlapped).overlap, "the engine reports that it overlaps");
        let (a, b) = (takes(&serial), takes(&overlapped));
        assert_eq!(a.len(), 9);
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(&b) {
            assert_eq!(x.record.segment_id, y.record.segment_id, "takes leave in queue order");
            assert_eq!(x.record.tokens, y.record.tokens);
            assert_eq!(x.record.group, y.record.group, "lanes {lanes} target {target}");
            assert_eq!(x.samples, y.samples);
        }
    }
}

#[test]
fn a_backend_without_an_lm_stage_runs_inline() {
    let _one = common::one_at_a_time();
    let events = render(FakeBackend::new(), manuscript(3), params(2, 0, true));
    assert!(!params_event(&events).overlap, "nothing to overlap with: reported off");
    assert_eq!(takes(&events).len(), 3);
}

/// Tells which segments it finished; with `hold`, reports a batch's first lane and then
/// waits for the test before finishing the others (a long lane still decoding).
struct TellingLm {
    inner: FakeBackend,
    done: Sender<u64>,
    hold: Option<Receiver<()>>,
}

impl LmStage for TellingLm {
    fn lm_generate_streaming(
        &mut self,
        jobs: &[LmJob],
        report: &mut dyn FnMut(usize, &[u32]),
    ) -> lectern_engine::Result<Vec<Vec<u32>>> {
        let out = SynthBackend::lm_generate(&mut self.inner, jobs)?;
        for (i, (j, toks)) in jobs.iter().zip(&out).enumerate() {
            if i == 1 {
                if let Some(hold) = &self.hold {
                    let _ = hold.recv();
                }
            }
            report(i, toks);
            let _ = self.done.send(j.segment_id);
        }
        Ok(out)
    }
    fn synchronize(&self) -> lectern_engine::Result<()> {
        Ok(())
    }
    fn kv_lane_memory(&self) -> Vec<LaneMemory> {
        SynthBackend::kv_lane_memory(&self.inner)
    }
}

struct GatedRun {
    h: EngineHandle,
    at_flow: Receiver<Vec<usize>>,
    go: Sender<()>,
    lm_done: Receiver<u64>,
    lm_go: Sender<()>,
}

/// A gated render whose LM stage says which segments it finished: proof that the LM decodes
/// while the flow is held.
fn gated(lanes: usize, hold_lm: bool) -> GatedRun {
    let (mut backend, at_flow, go) = Gated::new(FakeBackend::new());
    let (done, lm_done) = channel();
    let (lm_go, hold) = channel();
    let inner = backend.inner.clone();
    backend.lm = Some(Box::new(TellingLm { inner, done, hold: hold_lm.then_some(hold) }));
    let h = Engine::spawn(backend, "narrator", params(lanes, 0, true));
    GatedRun { h, at_flow, go, lm_done, lm_go }
}

#[test]
fn a_finished_lane_goes_to_the_flow_while_its_batch_decodes() {
    let _one = common::one_at_a_time();
    let run = gated(3, true);
    // Equal lengths: no fast-start split, the three decode as one batch.
    let specs: Vec<SegmentSpec> =
        (0..3).map(|i| SegmentSpec::new(i, format!("Segment number {i} of three."), i)).collect();
    run.h.tx.send(Request::Enqueue(specs)).unwrap();
    assert_eq!(run.lm_done.recv_timeout(WAIT).unwrap(), 0);
    // Lanes 1 and 2 are held in the LM: segment 0 must reach the flow anyway.
    let lens = run.at_flow.recv_timeout(WAIT).expect("segment 0 enters the flow mid-batch");
    assert_eq!(lens.len(), 1);
    assert!(run.lm_done.try_recv().is_err(), "the other lanes are still decoding");
    run.lm_go.send(()).unwrap();
    for _ in 0..3 {
        run.go.send(()).unwrap();
    }
    let events = until_idle(&run.h);
    run.h.shutdown();
    assert_eq!(takes(&events).iter().map(|t| t.record.segment_id).collect::<Vec<_>>(), [0, 1, 2]);
}

#[test]
fn the_lm_decodes_while_a_group_is_in_the_flow() {
    let _one = common::one_at_a_time();
    let run = gated(1, false);
    run.h.tx.send(Request::Enqueue(manuscript(3))).unwrap();
    assert_eq!(run.lm_done.recv_timeout(WAIT).unwrap(), 0);
    run.at_flow.recv_timeout(WAIT).expect("segment 0 enters the flow");
    // The run's first group renders alone: the next batch waits for its take.
    assert!(run.lm_done.recv_timeout(Duration::from_millis(200)).is_err());
    run.go.send(()).unwrap();
    assert_eq!(run.lm_done.recv_timeout(WAIT).unwrap(), 1);
    run.at_flow.recv_timeout(WAIT).expect("segment 1 enters the flow");
    // The flow of segment 1 is held: segment 2 must still be decoded meanwhile.
    assert_eq!(run.lm_done.recv_timeout(WAIT).expect("the LM ran during the flow"), 2);
    for _ in 0..2 {
        run.go.send(()).unwrap();
    }
    let events = until_idle(&run.h);
    let t = takes(&events);
    assert_eq!(t.iter().map(|t| t.record.segment_id).collect::<Vec<_>>(), vec![0, 1, 2]);
    // After the first take, the next batch is handed out as soon as the last lane is in,
    // before that lane's group renders.
    assert!(position(&events, 0, &SegmentState::Ready) < position(&events, 1, &SegmentState::Lm));
    assert!(position(&events, 2, &SegmentState::Lm) < position(&events, 1, &SegmentState::Flow));
    run.h.shutdown();
}

#[test]
fn a_segment_changed_while_the_lm_decodes_it_gets_fresh_tokens() {
    let _one = common::one_at_a_time();
    let run = gated(1, false);
    let specs = manuscript(4);
    run.h.tx.send(Request::Enqueue(specs.clone())).unwrap();
    run.at_flow.recv_timeout(WAIT).expect("segment 0 enters the flow");
    run.go.send(()).unwrap();
    run.at_flow.recv_timeout(WAIT).expect("segment 1 enters the flow");
    // Segment 2 went to the LM before segment 1's flow began; re-seed it and cancel 3 while
    // the flow of 1 is held.
    run.h
        .tx
        .send(Request::Reseed(Box::new(SegmentSpec { seed: 4242, ..specs[2].clone() })))
        .unwrap();
    run.h.tx.send(Request::Cancel(vec![3])).unwrap();
    for _ in 0..3 {
        let _ = run.go.send(());
    }
    let events = until_idle(&run.h);
    run.h.shutdown();
    let t = takes(&events);
    assert_eq!(t.iter().map(|t| t.record.segment_id).collect::<Vec<_>>(), vec![0, 1, 2]);
    assert_eq!(t[2].record.seed, 4242);
    assert!(position(&events, 2, &SegmentState::Lm) < position(&events, 1, &SegmentState::Flow));
    // The same segment at that seed, rendered without overlap: the same tokens.
    let reference = SegmentSpec { seed: 4242, ..specs[2].clone() };
    let alone = takes(&render(FakeBackend::new(), vec![reference], params(1, 0, false)));
    assert_eq!(t[2].record.tokens, alone[0].record.tokens);
}
