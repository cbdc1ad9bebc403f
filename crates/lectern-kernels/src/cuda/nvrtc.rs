//! Lectern's own CUDA kernels: a [`Module`] of kernel source compiled once per process with
//! NVRTC (which candle's CUDA build links anyway; functions are then loaded per device through
//! candle), the [`CudaOp`] adapter that runs a launch as a candle custom op, and the checks the
//! kernels need of their inputs. Used by [`crate::cuda::lm`] and [`crate::cuda::flow`].

// CUDA driver calls to load compiled modules (SAFETY notes).
#![allow(unsafe_code)]

use std::sync::OnceLock;

use candle::cuda_backend::cudarc::driver::sys::CUfunction_attribute;
use candle::cuda_backend::cudarc::driver::{CudaFunction, CudaSlice, CudaView, LaunchConfig};
use candle::cuda_backend::{CudaDevice, CudaStorage, WrapErr};
use candle::{CpuStorage, Layout, Shape, Tensor};

/// CUDA source compiled to PTX on first use and kept for the process.
pub struct Module {
    name: &'static str,
    source: &'static str,
    /// The virtual architecture the PTX is made for (`compute_80`, say) when the source needs
    /// instructions NVRTC's default target lacks; `None`: NVRTC's default.
    arch: Option<&'static str>,
    ptx: OnceLock<Result<&'static str, String>>,
}

impl Module {
    pub const fn new(name: &'static str, source: &'static str) -> Self {
        Self { name, source, arch: None, ptx: OnceLock::new() }
    }

    /// A module whose PTX targets `arch` (`compute_80`): it loads only on GPUs of that
    /// compute capability or later, so its callers check [`compute_capability`] first.
    pub const fn for_arch(name: &'static str, source: &'static str, arch: &'static str) -> Self {
        Self { name, source, arch: Some(arch), ptx: OnceLock::new() }
    }

    fn compiled(&self) -> &Result<&'static str, String> {
        use candle::cuda_backend::cudarc::nvrtc::{CompileOptions, compile_ptx_with_opts};
        self.ptx.get_or_init(|| {
            let opts = CompileOptions { arch: self.arch, ..Default::default() };
            compile_ptx_with_opts(self.source, opts)
                // Leaked once per module: every later launch borrows it instead of copying it.
                .map(|p| &*Box::leak(p.to_src().into_boxed_str()))
                .map_err(|e| format!("compiling the CUDA kernels `{}`: {e:?}", self.name))
        })
    }

    /// Whether the module compiles here. Where it does not (an NVRTC without its builtins
    /// library, say), its callers run candle's ops instead, which compute the same within the
    /// fixture tolerances; [`Self::failure`] says why.
    pub fn available(&self) -> bool {
        self.compiled().is_ok()
    }

    /// NVRTC's message, if the module failed to compile (`None` too before its first use).
    pub fn failure(&self) -> Option<String> {
        self.ptx.get().and_then(|r| r.as_ref().err().cloned())
    }

    /// Kernel `name` of this module, loaded for `dev` (candle caches the module per device);
    /// launch it with `dev.cuda_stream().launch_builder(&function)`.
    pub fn function(&self, dev: &CudaDevice, name: &str) -> candle::Result<CudaFunction> {
        let ptx = self.compiled().as_ref().map_err(|e| candle::Error::Msg(e.clone()))?;
        Ok(dev.get_or_load_custom_func(name, self.name, ptx)?.into_cuda_function())
    }
}

/// The GPU's compute capability, `(major, minor)`.
pub fn compute_capability(dev: &CudaDevice) -> candle::Result<(i32, i32)> {
    dev.cuda_stream().context().compute_capability().w()
}

/// A CUDA-only op: one kernel launch over its inputs' storages and layouts, returning the
/// output's storage and shape. Run it through [`Op`].
pub trait CudaOp {
    const NAME: &'static str;
    fn launch(&self, inputs: &[(&CudaStorage, &Layout)]) -> candle::Result<(CudaStorage, Shape)>;
}

/// A [`CudaOp`] as a candle custom op of one, two or three inputs. The kernels' callers check the
/// device first, so the CPU side only reports the mistake.
pub struct Op<T>(pub T);

fn cpu_only_error<T: CudaOp>() -> candle::Result<(CpuStorage, Shape)> {
    candle::bail!("{} runs on CUDA only", T::NAME)
}

