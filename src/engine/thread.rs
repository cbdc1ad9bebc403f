//! The engine thread: owns the backend, applies [`Request`]s between steps, renders LM batches
//! and flow groups, and emits [`EngineEvent`]s.
//!
//! One step is either an LM batch over up to `lanes` queued segments or one flow group (flow,
//! vocoder, cuts). Requests are drained between steps without blocking, so every command takes
//! effect at the next group boundary and nothing blocks the caller. Per segment the states go
//! Queued → Lm → Flow → Vocoder → Ready, and each take is sent (`TakeReady`, then its `Ready`
//! state) as soon as its group is done, in queue order. A telemetry sample follows each group.
//! The first event is `ParamsChanged` with the effective parameters; `Idle` follows each run.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::mpsc::{self, Receiver, Sender, TryRecvError};
use std::thread::JoinHandle;

use super::backend::{BackendInfo, LmJob, SynthBackend};
use super::protocol::{
    EngineEvent, RenderParams, Request, SegmentId, SegmentSpec, SegmentState, StageTimings, Take,
    TakeRecord,
};
use super::scheduler::{Pending, Plan, Queue, cut_group, shares};
use super::takes::{RecordContext, RegenPlan, TakeIds, build_record};
use super::telemetry::{GroupFigures, StageTimer, Telemetry, probe_memory};
use super::{EngineError, Result};
use crate::model::config::TOKEN_MEL_RATIO;

/// Starts engine threads.
pub struct Engine;

/// The caller's ends of a running engine. Dropping `tx` (or sending `Shutdown`) stops it.
pub struct EngineHandle {
    pub tx: Sender<Request>,
    pub rx: Receiver<EngineEvent>,
    thread: Option<JoinHandle<()>>,
}

