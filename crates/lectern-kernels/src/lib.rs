//! Lectern's own kernels for CosyVoice3, CPU and CUDA, by operation. Everything `unsafe` in
//! Lectern's model lives here, each block with the reason it is sound; `lectern-model` calls
//! these through safe functions and forbids `unsafe` itself.
//!
//! | module | what |
//! | --- | --- |
//! | [`gemm`] | the CPU's matrix products: OpenBLAS through `dlopen` ([`gemm::blas`]), an f32 GEMM for AVX2 CPUs ([`gemm::sgemm`]), bf16 on AMX and AVX512-BF16 ([`gemm::bf16`], weights packed once by [`gemm::bf16_weight`]), few-row products for the LM's decode ([`gemm::few_rows`]) |
//! | [`attention`] | the DiT's fused CPU attention: register-blocked f32 cores on AVX-512 and AVX2, a portable core, a bf16 core |
//! | [`conv`] | the vocoder's direct convolutions and its elementwise passes ([`conv::direct`], [`conv::vocoder`]), the DiT's grouped position convolution ([`conv::grouped`]), the tap-major reference ([`conv::tap_major`]) |
//! | [`elementwise`] | the DiT's fused elementwise CPU passes (modulate, gated residual, bias + GELU, Mish, q/k/v bias + rotary) |
//! | [`cuda`] | the LM's, DiT's and vocoder's CUDA kernels (NVRTC-compiled sources, `cuda` feature), each with the CPU fallback its caller routes to |
//! | [`sampling`] | the host loops of speech-token sampling (softmax exponentials and sums, the vocabulary-wide draw), vectorised with the plain loops' results |
//! | [`simd`] | the CPU features the kernels choose by, detected once |
//! | [`checks`] | the checks callers make before handing tensors to a kernel |
//!
//! Every kernel is checked against candle's ops or a portable version of itself, and the
//! model's fixture gates run through them.

// Every `unsafe` block says why it is sound (CI builds with clippy as the compiler, warnings
// denied).
#![warn(clippy::undocumented_unsafe_blocks)]

pub mod attention;
pub mod checks;
pub mod conv;
mod cpu_slice;
pub mod cuda;
pub mod elementwise;
pub mod gemm;
pub mod sampling;
mod shared_out;
pub mod simd;
