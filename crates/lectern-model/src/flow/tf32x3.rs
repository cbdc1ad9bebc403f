//! f32 products on TF32 tensor cores at f32 accuracy ("3xTF32", as CUTLASS calls it).
//!
//! A TF32 tensor core reads 11 significant bits of each f32 operand and accumulates in f32:
//! ~7× the f32 rate on an H100/H200, but a plain TF32 product is off by ~1e-3 relative, which
//! breaks every flow fixture gate (docs/refutations.md). Splitting each operand into a head
//! that TF32 holds exactly and the remainder, `x = hi + lo`, and summing three TF32 products
//!
//! ```text
//! a·b ≈ a_hi·b_hi + a_hi·b_lo + a_lo·b_hi        (a_lo·b_lo, ~2⁻²² relative, dropped)
//! ```
//!
//! gives a product within a few f32 ulps of the f32 one. The three products are one GEMM
//! with a three times longer inner dimension: `[a_hi | a_hi | a_lo] · [b_hi | b_lo | b_hi]ᵀ`
//! (a weight's split is built once, at load).
//!
//! The split is Veltkamp's, in plain f32 arithmetic: `c = x·(2¹³+1); hi = c − (c − x);
//! lo = x − hi`: `hi` keeps the top 11 bits (rounded to nearest), `lo` is exact. Off CUDA the
//! tensor cores are emulated: `lo` is rounded to 11 bits as well, so a CPU run computes the
//! same products the GPU does (cuBLAS may truncate `lo` instead of rounding it, an error of
//! the same order), which lets the CPU fixture tests bound the GPU's deviation.

use candle::{D, Tensor};

/// How the flow's large f32 matmuls (the DiT blocks' projections) run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FlowMatmul {
    /// Plain f32 GEMMs.
    #[default]
    F32,
    /// Three TF32 tensor-core products per f32 product (this module), within the f32 fixture
    /// tolerances: the f32-accurate way on CUDA ([`Self::f32_accurate_for`]), what `lectern
    /// parity` checks there unless told otherwise, for the split weights' device memory.
    Tf32x3,
    /// The blocks' projections and the attention's products with bf16 inputs and f32
    /// accumulation ([`lectern_kernels::gemm::bf16_weight`]): Intel AMX on CPUs that have it,
    /// bf16 tensor cores on CUDA, the same rounding before an f32 product elsewhere. A reduced
    /// precision, recorded per take: the CUDA default ([`Self::default_for`]), its deviation
    /// from f32 measured and published (docs/benchmarks.md).
    Bf16,
}

impl FlowMatmul {
    /// What a device runs unless told otherwise: bf16 on CUDA (tensor cores: the flow twice as
    /// fast as 3xTF32, within its stated deviation of f32), plain f32 elsewhere (the CPU
    /// defaults stay f32; bf16 there is an option).
    pub fn default_for(device: &candle::Device) -> Self {
        if device.is_cuda() { Self::Bf16 } else { Self::F32 }
    }

    /// The fastest way a device has to f32's results within the f32 fixture tolerances: 3xTF32
    /// on CUDA, plain f32 elsewhere (the CPU only emulates the tensor cores, for the tests).
    /// What `lectern parity` runs unless told otherwise, since its tolerances are f32's.
    pub fn f32_accurate_for(device: &candle::Device) -> Self {
        if device.is_cuda() { Self::Tf32x3 } else { Self::F32 }
    }

    /// What a take records and the workstation shows for this matmul on `device`: its
    /// [`Self::name`], and for f32 on a CPU whose flow runs on the system's OpenBLAS or on
    /// Lectern's AVX2 GEMM ([`lectern_kernels::gemm::sgemm::F32Gemm`]) `f32+openblas` or `f32+avx2` (the same
    /// math, other last bits).
    /// On CUDA, 3xTF32 with its attention kept on the f32 kernel
    /// (`lectern_kernels::cuda::flow::TENSOR_CORE_ATTENTION_ENV`) is `tf32x3+f32-attention`.
    pub fn label(self, device: &candle::Device) -> String {
        match (self, lectern_kernels::gemm::sgemm::F32Gemm::for_flow()) {
            (Self::F32, Some(gemm)) if device.is_cpu() => gemm.label().to_string(),
            (Self::Tf32x3, _)
                if device.is_cuda() && !lectern_kernels::cuda::flow::tensor_core_attention() =>
            {
                "tf32x3+f32-attention".to_string()
            }
            (m, _) => m.name().to_string(),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::F32 => "f32",
            Self::Tf32x3 => "tf32x3",
            Self::Bf16 => "bf16",
        }
    }
}

/// Veltkamp's constant for an 11-bit head of a 24-bit significand: 2^(24 − 11) + 1.
const SPLITTER: f64 = 8193.0;

/// `x = hi + lo` exactly, `hi` with 11 significant bits (TF32 holds it exactly).
pub fn split(x: &Tensor) -> candle::Result<(Tensor, Tensor)> {
    let c = (x * SPLITTER)?;
    let hi = (&c - (&c - x)?)?;
    let lo = (x - &hi)?;
    Ok((hi, lo))
}

