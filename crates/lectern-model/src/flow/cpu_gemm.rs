//! The DiT's projections through tract-linalg's packed kernels on x86-64 CPUs: Intel AMX
//! (`TDPBF16PS`, bf16 products accumulated in f32) for `--flow-matmul bf16`, and its AVX-512
//! f32 kernel, measured beside the `gemm` crate's (`lectern bench --stage gemm`).
//!
//! Why tract-linalg (not the rest of tract, which Lectern does not use): it ships AMX
//! bf16 micro-kernels in assembly that run on stable Rust, with the CPUID check and the
//! Linux `arch_prctl(ARCH_REQ_XCOMP_PERM)` request AMX needs, and its packers turn f32 into
//! bf16 with round-to-nearest-even (as `VCVTNEPS2BF16` does). Writing AMX micro-kernels here
//! would mean `asm!` that cannot be tested on machines without AMX.
//!
//! A weight `(out, in)` is packed once, at load; the activations `(rows, in)` are packed per
//! call. The product `Y = X·Wᵀ` is computed as tract's `C = A·B` with `A = W` (`m = out`) and
//! `B = Xᵀ` (`n = rows`), stored transposed straight into `Y`'s row-major layout. The rows
//! are split into blocks, one rayon task each (tract runs each block single-threaded).

// The `gemm` crate's entry point takes raw pointers (SAFETY note at the call).
#![allow(unsafe_code)]

use std::sync::{Arc, OnceLock};

use rayon::prelude::*;
use tract_data::internal::TensorView;
use tract_data::prelude::Tensor as TractTensor;
use tract_linalg::mmm::{AsInputValue, FusedSpec, MMMInputValue, MatMatMul};

/// The AMX bf16 kernel (16 × 16 tiles, bf16 packing) and the AVX-512 f32 kernel (16 × 12).
const AMX_BF16_KERNEL: &str = "avx512amx_mmm_f32_16x16";
const AVX512_F32_KERNEL: &str = "avx512_mmm_f32_16x12";
/// Packing index of tract's `f32f32_bf16` packers on the AMX kernel; 0 is plain f32.
const BF16_PACKING: usize = 1;

/// Which of tract's kernels a [`PackedWeight`] runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernel {
    /// AMX tiles, inputs rounded to bf16 (round to nearest even), f32 accumulation.
    AmxBf16,
    /// AVX-512 FMA, plain f32.
    Avx512F32,
}

impl Kernel {
    fn name(self) -> &'static str {
        match self {
            Self::AmxBf16 => AMX_BF16_KERNEL,
            Self::Avx512F32 => AVX512_F32_KERNEL,
        }
    }

    fn packing(self) -> usize {
        match self {
            Self::AmxBf16 => BF16_PACKING,
            Self::Avx512F32 => 0,
        }
    }

    /// Whether this CPU (and this build of tract) runs the kernel. For AMX this also asks
    /// Linux for the tile state (once per process).
    pub fn available(self) -> bool {
        self.mmm().is_some()
    }

    fn mmm(self) -> Option<&'static dyn MatMatMul> {
        static AMX: OnceLock<Option<Box<dyn MatMatMul>>> = OnceLock::new();
        static AVX512: OnceLock<Option<Box<dyn MatMatMul>>> = OnceLock::new();
        let cell = match self {
            Self::AmxBf16 => &AMX,
            Self::Avx512F32 => &AVX512,
        };
        cell.get_or_init(|| find(self)).as_deref()
    }
}

fn find(kernel: Kernel) -> Option<Box<dyn MatMatMul>> {
    if kernel == Kernel::AmxBf16 && !amx_permitted() {
        return None;
    }
    tract_linalg::mmm_routines::declared().map(|r| (r.make)()).find(|k| {
        k.name() == kernel.name() && k.runnable() && k.packings().len() > kernel.packing()
    })
}

