//! An f32 GEMM of Lectern's own for the flow's projections on CPUs with AVX2 and FMA but no
//! AVX-512 (AMD Zen 1–3, Intel before Skylake-SP and its client cores).
//!
//! Why: on those CPUs the `gemm` crate's AVX2 kernel runs the DiT's projection shapes well
//! below the FMA peak, and the system's OpenBLAS, faster there, changes its products' bits
//! with the thread count (docs/refutations.md).
//!
//! How, laid out as BLIS lays out a GEMM:
//! * The weight is packed once per call, in blocks of [`KC`] along the inner dimension, each
//!   block in panels of [`NR`] columns (`KC × 16` floats, 16 KB: a panel stays in L1 while it is
//!   used).
//! * Tasks of [`MC`] rows of `x` run on rayon's pool. A task works through the output in groups
//!   of [`GROUP_COLS`] columns (its rows of them stay in L2), and for each block of the inner
//!   dimension packs its rows in panels of [`MR`] (in L2), then runs every weight panel of the
//!   group against every row panel.
//! * A 6 × 16 micro-kernel keeps its 12 sums in registers over the block (two weight vectors and
//!   a broadcast `x` value per step: 15 of the 16 AVX2 registers), four steps a turn. It is
//!   written in `asm!`: the compiler keeps one sum of such a loop on the stack (as in the
//!   vocoder's direct conv, `hift::conv_direct`). It prefetches the output rows it will add to,
//!   the row panel ahead of it, and in its last pass over a weight panel the next one; the
//!   output rows' prefetch matters most (docs/refutations.md).
//! * Each block's sums are added to the output in block order, and the tasks split the rows
//!   only, so every output value is the same sum in the same order on any thread count (tested),
//!   and on any CPU with AVX2 and FMA.

use std::sync::OnceLock;

use candle::Tensor;
use rayon::prelude::*;

use crate::cpu_slice::with_f32_slice;
use crate::gemm::blas::{self as cpu_blas, OpenBlas};
pub use crate::gemm::operands::MIN_ROWS;
use crate::gemm::operands::{ProjectionOperands, projection_operands};

/// Rows of `x` per micro-tile (broadcast values).
pub const MR: usize = 6;
/// Output columns per micro-tile (two AVX2 vectors).
pub const NR: usize = 16;
/// The inner dimension's block: a weight panel is `KC · NR` floats (16 KB, in L1).
pub const KC: usize = 256;
/// Rows of `x` per task: its packed panels (`MC · KC` floats, 72 KB) stay in L2.
pub const MC: usize = 72;

/// Output columns a task finishes before the next ones: its rows of them (`MC · 1024` floats,
/// 288 KB) stay in L2 over the inner dimension's blocks.
pub const GROUP_COLS: usize = 1024;

/// What a take records as its flow matmuls when the f32 projections ran here.
pub const F32_LABEL: &str = "f32+avx2";

/// The environment variable that turns this GEMM off for the flow (`0`): its f32 projections
/// then run on candle's matmul (the `gemm` crate).
pub const ENV_VAR: &str = "LECTERN_AVX2_GEMM";

/// What runs the flow's f32 projections on the CPU where candle's matmul does not.
#[derive(Clone, Copy, Debug)]
pub enum F32Gemm {
    /// The system's OpenBLAS, on CPUs with AVX-512 ([`cpu_blas`]).
    OpenBlas(&'static OpenBlas),
    /// This module's GEMM, on CPUs with AVX2 and FMA but without AVX-512.
    Avx2,
}

impl F32Gemm {
    /// This machine's choice, made once: OpenBLAS where [`cpu_blas::openblas`] loads it, else
    /// this module's GEMM on CPUs with AVX2 and FMA but not AVX-512 (unless [`ENV_VAR`] is
    /// `0`), else `None`: candle's matmul, whose `gemm` crate runs AVX-512 kernels where the
    /// CPU has them.
    pub fn for_flow() -> Option<Self> {
        static CHOSEN: OnceLock<Option<F32Gemm>> = OnceLock::new();
        *CHOSEN.get_or_init(|| {
            let off = std::env::var(ENV_VAR).is_ok_and(|v| v == "0");
            match cpu_blas::openblas() {
                Some(blas) => Some(Self::OpenBlas(blas)),
                None if runs_here() && !crate::simd::has_avx512_skylake_x() && !off => {
                    Some(Self::Avx2)
                }
                None => None,
            }
        })
    }

