//! Shared helpers of the engine tests: a fake backend whose flow waits until the test lets it
//! go, so a test can act at a known point of a render.
#![allow(dead_code)]

use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Mutex, MutexGuard, PoisonError};

use lectern_engine::backend::LmStage;
use lectern_engine::protocol::LaneMemory;
use lectern_engine::{BackendInfo, FakeBackend, LmJob, Mel, SynthBackend};

/// [`FakeBackend`] with a gate before each flow group: it sends the group's token counts on
/// `at_flow`, then waits for one message on `go`. With `lm` set, that stage is handed to the
/// engine (which then overlaps it with the gated flow).
pub struct Gated {
    pub inner: FakeBackend,
    pub at_flow: Sender<Vec<usize>>,
    pub go: Receiver<()>,
    pub lm: Option<Box<dyn LmStage + Send>>,
}

impl Gated {
    /// The backend, the receiver of the groups that reach the flow, the sender that lets one
    /// group through.
    pub fn new(inner: FakeBackend) -> (Self, Receiver<Vec<usize>>, Sender<()>) {
        let (at_flow_tx, at_flow) = channel();
        let (go, go_rx) = channel();
        (Self { inner, at_flow: at_flow_tx, go: go_rx, lm: None }, at_flow, go)
    }
}

impl SynthBackend for Gated {
    fn lm_generate(&mut self, jobs: &[LmJob]) -> lectern_engine::Result<Vec<Vec<u32>>> {
        self.inner.lm_generate(jobs)
    }
    fn flow_group(
        &mut self,
        v: &str,
        tokens: &[Vec<u32>],
        nfe: usize,
    ) -> lectern_engine::Result<Mel> {
        let _ = self.at_flow.send(tokens.iter().map(Vec::len).collect());
        let _ = self.go.recv();
        self.inner.flow_group(v, tokens, nfe)
    }
    fn vocode(&mut self, mel: &Mel) -> lectern_engine::Result<Vec<f32>> {
        self.inner.vocode(mel)
    }
    fn synchronize(&self) -> lectern_engine::Result<()> {
        Ok(())
    }
    fn kv_lane_memory(&self) -> Vec<LaneMemory> {
        self.inner.kv_lane_memory()
    }
    fn describe(&self) -> BackendInfo {
        self.inner.describe()
    }
    fn lm_stage(&mut self) -> Option<Box<dyn LmStage + Send>> {
        self.lm.take()
    }
}

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Held for a whole test: this binary's tests run one at a time, as telemetry's timed render
/// checks that the stage times account for the wall time, and a render beside it on the same
/// cores would add waits that are nobody's stage.
pub fn one_at_a_time() -> MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(PoisonError::into_inner)
}
