//! The engine thread: owns the backend, applies [`Request`]s between steps, renders LM batches
//! and flow groups, and emits [`EngineEvent`]s.
//!
//! One step is either an LM batch over up to `lanes` queued segments or one flow group (flow,
//! vocoder, cuts). Requests are drained between steps without blocking, so every command takes
//! effect at the next group boundary and nothing blocks the caller. Per segment the states go
//! Queued → Lm → Flow → Vocoder → Ready, and each take is sent (`TakeReady`, then its `Ready`
//! state) as soon as its group is done, in queue order. A telemetry sample follows each group.
//! The first event is `ParamsChanged` with the effective parameters; `Idle` follows each run.
//!
//! Overlap ([`RenderParams::overlap`], where the backend hands out an [`LmStage`]): the LM runs
//! on a thread of its own (`engine-lm`) and is given the next batch as soon as the last lane of
//! the previous one is in (once a run's first take is out), so it decodes ahead while this
//! thread renders groups. Each lane is
//! reported the moment it finishes (its group can start while longer lanes decode) and matched
//! to the queue by segment and seed, so a segment cancelled or re-seeded meanwhile drops the
//! stale tokens. Requests are still read in order at every step boundary; while this thread can
//! only wait for the LM, it looks at them every few milliseconds. Groups form exactly as without
//! overlap (a group waits for every member's tokens), and tokens never depend on batching, so
//! the takes are the same; only when the work happens changes.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::mpsc::{self, Receiver, Sender, TryRecvError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::backend::{BackendInfo, LmJob, LmStage, Mel, SynthBackend};
use super::protocol::{
    Casting, EngineEvent, LaneMemory, RenderParams, Request, SegmentId, SegmentSpec, SegmentState,
    StageTimings, Take, TakeRecord,
};
use super::scheduler::{Pending, Plan, Queue, cut_group, shares};
use super::takes::{RecordContext, RegenPlan, TakeIds, build_record};
use super::telemetry::{GroupFigures, StageTimer, Telemetry, probe_memory};
use super::{EngineError, Result};
use lectern_model::config::TOKEN_MEL_RATIO;

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

/// What the LM thread reports.
enum LmMessage {
    /// A lane of a batch is done.
    Lane(LaneDone),
    /// A batch is over.
    End(LmOutcome),
}

/// How long the engine waits for the LM before it looks at the requests again, while waiting
/// for the LM is all it can do (the latency of a command then).
const LM_POLL: Duration = Duration::from_millis(5);

/// A lane's tokens, reported the moment they are final, with the lane's share of its batch's
/// LM time.
struct LaneDone {
    spec: SegmentSpec,
    tokens: Vec<u32>,
    lm_s: f64,
}

/// The end of an LM batch: every lane was reported as a [`LaneDone`] unless the batch failed.
struct LmOutcome {
    /// Lanes not reported (all of them when the batch failed before any finished).
    unreported: Vec<SegmentSpec>,
    error: Option<EngineError>,
    lanes: Vec<LaneMemory>,
}

/// An LM batch to decode.
struct LmBatch {
    specs: Vec<SegmentSpec>,
    jobs: Vec<LmJob>,
}

/// Splits a batch's LM time among its lanes as they finish: the time between two finishes is
/// shared equally by the lanes still decoding then, so the shares add up to the batch's time.
/// Each finish is read after the step's log-probs reached the host (the device is done).
struct LaneClock {
    last: Instant,
    decoding: usize,
    per_lane_s: f64,
}

impl LaneClock {
    fn new(lanes: usize) -> Self {
        Self { last: Instant::now(), decoding: lanes.max(1), per_lane_s: 0.0 }
    }

    /// One lane finished now: its share of the batch so far.
    fn finish(&mut self) -> f64 {
        let now = Instant::now();
        self.per_lane_s += (now - self.last).as_secs_f64() / self.decoding as f64;
        self.last = now;
        self.decoding = self.decoding.saturating_sub(1).max(1);
        self.per_lane_s
    }
}

