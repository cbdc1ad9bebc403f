//! Lectern's own CUDA kernels: sources compiled once per process with NVRTC (which candle's
//! CUDA build links anyway; functions are then loaded per device through candle), plus the
//! checks the kernels need of their inputs. Used by [`super::lm::kernels`] and [`super::flow::kernels`].

use std::collections::HashMap;
use std::sync::Mutex;

use candle::cuda_backend::CudaStorage;
use candle::cuda_backend::cudarc::driver::CudaView;
use candle::{Layout, Tensor};

type Compiled = HashMap<&'static str, Result<&'static str, String>>;
static PTX: Mutex<Option<Compiled>> = Mutex::new(None);

/// The PTX of the kernels in `source` (a module named `module`), compiled on first use and
/// kept for the process; load a function from it with
/// `CudaDevice::get_or_load_custom_func(name, module, ptx)` (which caches the module per device).
pub fn ptx(module: &'static str, source: &'static str) -> candle::Result<&'static str> {
    let mut cache = PTX.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let compiled = cache.get_or_insert_with(HashMap::new).entry(module).or_insert_with(|| {
        candle::cuda_backend::cudarc::nvrtc::compile_ptx(source)
            // Leaked once per module: every later launch borrows it instead of copying it.
            .map(|p| &*Box::leak(p.to_src().into_boxed_str()))
            .map_err(|e| format!("compiling the CUDA kernels `{module}`: {e:?}"))
    });
    compiled.clone().map_err(candle::Error::Msg)
}

/// Whether the module compiles here. Where it does not (an NVRTC without its builtins
/// library, say), its callers run candle's ops instead, which compute the same within the
/// fixture tolerances; [`failures`] says why.
pub fn available(module: &'static str, source: &'static str) -> bool {
    ptx(module, source).is_ok()
}

/// The modules that failed to compile in this process, with NVRTC's message.
pub fn failures() -> Vec<String> {
    let cache = PTX.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    cache.iter().flatten().filter_map(|(_, r)| r.as_ref().err().cloned()).collect()
}

/// A contiguous f32 view of a tensor's storage, 16-byte aligned (kernels load float4).
pub fn view<'a>(s: &'a CudaStorage, l: &Layout) -> candle::Result<Option<CudaView<'a, f32>>> {
    let Some((start, end)) = l.contiguous_offsets() else { return Ok(None) };
    if start % 4 != 0 {
        return Ok(None);
    }
    Ok(Some(s.as_cuda_slice::<f32>()?.slice(start..end)))
}

/// Contiguous, starting 16-byte aligned.
pub fn aligned_contiguous(t: &Tensor) -> bool {
    t.is_contiguous() && t.layout().start_offset() % 4 == 0
}