impl<T: CudaOp> candle::CustomOp1 for Op<T> {
    fn name(&self) -> &'static str {
        T::NAME
    }
    fn cpu_fwd(&self, _: &CpuStorage, _: &Layout) -> candle::Result<(CpuStorage, Shape)> {
        cpu_only_error::<T>()
    }
    fn cuda_fwd(&self, s1: &CudaStorage, l1: &Layout) -> candle::Result<(CudaStorage, Shape)> {
        self.0.launch(&[(s1, l1)])
    }
}

impl<T: CudaOp> candle::CustomOp2 for Op<T> {
    fn name(&self) -> &'static str {
        T::NAME
    }
    fn cpu_fwd(
        &self,
        _: &CpuStorage,
        _: &Layout,
        _: &CpuStorage,
        _: &Layout,
    ) -> candle::Result<(CpuStorage, Shape)> {
        cpu_only_error::<T>()
    }
    fn cuda_fwd(
        &self,
        s1: &CudaStorage,
        l1: &Layout,
        s2: &CudaStorage,
        l2: &Layout,
    ) -> candle::Result<(CudaStorage, Shape)> {
        self.0.launch(&[(s1, l1), (s2, l2)])
    }
}

impl<T: CudaOp> candle::CustomOp3 for Op<T> {
    fn name(&self) -> &'static str {
        T::NAME
    }
    fn cpu_fwd(
        &self,
        _: &CpuStorage,
        _: &Layout,
        _: &CpuStorage,
        _: &Layout,
        _: &CpuStorage,
        _: &Layout,
    ) -> candle::Result<(CpuStorage, Shape)> {
        cpu_only_error::<T>()
    }
    fn cuda_fwd(
        &self,
        s1: &CudaStorage,
        l1: &Layout,
        s2: &CudaStorage,
        l2: &Layout,
        s3: &CudaStorage,
        l3: &Layout,
    ) -> candle::Result<(CudaStorage, Shape)> {
        self.0.launch(&[(s1, l1), (s2, l2), (s3, l3)])
    }
}

/// A contiguous f32 view of a tensor's storage, 16-byte aligned (kernels load float4), or an
/// error naming the op.
pub fn view<'a>(op: &str, s: &'a CudaStorage, l: &Layout) -> candle::Result<CudaView<'a, f32>> {
    match l.contiguous_offsets() {
        Some((start, end)) if start % 4 == 0 => Ok(s.as_cuda_slice::<f32>()?.slice(start..end)),
        _ => candle::bail!("{op}: inputs must be contiguous and 16-byte aligned"),
    }
}

/// Contiguous, starting 16-byte aligned.
pub fn aligned_contiguous(t: &Tensor) -> bool {
    t.is_contiguous() && t.layout().start_offset() % 4 == 0
}

/// A fresh f32 buffer of `n` elements on `dev`, every element to be written by a kernel.
pub fn output(dev: &CudaDevice, n: usize) -> candle::Result<CudaSlice<f32>> {
    // SAFETY: the kernel that receives it writes every element before anything reads it.
    unsafe { dev.alloc::<f32>(n) }
}

/// Threads per block of the elementwise kernels (grid-stride loops).
const ELEMENTWISE_THREADS: u32 = 256;

/// The launch of a grid-stride elementwise kernel over `n` items: 256 threads a block, the
/// grid capped at 65 535 blocks.
pub fn elementwise_grid(n: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (n.div_ceil(ELEMENTWISE_THREADS as usize).min(65_535) as u32, 1, 1),
        block_dim: (ELEMENTWISE_THREADS, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// A launch of `func` with `shared_bytes` of dynamic shared memory: above 48 KB the kernel
/// must be allowed that much first (a cheap driver call, made at every launch because candle
/// hands out a fresh function handle each time).
pub fn with_dynamic_shared(
    func: &CudaFunction,
    grid_dim: (u32, u32, u32),
    block_dim: (u32, u32, u32),
    shared_bytes: usize,
) -> candle::Result<LaunchConfig> {
    func.set_attribute(
        CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
        shared_bytes as i32,
    )
    .w()?;
    Ok(LaunchConfig { grid_dim, block_dim, shared_mem_bytes: shared_bytes as u32 })
}
