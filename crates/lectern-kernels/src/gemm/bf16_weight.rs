//! `--flow-matmul bf16`: the DiT blocks' projections with their inputs rounded to bf16 and
//! the products accumulated in f32 — what Intel AMX (`TDPBF16PS`) computes, at up to 16× a
//! core's f32 FMA rate, and AVX512-BF16 (`VDPBF16PS`) at twice the f32 FMA's multiplies on
//! AMD Zen 5.
//!
//! Three ways to the same numbers:
//! * on a CPU with AMX, or an AMD CPU with AVX512-BF16, Lectern's bf16 kernels
//!   ([`crate::gemm::bf16`]), weights packed to bf16 once, at load;
//! * on CUDA, the weight stored as bf16 and the input rounded to it, the product on bf16 tensor
//!   cores with f32 sums and an f32 result (cuBLAS: [`crate::cuda::gemm::bf16_product`]);
//! * elsewhere, the same rounding (round to nearest even) applied to both operands and an f32
//!   product. A product of two bf16 values is exact in f32, so this differs from the kernels'
//!   only in the order of the f32 sums: the fixture tests measure the option's deviation on any
//!   machine. It is not faster than f32 there.
//!
//! On the CPU the attention's two products take bf16 inputs too (q, k, v and the softmax's
//! weights: [`crate::attention::attend_bf16`]), as PyTorch's bf16 autocast does, and on CUDA
//! on bf16 tensor cores ([`crate::cuda::flow::attention_bf16`]). The position embedding's two
//! grouped convs round their inputs and weights to bf16 on every device (on a bf16 kernel as
//! window products: [`GroupConvWindows`]), as autocast does too. The softmax itself, the AdaLN
//! projection and everything else outside the blocks stay f32. A reduced precision, recorded per
//! take (like `tf32x3`): the default on CUDA only, an option elsewhere; its deviation from f32
//! is stated in the user guide and docs/benchmarks.md.

use candle::{DType, Storage, Tensor};

use crate::gemm::bf16::{self as bf16_gemm, PackedB};
use crate::shared_out::OutPtr;

/// A projection's weight `(out, in)` for bf16 products.
#[derive(Debug, Clone)]
pub enum Bf16Weight {
    /// Packed for a bf16 kernel ([`bf16_gemm::kernel`]): `B = Wᵀ`.
    Packed(PackedB),
    /// Stored as bf16 on a CUDA device, for bf16 tensor-core products with f32 sums
    /// ([`crate::cuda::gemm::bf16_product`]).
    Cuda(Tensor),
    /// Rounded to bf16 and kept as f32 (anywhere else).
    Rounded(Tensor),
}

/// How bf16 products run on `device`: "amx", "avx512-bf16", "cuda bf16 tensor cores" or
/// "rounded f32".
pub fn backend(device: &candle::Device) -> &'static str {
    match bf16_gemm::kernel() {
        Some(kernel) if device.is_cpu() => kernel.name(),
        _ if cfg!(feature = "cuda") && device.is_cuda() => "cuda bf16 tensor cores",
        _ => "rounded f32",
    }
}

/// `x` rounded to bf16 (round to nearest even) and widened back to f32.
pub fn round(x: &Tensor) -> candle::Result<Tensor> {
    x.to_dtype(DType::BF16)?.to_dtype(DType::F32)
}

impl Bf16Weight {
    pub fn new(weight: &Tensor) -> candle::Result<Self> {
        let (out, inp) = weight.dims2()?;
        if weight.device().is_cpu() && bf16_gemm::available() {
            let w = weight.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>()?;
            return Ok(Self::Packed(PackedB::from_weight(&w, out, inp)));
        }
        if cfg!(feature = "cuda") && weight.device().is_cuda() {
            return Ok(Self::Cuda(weight.to_dtype(DType::BF16)?));
        }
        Ok(Self::Rounded(round(weight)?))
    }

