//! The bf16 GEMM's packing, blocking and micro-kernels against f64 products.

use super::*;
use lectern_test_support::optional::cpu_or_skip;

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

/// `X·B` in f64 from the bf16-rounded inputs, `B (k, n)` row-major.
fn reference(x: &[f32], b: &[f32], rows: usize, k: usize, n: usize) -> Vec<f64> {
    let r = |v: f32| f64::from(round_to_bf16(v));
    let mut y = vec![0f64; rows * n];
    for i in 0..rows {
        for j in 0..n {
            y[i * n + j] = (0..k).map(|l| r(x[i * k + l]) * r(b[l * n + j])).sum();
        }
    }
    y
}

/// Shapes: rows over several tasks and not a multiple of 32; k a multiple of 32 and not;
/// n over several tasks, a multiple of 32 and not; a single row; k smaller than a tile.
/// And k over several chunks of `K_CHUNK` steps, the last one partial.
const SHAPES: [(usize, usize, usize); 6] = [
    (300, 64, 40),
    (TASK_ROWS * 2 + 7, 96, 24),
    (5, 50, 17),
    (1, 32, 300),
    (33, 7, 64),
    (40, 2 * K_CHUNK * TILE_K + 70, 33),
];

fn check(kernel: MicroKernel) {
    for (case, &(rows, k, n)) in SHAPES.iter().enumerate() {
        let (x, b) = (sample(rows * k, 1 + case as u32), sample(k * n, 11 + case as u32));
        // B given transposed, as a weight (n, k) would be: the packer reads it by strides.
        let bt: Vec<f32> = (0..n * k).map(|idx| b[(idx % k) * n + idx / k]).collect();
        for packed in [PackedB::new(&b, k, n, n, 1), PackedB::new(&bt, k, n, 1, k)] {
            let y = packed.matmul_with(&x, rows, kernel);
            let want = reference(&x, &b, rows, k, n);
            assert_eq!(y.len(), want.len());
            let worst =
                y.iter().zip(&want).map(|(a, b)| (f64::from(*a) - b).abs()).fold(0f64, f64::max);
            assert!(worst < 1e-5, "{kernel:?} ({rows}, {k}, {n}): max |Δ| {worst:e}");
        }
    }
}

/// Every shape through `kernel`, threaded ([`check`]) and single-threaded
/// ([`check_serial`]); `runs_here` false: skipped, with a message.
fn check_kernel(kernel: MicroKernel, features: &[&str], runs_here: bool) {
    if !cpu_or_skip(features, runs_here) {
        return;
    }
    check(kernel);
    check_serial(kernel);
}

/// The packing, padding and blocking around the micro-kernel, on any machine.
#[test]
fn emulated_tiles_match_f64() {
    check_kernel(MicroKernel::Emulated, &[], true);
}

/// [`PackedB::product_serial`] from strided rows (the attention's scores: `k` of each
/// `x_stride`-long row), rows padded to 32.
fn check_serial(kernel: MicroKernel) {
    for &(rows, k, n, x_stride) in &[(64, 64, 77, 64), (5, 70, 40, 96), (33, 7, 3, 7)] {
        let x = sample(rows * x_stride, 5);
        let b = sample(k * n, 6);
        let packed = PackedB::new(&b, k, n, n, 1);
        let rows_pad = rows.div_ceil(BLOCK) * BLOCK;
        let mut a = vec![1u16; rows_pad * packed.a_stride()];
        rows_to_bf16_serial(&mut a, &x, (rows, x_stride), k, packed.k_pad());
        let mut c = vec![f32::NAN; rows_pad * packed.n_pad()];
        packed.product_serial_with(&a, &mut c, kernel);
        let dense: Vec<f32> = (0..rows * k).map(|i| x[(i / k) * x_stride + i % k]).collect();
        let want = reference(&dense, &b, rows, k, n);
        for i in 0..rows_pad {
            for j in 0..packed.n_pad() {
                let got = f64::from(c[i * packed.n_pad() + j]);
                let want = if i < rows && j < n { want[i * n + j] } else { 0.0 };
                assert!(
                    (got - want).abs() < 1e-5,
                    "({rows}, {k}, {n}) [{i}, {j}]: {got} against {want}"
                );
            }
        }
    }
}

/// [`PackedB::product_windows`]: overlapping rows of `A` (`a_stride` below `k`), a causal
/// convolution's windows over channel-last frames: row `r` is frames `r … r + taps − 1`.
fn check_windows(kernel: MicroKernel) {
    for &(frames, channels, taps, n) in &[(70, 4, 31, 4), (40, 64, 3, 64), (33, 8, 5, 40)] {
        let k = taps * channels;
        let x = sample((frames + taps - 1) * channels, 8);
        let b = sample(k * n, 9);
        let packed = PackedB::new(&b, k, n, n, 1);
        let rows_pad = rows_pad(frames);
        let len = (rows_pad - 1) * channels + packed.k_pad();
        let mut a = vec![0u16; len.max(x.len())];
        a.iter_mut().zip(&x).for_each(|(a, &v)| *a = bf16_bits(v));
        let mut c = vec![f32::NAN; rows_pad * packed.n_pad()];
        packed.product_windows_with(&a, channels, &mut c, kernel, K_CHUNK);
        let windows: Vec<f32> =
            (0..frames).flat_map(|r| x[r * channels..][..k].iter().copied()).collect();
        let want = reference(&windows, &b, frames, k, n);
        for r in 0..frames {
            for j in 0..n {
                let got = f64::from(c[r * packed.n_pad() + j]);
                let w = want[r * n + j];
                assert!(
                    (got - w).abs() < 1e-5,
                    "({frames}, {k}, {n}) [{r}, {j}]: {got} against {w}"
                );
            }
        }
    }
}

#[test]
fn emulated_window_products_match_f64() {
    check_windows(MicroKernel::Emulated);
}

#[test]
fn native_window_products_match_f64() {
    // Intel CPUs with AVX512-BF16 but no AMX have no native kernel (the rounded f32
    // products serve them), so only AMX is a promise of one.
    if let Some(kernel) = MicroKernel::native() {
        check_windows(kernel);
    } else {
        cpu_or_skip(&["amx_bf16"], false);
    }
}

/// The `asm!` micro-kernel itself, where the CPU has AMX.
#[test]
fn amx_tiles_match_f64() {
    check_kernel(MicroKernel::Amx, &["amx_bf16", "amx_tile"], kernel() == Some(Kernel::Amx));
}

/// The AVX512-BF16 micro-kernel, wherever the CPU has the instruction (also where
/// [`kernel`] picks AMX or the rounded f32 products instead).
#[test]
fn dot_bf16_matches_f64() {
    check_kernel(MicroKernel::DotBf16, &["avx512_bf16"], crate::simd::has_avx512_bf16());
}

#[test]
fn rounding_is_to_nearest_even() {
    assert_eq!(round_to_bf16(1.0), 1.0);
    // 1 + 2⁻⁸ is halfway between bf16 neighbours 1 and 1 + 2⁻⁷: ties go to even (1).
    assert_eq!(round_to_bf16(1.0 + 2f32.powi(-8)), 1.0);
    assert_eq!(round_to_bf16(1.0 + 3.0 * 2f32.powi(-8)), 1.0 + 2f32.powi(-6));
    assert!(round_to_bf16(f32::NAN).is_nan());
    assert_eq!(round_to_bf16(f32::INFINITY), f32::INFINITY);
    for v in sample(1000, 7) {
        assert_eq!(round_to_bf16(v), half::bf16::from_f32(v).to_f32(), "{v}");
    }
}
