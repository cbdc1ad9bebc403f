//! Causal 1-D convolutions of the vocoder (spec/COSYVOICE3.md §8 conventions): explicit zero
//! padding on one side, then a padding-free `Conv1d`. Weight norm is folded once at load.

use std::sync::OnceLock;

use candle::Tensor;

use crate::error::Result;
use crate::weights::Weights;
use lectern_kernels::conv::direct::{self as conv_direct, Kernel, Panels};
use lectern_kernels::conv::tap_major::conv1d_tap_major;
use lectern_kernels::conv::vocoder::{self as cpu, ConvInput};
use lectern_kernels::cuda::hift::{self as kernels, ConvGeometry};

/// A `Conv1d` with its causal padding. Weights `(out, in, k)`, bias `(out)`.
#[derive(Debug, Clone)]
pub struct CausalConv1d {
    /// `(out, in, k)`, for strided convs (candle's im2col conv1d).
    weight: Tensor,
    /// `(k, out, in)` contiguous, for stride-1 convs (tap-major matmuls, see
    /// [`conv1d_tap_major`]).
    weight_taps: Tensor,
    bias: Tensor,
    dilation: usize,
    stride: usize,
    pad_left: usize,
    pad_right: usize,
    /// Lectern's conv kernels (CUDA, CPU) where they apply; candle's ops otherwise.
    pub(super) use_kernels: bool,
    /// The [`conv_direct`] kernel its stride-1 CPU convs run on (none: the stacked-tap path).
    pub(super) direct: Option<Kernel>,
    /// The stride-1 weights packed for [`conv_direct`], on first use.
    panels: OnceLock<Panels>,
}

impl CausalConv1d {
    fn load(w: &Weights, c_in: usize, c_out: usize, k: usize) -> Result<(Tensor, Tensor)> {
        let weight = w.get_weight_norm(&[c_out, c_in, k])?;
        let bias = w.get("bias", &[c_out])?;
        Ok((weight, bias))
    }

    /// Left-causal conv: left-pad `(k−1)·d` zeros, dilation `d`; output length = input length.
    pub fn left(w: &Weights, c_in: usize, c_out: usize, k: usize, dilation: usize) -> Result<Self> {
        let (weight, bias) = Self::load(w, c_in, c_out, k)?;
        let weight_taps = weight.permute((2, 0, 1))?.contiguous()?;
        Ok(Self {
            weight,
            weight_taps,
            bias,
            dilation,
            stride: 1,
            pad_left: (k - 1) * dilation,
            pad_right: 0,
            use_kernels: true,
            direct: conv_direct::vocoder_default(),
            panels: OnceLock::new(),
        })
    }

    /// Look-ahead conv: right-pad `k−1` zeros.
    pub fn right(w: &Weights, c_in: usize, c_out: usize, k: usize) -> Result<Self> {
        let (weight, bias) = Self::load(w, c_in, c_out, k)?;
        let weight_taps = weight.permute((2, 0, 1))?.contiguous()?;
        Ok(Self {
            weight,
            weight_taps,
            bias,
            dilation: 1,
            stride: 1,
            pad_left: 0,
            pad_right: k - 1,
            use_kernels: true,
            direct: conv_direct::vocoder_default(),
            panels: OnceLock::new(),
        })
    }

    /// Causal downsample by `u`: left-pad `u−1` zeros, kernel `2u`, stride `u`.
    pub fn downsample(w: &Weights, c_in: usize, c_out: usize, u: usize) -> Result<Self> {
        let (weight, bias) = Self::load(w, c_in, c_out, 2 * u)?;
        let weight_taps = weight.permute((2, 0, 1))?.contiguous()?;
        Ok(Self {
            weight,
            weight_taps,
            bias,
            dilation: 1,
            stride: u,
            pad_left: u - 1,
            pad_right: 0,
            use_kernels: true,
            direct: conv_direct::vocoder_default(),
            panels: OnceLock::new(),
        })
    }