    /// Bytes the weight holds: bf16 elements when packed or on CUDA, f32 ones when rounded.
    pub fn bytes(&self) -> usize {
        match self {
            Self::Packed(p) => p.bytes(),
            Self::Cuda(w) => w.elem_count() * 2,
            Self::Rounded(w) => w.elem_count() * 4,
        }
    }

    /// `xs (rows, in) · Wᵀ` → `(rows, out)`.
    pub fn matmul_t(&self, xs: &Tensor) -> candle::Result<Tensor> {
        match self {
            Self::Rounded(w) => round(xs)?.matmul(&w.t()?),
            // Every projection input of the flow is a CUDA f32 matrix of the weight's width;
            // anything else is a caller's bug, better told than run on a silent f32 copy of
            // the weight.
            Self::Cuda(w) => crate::cuda::gemm::bf16_product(xs, w)?.ok_or_else(|| {
                candle::Error::Msg(format!(
                    "bf16 product on CUDA: input {:?} {:?} on {:?} for a weight {:?}",
                    xs.dims(),
                    xs.dtype(),
                    xs.device().location(),
                    w.dims()
                ))
            }),
            Self::Packed(p) => {
                let (rows, inp) = xs.dims2()?;
                if inp != p.k() {
                    candle::bail!(
                        "bf16 product: input ({rows}, {inp}) for a weight of in {}",
                        p.k()
                    );
                }
                let xs = xs.contiguous()?;
                let (g, l) = xs.storage_and_layout();
                let Storage::Cpu(s) = &*g else {
                    candle::bail!("packed bf16 product needs the CPU")
                };
                let x = &s.as_slice::<f32>()?[l.start_offset()..][..xs.elem_count()];
                let y =
                    p.matmul(x, rows).ok_or_else(|| candle::Error::Msg("no bf16 kernel".into()))?;
                drop(g);
                Tensor::from_vec(y, (rows, p.n()), xs.device())
            }
        }
    }
}

/// A causal grouped convolution (the DiT's position embedding: 16 groups, 31 taps) as bf16
/// products on a bf16 kernel, channel-last: each (batch item, group) is one product of the
/// group's frames, rounded to bf16 once, read as overlapping windows (row `r` of the left
/// operand is frames `r − taps + 1 … r`: [`PackedB::product_windows`]), and the group's taps
/// packed at load as `B (taps · channels, channels)`. Nothing is copied per window and no
/// per-tap product is written, where the f32 path's stacked taps write `taps` products per
/// output and sum them.
#[derive(Debug, Clone)]
pub struct GroupConvWindows {
    /// Per group: `B[j · c + i, o] = W[g · c + o, i, j]` (tap-major, then input channel).
    groups: Vec<PackedB>,
    bias: Vec<f32>,
    taps: usize,
}

impl GroupConvWindows {
    /// From a weight `(dim, dim / groups, taps)` and bias `(dim,)`; `None` where no bf16 kernel
    /// runs here (or the tensors are not on the CPU).
    pub fn new(weight: &Tensor, bias: &Tensor, groups: usize) -> candle::Result<Option<Self>> {
        if !weight.device().is_cpu() || !bf16_gemm::available() {
            return Ok(None);
        }
        let (_, per, taps) = weight.dims3()?;
        let packed = crate::conv::grouped::tap_major_groups(weight, groups)?
            .iter()
            .map(|b| PackedB::new(b, taps * per, per, per, 1)) // rows j·c + i, columns o
            .collect();
        let bias = bias.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>()?;
        Ok(Some(Self { groups: packed, bias, taps }))
    }

