//! The system's OpenBLAS for the flow's f32 projections on CPUs with AVX-512.
//!
//! Why: on AVX-512 CPUs OpenBLAS's `sgemm` (its SkylakeX kernels) runs the DiT's projection
//! shapes faster than the `gemm` crate that candle uses, which kept the f32 flow behind
//! PyTorch's (MKL) on Intel Xeons (docs/benchmarks.md).
//!
//! How:
//! * Loaded at run time with `dlopen` (`libopenblas.so.0`, Debian's and most distributions'
//!   name), so Lectern builds and runs without it; nothing links against it.
//! * Used only on CPUs with AVX-512 (F, BW, DQ, VL, CD), where its kernels win, and only
//!   when the library runs one of its AVX-512 cores. A distribution's OpenBLAS may predate the
//!   CPU (Debian bookworm's 0.3.21 runs its slow SSE3 "Prescott" kernels on a Sapphire Rapids
//!   Xeon): [`prepare_environment`] asks for its SkylakeX kernels through `OPENBLAS_CORETYPE`
//!   before the library loads, unless the user chose a core.
//! * One call per product on OpenBLAS's own threads, as many as rayon's pool has (Lectern's
//!   `--threads`): splitting the rows over rayon tasks instead, each a single-threaded call,
//!   is no faster than the `gemm` crate (every task packs the whole weight, and 5 tasks on
//!   2 threads leave one idle a fifth of the time). Its idle threads go to sleep at once
//!   (`OPENBLAS_THREAD_TIMEOUT`) instead of spinning beside the engine's other threads.
//!   With its AVX-512 kernels its products are the same bits on any thread count (tested).
//! * `LECTERN_OPENBLAS=0` turns it off; `LECTERN_OPENBLAS=/path/to/libopenblas.so` loads that
//!   file instead.
//!
//! The flow's record names the product that ran (`f32+openblas`): its output differs from the
//! `gemm` crate's in the last bits, within every fixture gate.

use std::ffi::{CStr, c_char, c_float, c_int};
use std::mem::MaybeUninit;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use candle::Tensor;

use crate::cpu_slice::with_f32_slice;
use crate::gemm::operands::{ProjectionOperands, projection_operands};

/// What a take records as its flow matmuls when the f32 projections ran here.
pub const F32_LABEL: &str = "f32+openblas";

/// The environment variable that turns the library off (`0`) or names its file.
pub const ENV_VAR: &str = "LECTERN_OPENBLAS";

/// The file names tried, in order, when [`ENV_VAR`] does not name one.
const LIBRARY_NAMES: &[&str] = &["libopenblas.so.0", "libopenblas.so"];

/// OpenBLAS cores whose `sgemm` is the AVX-512 one (SkylakeX's kernels; the later cores reuse
/// them for f32).
const AVX512_CORES: &[&str] = &["skylakex", "cooperlake", "sapphirerapids"];

type Sgemm = unsafe extern "C" fn(
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    c_float,
    *const c_float,
    c_int,
    *const c_float,
    c_int,
    c_float,
    *mut c_float,
    c_int,
);
type SetThreads = unsafe extern "C" fn(c_int);
type GetString = unsafe extern "C" fn() -> *const c_char;

// CBLAS's enumerations.
const ROW_MAJOR: c_int = 101;
const NO_TRANS: c_int = 111;
const TRANS: c_int = 112;

/// A loaded OpenBLAS.
pub struct OpenBlas {
    sgemm: Sgemm,
    set_threads: SetThreads,
    /// The thread count last handed to `openblas_set_num_threads` (0: none yet), so it is set
    /// again only when rayon's pool differs (a test's own pool).
    threads: AtomicUsize,
    /// Its `openblas_get_corename()`, e.g. "SkylakeX".
    pub core: String,
    /// Its `openblas_get_config()`, e.g. "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH …".
    pub config: String,
    /// Kept loaded for the process's lifetime (the function pointers point into it).
    _library: libloading::Library,
}

impl std::fmt::Debug for OpenBlas {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenBlas").field("core", &self.core).field("config", &self.config).finish()
    }
}

/// Sets OpenBLAS's environment for Lectern's use of it, where the user has not: its idle
/// threads sleep at once instead of spinning for ~0.1 s after each call (2^4 cycles, its
/// least), and on an AVX-512 CPU it runs its SkylakeX kernels. Call before any thread starts
/// (it writes the environment) and before the library loads.
#[allow(unsafe_code)] // `std::env::set_var` (SAFETY below)
pub fn prepare_environment() {
    let mut settings = vec![("OPENBLAS_THREAD_TIMEOUT", "4")];
    if crate::simd::has_avx512_skylake_x() {
        settings.push(("OPENBLAS_CORETYPE", "SkylakeX"));
    }
    for (name, value) in settings {
        if std::env::var_os(name).is_none() {
            // SAFETY: called first thing in `main`, while the process has no other thread
            // that could read the environment concurrently.
            unsafe { std::env::set_var(name, value) };
        }
    }
}

