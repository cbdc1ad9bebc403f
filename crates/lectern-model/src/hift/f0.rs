//! `CausalConvRNNF0Predictor` (spec/COSYVOICE3.md §8.1): five weight-normed causal convs with
//! ELU, a linear classifier and `abs`, all in **float64** as upstream runs it (its output drives
//! the hard 10 Hz voicing threshold and the phase accumulation, so f32 noise here would move the
//! waveform).

use candle::{DType, Tensor};

use super::conv::CausalConv1d;
use crate::error::Result;
use crate::weights::Weights;

/// Look-ahead frames of `condnet.0` (kernel 4, padded on the right).
pub const F0_LOOKAHEAD_FRAMES: usize = 3;

#[derive(Debug, Clone)]
pub struct ConvRnnF0Predictor {
    /// `condnet.{0,2,4,6,8}`; the odd indices are the ELUs.
    condnet: Vec<CausalConv1d>,
    /// `classifier.weight` (1, cond) and `.bias` (1), f64.
    classifier_weight: Tensor,
    classifier_bias: Tensor,
}

impl ConvRnnF0Predictor {
    /// `w` is the `f0_predictor` view; weights are fetched and weight-norm folded in f64.
    pub fn new(in_channels: usize, cond_channels: usize, w: &Weights) -> Result<Self> {
        let w = w.with_dtype(DType::F64);
        let mut condnet = vec![CausalConv1d::right(
            &w.pp("condnet.0"),
            in_channels,
            cond_channels,
            F0_LOOKAHEAD_FRAMES + 1,
        )?];
        for i in [2, 4, 6, 8] {
            condnet.push(CausalConv1d::left(
                &w.pp(format!("condnet.{i}")),
                cond_channels,
                cond_channels,
                3,
                1,
            )?);
        }
        let classifier_weight = w.get("classifier.weight", &[1, cond_channels])?;
        let classifier_bias = w.get("classifier.bias", &[1])?;
        Ok(Self { condnet, classifier_weight, classifier_bias })
    }

    /// F0 in Hz, one value per output frame. `mel` is `(1, 80, T)` f32; with `finalize` the
    /// look-ahead is zero padding (T frames out), otherwise the last 3 input frames are real
    /// look-ahead (T − 3 frames out).
    pub fn forward(&self, mel: &Tensor, finalize: bool) -> Result<Vec<f32>> {
        let mut x = mel.to_dtype(DType::F64)?; // (1, 80, T)
        for (i, conv) in self.condnet.iter().enumerate() {
            x = if i == 0 && !finalize { conv.forward_unpadded(&x)? } else { conv.forward(&x)? };
            x = x.elu(1.0)?;
        }
        let h = x.squeeze(0)?.t()?; // (T, cond)
        let f0 = h.matmul(&self.classifier_weight.t()?)?.broadcast_add(&self.classifier_bias)?;
        let f0 = f0.abs()?.squeeze(1)?.to_dtype(DType::F32)?;
        Ok(f0.to_vec1::<f32>()?)
    }
}
