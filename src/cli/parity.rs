//! `lectern parity`: one model stage on a reference fixture case (a developer's check).

use anyhow::Result;
use lectern_model::flow::FlowMatmul;
use lectern_parity as parity;

use super::{ParityArgs, parse_device};

pub(super) fn run(args: ParityArgs) -> Result<()> {
    let ParityArgs { model, case, out, stage, device, lanes, flow_matmul, precision } = args;
    crate::model_dir::check(&model, crate::model_dir::ModelUse::Speech)?;
    let device = parse_device(&device)?;
    let flow_matmul = flow_matmul.map_or(FlowMatmul::f32_accurate_for(&device), Into::into);
    let req = parity::ParityRequest {
        model_dir: model,
        case,
        out,
        stage,
        device,
        lanes,
        flow_matmul,
        lm_precision: precision.into(),
    };
    let (stage, n) = parity::run(&req)?;
    eprintln!("parity {stage:?}: wrote {n} tensors to {}", req.out.display());
    Ok(())
}