    /// What a take records as the flow's matmuls when its f32 projections run here.
    pub fn label(self) -> &'static str {
        match self {
            Self::OpenBlas(_) => cpu_blas::F32_LABEL,
            Self::Avx2 => F32_LABEL,
        }
    }

    /// `x·Wᵀ` for `x` `(rows, in)` and `weight` `(out, in)`, both f32 on the CPU: `None` where
    /// that does not hold or there are fewer than [`MIN_ROWS`] rows.
    pub fn matmul_t(self, x: &Tensor, weight: &Tensor) -> candle::Result<Option<Tensor>> {
        match self {
            Self::OpenBlas(blas) => blas.matmul_t(x, weight),
            Self::Avx2 => matmul_t(x, weight),
        }
    }
}

/// One line on the f32 product the flow's projections get on this machine.
#[must_use]
pub fn describe() -> String {
    match F32Gemm::for_flow() {
        Some(F32Gemm::OpenBlas(blas)) => format!("OpenBLAS ({}, {})", blas.core, blas.config),
        Some(F32Gemm::Avx2) => "Lectern's AVX2 GEMM".to_string(),
        None => "the gemm crate".to_string(),
    }
}

/// [`F32Gemm::matmul_t`] on this module's GEMM.
pub fn matmul_t(x: &Tensor, weight: &Tensor) -> candle::Result<Option<Tensor>> {
    let Some(ProjectionOperands { x, w, shape: (rows, k, n) }) = projection_operands(x, weight)?
    else {
        return Ok(None);
    };
    if !runs_here() {
        return Ok(None);
    }
    let mut y = vec![0f32; rows * n];
    with_f32_slice(&x, |x| {
        with_f32_slice(&w, |w| {
            product_into(x, w, &mut y, (rows, k, n));
            Ok(())
        })
    })?;
    Ok(Some(Tensor::from_vec(y, (rows, n), weight.device())?))
}

/// Whether this CPU runs the kernel (AVX2 and FMA).
pub fn runs_here() -> bool {
    crate::simd::has_avx2_fma()
}

/// `y = x·wᵀ`, `x` `(rows, k)`, `w` `(n, k)`, `y` `(rows, n)`, all row-major, on rayon's pool.
///
/// # Panics
/// If the slices' lengths do not match the shape, or the CPU lacks AVX2 and FMA.
pub fn product_into(x: &[f32], w: &[f32], y: &mut [f32], (rows, k, n): (usize, usize, usize)) {
    assert!(runs_here(), "the f32 GEMM needs AVX2 and FMA");
    assert_eq!(x.len(), rows * k, "x is (rows, k)");
    assert_eq!(w.len(), n * k, "w is (n, k)");
    assert_eq!(y.len(), rows * n, "y is (rows, n)");
    if rows == 0 || n == 0 {
        return;
    }
    if k == 0 {
        y.fill(0.0);
        return;
    }
    let panels = n.div_ceil(NR);
    // The whole weight packed, block after block of the inner dimension: block b's panel p
    // at `NR · (b·KC·panels + p·kc)`.
    let mut packed_w = vec![0f32; panels * NR * k];
    packed_w.par_chunks_mut(panels * NR * KC).enumerate().for_each(|(b, block)| {
        let kc = block.len() / (panels * NR);
        block
            .chunks_exact_mut(NR * kc)
            .enumerate()
            .for_each(|(p, panel)| pack_panel::<NR>(w, k, p * NR, b * KC, panel));
    });
    let packed_w = &*packed_w;
    y.par_chunks_mut(MC * n).enumerate().for_each(|(task, y)| {
        let m0 = task * MC;
        let mc = y.len() / n;
        let x = &x[m0 * k..(m0 + mc) * k];
        PACKED_X.with_borrow_mut(|packed_x| {
            for c0 in (0..n).step_by(GROUP_COLS) {
                for (b, k0) in (0..k).step_by(KC).enumerate() {
                    let kc = KC.min(k - k0);
                    // Every value is packed anew (zero past the last row): no need to clear.
                    packed_x.resize(mc.div_ceil(MR) * MR * kc, 0.0);
                    for (p, panel) in packed_x.chunks_exact_mut(MR * kc).enumerate() {
                        pack_panel::<MR>(x, k, p * MR, k0, panel);
                    }
                    let block = &packed_w[b * KC * panels * NR..][..panels * NR * kc];
                    let group = &block[c0 * kc..(c0 + GROUP_COLS).min(panels * NR) * kc];
                    multiply_block(packed_x, group, y, (mc, kc, n), c0, b > 0);
                }
            }
        });
    });
}

