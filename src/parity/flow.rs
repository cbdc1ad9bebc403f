//! Parity stage(s): flow (to be written).
use super::Tensors;
use candle::Device;
use std::path::Path;

pub fn run_dit(_model_dir: &Path, _case: &Tensors, _device: &Device) -> anyhow::Result<Tensors> {
    anyhow::bail!("the dit parity stage is not implemented yet")
}

pub fn run_flow(_model_dir: &Path, _case: &Tensors, _device: &Device) -> anyhow::Result<Tensors> {
    anyhow::bail!("the flow parity stage is not implemented yet")
}
