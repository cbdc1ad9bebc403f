//! The CUDA kernels of each stage (NVRTC-compiled from the `.cu` sources beside them, `cuda`
//! feature) and the routing each stage's caller uses, CPU fallbacks included.

pub mod flow;
pub mod gemm;
pub mod hift;
pub mod lm;
#[cfg(feature = "cuda")]
pub mod nvrtc;

/// The nodes (kernels and copies) of a captured CUDA graph, `None` if the driver will not say:
/// what a benchmark reports of a graphed decode step.
#[cfg(feature = "cuda")]
#[allow(unsafe_code)] // one driver query (SAFETY below)
pub fn graph_nodes(graph: &candle::cuda_backend::cudarc::driver::CudaGraph) -> Option<usize> {
    use candle::cuda_backend::cudarc::driver::sys::{CUresult, cuGraphGetNodes};
    let mut n = 0usize;
    // SAFETY: `cu_graph()` is the live graph `graph` owns; with a null node array the driver
    // only writes the node count into `n`.
    let rc = unsafe { cuGraphGetNodes(graph.cu_graph(), std::ptr::null_mut(), &mut n) };
    (rc == CUresult::CUDA_SUCCESS).then_some(n)
}

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
