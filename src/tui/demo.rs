//! A scripted fake engine: a thread that speaks the engine protocol without a model. It answers
//! `Enqueue` with per-stage state events, a `TakeReady` carrying a sine tone (960 samples per
//! "token" at 24 kHz) and a `Telemetry` sample per segment. For tests, and for a demo until the
//! real engine is wired.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::engine::protocol::{
    EngineEvent, GroupInfo, LaneMemory, MemorySample, RenderParams, Request, SegmentSpec,
    SegmentState, StageTimings, Take, TakeRecord, TelemetrySample,
};

/// Samples per speech token at 24 kHz.
pub const SAMPLES_PER_TOKEN: usize = 960;

/// How the fake engine behaves.
#[derive(Debug, Clone)]
pub struct FakeEngineConfig {
    /// Sleep between stage events (zero in tests).
    pub stage_delay: Duration,
}

impl Default for FakeEngineConfig {
    fn default() -> Self {
        Self { stage_delay: Duration::ZERO }
    }
}

/// Speech tokens the fake engine "renders" for a text: one per 4 characters, 1..=40.
#[must_use]
pub fn tokens_for(text: &str) -> usize {
    (text.chars().count() / 4).clamp(1, 40)
}

/// A 0.3-amplitude sine of `tokens × 960` samples at 24 kHz; the pitch depends on the seed.
#[must_use]
pub fn sine_take(tokens: usize, seed: u64) -> Vec<f32> {
    let hz = 220.0 + (seed % 8) as f32 * 55.0;
    (0..tokens * SAMPLES_PER_TOKEN)
        .map(|i| 0.3 * (std::f32::consts::TAU * hz * i as f32 / 24_000.0).sin())
        .collect()
}

/// The deterministic telemetry sample after the `k`-th take (k from 1).
#[must_use]
pub fn telemetry(k: u64, lanes_active: usize, audio_s_total: f64) -> TelemetrySample {
    let w = (k % 7) as f64;
    let lm = 0.30 + 0.02 * w;
    let flow = 0.12 + 0.01 * w;
    let voc = 0.05 + 0.005 * w;
    let mib = 1024 * 1024;
    TelemetrySample {
        at_ms: k * 250,
        lm_rtf: lm,
        flow_rtf: flow,
        vocoder_rtf: voc,
        total_rtf: lm + flow + voc,
        avg_lm_rtf: lm,
        avg_flow_rtf: flow,
        avg_vocoder_rtf: voc,
        avg_total_rtf: lm + flow + voc,
        lm_tokens_per_s: 25.0 / lm,
        flow_frames_per_s: 50.0 / flow,
        time_to_first_audio_ms: Some(820),
        audio_s_total,
        lanes: (0..lanes_active)
            .map(|lane| LaneMemory {
                lane,
                used_bytes: (lane as u64 + 1) * 3 * mib,
                capacity_bytes: 24 * mib,
            })
            .collect(),
        memory: MemorySample {
            rss: Some(900 * mib + k * 4 * mib),
            swap: Some(0),
            pss: None,
            phys_footprint: None,
            device_used: None,
            suspect: false,
        },
    }
}

/// Starts the fake engine; returns the request sender, the event receiver and the thread.
#[must_use]
pub fn spawn_fake_engine(
    cfg: FakeEngineConfig,
) -> (Sender<Request>, Receiver<EngineEvent>, JoinHandle<()>) {
    let (req_tx, req_rx) = mpsc::channel();
    let (ev_tx, ev_rx) = mpsc::channel();
    let handle = std::thread::Builder::new()
        .name("engine".into())
        .spawn(move || FakeEngine::new(cfg, ev_tx).run(&req_rx))
        .expect("spawn fake engine thread");
    (req_tx, ev_rx, handle)
}

struct FakeEngine {
    cfg: FakeEngineConfig,
    tx: Sender<EngineEvent>,
    queue: VecDeque<SegmentSpec>,
    texts: HashMap<u64, String>,
    params: RenderParams,
    paused: bool,
    next_take: u64,
    audio_s: f64,
}

impl FakeEngine {
    fn new(cfg: FakeEngineConfig, tx: Sender<EngineEvent>) -> Self {
        Self {
            cfg,
            tx,
            queue: VecDeque::new(),
            texts: HashMap::new(),
            params: RenderParams::default(),
            paused: false,
            next_take: 1,
            audio_s: 0.0,
        }
    }

    fn emit(&self, ev: EngineEvent) -> bool {
        self.tx.send(ev).is_ok()
    }

