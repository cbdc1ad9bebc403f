//! Parity stages `dit` (one estimator call) and `flow` (`flow.inference`, NFE 10 and 4).

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, bail};
use candle::{DType, Device, Tensor};

use super::{Tensors, ids, input};
use lectern_model::config::{ModelConfig, ModelFiles};
use lectern_model::flow::dit::DiT;
use lectern_model::flow::{CausalMaskedDiffWithDiT, FlowMatmul, FlowPrompt, NoiseSource};
use lectern_model::{Checkpoint, Weights};

fn load_config(model_dir: &Path) -> anyhow::Result<ModelConfig> {
    ModelConfig::from_dir(model_dir)
        .with_context(|| format!("reading the model config in {}", model_dir.display()))
}

fn on(case: &Tensors, name: &str, device: &Device) -> anyhow::Result<Tensor> {
    Ok(input(case, name)?.to_dtype(DType::F32)?.to_device(device)?)
}

/// `in.{x,mask,mu,t,spks,cond}` → `time_embed`, `input_embed`, `block{i}.*`, `norm_out`,
/// `nonstream.out`.
pub fn run_dit(
    model_dir: &Path,
    case: &Tensors,
    device: &Device,
    matmul: FlowMatmul,
) -> anyhow::Result<Tensors> {
    let cfg = load_config(model_dir)?;
    let files = ModelFiles::in_dir(model_dir);
    let ckpt = Arc::new(Checkpoint::load(&files.flow, device)?);
    let dit = DiT::new(&cfg.flow.dit, &Weights::root(ckpt).pp("decoder.estimator"))?
        .with_matmul(matmul)?;
    let mask = input(case, "in.mask")?.to_dtype(DType::F32)?;
    if mask.flatten_all()?.min(0)?.to_scalar::<f32>()? < 1.0 {
        bail!(
            "only the non-streaming, unpadded estimator is implemented (in.mask must be all ones)"
        );
    }
    let mut taps = Vec::new();
    let out = dit.forward_with_taps(
        &on(case, "in.x", device)?,
        &on(case, "in.mu", device)?,
        &on(case, "in.t", device)?,
        &on(case, "in.spks", device)?,
        &on(case, "in.cond", device)?,
        Some(&mut taps),
    )?;
    let mut outputs: Tensors = taps.into_iter().collect();
    outputs.insert("nonstream.out".into(), out);
    Ok(outputs)
}

/// `token`, `prompt_token`, `prompt_feat`, `embedding` → `nonstream.{h,spks,mu,cond,noise,mel,
/// mel_n4}`.
pub fn run_flow(
    model_dir: &Path,
    case: &Tensors,
    device: &Device,
    matmul: FlowMatmul,
) -> anyhow::Result<Tensors> {
    let cfg = load_config(model_dir)?;
    let files = ModelFiles::in_dir(model_dir);
    let mut flow =
        CausalMaskedDiffWithDiT::load(&cfg.flow, &files.flow, device, &NoiseSource::Rebuilt)?;
    flow.set_matmul(matmul)?;
    let prompt = FlowPrompt {
        prompt_token: ids(case, "prompt_token")?,
        prompt_feat: on(case, "prompt_feat", device)?,
        embedding: on(case, "embedding", device)?,
    };
    let tokens = ids(case, "token")?;
    let inputs = flow.prepare(&prompt, &tokens)?;
    let p = inputs.prompt_frames;
    let n_frames = inputs.mu.dim(2)?;
    let target = |mel: Tensor| mel.narrow(2, p, n_frames - p);
    let mel = target(flow.decode(&inputs, flow.solver_options(10))?)?;
    let mel_n4 = target(flow.decode(&inputs, flow.solver_options(4))?)?;
    let noise = NoiseSource::Rebuilt.load(device)?.narrow(2, 0, n_frames)?;
    let mut outputs = Tensors::new();
    for (name, t) in [
        ("h", inputs.h),
        ("spks", inputs.spks),
        ("mu", inputs.mu),
        ("cond", inputs.cond),
        ("noise", noise),
        ("mel", mel),
        ("mel_n4", mel_n4),
    ] {
        outputs.insert(format!("nonstream.{name}"), t.contiguous()?);
    }
    Ok(outputs)
}