impl EngineHandle {
    /// Sends `Shutdown` and waits for the thread to finish its current step.
    pub fn shutdown(mut self) {
        let _ = self.tx.send(Request::Shutdown);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Engine {
    /// Starts the engine thread (named `engine`) with a ready backend.
    pub fn spawn<B>(backend: B, voice: impl Into<String>, params: RenderParams) -> EngineHandle
    where
        B: SynthBackend + Send + 'static,
    {
        Self::spawn_with(move || Ok(backend), voice, params)
    }

    /// Starts the engine thread and builds the backend on it (loading weights takes seconds and
    /// device contexts may be thread-bound). If `make` fails the thread sends a `Log` with the
    /// error and exits, which disconnects `rx`.
    pub fn spawn_with<B, F>(make: F, voice: impl Into<String>, params: RenderParams) -> EngineHandle
    where
        B: SynthBackend + 'static,
        F: FnOnce() -> Result<B> + Send + 'static,
    {
        let (tx, req_rx) = mpsc::channel();
        let (ev_tx, rx) = mpsc::channel();
        let voice = voice.into();
        let thread = std::thread::Builder::new()
            .name("engine".into())
            .spawn(move || match make() {
                Ok(backend) => Worker::new(backend, voice, params, ev_tx).run(&req_rx),
                Err(e) => {
                    let _ = ev_tx.send(EngineEvent::Log(format!("engine backend failed: {e}")));
                }
            })
            .expect("spawning the engine thread");
        EngineHandle { tx, rx, thread: Some(thread) }
    }
}

struct Worker<B> {
    backend: B,
    info: BackendInfo,
    voice: String,
    params: RenderParams,
    queue: Queue,
    regen: Vec<RegenPlan>,
    /// Last spec seen per segment, for re-seeding finished segments.
    known: HashMap<SegmentId, SegmentSpec>,
    take_ids: TakeIds,
    paused: bool,
    busy: bool,
    telemetry: Telemetry,
    events: Sender<EngineEvent>,
}

impl<B: SynthBackend> Worker<B> {
    fn new(
        backend: B,
        voice: String,
        mut params: RenderParams,
        events: Sender<EngineEvent>,
    ) -> Self {
        let info = backend.describe();
        let mut worker = Self {
            backend,
            voice,
            params: params.clone(),
            queue: Queue::default(),
            regen: Vec::new(),
            known: HashMap::new(),
            take_ids: TakeIds::default(),
            paused: false,
            busy: false,
            telemetry: Telemetry::new(),
            events,
            info,
        };
        if params.precision != worker.info.precision {
            worker.log(format!(
                "precision {:?} requested, backend has {:?}: recording the backend's",
                params.precision, worker.info.precision
            ));
            params.precision = worker.info.precision;
        }
        params.lanes = params.lanes.max(1);
        params.nfe = params.nfe.max(1);
        worker.params = params;
        worker
    }

    fn emit(&self, event: EngineEvent) {
        // A caller that dropped its receiver gets no events; the engine keeps going until its
        // request channel closes.
        let _ = self.events.send(event);
    }

    fn log(&self, msg: String) {
        self.emit(EngineEvent::Log(msg));
    }

    fn state(&self, id: SegmentId, state: SegmentState) {
        self.emit(EngineEvent::SegmentState { id, state });
    }

    fn has_work(&self) -> bool {
        !self.queue.is_empty() || !self.regen.is_empty()
    }

    fn run(mut self, requests: &Receiver<Request>) {
        // The effective parameters (clamped, precision as loaded) before any work.
        self.params_changed();
        loop {
            loop {
                match requests.try_recv() {
                    Ok(r) => {
                        if !self.handle(r) {
                            return;
                        }
                    }
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Disconnected) => return,
                }
            }
            if self.paused || !self.has_work() {
                if !self.paused && self.busy {
                    self.busy = false;
                    self.emit(EngineEvent::Idle);
                }
                match requests.recv() {
                    Ok(r) => {
                        if !self.handle(r) {
                            return;
                        }
                        continue;
                    }
                    Err(_) => return,
                }
            }
            self.step();
        }
    }

    /// Marks the start of a run when work arrives while idle.
    fn work_arrived(&mut self) {
        if !self.busy {
            self.busy = true;
            self.telemetry.start_run();
        }
    }

    /// Applies one request; false to stop the engine.
    fn handle(&mut self, request: Request) -> bool {
        match request {
            Request::Enqueue(specs) => {
                self.work_arrived();
                for spec in specs {
                    self.state(spec.id, SegmentState::Queued);
                    self.known.insert(spec.id, spec.clone());
                    self.queue.push_back(spec);
                }
            }
            Request::Cancel(ids) => {
                for id in ids {
                    let regen_before = self.regen.len();
                    self.regen.retain(|p| p.record.segment_id != id);
                    if self.queue.cancel(id) || self.regen.len() != regen_before {
                        self.state(id, SegmentState::Cancelled);
                    }
                }
            }
            Request::CancelAll => {
                let mut ids = self.queue.clear();
                ids.extend(self.regen.drain(..).map(|p| p.record.segment_id));
                for id in ids {
                    self.state(id, SegmentState::Cancelled);
                }
            }
            Request::Prioritise(id) => {
                if !self.queue.prioritise(id) {
                    self.log(format!("prioritise: segment {id} is not queued"));
                }
            }
            Request::Reseed { id, seed } => self.reseed(id, seed),
            Request::SetNfe(nfe) => {
                self.params.nfe = nfe.max(1);
                self.params_changed();
            }
            Request::SetGroupTarget(frames) => {
                self.params.group_target_frames = frames;
                self.params_changed();
            }
            Request::SetLanes(lanes) => {
                self.params.lanes = lanes.max(1);
                self.params_changed();
            }
            Request::Pause => self.paused = true,
            Request::Resume => {
                self.paused = false;
                self.telemetry.mark();
            }
            Request::Regenerate(record) => self.regenerate(*record),
            Request::Shutdown => return false,
        }
        true
    }

    fn params_changed(&self) {
        self.emit(EngineEvent::ParamsChanged(self.params.clone()));
    }

    /// A new take with another seed: a queued segment just changes seed; a finished one is
    /// queued again at the front (the caller keeps the old take).
    fn reseed(&mut self, id: SegmentId, seed: u64) {
        let Some(spec) = self.known.get_mut(&id) else {
            self.log(format!("re-seed: unknown segment {id}"));
            return;
        };
        spec.seed = seed;
        let spec = spec.clone();
        self.work_arrived();
        if !self.queue.reseed(id, seed) {
            self.queue.push_front(spec);
        }
        self.state(id, SegmentState::Queued);
    }

    fn regenerate(&mut self, record: TakeRecord) {
        let id = record.segment_id;
        match RegenPlan::from_record(record, &self.voice, &self.info) {
            Ok((plan, warnings)) => {
                for w in warnings {
                    self.log(w);
                }
                self.work_arrived();
                self.state(id, SegmentState::Queued);
                self.regen.push(plan);
            }
            Err(e) => self.state(id, SegmentState::Failed(e.to_string())),
        }
    }

    /// One unit of work: a regeneration, an LM batch or a flow group.
    fn step(&mut self) {
        if !self.regen.is_empty() {
            let plan = self.regen.remove(0);
            self.render_regen(plan);
            return;
        }
        match self.queue.plan(self.params.group_target_frames) {
            Plan::Idle => {}
            Plan::Lm => self.run_lm(),
            Plan::Group(n) => {
                let members = self.queue.take_front(n);
                self.render_queued_group(members);
            }
        }
    }

    fn run_lm(&mut self) {
        let batch = if self.telemetry.awaiting_first_audio() {
            self.queue.first_audio_batch(self.params.lanes)
        } else {
            self.queue.lm_batch(self.params.lanes)
        };
        let specs: Vec<SegmentSpec> = {
            let items: Vec<&Pending> = self.queue.items().collect();
            batch.iter().map(|&i| items[i].spec.clone()).collect()
        };
        for s in &specs {
            self.state(s.id, SegmentState::Lm);
        }
        let jobs: Vec<LmJob> = specs
            .iter()
            .map(|s| LmJob {
                segment_id: s.id,
                text: s.text.clone(),
                seed: s.seed,
                min_len_rule: self.params.min_len_rule,
            })
            .collect();
        match self.lm_batch(&jobs) {
            Ok((tokens, lm_s)) => {
                let lens: Vec<usize> = tokens.iter().map(Vec::len).collect();
                // Later indices stay valid: set_tokens does not reorder the queue.
                for ((&at, toks), share) in batch.iter().zip(tokens).zip(shares(lm_s, &lens)) {
                    self.queue.set_tokens(at, toks, share);
                }
            }
            Err(e) => {
                for s in &specs {
                    self.queue.cancel(s.id);
                    self.state(s.id, SegmentState::Failed(e.to_string()));
                }
            }
        }
    }

    fn lm_batch(&mut self, jobs: &[LmJob]) -> Result<(Vec<Vec<u32>>, f64)> {
        let timer = StageTimer::start(&self.backend)?;
        let tokens = self.backend.lm_generate(&self.voice, jobs)?;
        let lm_s = timer.stop(&self.backend)?;
        if tokens.len() != jobs.len() {
            return Err(EngineError::Backend(format!(
                "LM returned {} lanes for {} jobs",
                tokens.len(),
                jobs.len()
            )));
        }
        Ok((tokens, lm_s))
    }

    /// Flow over the group's concatenated tokens, one vocoder call, cuts per member.
    /// Returns the cuts and the flow and vocoder seconds.
    fn render_group(
        &mut self,
        ids: &[SegmentId],
        tokens: &[Vec<u32>],
        nfe: usize,
    ) -> Result<(Vec<Vec<f32>>, f64, f64)> {
        let n_tokens: usize = tokens.iter().map(Vec::len).sum();
        for &id in ids {
            self.state(id, SegmentState::Flow);
        }
        let timer = StageTimer::start(&self.backend)?;
        let mel = self.backend.flow_group(&self.voice, tokens, nfe)?;
        let flow_s = timer.stop(&self.backend)?;
        if mel.frames != n_tokens * TOKEN_MEL_RATIO {
            return Err(EngineError::Backend(format!(
                "flow gave {} frames for {n_tokens} tokens",
                mel.frames
            )));
        }
        for &id in ids {
            self.state(id, SegmentState::Vocoder);
        }
        let timer = StageTimer::start(&self.backend)?;
        let samples = self.backend.vocode(&mel)?;
        let vocoder_s = timer.stop(&self.backend)?;
        let counts: Vec<usize> = tokens.iter().map(Vec::len).collect();
        Ok((cut_group(&samples, &counts)?, flow_s, vocoder_s))
    }

    fn render_queued_group(&mut self, members: Vec<Pending>) {
        let ids: Vec<SegmentId> = members.iter().map(|p| p.spec.id).collect();
        let tokens: Vec<Vec<u32>> =
            members.iter().map(|p| p.tokens.clone().unwrap_or_default()).collect();
        let nfe = self.params.nfe;
        let (cuts, flow_s, vocoder_s) = match self.render_group(&ids, &tokens, nfe) {
            Ok(r) => r,
            Err(e) => return self.fail_all(&ids, &e),
        };
        let counts: Vec<usize> = tokens.iter().map(Vec::len).collect();
        let flow_shares = shares(flow_s, &counts);
        let vocoder_shares = shares(vocoder_s, &counts);
        let ctx = RecordContext {
            voice_id: &self.voice,
            info: &self.info,
            min_len_rule: self.params.min_len_rule,
        };
        let mut takes = Vec::with_capacity(members.len());
        for (index, (member, samples)) in members.iter().zip(cuts).enumerate() {
            let timings = StageTimings {
                lm_s: member.lm_s,
                flow_s: flow_shares[index],
                vocoder_s: vocoder_shares[index],
            };
            let record = build_record(&ctx, &member.spec, &ids, &tokens, index, nfe, timings);
            takes.push(Take { id: 0, record, samples: Arc::new(samples) });
        }
        let lm_s: f64 = members.iter().map(|p| p.lm_s).sum();
        self.send_takes(takes);
        self.group_telemetry(lm_s, flow_s, vocoder_s, counts.iter().sum());
    }

    fn render_regen(&mut self, plan: RegenPlan) {
        let id = plan.record.segment_id;
        let (mut cuts, flow_s, vocoder_s) =
            match self.render_group(&[id], &plan.group_tokens, plan.nfe) {
                Ok(r) => r,
                Err(e) => return self.fail_all(&[id], &e),
            };
        let n_tokens: usize = plan.group_tokens.iter().map(Vec::len).sum();
        let mut record = plan.record;
        // The whole group ran to reproduce this one take: all of its time is the take's.
        record.timings = StageTimings { lm_s: 0.0, flow_s, vocoder_s };
        let samples = cuts.swap_remove(plan.index);
        self.send_takes(vec![Take { id: 0, record, samples: Arc::new(samples) }]);
        self.group_telemetry(0.0, flow_s, vocoder_s, n_tokens);
    }

    fn send_takes(&mut self, takes: Vec<Take>) {
        for mut take in takes {
            take.id = self.take_ids.next_id();
            let id = take.record.segment_id;
            self.telemetry.first_audio();
            self.emit(EngineEvent::TakeReady(take));
            self.state(id, SegmentState::Ready);
        }
    }

    fn fail_all(&self, ids: &[SegmentId], e: &EngineError) {
        for &id in ids {
            self.state(id, SegmentState::Failed(e.to_string()));
        }
    }

    fn group_telemetry(&mut self, lm_s: f64, flow_s: f64, vocoder_s: f64, tokens: usize) {
        let fig = GroupFigures {
            lm_s,
            flow_s,
            vocoder_s,
            wall_s: self.telemetry.lap(),
            tokens,
            frames: tokens * TOKEN_MEL_RATIO,
        };
        let mut memory = probe_memory();
        memory.device_used = self.backend.device_memory_bytes();
        let sample = self.telemetry.group_done(fig, self.backend.kv_lane_memory(), memory);
        self.emit(EngineEvent::Telemetry(sample));
    }
}
