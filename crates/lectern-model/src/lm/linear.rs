//! The LM's linear layers: dense (f32, f16, bf16) or q8_0 weights, projections stacked into one
//! matmul, and the CPU's few-row product.

use candle::quantized::{GgmlDType, QMatMul, QTensor};
use candle::{D, DType, Module, Tensor};

use super::LmPrecision;
use super::kernels;
use crate::weights::{ModelError, Result, Weights};

/// A linear layer `y = x·Wᵀ (+ b)` on rows `x: (n, in)` in f32.
#[derive(Debug, Clone)]
pub(super) enum Linear {
    Dense { weight: Tensor, bias: Option<Tensor> },
    Quant { weight: QMatMul, bias: Option<Tensor> },
}

/// The f32 weight `(out, in)` and optional bias `(out,)` of one checkpoint projection, before
/// any fusion or precision cast.
pub(super) struct Rows {
    pub(super) weight: Tensor,
    pub(super) bias: Option<Tensor>,
}

impl Rows {
    /// Loads `weight` (and `bias`) under `w`; shape errors name the checkpoint tensor.
    pub(super) fn load(w: &Weights, out_dim: usize, in_dim: usize, bias: bool) -> Result<Self> {
        let weight = w.get("weight", &[out_dim, in_dim])?;
        let bias = if bias { Some(w.get("bias", &[out_dim])?) } else { None };
        Ok(Self { weight, bias })
    }

    /// `y = s·(x·Wᵀ + b)`, by scaling the f32 weight and bias (before any cast or quantization).
    pub(super) fn scaled(self, s: f64) -> Result<Self> {
        Ok(Self { weight: (self.weight * s)?, bias: self.bias.map(|b| b * s).transpose()? })
    }
}

impl Linear {
    pub(super) fn load(
        w: &Weights,
        out_dim: usize,
        in_dim: usize,
        bias: bool,
        prec: LmPrecision,
    ) -> Result<Self> {
        Self::stacked(vec![Rows::load(w, out_dim, in_dim, bias)?], prec)
    }

    /// One layer whose output columns are the outputs of `parts` in order (they must share the
    /// input width, and all or none have a bias): one matmul and one bias add instead of one per
    /// part, the point on a GPU where every kernel launch counts. Callers `narrow` the columns.
    /// q8_0 blocks run along the inner dimension, so stacking rows does not change them.
    pub(super) fn stacked(parts: Vec<Rows>, prec: LmPrecision) -> Result<Self> {
        let weights: Vec<&Tensor> = parts.iter().map(|p| &p.weight).collect();
        let biases: Vec<&Tensor> = parts.iter().filter_map(|p| p.bias.as_ref()).collect();
        let bias = match biases.len() {
            0 => None,
            n if n == parts.len() => Some(Tensor::cat(&biases, 0)?),
            _ => {
                return Err(ModelError::InvalidInput(
                    "stacked projections must all have a bias or none".into(),
                ));
            }
        };
        Self::from_tensor(Tensor::cat(&weights, 0)?, bias, prec)
    }

    pub(super) fn from_tensor(
        weight: Tensor,
        bias: Option<Tensor>,
        prec: LmPrecision,
    ) -> Result<Self> {
        Ok(match prec {
            LmPrecision::F32 => Self::Dense { weight, bias },
            LmPrecision::F16 => Self::Dense { weight: weight.to_dtype(DType::F16)?, bias },
            LmPrecision::Bf16 => Self::Dense { weight: weight.to_dtype(DType::BF16)?, bias },
            LmPrecision::Q8_0 => {
                let in_dim = weight.dim(1)?;
                if in_dim % 32 != 0 {
                    return Err(ModelError::InvalidInput(format!(
                        "q8_0 needs inner dimensions divisible by 32, got {in_dim}"
                    )));
                }
                let q = QTensor::quantize(&weight, GgmlDType::Q8_0)?;
                Self::Quant { weight: QMatMul::from_qtensor(q)?, bias }
            }
        })
    }

    pub(super) fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let (y, bias) = match self {
            Self::Dense { weight, bias } => {
                if weight.dtype() == DType::F32
                    && let Some(y) = kernels::rows_matmul(x, weight, bias.as_ref())?
                {
                    return Ok(y);
                }
                let y = if weight.dtype() == DType::F32 {
                    match few_rows_product(x, weight)? {
                        Some(y) => y,
                        None => x.matmul(&weight.t()?)?,
                    }
                } else {
                    x.to_dtype(weight.dtype())?.matmul(&weight.t()?)?.to_dtype(DType::F32)?
                };
                (y, bias)
            }
            Self::Quant { weight, bias } => (weight.forward(x)?, bias),
        };
        Ok(match bias {
            Some(b) => y.broadcast_add(b)?,
            None => y,
        })
    }

    /// Bytes held by the weight (for telemetry).
    pub(super) fn weight_bytes(&self) -> usize {
        match self {
            Self::Dense { weight, .. } => weight.elem_count() * weight.dtype().size_in_bytes(),
            Self::Quant { weight, .. } => match weight {
                QMatMul::QTensor(q) => q.storage_size_in_bytes(),
                QMatMul::Tensor(t) | QMatMul::TensorF16(t) => {
                    t.elem_count() * t.dtype().size_in_bytes()
                }
            },
        }
    }
}

/// Most rows [`few_rows_product`] serves: the decode steps of up to 16 lanes.
const FEW_ROWS: usize = 16;

/// On the CPU, `x·Wᵀ` for 2 to [`FEW_ROWS`] rows (the joined decode steps) computed as
/// `(W·xᵀ)ᵀ`. With its AVX-512 kernels (`x86-v4`) the `gemm` crate tiles the left operand's
/// rows 48 at a time, so 2–8 rows of `x·Wᵀ` ran 1.5× slower than on its AVX2 kernels
/// (`bench --stage lm --lanes 2`: 370 against 250 ms a step); as `W·xᵀ` the weight's rows
/// fill the tiles. One row keeps the matrix–vector path, more than [`FEW_ROWS`] the plain one.
fn few_rows_product(x: &Tensor, weight: &Tensor) -> Result<Option<Tensor>> {
    let in_dim = x.dim(D::Minus1)?;
    let rows = x.elem_count() / in_dim.max(1);
    if !x.device().is_cpu() || !(2..=FEW_ROWS).contains(&rows) {
        return Ok(None);
    }
    let flat = x.reshape((rows, in_dim))?;
    let y_t = weight.matmul(&flat.t()?)?; // (out, rows)
    let mut dims = x.dims().to_vec();
    *dims.last_mut().expect("rank ≥ 1") = weight.dim(0)?;
    Ok(Some(y_t.t()?.contiguous()?.reshape(dims)?))
}
