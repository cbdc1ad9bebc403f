//! `--flow-matmul bf16`: the DiT blocks' projections with their inputs rounded to bf16 and
//! the products accumulated in f32 — what Intel AMX (`TDPBF16PS`) computes, at up to 16× a
//! core's f32 FMA rate, and AVX512-BF16 (`VDPBF16PS`) at twice the f32 FMA's multiplies on
//! AMD Zen 5.
//!
//! Two ways to the same numbers:
//! * on a CPU with AMX, or an AMD CPU with AVX512-BF16, Lectern's bf16 kernels
//!   ([`super::bf16_gemm`]), weights packed to bf16 once, at load;
//! * elsewhere, the same rounding (round to nearest even) applied to both operands and an f32
//!   product. A product of two bf16 values is exact in f32, so this differs from the kernels'
//!   only in the order of the f32 sums: the fixture tests measure the option's deviation on any
//!   machine. It is not faster than f32 there.
//!
//! On the CPU the attention's two products take bf16 inputs too (q, k, v and the softmax's
//! weights: [`super::cpu_attention::attend_bf16`]), as PyTorch's bf16 autocast does; on other
//! devices the attention core stays f32. The softmax itself, the AdaLN projection and
//! everything outside the blocks stay f32. A reduced precision, so an option recorded per take
//! (like `tf32x3`), never the default; its deviation from f32 is stated in the README and
//! docs/benchmarks.md.

use candle::{DType, Storage, Tensor};

use super::bf16_gemm::{self, PackedB};

/// A projection's weight `(out, in)` for bf16 products.
#[derive(Debug, Clone)]
pub enum Bf16Weight {
    /// Packed for a bf16 kernel ([`bf16_gemm::kernel`]): `B = Wᵀ`.
    Packed(PackedB),
    /// Rounded to bf16 and kept as f32 (anywhere else).
    Rounded(Tensor),
}

/// How bf16 products run on `device`: "amx", "avx512-bf16" or "rounded f32".
pub fn backend(device: &candle::Device) -> &'static str {
    match bf16_gemm::kernel() {
        Some(kernel) if device.is_cpu() => kernel.name(),
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
        Ok(Self::Rounded(round(weight)?))
    }

    /// Bytes the weight holds: bf16 elements when packed, f32 ones when rounded.
    pub fn bytes(&self) -> usize {
        match self {
            Self::Packed(p) => p.bytes(),
            Self::Rounded(w) => w.elem_count() * 4,
        }
    }

    /// `xs (rows, in) · Wᵀ` → `(rows, out)`.
    pub fn matmul_t(&self, xs: &Tensor) -> candle::Result<Tensor> {
        match self {
            Self::Rounded(w) => round(xs)?.matmul(&w.t()?),
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
