//! `lectern bench`'s and `lectern parity`'s arguments (the developer's commands).

use std::path::PathBuf;

use lectern_engine::protocol::{Precision, RenderParams};
use lectern_parity as parity;

use super::{FlowMatmulArg, PrecisionArg};
use crate::{bench, limits};

/// `lectern bench`'s arguments.
#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    /// The stage to benchmark.
    #[arg(long, value_enum, required_unless_present = "workload")]
    pub stage: Option<lectern_bench::BenchStage>,
    /// An end-to-end workload through the engine.
    #[arg(long, value_enum, conflicts_with = "stage")]
    pub workload: Option<bench::Workload>,
    #[command(flatten)]
    pub wl: WorkloadArgs,
    /// cpu (default) or cuda / cuda:N / metal.
    #[arg(long, default_value = "cpu")]
    pub device: String,
    /// Print the figures as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// A smaller sweep, for quick checks.
    #[arg(long)]
    pub quick: bool,
}

/// `lectern bench --workload`'s options.
#[derive(Debug, Clone, clap::Args)]
pub struct WorkloadArgs {
    /// LM lanes; several (`1,4`) run one after another on the same weights (default 8, on CUDA
    /// 32; `--stage lm`: 1,2,4,8).
    #[arg(
        long,
        value_delimiter = ',',
        value_parser = limits::parse_lanes,
        allow_negative_numbers = true
    )]
    pub lanes: Vec<usize>,
    /// Target generated mel frames per flow group.
    #[arg(
        long,
        default_value_t = 2000,
        value_parser = limits::parse_group_target,
        allow_negative_numbers = true
    )]
    pub group_target: usize,
    /// Flow Euler steps.
    #[arg(
        long,
        default_value_t = 10,
        value_parser = limits::parse_nfe,
        allow_negative_numbers = true
    )]
    pub nfe: usize,
    /// LM weight precision (default f32; `--stage lm`: f32, f16 and q8_0).
    #[arg(long, value_enum)]
    pub precision: Option<PrecisionArg>,
    /// `--stage lm`: forced decode steps per run (default 8).
    #[arg(long)]
    pub steps: Option<usize>,
    /// How the flow's large matmuls run [default: bf16 on CUDA, f32 elsewhere]
    #[arg(long, value_enum)]
    pub flow_matmul: Option<FlowMatmulArg>,
    /// Only the first N segments (quick runs).
    #[arg(long)]
    pub max_segments: Option<usize>,
    /// Only the K-th of N shares of the workload, as `render --shard K/N` splits a book
    /// (scaling across GPUs or machines, measured share by share).
    #[arg(long, value_name = "K/N")]
    pub shard: Option<crate::session::plan::Shard>,
    /// `--stage flow`: total frames (prompt + generated) of the one-block breakdown [default:
    /// the prompt + 1000 generated; `smoke`'s one group is 1208]
    #[arg(long)]
    pub breakdown_frames: Option<usize>,
    /// Speech tokens forced per word (10 is the real model's rate; less only for quick runs).
    #[arg(long, default_value_t = bench::TOKENS_PER_WORD)]
    pub tokens_per_word: usize,
    /// Segment without the fast start (the first segment is then a full upstream-sized one).
    #[arg(long)]
    pub no_lead_sentence: bool,
    /// Decode the LM and run the flow one after the other instead of at the same time.
    #[arg(long)]
    pub no_overlap: bool,
    /// Launch every LM decode kernel on its own instead of replaying CUDA graphs.
    #[arg(long)]
    pub no_cuda_graphs: bool,
    /// Run the LM's decode steps on candle's ops only, without Lectern's own CUDA kernels.
    #[arg(long)]
    pub no_lm_kernels: bool,
    /// Run the DiT's elementwise work on candle's ops only, without Lectern's CUDA kernels.
    #[arg(long)]
    pub no_flow_kernels: bool,
    /// Run the vocoder's convolutions and activations on candle's ops only, without Lectern's
    /// CUDA kernels.
    #[arg(long)]
    pub no_vocoder_kernels: bool,
}

