//! The CUDA kernels of each stage (NVRTC-compiled from the `.cu` sources beside them, `cuda`
//! feature) and the routing each stage's caller uses, CPU fallbacks included.

pub mod flow;
pub mod hift;
pub mod lm;
#[cfg(feature = "cuda")]
pub mod nvrtc;