/// The remainder as a TF32 core sees it: on CUDA the hardware drops its low bits; elsewhere
/// they are rounded off here, so the CPU emulates the GPU's products.
fn as_tf32(lo: Tensor) -> candle::Result<Tensor> {
    if lo.device().is_cuda() { Ok(lo) } else { Ok(split(&lo)?.0) }
}

/// The left operand `[hi | hi | lo]` over the last (inner) dimension (on CUDA with
/// `use_kernels`, one kernel: [`lectern_kernels::cuda::flow::tf32x3_lhs`]).
pub fn lhs(a: &Tensor, use_kernels: bool) -> candle::Result<Tensor> {
    if use_kernels && let Some(split) = lectern_kernels::cuda::flow::tf32x3_lhs(a)? {
        return Ok(split);
    }
    let (hi, lo) = split(a)?;
    Tensor::cat(&[&hi, &hi, &as_tf32(lo)?], D::Minus1)
}

/// The right operand `[hi | lo | hi]` over the last (inner) dimension (a weight `(out, in)`
/// or the keys `(…, t, d)`, used transposed).
pub fn rhs(b: &Tensor) -> candle::Result<Tensor> {
    let (hi, lo) = split(b)?;
    Tensor::cat(&[&hi, &as_tf32(lo)?, &hi], D::Minus1)
}

/// Runs `f` with this thread's f32 GEMMs on TF32 tensor cores (CUDA; no effect elsewhere),
/// then restores the thread's previous setting. Only this thread: an LM decoded on another
/// thread keeps plain f32.
pub fn on_tensor_cores<T>(f: impl FnOnce() -> candle::Result<T>) -> candle::Result<T> {
    let before = candle::cuda::set_gemm_tf32_on_this_thread(true);
    let out = f();
    candle::cuda::set_gemm_tf32_on_this_thread(before);
    out
}

/// `a · bᵀ` over the last dimension from the split operands (`lhs(a)`, `rhs(b)`).
pub fn matmul_t(a_split: &Tensor, b_split: &Tensor) -> candle::Result<Tensor> {
    on_tensor_cores(|| a_split.matmul(&b_split.t()?))
}

#[cfg(test)]
mod tests {
    use candle::{Device, Tensor};

    use super::*;

    /// The CPU's defaults stay plain f32 (issue 50 moved only CUDA's to bf16), and parity's
    /// f32-accurate way there is plain f32 too.
    #[test]
    fn the_cpu_runs_plain_f32_unless_told_otherwise() {
        assert_eq!(FlowMatmul::default_for(&Device::Cpu), FlowMatmul::F32);
        assert_eq!(FlowMatmul::f32_accurate_for(&Device::Cpu), FlowMatmul::F32);
    }

    fn sample(n: usize) -> Vec<f32> {
        let mut s = 0x9e37_79b9u32;
        (0..n)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 17;
                s ^= s << 5;
                (s as f32 / u32::MAX as f32 - 0.5) * 3.0
            })
            .collect()
    }

    #[test]
    fn the_split_is_exact_and_the_head_fits_tf32() {
        let x = Tensor::new(sample(4096), &Device::Cpu).unwrap();
        let (hi, lo) = split(&x).unwrap();
        let (x, hi, lo) = (
            x.to_vec1::<f32>().unwrap(),
            hi.to_vec1::<f32>().unwrap(),
            lo.to_vec1::<f32>().unwrap(),
        );
        for ((x, h), l) in x.iter().zip(&hi).zip(&lo) {
            assert_eq!(h + l, *x, "hi + lo must be x exactly");
            assert_eq!(h.to_bits() & 0x1fff, 0, "{h} keeps more than 11 significant bits");
            assert!(l.abs() <= x.abs() * 2f32.powi(-11), "{x}: remainder {l} too large");
        }
    }

    /// The three emulated TF32 products stay within f32 reach of the f32 product, while a
    /// single TF32 product (heads only) is orders of magnitude further off.
    #[test]
    fn three_tf32_products_match_the_f32_product() {
        let dev = Device::Cpu;
        let (m, k, n) = (16, 1024, 24);
        let a = Tensor::from_vec(sample(m * k), (m, k), &dev).unwrap();
        let b = Tensor::from_vec(sample(n * k + 7)[7..].to_vec(), (n, k), &dev).unwrap();
        let a64 = a.to_dtype(candle::DType::F64).unwrap();
        let b64 = b.to_dtype(candle::DType::F64).unwrap();
        let exact = a64.matmul(&b64.t().unwrap()).unwrap();
        let err = |y: &Tensor| -> f64 {
            let d = (y.to_dtype(candle::DType::F64).unwrap() - &exact).unwrap();
            d.abs().unwrap().max_all().unwrap().to_scalar::<f64>().unwrap()
        };
        let f32_err = err(&a.matmul(&b.t().unwrap()).unwrap());
        let x3_err = err(&matmul_t(&lhs(&a, true).unwrap(), &rhs(&b).unwrap()).unwrap());
        let (ah, bh) = (split(&a).unwrap().0, split(&b).unwrap().0);
        let x1_err = err(&ah.matmul(&bh.t().unwrap()).unwrap());
        assert!(x3_err <= 4.0 * f32_err.max(1e-6), "3xTF32 {x3_err} vs f32 {f32_err}");
        assert!(x1_err > 100.0 * x3_err, "1xTF32 {x1_err} vs 3xTF32 {x3_err}");
    }
}