/// Decodes one batch on `stage`, reporting each lane through `report` as soon as it is done.
fn decode_batch(
    stage: &mut dyn LmStage,
    batch: LmBatch,
    report: &mut dyn FnMut(LaneDone),
) -> LmOutcome {
    let mut reported = vec![false; batch.specs.len()];
    let result = (|| {
        stage.synchronize()?;
        let mut clock = LaneClock::new(batch.jobs.len());
        let mut done = |i: usize, tokens: &[u32]| {
            if let (Some(spec), Some(seen)) = (batch.specs.get(i), reported.get_mut(i)) {
                *seen = true;
                let lm_s = clock.finish();
                report(LaneDone { spec: spec.clone(), tokens: tokens.to_vec(), lm_s });
            }
        };
        let tokens = stage.lm_generate_streaming(&batch.jobs, &mut done)?;
        if tokens.len() != batch.jobs.len() {
            return Err(EngineError::Backend(format!(
                "LM returned {} lanes for {} jobs",
                tokens.len(),
                batch.jobs.len()
            )));
        }
        Ok(())
    })();
    let unreported: Vec<SegmentSpec> = batch
        .specs
        .into_iter()
        .zip(&reported)
        .filter(|(_, seen)| !**seen)
        .map(|(spec, _)| spec)
        .collect();
    let error = match result {
        Err(e) => Some(e),
        Ok(()) if !unreported.is_empty() => {
            Some(EngineError::Backend(format!("LM did not report {} lanes", unreported.len())))
        }
        Ok(()) => None,
    };
    LmOutcome { unreported, error, lanes: stage.kv_lane_memory() }
}

/// The LM's own thread: decodes batches in order until the engine drops its sender.
struct LmThread {
    batches: Option<Sender<LmBatch>>,
    reports: Receiver<LmMessage>,
    thread: Option<JoinHandle<()>>,
    /// Lanes handed out and not yet reported. The next batch goes out when this reaches 0,
    /// before the LM thread has even returned from the last one: it never waits for work.
    outstanding: usize,
}

impl LmThread {
    fn spawn(mut stage: Box<dyn LmStage + Send>) -> Self {
        let (tx, batches) = mpsc::channel::<LmBatch>();
        let (report_tx, reports) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("engine-lm".into())
            .spawn(move || {
                for batch in batches {
                    let mut report = |lane| {
                        let _ = report_tx.send(LmMessage::Lane(lane));
                    };
                    let outcome = decode_batch(stage.as_mut(), batch, &mut report);
                    if report_tx.send(LmMessage::End(outcome)).is_err() {
                        return;
                    }
                }
            })
            .expect("spawning the LM thread");
        Self { batches: Some(tx), reports, thread: Some(thread), outstanding: 0 }
    }

    /// Hands a batch over; gives it back if the thread is gone.
    fn send(&mut self, batch: LmBatch) -> std::result::Result<(), LmBatch> {
        let tx = self.batches.as_ref().expect("sender lives until drop");
        let lanes = batch.specs.len();
        tx.send(batch).map_err(|e| e.0)?;
        self.outstanding += lanes;
        Ok(())
    }
}