    fn run(mut self, rx: &Receiver<Request>) {
        loop {
            let busy = !self.queue.is_empty() && !self.paused;
            let req = if busy {
                match rx.try_recv() {
                    Ok(r) => Some(r),
                    Err(mpsc::TryRecvError::Empty) => None,
                    Err(mpsc::TryRecvError::Disconnected) => return,
                }
            } else {
                match rx.recv_timeout(Duration::from_millis(50)) {
                    Ok(r) => Some(r),
                    Err(RecvTimeoutError::Timeout) => continue,
                    Err(RecvTimeoutError::Disconnected) => return,
                }
            };
            if let Some(r) = req {
                if !self.handle(r) {
                    return;
                }
                continue;
            }
            if let Some(spec) = self.queue.pop_front() {
                if !self.render(&spec) {
                    return;
                }
                if self.queue.is_empty() && !self.emit(EngineEvent::Idle) {
                    return;
                }
            }
        }
    }

    /// Applies one request; false on shutdown.
    fn handle(&mut self, r: Request) -> bool {
        match r {
            Request::Enqueue(specs) => {
                for s in specs {
                    self.emit(EngineEvent::SegmentState { id: s.id, state: SegmentState::Queued });
                    self.texts.insert(s.id, s.text.clone());
                    self.queue.push_back(s);
                }
            }
            Request::Cancel(ids) => {
                self.queue.retain(|s| !ids.contains(&s.id));
                for id in ids {
                    self.emit(EngineEvent::SegmentState { id, state: SegmentState::Cancelled });
                }
            }
            Request::CancelAll => {
                for s in std::mem::take(&mut self.queue) {
                    self.emit(EngineEvent::SegmentState {
                        id: s.id,
                        state: SegmentState::Cancelled,
                    });
                }
            }
            Request::Prioritise(id) => {
                if let Some(i) = self.queue.iter().position(|s| s.id == id) {
                    if let Some(s) = self.queue.remove(i) {
                        self.queue.push_front(s);
                    }
                }
            }
            Request::Reseed { id, seed } => {
                let text = self.texts.get(&id).cloned().unwrap_or_default();
                self.emit(EngineEvent::SegmentState { id, state: SegmentState::Queued });
                self.queue.push_front(SegmentSpec { id, text, seed });
            }
            Request::Regenerate(rec) => {
                let id = rec.segment_id;
                self.queue.push_front(SegmentSpec { id, text: rec.text.clone(), seed: rec.seed });
            }
            Request::SetNfe(n) => {
                self.params.nfe = n;
                self.emit(EngineEvent::ParamsChanged(self.params.clone()));
            }
            Request::SetGroupTarget(n) => {
                self.params.group_target_frames = n;
                self.emit(EngineEvent::ParamsChanged(self.params.clone()));
            }
            Request::SetLanes(n) => {
                self.params.lanes = n;
                self.emit(EngineEvent::ParamsChanged(self.params.clone()));
            }
            Request::Pause => self.paused = true,
            Request::Resume => self.paused = false,
            Request::Shutdown => return false,
        }
        true
    }

    /// Emits one segment's stages and its take; false if the UI went away.
    fn render(&mut self, spec: &SegmentSpec) -> bool {
        for state in [SegmentState::Lm, SegmentState::Flow, SegmentState::Vocoder] {
            if !self.emit(EngineEvent::SegmentState { id: spec.id, state }) {
                return false;
            }
            if !self.cfg.stage_delay.is_zero() {
                std::thread::sleep(self.cfg.stage_delay);
            }
        }
        let tokens = tokens_for(&spec.text);
        let samples = sine_take(tokens, spec.seed);
        let audio_s = samples.len() as f64 / 24_000.0;
        self.audio_s += audio_s;
        let k = self.next_take;
        self.next_take += 1;
        let t = telemetry(k, self.queue.len().min(self.params.lanes) + 1, self.audio_s);
        let record = TakeRecord {
            segment_id: spec.id,
            text: spec.text.clone(),
            voice_id: "demo".into(),
            model_id: "fake-sine".into(),
            seed: spec.seed,
            nfe: self.params.nfe,
            cfg_rate: 0.7,
            precision: self.params.precision,
            min_len_rule: self.params.min_len_rule,
            backend: "fake".into(),
            flow_matmul: "f32".into(),
            group: GroupInfo {
                segment_ids: vec![spec.id],
                token_counts: vec![tokens],
                tokens: Vec::new(),
                index: 0,
            },
            noise_source: "none".into(),
            engine_version: env!("CARGO_PKG_VERSION").into(),
            tokens: (0..tokens as u32).collect(),
            timings: StageTimings {
                lm_s: t.lm_rtf * audio_s,
                flow_s: t.flow_rtf * audio_s,
                vocoder_s: t.vocoder_rtf * audio_s,
            },
        };
        let take = Take { id: k, record, samples: Arc::new(samples) };
        self.emit(EngineEvent::SegmentState { id: spec.id, state: SegmentState::Ready })
            && self.emit(EngineEvent::TakeReady(take))
            && self.emit(EngineEvent::Telemetry(t))
    }
}