    /// `x (b, t, dim)` (CPU f32) → conv + bias `(b, t, dim)`, causal (left padding `taps − 1`).
    #[allow(unsafe_code)] // each task writes its own columns of the shared output (`OutPtr`)
    pub fn forward(&self, x: &Tensor) -> candle::Result<Tensor> {
        use rayon::prelude::*;
        let (b, t, dim) = x.dims3()?;
        let groups = self.groups.len();
        let per = dim / groups;
        if dim != groups * per || self.bias.len() != dim || t == 0 {
            candle::bail!("bf16 group conv: input {:?} for {groups} groups", x.dims());
        }
        let x = x.to_dtype(DType::F32)?.contiguous()?;
        let (guard, layout) = x.storage_and_layout();
        let Storage::Cpu(storage) = &*guard else { candle::bail!("bf16 group conv needs the CPU") };
        let xs = &storage.as_slice::<f32>()?[layout.start_offset()..][..x.elem_count()];
        let (k_pad, n_pad) = (self.groups[0].k_pad(), self.groups[0].n_pad());
        let rows_pad = bf16_gemm::rows_pad(t);
        let lead = (self.taps - 1) * per;
        // The last window starts at (rows_pad − 1) · per and reads k_pad values.
        let a_len = ((rows_pad - 1) * per + k_pad).max(lead + t * per);
        let mut out = vec![0f32; b * t * dim];
        let out_ptr = OutPtr::new(&mut out);
        (0..b * groups).into_par_iter().for_each_init(
            || (vec![0u16; a_len], vec![0f32; rows_pad * n_pad]),
            |(a, c), task| {
                let (bi, g) = (task / groups, task % groups);
                // taps − 1 frames of zeros, the group's frames in bf16, zeros after.
                a[..lead].fill(0);
                let frames = &xs[bi * t * dim + g * per..];
                bf16_gemm::rows_to_bf16_into(&mut a[lead..lead + t * per], frames, dim, per, per);
                a[lead + t * per..].fill(0);
                self.groups[g].product_windows(a, per, c).expect("a bf16 kernel (checked at load)");
                let bias = &self.bias[g * per..][..per];
                for (r, row) in c.chunks_exact(n_pad).take(t).enumerate() {
                    // SAFETY: this task alone writes columns g·per..(g+1)·per of batch item
                    // bi's rows in `out` (b·t·dim values, alive until after the loop).
                    let dst = unsafe {
                        let at = out_ptr.get().add((bi * t + r) * dim + g * per);
                        std::slice::from_raw_parts_mut(at, per)
                    };
                    for ((d, &v), &bv) in dst.iter_mut().zip(&row[..per]).zip(bias) {
                        *d = v + bv;
                    }
                }
            },
        );
        drop(guard);
        Tensor::from_vec(out, (b, t, dim), x.device())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lectern_test_support::optional::cpu_or_skip;
    use lectern_test_support::tensors::seeded;

    /// The window products compute the causal grouped conv of the bf16-rounded input and
    /// weight (candle's `conv1d` on the rounded tensors, left padding taps − 1), plus the bias.
    #[test]
    fn group_conv_windows_match_the_rounded_conv() {
        let (b, t, groups, per, taps) = (2, 45, 4, 8, 7);
        let dim = groups * per;
        let (weight, bias) = (seeded(&[dim, per, taps], 1), seeded(&[dim], 2));
        let x = seeded(&[b, t, dim], 3);
        let Some(conv) = GroupConvWindows::new(&weight, &bias, groups).unwrap() else {
            cpu_or_skip(&["amx_bf16"], false);
            return;
        };
        let got = conv.forward(&x).unwrap();
        let x_cf = round(&x).unwrap().transpose(1, 2).unwrap().pad_with_zeros(2, taps - 1, 0);
        let want = x_cf
            .unwrap()
            .conv1d(&round(&weight).unwrap(), 0, 1, 1, groups)
            .unwrap()
            .broadcast_add(&bias.reshape((1, dim, 1)).unwrap())
            .unwrap()
            .transpose(1, 2)
            .unwrap();
        let d: f32 = (got - want).unwrap().abs().unwrap().max_all().unwrap().to_scalar().unwrap();
        assert!(d < 1e-5, "max |Δ| {d:e}");
    }
}
