//! What every family of Lectern's own kernels (the LM's, the DiT's, the vocoder's) shares
//! outside CUDA builds too: the checks their callers make before handing tensors over.
//!
//! Whether a stage runs its kernels at all is that stage's option, not a process-wide switch
//! (`SpeechLm::set_kernels`, `CausalMaskedDiffWithDiT::set_kernels`, `Hift::set_kernels`: on
//! by default; benchmarks compare them with candle's ops), so two models in one process can
//! differ.

use candle::Tensor;

/// `x` is an f32 tensor on CUDA (where Lectern's CUDA kernels apply).
pub fn on_cuda_f32(x: &Tensor) -> bool {
    x.device().is_cuda() && x.dtype() == candle::DType::F32
}

/// `v` is a contiguous f32 vector of `n`.
pub fn is_f32_vector(v: &Tensor, n: usize) -> bool {
    v.dims() == [n] && v.dtype() == candle::DType::F32 && v.is_contiguous()
}
