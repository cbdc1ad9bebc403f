//! The repository's `fixtures/`: golden upstream outputs on tiny random-weight models.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use candle::{Device, Tensor};

/// The repository's `fixtures/` folder.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}

/// `fixtures/cosyvoice3-tiny-a`: the tiny model's golden cases.
pub fn tiny_a() -> PathBuf {
    root().join("cosyvoice3-tiny-a")
}

/// The tiny model's directory, in the real download's layout.
pub fn tiny_a_model() -> PathBuf {
    tiny_a().join("model")
}

/// A golden case of the tiny model (`llm.safetensors`, `flow.safetensors`, …) on the CPU.
pub fn tiny_a_case(file: &str) -> HashMap<String, Tensor> {
    let path = tiny_a().join(file);
    candle::safetensors::load(&path, &Device::Cpu)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The integer ids stored under `name` (upstream saves them as i64).
pub fn ids(case: &HashMap<String, Tensor>, name: &str) -> Vec<u32> {
    let values = case[name].flatten_all().unwrap().to_vec1::<i64>().unwrap();
    values.into_iter().map(|v| v as u32).collect()
}

/// The largest absolute difference of two equally long slices (equal values count 0, so
/// matching infinities do too).
pub fn max_abs(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).map(|(x, y)| if x == y { 0.0 } else { (x - y).abs() }).fold(0.0, f32::max)
}
