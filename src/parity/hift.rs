//! Parity stage(s): hift (to be written).
use super::Tensors;
use candle::Device;
use std::path::Path;

pub fn run_hift(_model_dir: &Path, _case: &Tensors, _device: &Device) -> anyhow::Result<Tensors> {
    anyhow::bail!("the hift parity stage is not implemented yet")
}

pub fn run_mel(_case: &Tensors, _device: &Device) -> anyhow::Result<Tensors> {
    anyhow::bail!("the mel parity stage is not implemented yet")
}

pub fn run_e2e(_model_dir: &Path, _case: &Tensors, _device: &Device) -> anyhow::Result<Tensors> {
    anyhow::bail!("the e2e parity stage is not implemented yet")
}
