//! The register-blocked cores' bits pinned: hashes (FNV-1a over the `f32` bits) of both cores'
//! outputs, weights passes and vector exponentials on fixed inputs, against the hashes taken
//! from the code before the cores were written once over [`crate::attention::lanes`] (issue
//! #48), when each was its own AVX2 or AVX-512 code. The inputs cover every head width the
//! cores serve, lengths that are not whole panels, kernel blocks or query blocks, scores whose
//! weights fall below the exponential's range, and the exponential's edge cases.
//!
//! A take's bits must not change with a refactor of the cores: these tests say whether one
//! did. A change meant to change them (other arithmetic) takes new hashes here and says so.

// The instruction sets' loads and stores, and the cores' `#[target_feature]` wrappers (SAFETY
// notes at each use).
#![allow(unsafe_code)]

use lectern_test_support::optional::cpu_or_skip;

use super::avx2::{self, Avx2};
use super::avx512::{self, Avx512};
use super::lanes::F32Lanes;
use super::{Core, blocked};

/// FNV-1a (64-bit) over the values' bits, one `u32` at a time.
fn fnv(values: impl IntoIterator<Item = f32>) -> u64 {
    values.into_iter().fold(0xcbf2_9ce4_8422_2325, |h: u64, x| {
        (h ^ u64::from(x.to_bits())).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// `len` values uniform in [lo, hi), from a splitmix64 stream seeded with `seed` (its own
/// generator, so that the inputs never change with the test support's).
fn inputs(len: usize, seed: u64, (lo, hi): (f32, f32)) -> Vec<f32> {
    let mut state = seed;
    (0..len)
        .map(|_| {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^= z >> 31;
            let unit = (z >> 40) as f32 / (1u32 << 24) as f32; // [0, 1)
            lo + (hi - lo) * unit
        })
        .collect()
}

/// The shapes `(b, h, t, dh)`: every head width the cores serve, lengths that are not whole
/// panels, kernel blocks or query blocks, and the Xeon's 1208 frames.
const SHAPES: [(usize, usize, usize, usize); 6] = [
    (2, 3, 77, 16),
    (1, 2, 5, 64),
    (2, 2, 65, 32),
    (1, 2, 300, 48),
    (2, 2, 131, 64),
    (1, 1, 1208, 64),
];

/// The scales of `q`: the softmax's `1/√dh`, a sharper 1.5, and 8 (weights below the
/// exponential's range).
fn scales(dh: usize) -> [f32; 3] {
    [1.0 / (dh as f32).sqrt(), 1.5, 8.0]
}

/// One hash per (shape, scale) of [`SHAPES`] × [`scales`] of `core`'s output bits.
fn attend_hashes(core: Core) -> Vec<u64> {
    let mut hashes = Vec::new();
    for (i, &(b, h, t, dh)) in SHAPES.iter().enumerate() {
        for scale in scales(dh) {
            let n = b * h * t * dh;
            let seed = 100 * i as u64;
            let q = inputs(n, seed + 1, (-scale, scale));
            let (k, v) = (inputs(n, seed + 2, (-1.0, 1.0)), inputs(n, seed + 3, (-1.0, 1.0)));
            hashes.push(fnv(core((b, h, t, dh), &q, &k, &v)));
        }
    }
    hashes
}

/// Row lengths around both vector widths, and the Xeon's 1208 frames.
const ROWS: [usize; 13] = [1, 7, 8, 9, 15, 16, 17, 33, 63, 64, 65, 1208, 1213];

/// One hash of a weights pass's weights and sums over rows of [`ROWS`] lengths whose scores
/// span 140 (some weights below the exponential's range).
fn weights_hash(weights_in_place: impl Fn(&mut [f32]) -> f32) -> u64 {
    let mut bits = Vec::new();
    for (i, len) in ROWS.into_iter().enumerate() {
        let mut row = inputs(len, 1000 + i as u64, (-120.0, 20.0));
        let sum = weights_in_place(&mut row);
        bits.extend(row);
        bits.push(sum);
    }
    fnv(bits)
}

/// One hash of a vector exponential over 4096 values in [−100, 88) and the edge cases, applied
/// by `exp` to `LANES`-wide chunks (the length is a multiple of 16).
fn exp_hash(exp: impl Fn(&mut [f32])) -> u64 {
    let mut xs = inputs(4096, 2000, (-100.0, 88.0));
    xs.extend([
        -87.0,
        -87.000_01,
        -86.999_99,
        0.0,
        -0.0,
        f32::NEG_INFINITY,
        f32::NAN,
        88.0,
        -126.0,
        1e-30,
        -1e-30,
        0.5,
        -0.5,
        f32::MIN_POSITIVE,
        -700.0,
        1.0,
    ]);
    assert_eq!(xs.len() % 16, 0);
    exp(&mut xs);
    fnv(xs)
}

/// The AVX2 core's [`attend_hashes`] before the cores were written once.
const AVX2_ATTEND: [u64; 18] = [
    0x139c352f9b30060c,
    0xd585895417eb8429,
    0xe66fb64574b819f9,
    0x0659eb92c74dc605,
    0xace4f119923189e3,
    0x013876c45db5b6a1,
    0x247e04c0bccb4c05,
    0xe46b9df1bdb74974,
    0x7d36fe7e88809d42,
    0xdc1d3d179a4ff932,
    0x1dbaf77a008e754e,
    0x0fc2fc30ffd0cc74,
    0x268a1dc282ea51cf,
    0x5673fcfcebc2300f,
    0xdb9bd2d274ec1cdb,
    0xcf69b925e731051a,
    0xeb3af330a7a09774,
    0x624ee38b5cd98c8b,
];
/// The AVX-512 core's [`attend_hashes`] before the cores were written once.
const AVX512_ATTEND: [u64; 18] = [
    0xc8f5fc4b14c1c8e0,
    0x4957e371cae7cee6,
    0xef55cd055ee9fa87,
    0x5ed1e21c1065f098,
    0x0fbfd75a516afe77,
    0x013876c45db5b6a1,
    0xbbb7320cb5dc3fec,
    0xbfb47fec07b76df2,
    0xf85cbd1a41928e96,
    0x8945608a225924e1,
    0x624efdd0cbaf8798,
    0xb554e5e8e6605840,
    0xb1c733aa60573d9f,
    0x85095d3752eb9d25,
    0x63b6095684c8247b,
    0x9eb0b2fdecd92a19,
    0xd7e7a426b48ef93f,
    0xc7f186b904e1dc44,
];
/// [`weights_hash`] of each core's weights pass before.
const AVX2_WEIGHTS: u64 = 0xc1be9cb692786d82;
const AVX512_WEIGHTS: u64 = 0x6de9eeb502a60d36;
/// [`exp_hash`] of both vector exponentials before (the same bits: [`super::exp_fast`] per
/// lane).
const EXP: u64 = 0xe74999c795c4cb17;

/// `exp` over `xs` a vector at a time.
fn exp_chunks<L: F32Lanes>(l: L, xs: &mut [f32]) {
    for c in xs.chunks_exact_mut(L::LANES) {
        // SAFETY: `c` holds LANES values.
        unsafe { l.store(c.as_mut_ptr(), blocked::exp(l, l.load(c.as_ptr()))) };
    }
}

/// [`exp_chunks`] compiled for AVX2 and FMA.
///
/// # Safety
/// The CPU has AVX2 and FMA.
#[target_feature(enable = "avx2,fma")]
unsafe fn exp_avx2(l: Avx2, xs: &mut [f32]) {
    exp_chunks(l, xs);
}

/// [`exp_chunks`] compiled for AVX-512F.
///
/// # Safety
/// The CPU has AVX512F.
#[target_feature(enable = "avx512f")]
unsafe fn exp_avx512(l: Avx512, xs: &mut [f32]) {
    exp_chunks(l, xs);
}

/// The AVX2 core, its weights pass and its exponential give the bits they gave before.
#[test]
fn the_avx2_core_keeps_its_bits() {
    let Some(l) = Avx2::new() else {
        cpu_or_skip(&["avx2", "fma"], false);
        return;
    };
    assert_eq!(attend_hashes(avx2::attend), AVX2_ATTEND, "attend");
    // SAFETY: the CPU has AVX2 and FMA (`l`).
    assert_eq!(weights_hash(|row| unsafe { avx2::weights_in_place(row) }), AVX2_WEIGHTS);
    // SAFETY: as above.
    assert_eq!(exp_hash(|xs| unsafe { exp_avx2(l, xs) }), EXP, "exp");
}

/// The AVX-512 core, its weights pass and its exponential give the bits they gave before.
#[test]
fn the_avx512_core_keeps_its_bits() {
    let Some(l) = Avx512::new() else {
        cpu_or_skip(&["avx512f"], false);
        return;
    };
    assert_eq!(attend_hashes(avx512::attend), AVX512_ATTEND, "attend");
    // SAFETY: the CPU has AVX512F (`l`).
    assert_eq!(weights_hash(|row| unsafe { avx512::weights_in_place(row) }), AVX512_WEIGHTS);
    // SAFETY: as above.
    assert_eq!(exp_hash(|xs| unsafe { exp_avx512(l, xs) }), EXP, "exp");
}