thread_local! {
    /// Each thread's packed rows of `x`, kept between calls.
    static PACKED_X: std::cell::RefCell<Vec<f32>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Rows `r0 … r0 + LANES` of `src` (rows `k` apart) from column `k0` as one panel, step by
/// step: `panel[kk·LANES + i] = src[r0 + i][k0 + kk]`, zero past the last row. The weight's
/// panels take `NR` of its rows (output columns), the row panels `MR` rows of `x`.
fn pack_panel<const LANES: usize>(src: &[f32], k: usize, r0: usize, k0: usize, panel: &mut [f32]) {
    let (kc, rows) = (panel.len() / LANES, src.len() / k);
    for i in 0..LANES {
        let r = r0 + i;
        if r < rows {
            let row = &src[r * k + k0..r * k + k0 + kc];
            for (kk, &v) in row.iter().enumerate() {
                panel[kk * LANES + i] = v;
            }
        } else {
            (0..kc).for_each(|kk| panel[kk * LANES + i] = 0.0);
        }
    }
}

/// One task's rows against a group of weight panels from column `group_c0`:
/// `y (mc, n) (+)= packed_x · packed_w`.
fn multiply_block(
    packed_x: &[f32],
    packed_w: &[f32],
    y: &mut [f32],
    (mc, kc, n): (usize, usize, usize),
    group_c0: usize,
    accumulate: bool,
) {
    for (p, w_panel) in packed_w.chunks_exact(NR * kc).enumerate() {
        let c0 = group_c0 + p * NR;
        let cols = NR.min(n - c0);
        // The last micro-panel's pass pulls the next weight panel into the cache.
        let next = packed_w.get(NR * kc * (p + 1)..NR * kc * (p + 2)).unwrap_or(w_panel);
        let last = mc.div_ceil(MR) - 1;
        for (t, x_panel) in packed_x.chunks_exact(MR * kc).enumerate() {
            let prefetch = if t == last { next } else { w_panel };
            let r0 = t * MR;
            let rows = MR.min(mc - r0);
            let out = &mut y[r0 * n + c0..];
            if rows == MR && cols == NR {
                // SAFETY: `runs_here()` was asserted by `product_into`; both panels hold `kc`
                // steps (their chunk sizes); `out` holds MR rows `n` apart of NR columns
                // from its start (a full tile).
                #[allow(unsafe_code)]
                unsafe {
                    avx2::tile_into(x_panel, w_panel, kc, prefetch, out, n, accumulate)
                };
                continue;
            }
            let mut tile = [[0f32; NR]; MR];
            // SAFETY: as above; `tile` is one whole tile, NR apart.
            #[allow(unsafe_code)]
            unsafe {
                avx2::tile_into(x_panel, w_panel, kc, prefetch, tile.as_flattened_mut(), NR, false)
            };
            for (i, sums) in tile.iter().take(rows).enumerate() {
                let out = &mut out[i * n..i * n + cols];
                match accumulate {
                    true => out.iter_mut().zip(sums).for_each(|(o, s)| *o += s),
                    false => out.copy_from_slice(&sums[..cols]),
                }
            }
        }
    }
}

/// One step of the micro-kernel as assembly text: the two weight vectors at byte `$w` of the
/// weight panel, then the six rows' `x` values from byte `$x` of the row panel, each broadcast
/// and multiplied into its row's two sums.
macro_rules! kernel_step {
    ($w:literal, $x:literal) => {
        concat!(
            "vmovups {w0}, [{w} + ",
            $w,
            "]\n",
            "vmovups {w1}, [{w} + ",
            $w,
            " + 32]\n",
            "vbroadcastss {xv}, dword ptr [{x} + ",
            $x,
            "]\n",
            "vfmadd231ps {a0}, {xv}, {w0}\n",
            "vfmadd231ps {a1}, {xv}, {w1}\n",
            "vbroadcastss {xv}, dword ptr [{x} + ",
            $x,
            " + 4]\n",
            "vfmadd231ps {a2}, {xv}, {w0}\n",
            "vfmadd231ps {a3}, {xv}, {w1}\n",
            "vbroadcastss {xv}, dword ptr [{x} + ",
            $x,
            " + 8]\n",
            "vfmadd231ps {a4}, {xv}, {w0}\n",
            "vfmadd231ps {a5}, {xv}, {w1}\n",
            "vbroadcastss {xv}, dword ptr [{x} + ",
            $x,
            " + 12]\n",
            "vfmadd231ps {a6}, {xv}, {w0}\n",
            "vfmadd231ps {a7}, {xv}, {w1}\n",
            "vbroadcastss {xv}, dword ptr [{x} + ",
            $x,
            " + 16]\n",
            "vfmadd231ps {a8}, {xv}, {w0}\n",
            "vfmadd231ps {a9}, {xv}, {w1}\n",
            "vbroadcastss {xv}, dword ptr [{x} + ",
            $x,
            " + 20]\n",
            "vfmadd231ps {a10}, {xv}, {w0}\n",
            "vfmadd231ps {a11}, {xv}, {w1}",
        )
    };
}

#[allow(unsafe_code)] // the micro-kernel: `asm!` over slices whose lengths its contract states
mod avx2 {
    use super::{MR, NR};

    /// `out[i·ld + j] (+)= Σ_kk x_panel[kk·MR + i] · w_panel[kk·NR + j]` for `i < MR`,
    /// `j < NR`, the sum in `kk` order and added to `out` (with `accumulate`) once.
    ///
    /// # Safety
    /// The CPU has AVX2 and FMA; both panels hold `kc` steps; `out` holds `(MR − 1)·ld + NR`
    /// floats.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn tile_into(
        x_panel: &[f32],
        w_panel: &[f32],
        kc: usize,
        prefetch: &[f32],
        out: &mut [f32],
        ld: usize,
        accumulate: bool,
    ) {
        use std::arch::asm;
        use std::arch::x86_64::*;
        debug_assert!(kc > 0 && x_panel.len() >= kc * MR && w_panel.len() >= kc * NR);
        debug_assert!(prefetch.len() >= kc * NR);
        assert!(out.len() >= (MR - 1) * ld + NR, "a whole tile of the output");
        // The tile's output rows are wanted after the loop: ask for them now.
        for i in 0..MR {
            // SAFETY: prefetches of addresses inside `out` (asserted above).
            unsafe {
                let p = out.as_ptr().add(i * ld);
                _mm_prefetch::<_MM_HINT_T0>(p.cast());
                _mm_prefetch::<_MM_HINT_T0>(p.add(NR - 1).cast());
            }
        }
        let z = _mm256_setzero_ps();
        let [mut a0, mut a1, mut a2, mut a3, mut a4, mut a5] = [z; 6];
        let [mut a6, mut a7, mut a8, mut a9, mut a10, mut a11] = [z; 6];
        // SAFETY: the loop reads `kc` steps of 24 bytes of `x_panel` and 64 of `w_panel`, inside
        // the slices (the function's contract).
        unsafe {
            asm!(
                // Four steps a turn while four are left, then one a turn.
                "cmp {n}, 4",
                "jb 3f",
                "2:",
                "prefetcht0 [{x} + 384]",
                "prefetcht0 [{pf}]",
                "prefetcht0 [{pf} + 64]",
                kernel_step!(0, 0),
                kernel_step!(64, 24),
                "prefetcht0 [{pf} + 128]",
                "prefetcht0 [{pf} + 192]",
                kernel_step!(128, 48),
                kernel_step!(192, 72),
                "add {x}, 96",
                "add {w}, 256",
                "add {pf}, 256",
                "sub {n}, 4",
                "cmp {n}, 4",
                "jae 2b",
                "3:",
                "test {n}, {n}",
                "jz 4f",
                "5:",
                kernel_step!(0, 0),
                "add {x}, 24",
                "add {w}, 64",
                "dec {n}",
                "jnz 5b",
                "4:",
                x = inout(reg) x_panel.as_ptr() => _,
                w = inout(reg) w_panel.as_ptr() => _,
                n = inout(reg) kc => _,
                pf = inout(reg) prefetch.as_ptr() => _,
                a0 = inout(ymm_reg) a0, a1 = inout(ymm_reg) a1,
                a2 = inout(ymm_reg) a2, a3 = inout(ymm_reg) a3,
                a4 = inout(ymm_reg) a4, a5 = inout(ymm_reg) a5,
                a6 = inout(ymm_reg) a6, a7 = inout(ymm_reg) a7,
                a8 = inout(ymm_reg) a8, a9 = inout(ymm_reg) a9,
                a10 = inout(ymm_reg) a10, a11 = inout(ymm_reg) a11,
                w0 = out(ymm_reg) _, w1 = out(ymm_reg) _, xv = out(ymm_reg) _,
                options(nostack, readonly),
            );
        }
        let acc = [[a0, a1], [a2, a3], [a4, a5], [a6, a7], [a8, a9], [a10, a11]];
        for (i, acc) in acc.iter().enumerate() {
            // SAFETY: row i of the tile is NR = 16 floats from `i · ld`, inside `out` (asserted).
            unsafe {
                let p = out.as_mut_ptr().add(i * ld);
                for (v, &a) in acc.iter().enumerate() {
                    let p = p.add(8 * v);
                    let sum = if accumulate { _mm256_add_ps(_mm256_loadu_ps(p), a) } else { a };
                    _mm256_storeu_ps(p, sum);
                }
            }
        }
    }

    #[cfg(not(target_arch = "x86_64"))]
    pub(super) unsafe fn tile_into(
        _: &[f32],
        _: &[f32],
        _: usize,
        _: &[f32],
        _: &mut [f32],
        _: usize,
        _: bool,
    ) {
        unreachable!("the f32 GEMM runs on x86-64 only (runs_here() is false elsewhere)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(len: usize, seed: u64) -> Vec<f32> {
        let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..len)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                (s >> 40) as f32 / (1u64 << 23) as f32 - 1.0
            })
            .collect()
    }

    fn product(x: &[f32], w: &[f32], shape: (usize, usize, usize)) -> Vec<f32> {
        let mut y = vec![f32::NAN; shape.0 * shape.2];
        product_into(x, w, &mut y, shape);
        y
    }

    /// Shapes with edges everywhere: rows past a micro-tile and a task, columns past a panel,
    /// inner dimensions past, at and below a block.
    const SHAPES: [(usize, usize, usize); 7] = [
        (1, 1, 1),
        (7, 300, 17),
        (73, 256, 16),
        (150, 513, 40),
        (6, 5, 33),
        (145, 1024, 96),
        (80, 70, 1100),
    ];

    #[test]
    fn products_match_f64_on_edge_shapes() {
        if !runs_here() {
            return;
        }
        for (s, &(rows, k, n)) in SHAPES.iter().enumerate() {
            let (x, w) = (sample(rows * k, 2 * s as u64), sample(n * k, 2 * s as u64 + 1));
            let y = product(&x, &w, (rows, k, n));
            for r in 0..rows {
                for c in 0..n {
                    let exact: f64 =
                        (0..k).map(|i| f64::from(x[r * k + i]) * f64::from(w[c * k + i])).sum();
                    let bound = 1e-6 * k as f64;
                    let got = f64::from(y[r * n + c]);
                    assert!(
                        (got - exact).abs() <= bound,
                        "shape {rows}x{k}x{n} at ({r}, {c}): {got} against {exact}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_bits_do_not_depend_on_the_thread_count() {
        if !runs_here() {
            return;
        }
        let (rows, k, n) = (300, 700, 48);
        let (x, w) = (sample(rows * k, 11), sample(n * k, 12));
        let on = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| product(&x, &w, (rows, k, n)))
        };
        let one = on(1);
        for threads in [2, 3] {
            assert!(
                on(threads).iter().zip(&one).all(|(a, b)| a.to_bits() == b.to_bits()),
                "{threads} threads changed the product's bits"
            );
        }
    }

    #[test]
    fn an_empty_inner_dimension_gives_zeros() {
        if !runs_here() {
            return;
        }
        assert_eq!(product(&[], &[], (2, 0, 3)), vec![0.0; 6]);
    }
}
