//! `lectern bench --stage`: each model stage timed on full-size, seeded random weights
//! (../shared/bench/README.md), the device synchronised before every clock read. Figures are
//! printed as a table and returned as JSON. The end-to-end workloads run through the engine, in
//! the app (`lectern::bench`).

#![forbid(unsafe_code)]

use std::time::Instant;

use candle::Device;

pub mod checkpoint;
pub mod flow;
pub mod gemm;
pub mod hift;
pub mod lm;
pub mod roofline;

/// Which benchmark to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BenchStage {
    Lm,
    Flow,
    Hift,
    /// What the checkpoint integrity checks cost at load.
    Checkpoint,
    /// The DiT's projection products alone (CPU): GFLOP/s per shape and way of running them.
    Gemm,
}

/// Options shared by every stage benchmark.
#[derive(Debug, Clone)]
pub struct BenchOptions {
    pub device: Device,
    /// Seed of the random weights (the standard workloads use 0).
    pub weights_seed: u64,
    /// Smaller, quicker variant of the stage's sweep (CI smoke runs).
    pub quick: bool,
    /// Stage lm: the lane counts to run (default 1, 2, 4, 8).
    pub lanes: Option<Vec<usize>>,
    /// Stage lm: forced decode steps per run (default 8).
    pub steps: Option<usize>,
    /// Stage lm: the one weight precision to run (default f32, f16 and q8_0).
    pub precision: Option<lectern_model::lm::LmPrecision>,
    /// Stage flow: how the large matmuls run (default: the device's, compared with f32).
    pub flow_matmul: Option<lectern_model::flow::FlowMatmul>,
    /// Stage flow: total frames of the one-block breakdown (default: prompt + 1000 generated).
    pub breakdown_frames: Option<usize>,
    /// Each stage's own kernels (`SpeechLm::set_kernels` and the others): on unless
    /// `--no-lm-kernels`, `--no-flow-kernels`, `--no-vocoder-kernels`.
    pub lm_kernels: bool,
    pub flow_kernels: bool,
    pub vocoder_kernels: bool,
}

impl BenchOptions {
    /// A stage's default sweep on `device`, weights seed 0.
    pub fn new(device: Device) -> Self {
        Self {
            device,
            weights_seed: 0,
            quick: false,
            lanes: None,
            steps: None,
            precision: None,
            flow_matmul: None,
            breakdown_frames: None,
            lm_kernels: true,
            flow_kernels: true,
            vocoder_kernels: true,
        }
    }
}

/// Runs one stage benchmark; prints a table to stdout and returns the figures as JSON.
pub fn run_stage(stage: BenchStage, opts: &BenchOptions) -> anyhow::Result<serde_json::Value> {
    match stage {
        BenchStage::Lm => lm::run(opts),
        BenchStage::Flow => flow::run(opts),
        BenchStage::Hift => hift::run(opts),
        BenchStage::Checkpoint => checkpoint::run(opts),
        BenchStage::Gemm => gemm::run(opts),
    }
}

/// Blocks until the device has finished queued work, so a clock read after it is honest.
pub fn sync(device: &Device) -> candle::Result<()> {
    device.synchronize()
}

/// Best-of-`reps` wall time of `f`, in seconds, with the device synchronised.
pub fn time<T>(
    dev: &Device,
    reps: usize,
    mut f: impl FnMut() -> anyhow::Result<T>,
) -> anyhow::Result<f64> {
    let mut best = f64::INFINITY;
    for _ in 0..reps.max(1) {
        sync(dev)?;
        let start = Instant::now();
        let out = f()?;
        sync(dev)?;
        best = best.min(start.elapsed().as_secs_f64());
        drop(out);
    }
    Ok(best)
}