/// The OpenBLAS the flow's f32 projections use, if any: loaded once, on first use. `None` where
/// [`ENV_VAR`] is `0`, the CPU lacks AVX-512, no library loads, or it runs no AVX-512 core.
pub fn openblas() -> Option<&'static OpenBlas> {
    static LOADED: OnceLock<Option<OpenBlas>> = OnceLock::new();
    LOADED.get_or_init(load_from_environment).as_ref()
}

/// The system's OpenBLAS whatever the CPU and its core, for comparisons (`bench --stage
/// gemm`) and tests: `None` only where no library loads.
pub fn system_openblas() -> Option<&'static OpenBlas> {
    static LOADED: OnceLock<Option<OpenBlas>> = OnceLock::new();
    LOADED.get_or_init(|| LIBRARY_NAMES.iter().find_map(|name| OpenBlas::load(name).ok())).as_ref()
}

/// [`openblas`]'s choice. A file named in [`ENV_VAR`] that does not load, or runs no AVX-512
/// core, is said on stderr once (the flow then runs on the `gemm` crate, as without it).
fn load_from_environment() -> Option<OpenBlas> {
    let chosen = std::env::var(ENV_VAR).ok().filter(|v| !v.is_empty());
    if chosen.as_deref() == Some("0") || !crate::simd::has_avx512_skylake_x() {
        return None;
    }
    let loaded = match &chosen {
        Some(path) => OpenBlas::load(path).map_err(|e| eprintln!("{ENV_VAR}: {e}")).ok(),
        None => LIBRARY_NAMES.iter().find_map(|name| OpenBlas::load(name).ok()),
    }?;
    let avx512 = AVX512_CORES.contains(&loaded.core.to_lowercase().as_str());
    if !avx512 && chosen.is_some() {
        eprintln!(
            "{ENV_VAR}: OpenBLAS runs its {} kernels, not AVX-512 ones: the flow stays on the \
             gemm crate",
            loaded.core
        );
    }
    avx512.then_some(loaded)
}

impl OpenBlas {
    /// Loads the library `name` (a file name the dynamic loader resolves, or a path).
    #[allow(unsafe_code)] // dlopen(3) and the symbols' types (SAFETY below)
    pub fn load(name: &str) -> Result<Self, String> {
        // SAFETY: loading runs OpenBLAS's initialiser, which only reads the environment and
        // allocates its buffers; the symbols below are OpenBLAS's documented C functions with
        // these signatures (cblas.h, openblas_config.h).
        unsafe {
            let library = libloading::Library::new(name).map_err(|e| format!("{name}: {e}"))?;
            let sgemm = *library.get::<Sgemm>(b"cblas_sgemm\0").map_err(|e| e.to_string())?;
            let set_threads = *library
                .get::<SetThreads>(b"openblas_set_num_threads\0")
                .map_err(|e| e.to_string())?;
            let core_name =
                *library.get::<GetString>(b"openblas_get_corename\0").map_err(|e| e.to_string())?;
            let config_name =
                *library.get::<GetString>(b"openblas_get_config\0").map_err(|e| e.to_string())?;
            let text = |f: GetString| {
                let p = f();
                if p.is_null() {
                    String::new()
                } else {
                    CStr::from_ptr(p).to_string_lossy().trim().to_string()
                }
            };
            Ok(Self {
                sgemm,
                set_threads,
                threads: AtomicUsize::new(0),
                core: text(core_name),
                config: text(config_name),
                _library: library,
            })
        }
    }

    /// `x·Wᵀ` for `x` `(rows, in)` and `weight` `(out, in)`, both f32 on the CPU: `None` where
    /// that does not hold or there are fewer than [`crate::gemm::operands::MIN_ROWS`] rows.
    pub fn matmul_t(&self, x: &Tensor, weight: &Tensor) -> candle::Result<Option<Tensor>> {
        let Some(ProjectionOperands { x, w, shape: (rows, k, n) }) =
            projection_operands(x, weight)?
        else {
            return Ok(None);
        };
        let mut y: Vec<f32> = Vec::with_capacity(rows * n);
        with_f32_slice(&x, |x| {
            with_f32_slice(&w, |w| {
                self.product_into(x, w, &mut y.spare_capacity_mut()[..rows * n], (rows, k, n));
                Ok(())
            })
        })?;
        // SAFETY: `product_into` wrote all `rows · n` values (sgemm with β = 0 writes every
        // element of its output without reading it).
        #[allow(unsafe_code)]
        unsafe {
            y.set_len(rows * n)
        };
        Ok(Some(Tensor::from_vec(y, (rows, n), weight.device())?))
    }

