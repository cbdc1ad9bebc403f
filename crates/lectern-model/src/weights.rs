//! Checkpoint loading: upstream `.pt` (PyTorch zip + pickle state dict) or `.safetensors`.
//!
//! Every tensor request names the file, the tensor and, on a shape mismatch, both shapes, so a
//! user holding a wrong or damaged download learns exactly what is wrong. Weight-norm folding
//! lives here too because it is a property of how upstream *stores* convolutions, not of the math.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use candle::{DType, Device, Tensor};
use candle_nn::VarBuilder;

pub use super::pt::LoadChecks;
use crate::error::{ModelError, Result};

/// All tensors of one checkpoint file, keyed by their state-dict names.
#[derive(Debug)]
pub struct Checkpoint {
    path: PathBuf,
    tensors: HashMap<String, Tensor>,
}

impl Checkpoint {
    /// Loads `path` onto `device`, choosing the format by extension (`.safetensors`, else pickle),
    /// with every integrity check (zip CRC-32 of `.pt` records, finite weights).
    pub fn load(path: &Path, device: &Device) -> Result<Self> {
        Self::load_with(path, device, LoadChecks::ALL)
    }

    /// [`Checkpoint::load`] with a choice of checks: the benchmark's way of measuring them.
    pub fn load_with(path: &Path, device: &Device, checks: LoadChecks) -> Result<Self> {
        if !path.exists() {
            return Err(ModelError::MissingFile { path: path.to_path_buf() });
        }
        let corrupt = |e: candle::Error| ModelError::CorruptFile {
            path: path.to_path_buf(),
            reason: e.to_string(),
        };
        let is_safetensors = path.extension().is_some_and(|e| e == "safetensors");
        // Both formats are read onto the CPU, checked there, then moved to `device`.
        let on_cpu: Vec<(String, Tensor)> = if is_safetensors {
            let map = candle::safetensors::load(path, &Device::Cpu).map_err(corrupt)?;
            let mut v: Vec<_> = map.into_iter().collect();
            v.sort_by(|a, b| a.0.cmp(&b.0));
            if checks.finite {
                for (name, t) in &v {
                    super::pt::check_finite(path, name, t)?;
                }
            }
            v
        } else {
            super::pt::read_pt(path, checks)?
        };
        let mut tensors = HashMap::with_capacity(on_cpu.len());
        for (name, t) in on_cpu {
            tensors.insert(name, t.to_device(device)?);
        }
        if tensors.is_empty() {
            return Err(ModelError::CorruptFile {
                path: path.to_path_buf(),
                reason: "no tensors found".into(),
            });
        }
        Ok(Self { path: path.to_path_buf(), tensors })
    }

    /// Wraps tensors built in memory (seeded random weights for benchmarks, tests).
    pub fn from_tensors(label: impl Into<PathBuf>, tensors: HashMap<String, Tensor>) -> Self {
        Self { path: label.into(), tensors }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tensors.keys().map(String::as_str)
    }

    pub fn contains(&self, name: &str) -> bool {
        self.tensors.contains_key(name)
    }

    /// Removes every occurrence of `pattern` from the keys (upstream strips `generator.` from
    /// HiFT keys so GAN-wrapper checkpoints also load).
    pub fn strip_key_substring(mut self, pattern: &str) -> Self {
        self.tensors = self.tensors.into_iter().map(|(k, v)| (k.replace(pattern, ""), v)).collect();
        self
    }

    /// The tensor `name` as stored, whatever its shape.
    pub fn get_unchecked(&self, name: &str) -> Result<Tensor> {
        self.tensors.get(name).cloned().ok_or_else(|| ModelError::MissingTensor {
            path: self.path.clone(),
            name: name.to_string(),
        })
    }
}

/// A prefixed, typed view into a [`Checkpoint`]: candle-nn's [`VarBuilder`] over the
/// checkpoint's tensors, wrapped so that every error names the file and the full tensor name
/// (candle's own say only "cannot find tensor" or "shape mismatch"), and with upstream's
/// weight-norm folding ([`Weights::get_weight_norm`]).
#[derive(Clone)]
pub struct Weights {
    ckpt: Arc<Checkpoint>,
    vb: VarBuilder<'static>,
}

impl std::fmt::Debug for Weights {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Weights")
            .field("path", &self.ckpt.path)
            .field("prefix", &self.vb.prefix())
            .field("dtype", &self.vb.dtype())
            .finish()
    }
}

impl Weights {
    pub fn root(ckpt: Arc<Checkpoint>) -> Self {
        let device = ckpt.tensors.values().next().map_or(Device::Cpu, |t| t.device().clone());
        // Cloning the map clones tensor handles, not their storage.
        let vb = VarBuilder::from_tensors(ckpt.tensors.clone(), DType::F32, &device);
        Self { ckpt, vb }
    }

    /// Same view, tensors converted to `dtype` when fetched.
    pub fn with_dtype(&self, dtype: DType) -> Self {
        Self { ckpt: Arc::clone(&self.ckpt), vb: self.vb.to_dtype(dtype) }
    }

