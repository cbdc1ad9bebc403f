//! The CUDA kernels of each stage (NVRTC-compiled from the `.cu` sources beside them, `cuda`
//! feature) and the routing each stage's caller uses, CPU fallbacks included.

pub mod flow;
pub mod hift;
pub mod lm;
#[cfg(feature = "cuda")]
pub mod nvrtc;

/// Marks a timed region for a profiler started with `--profile-from-start off` (Nsight
/// Compute: only the kernels launched while the guard lives are profiled).
#[allow(unsafe_code)] // CUDA profiler driver calls (SAFETY notes below)
pub fn profiled_range() -> impl Drop {
    struct Range;
    impl Drop for Range {
        fn drop(&mut self) {
            #[cfg(feature = "cuda")]
            // SAFETY: a plain driver call; without a profiler attached it does nothing.
            unsafe {
                let _ = candle::cuda_backend::cudarc::driver::sys::cuProfilerStop();
            }
        }
    }
    #[cfg(feature = "cuda")]
    // SAFETY: a plain driver call; without a profiler attached it does nothing.
    unsafe {
        let _ = candle::cuda_backend::cudarc::driver::sys::cuProfilerStart();
    }
    Range
}