    /// `y = x·wᵀ`, `x` `(rows, k)`, `w` `(n, k)`, `y` `(rows, n)`, row-major: one `sgemm` on
    /// as many threads as rayon's pool has.
    #[allow(unsafe_code)] // cblas_sgemm over slices whose lengths are checked here
    pub fn product_into(
        &self,
        x: &[f32],
        w: &[f32],
        y: &mut [MaybeUninit<f32>],
        (rows, k, n): (usize, usize, usize),
    ) {
        assert_eq!(x.len(), rows * k, "x is (rows, k)");
        assert_eq!(w.len(), n * k, "w is (n, k)");
        assert_eq!(y.len(), rows * n, "y is (rows, n)");
        let int = |v: usize| c_int::try_from(v).expect("a dimension beyond C's int");
        // SAFETY: x is (rows, k), w (n, k) and y (rows, n), row-major (asserted above);
        // OpenBLAS reads x and w and writes every element of y (β = 0) without reading it.
        unsafe {
            let threads = rayon::current_num_threads();
            if self.threads.swap(threads, Ordering::Relaxed) != threads {
                (self.set_threads)(int(threads));
            }
            (self.sgemm)(
                ROW_MAJOR,
                NO_TRANS,
                TRANS,
                int(rows),
                int(n),
                int(k),
                1.0,
                x.as_ptr(),
                int(k),
                w.as_ptr(),
                int(k),
                0.0,
                y.as_mut_ptr().cast::<f32>(),
                int(n),
            );
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::gemm::operands::MIN_ROWS;
    use candle::DType;
    use lectern_test_support::tensors::seeded;

    /// The system's OpenBLAS, or `None`: the caller skips (fails where CI requires it).
    pub(crate) fn library() -> Option<&'static OpenBlas> {
        lectern_test_support::optional::openblas_or_skip(system_openblas())
    }

    fn bits(t: &Tensor) -> Vec<u32> {
        t.flatten_all().unwrap().to_vec1::<f32>().unwrap().iter().map(|v| v.to_bits()).collect()
    }

    #[test]
    fn openblas_products_match_candle_and_keep_their_bits_on_any_thread_count() {
        let Some(blas) = library() else { return };
        // Large enough for OpenBLAS to thread it; sizes no multiple of any kernel's tile.
        let (x, w) = (seeded(&[701, 256], 1), seeded(&[301, 256], 2));
        let want = x.matmul(&w.t().unwrap()).unwrap();
        let on = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| blas.matmul_t(&x, &w)).unwrap().expect("f32 CPU operands")
        };
        let one = on(1);
        let diff = (&one - &want).unwrap().abs().unwrap().flatten_all().unwrap();
        let diff = diff.max(0).unwrap().to_scalar::<f32>().unwrap();
        assert!(diff < 2e-5, "OpenBLAS ({}) is {diff} from candle's product", blas.core);
        // Only the AVX-512 cores, the ones Lectern uses, promise this: the Haswell core's
        // results change with the thread count.
        if !AVX512_CORES.contains(&blas.core.to_lowercase().as_str()) {
            eprintln!("OpenBLAS runs its {} core: thread-count bits not checked", blas.core);
            return;
        }
        for threads in [2, 3] {
            let differ = bits(&on(threads)).iter().zip(bits(&one)).filter(|(a, b)| *a != b).count();
            assert_eq!(differ, 0, "{threads} threads changed {differ} values' bits");
        }
    }

    #[test]
    fn openblas_leaves_few_rows_and_other_operands_to_candle() {
        let Some(blas) = library() else { return };
        let w = seeded(&[16, 32], 3);
        assert!(blas.matmul_t(&seeded(&[MIN_ROWS - 1, 32], 4), &w).unwrap().is_none());
        assert!(blas.matmul_t(&seeded(&[MIN_ROWS, 31], 4), &w).unwrap().is_none());
        let f16 = seeded(&[MIN_ROWS, 32], 4).to_dtype(DType::F16).unwrap();
        assert!(blas.matmul_t(&f16, &w).unwrap().is_none());
        assert!(blas.matmul_t(&seeded(&[MIN_ROWS, 32], 4), &w).unwrap().is_some());
    }

    #[test]
    fn a_missing_library_is_an_error_that_names_it() {
        let err = OpenBlas::load("/nonexistent/libopenblas.so.0").unwrap_err();
        assert!(err.contains("/nonexistent/libopenblas.so.0"), "{err}");
    }
}