impl Drop for LmThread {
    /// Lets the LM finish its batch and stop (the engine's shutdown waits for its step too).
    fn drop(&mut self) {
        self.batches.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A backend used as its own LM stage (the inline path): every lane is reported when the
/// batch is done.
struct Inline<'a, B>(&'a mut B);

impl<B: SynthBackend> LmStage for Inline<'_, B> {
    fn lm_generate_streaming(
        &mut self,
        jobs: &[LmJob],
        done: &mut dyn FnMut(usize, &[u32]),
    ) -> Result<Vec<Vec<u32>>> {
        let out = self.0.lm_generate(jobs)?;
        for (i, tokens) in out.iter().enumerate() {
            done(i, tokens);
        }
        Ok(out)
    }
    fn synchronize(&self) -> Result<()> {
        self.0.synchronize()
    }
    fn kv_lane_memory(&self) -> Vec<LaneMemory> {
        self.0.kv_lane_memory()
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
    /// The LM's own thread when overlapping; `None` decodes inline on this thread.
    lm: Option<LmThread>,
    /// KV memory of the lanes of the last LM batch.
    kv_lanes: Vec<LaneMemory>,
}

impl<B: SynthBackend> Worker<B> {
    fn new(
        mut backend: B,
        voice: String,
        mut params: RenderParams,
        events: Sender<EngineEvent>,
    ) -> Self {
        let info = backend.describe();
        let lm = if params.overlap { backend.lm_stage() } else { None };
        params.overlap = lm.is_some();
        let lm = lm.map(LmThread::spawn);
        let mut worker = Self {
            lm,
            kv_lanes: Vec::new(),
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

    /// Whether this thread has a step to take now; false while the only thing left is to wait
    /// for the LM thread.
    fn can_step(&self) -> bool {
        if !self.regen.is_empty() {
            return true;
        }
        match self.queue.plan(self.params.group_target_frames) {
            Plan::Idle => false,
            Plan::Group(_) => true,
            Plan::Lm => self.lm.is_none(),
        }
    }

    fn run(mut self, requests: &Receiver<Request>) {
        // The effective parameters (clamped, precision as loaded) before any work.
        self.params_changed();
        loop {
            // Requests first, in the order sent: each takes effect at this step boundary.
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
            self.take_lm_reports(None);
            if !self.paused {
                self.feed_lm_thread();
            }
            if self.paused || !self.can_step() {
                if !self.paused && self.busy && !self.has_work() {
                    self.busy = false;
                    self.emit(EngineEvent::Idle);
                }
                if !self.paused && self.lm.as_ref().is_some_and(|lm| lm.outstanding > 0) {
                    self.take_lm_reports(Some(LM_POLL));
                    continue;
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

    /// Applies what the LM thread reported; with `wait`, first waits up to that long for a
    /// report.
    fn take_lm_reports(&mut self, wait: Option<Duration>) {
        let Some(lm) = &self.lm else {
            return;
        };
        let mut reports = Vec::new();
        if let Some(wait) = wait {
            match lm.reports.recv_timeout(wait) {
                Ok(m) => reports.push(m),
                Err(_) => return,
            }
        }
        reports.extend(lm.reports.try_iter());
        for m in reports {
            self.receive(m);
        }
    }

    /// Applies one report of the LM thread.
    fn receive(&mut self, message: LmMessage) {
        match message {
            LmMessage::Lane(lane) => {
                if let Some(lm) = &mut self.lm {
                    lm.outstanding = lm.outstanding.saturating_sub(1);
                }
                self.apply_lane(lane);
            }
            LmMessage::End(outcome) => {
                if let Some(lm) = &mut self.lm {
                    lm.outstanding = lm.outstanding.saturating_sub(outcome.unreported.len());
                }
                self.apply_lm(outcome);
            }
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
                for mut spec in specs {
                    self.cast_default(&mut spec);
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
            Request::Reseed(spec) => self.reseed(*spec),
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

    /// Names the engine's voice where a spec leaves its voice to the engine, so that the queue
    /// compares voices by name.
    fn cast_default(&self, spec: &mut SegmentSpec) {
        if spec.casting.voice.is_empty() {
            spec.casting.voice.clone_from(&self.voice);
        }
    }

    fn params_changed(&self) {
        self.emit(EngineEvent::ParamsChanged(self.params.clone()));
    }

    /// A new take with another seed: a queued segment just changes seed (its group stays what
    /// the plan makes it); a finished one is queued again at the front, as a group of its own
    /// (so its take never depends on what else happens to be queued). The caller keeps the old
    /// take.
    fn reseed(&mut self, mut spec: SegmentSpec) {
        self.cast_default(&mut spec);
        let (id, seed) = (spec.id, spec.seed);
        self.known.insert(id, spec.clone());
        self.work_arrived();
        if !self.queue.reseed(id, seed) {
            self.queue.push_front(spec.with_group_break());
        }
        self.state(id, SegmentState::Queued);
    }

    fn regenerate(&mut self, record: TakeRecord) {
        let id = record.segment_id;
        match RegenPlan::from_record(record, &self.info) {
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
            // With overlap the LM thread has it (see `can_step`).
            Plan::Lm if self.lm.is_none() => self.run_lm(),
            Plan::Lm => {}
            Plan::Group(n) => {
                let members = self.queue.take_front(n);
                self.render_queued_group(members);
            }
        }
    }

    /// The next LM batch, marked as being decoded (their state goes to `Lm`); `None` when no
    /// segment waits for the LM.
    fn next_lm_batch(&mut self) -> Option<LmBatch> {
        let at = if self.telemetry.awaiting_first_audio() {
            self.queue.first_audio_batch(self.params.lanes)
        } else {
            self.queue.lm_batch(self.params.lanes)
        };
        let specs: Vec<SegmentSpec> =
            at.into_iter().filter_map(|i| self.queue.start_decoding(i)).collect();
        if specs.is_empty() {
            return None;
        }
        for s in &specs {
            self.state(s.id, SegmentState::Lm);
        }
        let jobs = specs
            .iter()
            .map(|s| LmJob {
                segment_id: s.id,
                text: s.text.clone(),
                seed: s.seed,
                min_len_rule: self.params.min_len_rule,
                voice: s.casting.voice.clone(),
                mode: s.casting.mode.clone(),
            })
            .collect();
        Some(LmBatch { specs, jobs })
    }

    /// With overlap: keeps the LM thread busy while anything waits for it — except while the
    /// run's first group is ready and its audio not out yet: the listener is waiting for that
    /// group, and a concurrent LM batch would slow it down (it shares the device), so the next
    /// batch starts once the first take is sent (see docs/benchmarks.md for what it costs).
    fn feed_lm_thread(&mut self) {
        if self.lm.as_ref().is_none_or(|lm| lm.outstanding > 0) {
            return;
        }
        let first_group_ready =
            matches!(self.queue.plan(self.params.group_target_frames), Plan::Group(_));
        if self.telemetry.awaiting_first_audio() && first_group_ready {
            return;
        }
        let Some(batch) = self.next_lm_batch() else {
            return;
        };
        if let Some(Err(batch)) = self.lm.as_mut().map(|lm| lm.send(batch)) {
            let outcome = LmOutcome {
                unreported: batch.specs,
                error: Some(EngineError::Backend("the LM thread has stopped".into())),
                lanes: Vec::new(),
            };
            self.apply_lm(outcome);
        }
    }

    /// Without overlap: decodes the next batch here.
    fn run_lm(&mut self) {
        if let Some(batch) = self.next_lm_batch() {
            let mut lanes = Vec::new();
            let outcome =
                decode_batch(&mut Inline(&mut self.backend), batch, &mut |lane| lanes.push(lane));
            for lane in lanes {
                self.apply_lane(lane);
            }
            self.apply_lm(outcome);
        }
    }

    /// Stores a finished lane's tokens (dropped when stale: cancelled or re-seeded meanwhile).
    fn apply_lane(&mut self, lane: LaneDone) {
        self.queue.set_tokens(&lane.spec, lane.tokens, lane.lm_s);
    }

    /// The end of a batch: fails the segments it could not decode.
    fn apply_lm(&mut self, outcome: LmOutcome) {
        self.kv_lanes = outcome.lanes;
        let Some(e) = outcome.error else {
            return;
        };
        for spec in &outcome.unreported {
            if self.queue.fail_decoding(spec) {
                self.state(spec.id, SegmentState::Failed(e.to_string()));
            }
        }
    }

    /// Flow over the group's concatenated tokens in `casting`'s voice, each member's mel at
    /// its pace, one vocoder call, cuts per member. Returns the cuts and the flow and vocoder
    /// seconds.
    fn render_group(
        &mut self,
        ids: &[SegmentId],
        tokens: &[Vec<u32>],
        nfe: usize,
        casting: &Casting,
    ) -> Result<(Vec<Vec<f32>>, f64, f64)> {
        let n_tokens: usize = tokens.iter().map(Vec::len).sum();
        for &id in ids {
            self.state(id, SegmentState::Flow);
        }
        let timer = StageTimer::start(|| self.backend.synchronize())?;
        injected_flow_fault()?;
        let mel = self.backend.flow_group(&casting.voice, tokens, nfe)?;
        let flow_s = timer.stop(|| self.backend.synchronize())?;
        if mel.frames != n_tokens * TOKEN_MEL_RATIO {
            return Err(EngineError::Backend(format!(
                "flow gave {} frames for {n_tokens} tokens",
                mel.frames
            )));
        }
        let (mel, frames) = pace_members(mel, tokens, casting.pace);
        for &id in ids {
            self.state(id, SegmentState::Vocoder);
        }
        let timer = StageTimer::start(|| self.backend.synchronize())?;
        let samples = self.backend.vocode(&mel)?;
        let vocoder_s = timer.stop(|| self.backend.synchronize())?;
        Ok((cut_group(&samples, &frames)?, flow_s, vocoder_s))
    }

    fn render_queued_group(&mut self, members: Vec<Pending>) {
        let ids: Vec<SegmentId> = members.iter().map(|p| p.spec.id).collect();
        let tokens: Vec<Vec<u32>> =
            members.iter().map(|p| p.tokens.clone().unwrap_or_default()).collect();
        let nfe = self.params.nfe;
        // The plan never mixes voices or paces in a group (`Queue::plan`).
        let casting = members.first().map(|p| p.spec.casting.clone()).unwrap_or_default();
        let (cuts, flow_s, vocoder_s) = match self.render_group(&ids, &tokens, nfe, &casting) {
            Ok(r) => r,
            Err(e) => return self.fail_all(&ids, &e),
        };
        let counts: Vec<usize> = tokens.iter().map(Vec::len).collect();
        let flow_shares = shares(flow_s, &counts);
        let vocoder_shares = shares(vocoder_s, &counts);
        let ctx = RecordContext {
            voice_id: &casting.voice,
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
        let casting = Casting {
            voice: plan.record.voice_id.clone(),
            pace: plan.record.content.pace_value(),
            ..Casting::default()
        };
        let (mut cuts, flow_s, vocoder_s) =
            match self.render_group(&[id], &plan.group_tokens, plan.nfe, &casting) {
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

    /// Sends each take, or fails its segment when it holds no speech: a take of 0 speech
    /// tokens is silence, never what the text asked for, so it is no take at all.
    fn send_takes(&mut self, takes: Vec<Take>) {
        for mut take in takes {
            let id = take.record.segment_id;
            if take.record.tokens.is_empty() || take.samples.is_empty() {
                self.state(id, SegmentState::Failed(NO_SPEECH.into()));
                continue;
            }
            take.id = self.take_ids.next_id();
            self.telemetry.first_audio();
            self.emit(EngineEvent::TakeReady(Box::new(take)));
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
        let sample = self.telemetry.group_done(fig, self.kv_lanes.clone(), memory);
        self.emit(EngineEvent::Telemetry(sample));
    }
}

/// The group's mel with each member's part resampled to `pace` (upstream applies its speed to
/// each segment's mel), and each member's frame count after it. At pace 1 the mel is returned
/// as it is, uncopied.
fn pace_members(mel: Mel, tokens: &[Vec<u32>], pace: f64) -> (Mel, Vec<usize>) {
    let flow_frames: Vec<usize> = tokens.iter().map(|t| t.len() * TOKEN_MEL_RATIO).collect();
    if pace == 1.0 {
        return (mel, flow_frames);
    }
    let mut at = 0;
    let parts: Vec<Mel> = flow_frames
        .iter()
        .map(|&n| {
            let part = mel.slice(at..at + n).paced(pace);
            at += n;
            part
        })
        .collect();
    let frames = parts.iter().map(|m| m.frames).collect();
    (Mel::concat(&parts), frames)
}

/// Why a segment whose take came out empty failed.
pub const NO_SPEECH: &str = "the model produced no speech for it (0 speech tokens): re-seed it, \
                             or reword its text";

/// Test-only fault injection: with `LECTERN_FAULT=fail-flow-call:N` in the environment, the
/// N-th flow group of the process fails like a device error, so the CLI tests can check that a
/// render goes on with the other segments and then reports the failed one. Unset, it costs one
/// environment read per flow group.
fn injected_flow_fault() -> Result<()> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static CALLS: AtomicU64 = AtomicU64::new(0);
    let Ok(spec) = std::env::var("LECTERN_FAULT") else { return Ok(()) };
    let Some(n) = spec.strip_prefix("fail-flow-call:") else { return Ok(()) };
    let call = CALLS.fetch_add(1, Ordering::SeqCst) + 1;
    if n.trim().parse::<u64>().is_ok_and(|n| n == call) {
        return Err(EngineError::Backend(format!("injected fault in flow call {call}")));
    }
    Ok(())
}
