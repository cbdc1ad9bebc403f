//! `lectern parity`: run one model stage on a reference fixture case and write Lectern's
//! outputs under the fixture's tensor names (../shared/PARITY.md). Comparing is the caller's job.

#![forbid(unsafe_code)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use candle::{Device, Tensor};

use lectern_model::flow::FlowMatmul;
use lectern_model::lm::LmPrecision;

pub mod e2e;
pub mod flow;
pub mod hift;
pub mod lm;

/// The stages `lectern parity` answers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Stage {
    Lm,
    Dit,
    Flow,
    Hift,
    Mel,
    E2e,
}

impl Stage {
    /// Infers the stage from a case file name as PARITY.md specifies (`llm.safetensors` → lm…).
    pub fn from_case_path(path: &Path) -> Option<Self> {
        let name = path.file_name()?.to_str()?;
        Some(match name {
            "llm.safetensors" => Self::Lm,
            "dit_block.safetensors" => Self::Dit,
            "flow.safetensors" => Self::Flow,
            "hift.safetensors" => Self::Hift,
            "mel.safetensors" => Self::Mel,
            "e2e.safetensors" => Self::E2e,
            _ => return None,
        })
    }
}

/// Arguments of one parity run.
#[derive(Debug, Clone)]
pub struct ParityRequest {
    pub model_dir: PathBuf,
    pub case: PathBuf,
    pub out: PathBuf,
    pub stage: Option<Stage>,
    pub device: Device,
    /// Stage `lm`: decode the cases' greedy runs together as lanes of one batch.
    pub lanes: bool,
    /// Stages `dit`, `flow`, `e2e`: how the flow's large matmuls run.
    pub flow_matmul: FlowMatmul,
    /// Stages `lm`, `e2e`: the LM's storage precision (a reduced one measures its deviation
    /// from the fixture; the contract's tolerances are f32's).
    pub lm_precision: LmPrecision,
}

/// Tensors of a case file, by fixture name.
pub type Tensors = HashMap<String, Tensor>;

/// Runs the request and writes the outputs; returns the stage that ran and how many tensors
/// were written.
pub fn run(req: &ParityRequest) -> anyhow::Result<(Stage, usize)> {
    let stage = match req.stage.or_else(|| Stage::from_case_path(&req.case)) {
        Some(s) => s,
        None => bail!("cannot infer the stage from {}; pass --stage", req.case.display()),
    };
    let case: Tensors = candle::safetensors::load(&req.case, &Device::Cpu)
        .with_context(|| format!("reading case file {}", req.case.display()))?;
    let outputs = match stage {
        Stage::Lm => lm::run(&req.model_dir, &case, &req.device, req.lanes, req.lm_precision)?,
        Stage::Dit => flow::run_dit(&req.model_dir, &case, &req.device, req.flow_matmul)?,
        Stage::Flow => flow::run_flow(&req.model_dir, &case, &req.device, req.flow_matmul)?,
        Stage::Hift => hift::run_hift(&req.model_dir, &case, &req.device)?,
        Stage::Mel => hift::run_mel(&case, &req.device)?,
        Stage::E2e => {
            e2e::run(&req.model_dir, &case, &req.device, req.flow_matmul, req.lm_precision)?
        }
    };
    let outputs: Tensors = outputs
        .into_iter()
        .map(|(k, v)| Ok((k, v.to_device(&Device::Cpu)?)))
        .collect::<candle::Result<_>>()?;
    candle::safetensors::save(&outputs, &req.out)
        .with_context(|| format!("writing {}", req.out.display()))?;
    Ok((stage, outputs.len()))
}

/// Fetches a case tensor by name with a clear error.
pub fn input<'a>(case: &'a Tensors, name: &str) -> anyhow::Result<&'a Tensor> {
    case.get(name).with_context(|| format!("case file has no tensor `{name}`"))
}

/// A case tensor of token ids (stored as int64) as `u32`s.
pub fn ids(case: &Tensors, name: &str) -> anyhow::Result<Vec<u32>> {
    let t = input(case, name)?.flatten_all()?.to_dtype(candle::DType::I64)?;
    t.to_vec1::<i64>()?
        .into_iter()
        .map(|v| u32::try_from(v).with_context(|| format!("`{name}` holds {v}, not a token id")))
        .collect()
}