    pub fn dtype(&self) -> DType {
        self.vb.dtype()
    }

    pub fn device(&self) -> Device {
        self.vb.device().clone()
    }

    pub fn checkpoint(&self) -> &Arc<Checkpoint> {
        &self.ckpt
    }

    /// The checkpoint's name of `name` under this view's prefix, as errors report it.
    fn full(&self, name: &str) -> String {
        let prefix = self.vb.prefix();
        if prefix.is_empty() { name.to_string() } else { format!("{prefix}.{name}") }
    }

    pub fn pp(&self, sub: impl std::fmt::Display) -> Self {
        Self { ckpt: Arc::clone(&self.ckpt), vb: self.vb.pp(sub.to_string()) }
    }

    pub fn contains(&self, name: &str) -> bool {
        self.vb.contains_tensor(name)
    }

    /// The tensor `name` of shape `shape`, in the view's dtype; a missing tensor or another
    /// shape is an error naming the file, the tensor and both shapes.
    pub fn get(&self, name: &str, shape: &[usize]) -> Result<Tensor> {
        if !self.contains(name) {
            return Err(ModelError::MissingTensor {
                path: self.ckpt.path.clone(),
                name: self.full(name),
            });
        }
        self.vb.get(shape, name).map_err(|e| {
            let stored = self.vb.get_unchecked_dtype(name, DType::F32);
            match stored {
                Ok(t) if t.dims() != shape => ModelError::ShapeMismatch {
                    path: self.ckpt.path.clone(),
                    name: self.full(name),
                    expected: shape.to_vec(),
                    actual: t.dims().to_vec(),
                },
                _ => ModelError::DamagedTensor {
                    path: self.ckpt.path.clone(),
                    name: self.full(name),
                    reason: e.to_string(),
                },
            }
        })
    }

    /// Fetches a weight-normalised conv weight `(out, in, k)`: the plain `weight`, the torch
    /// parametrizations pair (`parametrizations.weight.original0/1`) or the legacy
    /// `weight_g`/`weight_v` pair, folded as `g · v / ‖v‖` (norm over `in, k`, no epsilon)
    /// in the view's dtype.
    pub fn get_weight_norm(&self, shape: &[usize]) -> Result<Tensor> {
        if self.contains("weight") {
            return self.get("weight", shape);
        }
        let (g_name, v_name) = if self.contains("parametrizations.weight.original0") {
            ("parametrizations.weight.original0", "parametrizations.weight.original1")
        } else {
            ("weight_g", "weight_v")
        };
        let mut g_shape = vec![1; shape.len()];
        g_shape[0] = shape[0];
        let g = self.get(g_name, &g_shape)?;
        let v = self.get(v_name, shape)?;
        let norm = v.sqr()?.flatten_from(1)?.sum_keepdim(1)?.sqrt()?; // (out, 1)
        let norm = norm.reshape(g_shape.as_slice())?;
        Ok(v.broadcast_mul(&g.broadcast_div(&norm)?)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn weights() -> Weights {
        let t = |v: Vec<f32>, shape: &[usize]| Tensor::from_vec(v, shape, &Device::Cpu).unwrap();
        let tensors = HashMap::from([
            ("conv.weight_g".to_string(), t(vec![2.0, 3.0], &[2, 1, 1])),
            ("conv.weight_v".to_string(), t(vec![3.0, 4.0, 0.0, 5.0], &[2, 1, 2])),
            ("proj.weight".to_string(), t(vec![1.0; 6], &[2, 3])),
        ]);
        Weights::root(Arc::new(Checkpoint::from_tensors("flow.pt", tensors)))
    }

    #[test]
    fn a_missing_tensor_names_the_file_and_the_full_name() {
        let err = weights().pp("decoder").get("bias", &[2]).unwrap_err();
        assert_eq!(err.to_string(), "flow.pt: tensor `decoder.bias` is missing");
    }

    #[test]
    fn a_wrong_shape_names_the_tensor_and_both_shapes() {
        let err = weights().pp("proj").get("weight", &[3, 2]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "flow.pt: tensor `proj.weight` has shape [2, 3], expected [3, 2]"
        );
    }

    #[test]
    fn weight_norm_folds_as_g_times_v_over_its_norm() {
        let w = weights().pp("conv").get_weight_norm(&[2, 1, 2]).unwrap();
        let got = w.flatten_all().unwrap().to_vec1::<f32>().unwrap();
        // Row 0: v = (3, 4), ‖v‖ = 5, g = 2 → (1.2, 1.6); row 1: v = (0, 5), g = 3 → (0, 3).
        assert_eq!(got, vec![1.2, 1.6, 0.0, 3.0]);
    }

    #[test]
    fn views_convert_to_their_dtype() {
        let w = weights().with_dtype(DType::F64).pp("proj").get("weight", &[2, 3]).unwrap();
        assert_eq!(w.dtype(), DType::F64);
    }
}