/// AMX-BF16 in CPUID, and Linux's permission for the tile state granted to this process.
#[cfg(target_arch = "x86_64")]
fn amx_permitted() -> bool {
    tract_linalg::x86_64::amx_bf16::has_amx_bf16()
}

#[cfg(not(target_arch = "x86_64"))]
fn amx_permitted() -> bool {
    false
}

/// A weight `(out, in)` packed once for one of tract's kernels.
#[derive(Clone)]
pub struct PackedWeight {
    kernel: Kernel,
    packed: Arc<dyn MMMInputValue>,
    out: usize,
    inp: usize,
}

impl std::fmt::Debug for PackedWeight {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PackedWeight({:?}, {} × {})", self.kernel, self.out, self.inp)
    }
}

/// Rows of `X` per task: a multiple of the kernels' 16-wide tiles.
const ROW_BLOCK: usize = 256;

fn tract_err(e: impl std::fmt::Display) -> candle::Error {
    candle::Error::Msg(format!("tract matmul: {e}"))
}

impl PackedWeight {
    /// Packs `w` `(out, in)` row-major; `None` where `kernel` does not run here.
    pub fn new(kernel: Kernel, w: &[f32], out: usize, inp: usize) -> candle::Result<Option<Self>> {
        let Some(mmm) = kernel.mmm() else { return Ok(None) };
        if w.len() != out * inp {
            candle::bail!("tract matmul: weight of {} values for ({out}, {inp})", w.len());
        }
        let t = TractTensor::from_shape(&[out, inp], w).map_err(tract_err)?;
        let (pack_a, _) = &mmm.packings()[kernel.packing()];
        let packed = pack_a.prepare_one(&t, 1, 0).map_err(tract_err)?;
        Ok(Some(Self { kernel, packed: Arc::from(packed), out, inp }))
    }

    pub fn kernel(&self) -> Kernel {
        self.kernel
    }

    /// Elements of the weight `(out, in)`.
    pub fn elements(&self) -> usize {
        self.out * self.inp
    }

    /// `out` of the weight `(out, in)`.
    pub fn out_dim(&self) -> usize {
        self.out
    }

    /// `x (rows, in) · Wᵀ` → `(rows, out)`, row-major.
    pub fn matmul_t(&self, x: &[f32], rows: usize) -> candle::Result<Vec<f32>> {
        let mmm = self.kernel.mmm().ok_or_else(|| tract_err("kernel not available"))?;
        let (inp, out) = (self.inp, self.out);
        if x.len() != rows * inp {
            candle::bail!("tract matmul: input of {} values for ({rows}, {inp})", x.len());
        }
        let packing = self.kernel.packing();
        if rows == 0 {
            return Ok(Vec::new());
        }
        let xt = TractTensor::from_shape(&[rows, inp], x).map_err(tract_err)?;
        let y = TractTensor::zero::<f32>(&[rows, out]).map_err(tract_err)?;
        let (_, pack_b) = &mmm.packings()[packing];
        let blocks = rows.div_ceil(ROW_BLOCK);
        let x_strides = [inp as isize, 1];
        (0..blocks).into_par_iter().try_for_each(|b| -> candle::Result<()> {
            let r0 = b * ROW_BLOCK;
            let len = ROW_BLOCK.min(rows - r0);
            let shape = [len, inp];
            // SAFETY: rows r0..r0+len of `xt` (rows × in) and of `y` (rows × out) are in
            // bounds; each task writes only its own rows of `y`.
            unsafe {
                let xv = TensorView::from_bytes(&xt, (r0 * inp * 4) as isize, &shape, &x_strides);
                let pb = pack_b.prepare_one_view(&xv, 1, 0).map_err(tract_err)?;
                let y_shape = [len, out];
                let y_strides = [out as isize, 1];
                let yv = TensorView::from_bytes(&y, (r0 * out * 4) as isize, &y_shape, &y_strides);
                // C = W·X_blockᵀ is (out × len): C[i, j] goes to Y[r0 + j, i].
                let store = mmm.c_from_data_and_strides(4, 1, out as isize).wrap(&yv);
                let spec = [
                    FusedSpec::AddMatMul {
                        a: AsInputValue::Borrowed(&*self.packed),
                        b: AsInputValue::Borrowed(&*pb),
                        packing,
                    },
                    FusedSpec::Store(store),
                ];
                mmm.run(out, len, &spec).map_err(tract_err)
            }
        })?;
        let plain = y.try_as_plain_ram().map_err(tract_err)?;
        Ok(plain.as_slice::<f32>().map_err(tract_err)?.to_vec())
    }
}

