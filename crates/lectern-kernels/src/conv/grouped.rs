//! The DiT's position-embedding convs (16 groups, 31 causal taps) on the CPU in f32, as one
//! product per (batch item, group), channel-last.
//!
//! Each product's left operand is the group's frames read as overlapping windows: row `r` is
//! frames `r − 30 … r` (31 × 64 values, rows 64 values apart), so no window is ever copied;
//! its right operand is the group's weight tap-major, `B[j·c + i, o] = W[g·c + o, i, j]`. The
//! `gemm` crate takes any row stride for its left operand, overlapping rows included, and
//! writes each group's 64 output columns in place in the `(b, t, dim)` output.
//!
//! Why: the stacked-tap conv it replaces (the vocoder's, [`crate::conv::vocoder::conv1d`]) wrote
//! 31 products per output value and summed them in a second pass, on channel-first copies of
//! the input and output: memory traffic these window products do not make.

use candle::{DType, Tensor};
use gemm::{Parallelism, gemm};
use rayon::prelude::*;

use crate::cpu_slice::with_f32_slice;
use crate::shared_out::OutPtr;

/// A causal grouped convolution as window products (see the module docs).
#[derive(Debug, Clone)]
pub struct WindowConv {
    /// Per group: `(taps · per, per)` row-major, rows `j · per + i`, columns `o`.
    groups: Vec<Vec<f32>>,
    bias: Vec<f32>,
    taps: usize,
    per: usize,
}

impl WindowConv {
    /// From a weight `(dim, dim / groups, taps)` and bias `(dim,)`, f32 on the CPU; `None`
    /// elsewhere.
    pub fn new(weight: &Tensor, bias: &Tensor, groups: usize) -> candle::Result<Option<Self>> {
        if !weight.device().is_cpu() || weight.dtype() != DType::F32 {
            return Ok(None);
        }
        let (dim, per, taps) = weight.dims3()?;
        let groups = tap_major_groups(weight, groups)?;
        let bias = bias.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>()?;
        if bias.len() != dim {
            candle::bail!("group conv: bias of {} for {dim} channels", bias.len());
        }
        Ok(Some(Self { groups, bias, taps, per }))
    }

    /// `x (b, t, dim)` (CPU f32) → conv + bias `(b, t, dim)`, causal (left padding `taps − 1`).
    pub fn forward(&self, x: &Tensor) -> candle::Result<Tensor> {
        let (b, t, dim) = x.dims3()?;
        let (groups, per, taps) = (self.groups.len(), self.per, self.taps);
        if dim != groups * per || x.dtype() != DType::F32 || t == 0 {
            candle::bail!("group conv: input {:?} for {groups} groups of {per}", x.dims());
        }
        let x = x.contiguous()?;
        let mut out = vec![0f32; b * t * dim];
        let out_ptr = OutPtr::new(&mut out);
        with_f32_slice(&x, |xs| {
            (0..b * groups).into_par_iter().for_each_init(
                // taps − 1 frames of zeros (written once per buffer), then a group's frames.
                || vec![0f32; (taps - 1 + t) * per],
                |frames, task| {
                    self.group_product(xs, t, (task / groups, task % groups), frames, out_ptr)
                },
            );
            Ok(())
        })?;
        Tensor::from_vec(out, (b, t, dim), x.device())
    }

    /// Group `g` of batch item `bi` of `xs` `(b, t, dim)`: its frames copied after the zero
    /// lead of `frames`, then one window product into its columns of `out`.
    #[allow(unsafe_code)] // gemm over raw strided views; each task writes its own columns
    fn group_product(
        &self,
        xs: &[f32],
        t: usize,
        (bi, g): (usize, usize),
        frames: &mut [f32],
        out: OutPtr,
    ) {
        let (per, taps) = (self.per, self.taps);
        let dim = self.groups.len() * per;
        let item = &xs[bi * t * dim..][..t * dim];
        let lead = (taps - 1) * per;
        for (dst, src) in frames[lead..].chunks_exact_mut(per).zip(item.chunks_exact(dim)) {
            dst.copy_from_slice(&src[g * per..][..per]);
        }
        let bias = &self.bias[g * per..][..per];
        // SAFETY: this task alone writes columns g·per..(g+1)·per of batch item bi's rows of
        // `out` (b·t·dim values, alive until every task has ended). The left operand reads rows
        // r·per .. r·per + taps·per of `frames` for r < t: in bounds, as `frames` holds
        // (taps − 1 + t)·per values; the right one is (taps·per, per).
        unsafe {
            let dst = out.get().add(bi * t * dim + g * per);
            for r in 0..t {
                std::ptr::copy_nonoverlapping(bias.as_ptr(), dst.add(r * dim), per);
            }
            gemm(
                t,
                per,
                taps * per,
                dst,
                1,
                dim as isize,
                true,
                frames.as_ptr(),
                1,
                per as isize,
                self.groups[g].as_ptr(),
                1,
                per as isize,
                1.0,
                1.0,
                false,
                false,
                false,
                Parallelism::None,
            );
        }
    }
}

/// A grouped conv weight `(dim, dim / groups, taps)` as each group's right operand of a window
/// product, `(taps · per, per)` row-major: `B[j · per + i, o] = W[g · per + o, i, j]`
/// (tap-major, then input channel). Shared with the bf16 kernel's packing
/// ([`crate::gemm::bf16_weight::GroupConvWindows`]).
pub(crate) fn tap_major_groups(weight: &Tensor, groups: usize) -> candle::Result<Vec<Vec<f32>>> {
    let (dim, per, _) = weight.dims3()?;
    if groups == 0 || dim != groups * per {
        candle::bail!("group conv: weight {:?} for {groups} groups", weight.dims());
    }
    (0..groups)
        .map(|g| {
            let w = weight.narrow(0, g * per, per)?.to_dtype(DType::F32)?; // (o, i, j)
            w.permute((2, 1, 0))?.contiguous()?.flatten_all()?.to_vec1::<f32>()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use lectern_test_support::tensors::seeded;

    /// The window products compute candle's causal grouped conv (left padding taps − 1) plus
    /// the bias, for two batch items, lengths shorter and longer than the taps.
    #[test]
    fn window_products_match_the_grouped_conv() {
        let (b, groups, per, taps) = (2, 4, 8, 7);
        let dim = groups * per;
        let (weight, bias) = (seeded(&[dim, per, taps], 1), seeded(&[dim], 2));
        let conv = WindowConv::new(&weight, &bias, groups).unwrap().expect("f32 CPU tensors");
        for t in [3, 45] {
            let x = seeded(&[b, t, dim], 3);
            let got = conv.forward(&x).unwrap();
            let x_cf = x.transpose(1, 2).unwrap().pad_with_zeros(2, taps - 1, 0).unwrap();
            let want = x_cf
                .conv1d(&weight, 0, 1, 1, groups)
                .unwrap()
                .broadcast_add(&bias.reshape((1, dim, 1)).unwrap())
                .unwrap()
                .transpose(1, 2)
                .unwrap();
            let d: f32 =
                (got - want).unwrap().abs().unwrap().max_all().unwrap().to_scalar().unwrap();
            assert!(d < 1e-5, "t {t}: max |Δ| {d:e}");
        }
    }
}
