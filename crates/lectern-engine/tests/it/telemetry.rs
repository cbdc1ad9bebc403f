//! Engine telemetry on the fake backend: stage times account for the wall time, the KV-cache
//! figures equal the arithmetic, and the memory probe sees a large allocation.

use crate::common;
use std::time::{Duration, Instant};

use lectern_engine::backend::FakeKvShape;
use lectern_engine::protocol::{
    EngineEvent, RenderParams, Request, SegmentSpec, Take, TelemetrySample,
};
use lectern_engine::telemetry::probe_memory;
use lectern_engine::{Engine, FakeBackend, FakeDelays};

fn manuscript(n: u64) -> Vec<SegmentSpec> {
    (0..n)
        .map(|i| SegmentSpec {
            id: i,
            text: format!("Line {i}: {}", "so it goes ".repeat(1 + i as usize % 3)),
            seed: 7 + i,
            ..SegmentSpec::default()
        })
        .collect()
}

/// What one render on the fake backend emitted, up to `Idle`.
struct Rendered {
    takes: Vec<Take>,
    samples: Vec<TelemetrySample>,
    wall_s: f64,
}

/// Spawns an engine on the fake backend, enqueues `segments` and collects takes and telemetry
/// until the engine goes idle.
fn render(delays: FakeDelays, params: RenderParams, segments: Vec<SegmentSpec>) -> Rendered {
    let h = Engine::spawn(FakeBackend::with_delays(delays), "narrator", params);
    let start = Instant::now();
    h.tx.send(Request::Enqueue(segments)).unwrap();
    let (mut takes, mut samples) = (Vec::new(), Vec::new());
    loop {
        match h.rx.recv_timeout(Duration::from_secs(60)).unwrap() {
            EngineEvent::TakeReady(t) => takes.push(*t),
            EngineEvent::Telemetry(s) => samples.push(s),
            EngineEvent::Idle => break,
            _ => {}
        }
    }
    let wall_s = start.elapsed().as_secs_f64();
    h.shutdown();
    Rendered { takes, samples, wall_s }
}

#[test]
fn stage_times_account_for_the_wall_time_and_kv_is_arithmetic() {
    let _one = common::one_at_a_time();
    let delays = FakeDelays {
        lm_per_step: Duration::from_millis(4),
        flow_per_frame_step: Duration::from_micros(120),
        vocoder_per_frame: Duration::from_micros(600),
    };
    let params = RenderParams { lanes: 16, group_target_frames: 300, ..RenderParams::default() };
    let Rendered { takes, samples, wall_s } = render(delays, params, manuscript(6));
    eprintln!("render wall {wall_s:.3} s");
    assert_eq!(takes.len(), 6);
    let staged_s: f64 = takes
        .iter()
        .map(|t| t.record.timings.lm_s + t.record.timings.flow_s + t.record.timings.vocoder_s)
        .sum();
    eprintln!("stage sum {staged_s:.3} s ({:.2}% of wall)", 100.0 * staged_s / wall_s);
    assert!(wall_s > 1.0, "the delays should dominate ({wall_s} s)");
    assert!((wall_s - staged_s).abs() / wall_s < 0.05, "stages {staged_s} s vs wall {wall_s} s");

    // Telemetry per group; the audio total is the takes' audio.
    let last = samples.last().unwrap();
    let audio_s: f64 = takes.iter().map(|t| t.samples.len() as f64 / 24_000.0).sum();
    assert!((last.audio_s_total - audio_s).abs() < 1e-9);
    assert!(last.time_to_first_audio_ms.is_some());
    for s in &samples {
        assert!(s.lm_rtf > 0.0 && s.flow_rtf > 0.0 && s.vocoder_rtf > 0.0 && s.total_rtf > 0.0);
        assert!(s.avg_total_rtf > 0.0 && s.lm_tokens_per_s > 0.0 && s.flow_frames_per_s > 0.0);
        assert!(s.memory.rss.is_some());
    }

    // One LM batch (16 lanes ≥ 6 segments): lane i is segment i.
    // 2 × kv_heads × (prompt + text + tokens) × head_dim × bytes × layers.
    let k = FakeKvShape::default();
    assert_eq!(last.lanes.len(), 6);
    for (lane, take) in last.lanes.iter().zip(&takes) {
        let positions =
            k.prompt_positions + take.record.text.chars().count() + take.record.tokens.len();
        let expected = 2 * 2 * positions * 64 * 4 * 24;
        assert_eq!(lane.used_bytes, expected as u64);
        assert!(lane.capacity_bytes >= lane.used_bytes);
    }
}

#[cfg(target_os = "linux")]
#[test]
fn memory_probe_sees_a_touched_allocation() {
    let _one = common::one_at_a_time();
    let before = probe_memory();
    let mut buffer = vec![0u8; 200 << 20];
    for page in buffer.chunks_mut(4096) {
        page[0] = 1; // touch every page so it is resident
    }
    let after = probe_memory();
    std::hint::black_box(&buffer);
    let grown = after.rss.unwrap() as i64 - before.rss.unwrap() as i64;
    assert!(grown > 150 << 20, "RSS grew by {grown} bytes");
    assert!(after.pss.unwrap() > before.pss.unwrap());
    assert!(after.swap.is_some());
    assert!(!after.suspect);
}

#[test]
fn a_short_opener_is_heard_before_the_long_lanes_finish() {
    let _one = common::one_at_a_time();
    let delays = FakeDelays {
        lm_per_step: Duration::from_millis(2),
        flow_per_frame_step: Duration::from_micros(20),
        vocoder_per_frame: Duration::from_micros(100),
    };
    let params = RenderParams { lanes: 8, group_target_frames: 0, ..RenderParams::default() };
    // The fake LM decodes 3 + 2 × chars (+0..3) tokens: the opener ~12 steps (24 ms), each
    // long segment ~400 steps (0.8 s). Batched together, the opener would wait for those.
    let long = "a long and winding sentence ".repeat(7);
    let texts = ["Hi.".to_string(), long.clone(), long];
    let specs: Vec<SegmentSpec> = texts
        .iter()
        .enumerate()
        .map(|(i, t)| SegmentSpec::new(i as u64, t.clone(), i as u64))
        .collect();
    let Rendered { takes, samples, .. } = render(delays, params, specs);
    let order: Vec<u64> = takes.iter().map(|t| t.record.segment_id).collect();
    assert_eq!(order, vec![0, 1, 2]);
    // The opener was decoded alone (a 1-lane batch), then the two long ones together.
    let lanes_seen: Vec<usize> = samples.iter().map(|s| s.lanes.len()).collect();
    assert_eq!(lanes_seen, vec![1, 2, 2]);
    let ms = samples.iter().find_map(|s| s.time_to_first_audio_ms).expect("time to first audio");
    assert!(ms < 400, "first audio after {ms} ms: the opener waited for the long lanes");
}