    /// `x` (1, in, t) → (1, out, t') with this layer's causal padding.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        self.forward_plus(x, None)
    }

    /// `residual + self.forward(x)` (`residual` shaped like the output), the add fused into
    /// the conv's last pass on CUDA.
    pub fn forward_plus(&self, x: &Tensor, residual: Option<&Tensor>) -> Result<Tensor> {
        if self.stride == 1 && self.use_kernels {
            let (geometry, stacked) = (self.padded_geometry()?, self.stacked()?);
            if let Some(y) = kernels::conv1d(x, &stacked, &self.bias, geometry, residual)? {
                return Ok(y);
            }
            if cpu::applies(x) {
                return Ok(cpu::conv1d(
                    x,
                    &stacked,
                    &self.bias,
                    geometry,
                    residual,
                    ConvInput::Plain,
                    self.direct_panels()?,
                )?);
            }
        }
        let y = self.forward_padded(x)?;
        Ok(match residual {
            Some(r) => (r + y)?,
            None => y,
        })
    }

    /// `residual + self.forward(f(x))`, `f` a pointwise function [`cpu::conv1d`] computes
    /// block by block, where this conv runs there (a CPU f32 input of batch 1, stride 1,
    /// Lectern's kernels on); `None` otherwise.
    pub fn forward_cpu_of(
        &self,
        x: &Tensor,
        input: ConvInput,
        residual: Option<&Tensor>,
    ) -> Result<Option<Tensor>> {
        if self.stride != 1 || !self.use_kernels || !cpu::applies(x) || x.dims3()?.0 != 1 {
            return Ok(None);
        }
        let (geometry, stacked) = (self.padded_geometry()?, self.stacked()?);
        let direct = self.direct_panels()?;
        Ok(Some(cpu::conv1d(x, &stacked, &self.bias, geometry, residual, input, direct)?))
    }

    /// This conv's [`conv_direct`] kernel and its weights packed for it, where it has one and
    /// its weights are on the CPU (packed on first use and kept: a pass over every weight, too
    /// costly to repeat per call on short segments).
    fn direct_panels(&self) -> Result<Option<(Kernel, &Panels)>> {
        let Some(kernel) = self.direct.filter(|k| k.runs_here()) else { return Ok(None) };
        if !self.weight_taps.device().is_cpu() {
            return Ok(None);
        }
        if self.panels.get().is_none() {
            let (k, out, c_in) = self.weight_taps.dims3()?;
            let stacked = self.weight_taps.flatten_all()?.to_vec1::<f32>()?;
            let _ = self.panels.set(Panels::pack(&stacked, k, out, c_in));
        }
        Ok(self.panels.get().map(|panels| (kernel, panels)))
    }

    /// The tap weights as one `(k·out, in)` matrix (a view).
    fn stacked(&self) -> Result<Tensor> {
        Ok(self.weight_taps.flatten_to(1)?)
    }

    /// A stride-1 conv's taps, dilation and causal padding.
    fn padded_geometry(&self) -> Result<ConvGeometry> {
        Ok(ConvGeometry {
            k: self.weight_taps.dim(0)?,
            dilation: self.dilation,
            pad_left: self.pad_left,
            pad_right: self.pad_right,
        })
    }

    fn forward_padded(&self, x: &Tensor) -> Result<Tensor> {
        let x = if self.pad_left + self.pad_right > 0 {
            x.pad_with_zeros(2, self.pad_left, self.pad_right)?
        } else {
            x.clone()
        };
        self.forward_unpadded(&x)
    }

    /// The convolution without any padding (streaming look-ahead taken from the input).
    pub fn forward_unpadded(&self, x: &Tensor) -> Result<Tensor> {
        if self.stride == 1 && self.use_kernels && cpu::applies(x) {
            let geometry = ConvGeometry { pad_left: 0, pad_right: 0, ..self.padded_geometry()? };
            return Ok(cpu::conv1d(
                x,
                &self.stacked()?,
                &self.bias,
                geometry,
                None,
                ConvInput::Plain,
                self.direct_panels()?,
            )?);
        }
        // Stride 1: a sum of per-tap matmuls on shifted views beats candle's im2col conv1d at
        // full size and needs no (k·in, t) column buffer (docs/refutations.md).
        let y = if self.stride == 1 {
            conv1d_tap_major(x, &self.weight_taps, self.dilation)?
        } else {
            x.conv1d(&self.weight, 0, self.stride, self.dilation, 1)?
        };
        Ok(y.broadcast_add(&self.bias.reshape((1, (), 1))?)?)
    }
}