impl WorkloadArgs {
    pub(in crate::cli) fn options(
        &self,
        w: bench::Workload,
        device: candle::Device,
        json: bool,
    ) -> bench::WorkloadOptions {
        let mut o = bench::WorkloadOptions::new(w);
        o.lanes = if self.lanes.is_empty() {
            vec![RenderParams::default_lanes(device.is_cuda())]
        } else {
            self.lanes.iter().map(|&l| l.max(1)).collect()
        };
        o.device = device;
        o.group_target_frames = self.group_target;
        o.nfe = self.nfe.max(1);
        o.precision = self.precision.map_or(Precision::F32, Into::into);
        o.flow_matmul = self.flow_matmul.map(Into::into);
        o.max_segments = self.max_segments;
        o.shard = self.shard;
        o.tokens_per_word = self.tokens_per_word.max(1);
        o.lead_sentence = !self.no_lead_sentence;
        o.overlap = !self.no_overlap;
        o.cuda_graphs = !self.no_cuda_graphs;
        o.lm_kernels = !self.no_lm_kernels;
        o.flow_kernels = !self.no_flow_kernels;
        o.vocoder_kernels = !self.no_vocoder_kernels;
        o.print = !json;
        o
    }

    /// The options of a stage benchmark (`--stage`).
    pub(in crate::cli) fn stage_options(
        &self,
        device: candle::Device,
        quick: bool,
    ) -> lectern_bench::BenchOptions {
        let mut o = lectern_bench::BenchOptions::new(device);
        o.quick = quick;
        o.lanes = (!self.lanes.is_empty()).then(|| self.lanes.iter().map(|&l| l.max(1)).collect());
        o.steps = self.steps;
        o.precision = self.precision.map(Into::into);
        o.flow_matmul = self.flow_matmul.map(Into::into);
        o.breakdown_frames = self.breakdown_frames.map(|n| n.max(1));
        o.lm_kernels = !self.no_lm_kernels;
        o.flow_kernels = !self.no_flow_kernels;
        o.vocoder_kernels = !self.no_vocoder_kernels;
        o
    }
}

/// `lectern parity`'s arguments.
#[derive(Debug, clap::Args)]
pub struct ParityArgs {
    /// Model directory in upstream layout (llm.pt, flow.pt, hift.pt, CosyVoice-BlankEN/).
    #[arg(long)]
    pub model: PathBuf,
    /// Case file (a reference fixture's safetensors).
    #[arg(long)]
    pub case: PathBuf,
    /// Where to write the outputs (safetensors).
    #[arg(long)]
    pub out: PathBuf,
    /// Stage; inferred from the case file's name when omitted.
    #[arg(long, value_enum)]
    pub stage: Option<parity::Stage>,
    /// cpu (default) or cuda / cuda:N / metal.
    #[arg(long, default_value = "cpu")]
    pub device: String,
    /// Stage lm: decode the cases' greedy runs together, as lanes of one batch.
    #[arg(long)]
    pub lanes: bool,
    /// Stages dit, flow, e2e: how the flow's large matmuls run (default: the f32-accurate
    /// way, tf32x3 on CUDA and f32 elsewhere, as the tolerances are f32's; bf16 is the CUDA
    /// engine's default, checked here with `--flow-matmul bf16`).
    #[arg(long, value_enum)]
    pub flow_matmul: Option<FlowMatmulArg>,
    /// Stages lm, e2e: the LM's storage precision (a reduced one shows its deviation from the
    /// fixture; PARITY.md's tolerances are f32's).
    #[arg(long, value_enum, default_value = "f32")]
    pub precision: PrecisionArg,
}

#[cfg(test)]
mod tests {
    use clap::Parser;
    use lectern_model::flow::FlowMatmul;

    use super::*;
    use crate::cli::{Cli, Command};

    #[test]
    fn stage_benches_take_their_sweep_from_the_flags() {
        let parse = |args: &[&str]| {
            let cli = Cli::try_parse_from([&["lectern", "bench"], args].concat()).unwrap();
            let Some(Command::Bench(BenchArgs { wl, .. })) = cli.command else { panic!("bench") };
            wl
        };
        let wl = parse(&["--stage", "lm", "--lanes", "1,3", "--steps", "64", "--precision", "f32"]);
        let o = wl.stage_options(candle::Device::Cpu, false);
        assert_eq!(o.lanes, Some(vec![1, 3]));
        assert_eq!((o.steps, o.precision), (Some(64), Some(lectern_model::lm::LmPrecision::F32)));
        let o = parse(&["--stage", "lm"]).stage_options(candle::Device::Cpu, true);
        assert_eq!((o.lanes, o.steps, o.precision, o.quick), (None, None, None, true));
        // A workload still defaults to 8 lanes and f32.
        let wl = parse(&["--workload", "smoke", "--flow-matmul", "tf32x3", "--no-lm-kernels"]);
        let o = wl.options(bench::Workload::Smoke, candle::Device::Cpu, true);
        assert_eq!((o.lanes, o.precision), (vec![8], Precision::F32));
        assert_eq!(
            (o.flow_matmul, o.lm_kernels, o.flow_kernels),
            (Some(FlowMatmul::Tf32x3), false, true)
        );
    }
}