/// `x` rounded to bf16 (round to nearest even, as tract's packers and `VCVTNEPS2BF16` do) and
/// widened back: what an AMX product sees of its inputs.
pub fn round_to_bf16(x: f32) -> f32 {
    f32::from_bits(u32::from(half::bf16::from_f32(x).to_bits()) << 16)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(n: usize, seed: u32) -> Vec<f32> {
        let mut s = seed.wrapping_mul(0x9e37_79b9) | 1;
        (0..n)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 17;
                s ^= s << 5;
                s as f32 / u32::MAX as f32 - 0.5
            })
            .collect()
    }

    /// `x·Wᵀ` in f64 from the given (possibly pre-rounded) inputs.
    fn reference(x: &[f32], w: &[f32], rows: usize, out: usize, inp: usize) -> Vec<f64> {
        let mut y = vec![0f64; rows * out];
        for r in 0..rows {
            for o in 0..out {
                y[r * out + o] =
                    (0..inp).map(|i| f64::from(x[r * inp + i]) * f64::from(w[o * inp + i])).sum();
            }
        }
        y
    }

    fn check(kernel: Kernel) {
        // Rows across several blocks and not a multiple of the tiles; in a multiple of 32
        // (AMX's k step) and not.
        for &(rows, out, inp) in &[(300, 40, 64), (ROW_BLOCK * 2 + 7, 24, 96), (5, 17, 50)] {
            let (x, w) = (sample(rows * inp, 1), sample(out * inp, 2));
            let Some(packed) = PackedWeight::new(kernel, &w, out, inp).unwrap() else {
                eprintln!("{kernel:?} does not run on this CPU: skipped");
                return;
            };
            let y = packed.matmul_t(&x, rows).unwrap();
            let (x, w) = match kernel {
                Kernel::AmxBf16 => (
                    x.iter().map(|&v| round_to_bf16(v)).collect::<Vec<_>>(),
                    w.iter().map(|&v| round_to_bf16(v)).collect::<Vec<_>>(),
                ),
                Kernel::Avx512F32 => (x, w),
            };
            let want = reference(&x, &w, rows, out, inp);
            let worst =
                y.iter().zip(&want).map(|(a, b)| (f64::from(*a) - b).abs()).fold(0f64, f64::max);
            assert!(worst < 1e-5, "{kernel:?} ({rows}, {out}, {inp}): max |Δ| {worst:e}");
        }
    }

    #[test]
    fn avx512_f32_matches_f64() {
        check(Kernel::Avx512F32);
    }

    /// On a CPU with AMX: the products of the bf16-rounded inputs, accumulated in f32.
    #[test]
    fn amx_bf16_matches_the_rounded_inputs_product() {
        check(Kernel::AmxBf16);
    }

    #[test]
    fn rounding_is_to_nearest_even() {
        assert_eq!(round_to_bf16(1.0), 1.0);
        // 1 + 2⁻⁸ is halfway between bf16 neighbours 1 and 1 + 2⁻⁷: ties go to even (1).
        assert_eq!(round_to_bf16(1.0 + 2f32.powi(-8)), 1.0);
        assert_eq!(round_to_bf16(1.0 + 3.0 * 2f32.powi(-8)), 1.0 + 2f32.powi(-6));
    }
}
