//! Lectern's CPU kernels for the DiT against the model's own candle formulation of the same
//! math (`dit`): the fused attention core against the materialised scores, the fused
//! elementwise passes against candle's ops.

use candle::{Device, Tensor};
use lectern_kernels::attention::{QUERY_BLOCK, attend, attend_portable};
use lectern_kernels::elementwise::{mish, modulate, qkv_bias_rope};
use lectern_test_support::tensors::{max_abs_diff, seeded_unit};

use super::FlowMatmul;
use super::dit::{self, attend_materialised};

/// `seeded_unit` for `(b, h, t, dh)` heads.
fn seeded_heads(shape: (usize, usize, usize, usize), seed: u64, scale: f32) -> Tensor {
    seeded_unit(&[shape.0, shape.1, shape.2, shape.3], seed, scale)
}

/// Values uniform in [−1, 1) times `scale`.
fn seeded(shape: &[usize], seed: u64, scale: f32) -> Tensor {
    (lectern_test_support::tensors::seeded(shape, seed) * f64::from(scale)).unwrap()
}

#[test]
fn matches_the_materialised_path() {
    // t not a multiple of the query block, and one head count as in the real DiT.
    let shapes = [(2, 3, 77, 16), (1, 2, 5, 64), (2, 16, QUERY_BLOCK + 1, 64)];
    for &(b, h, t, dh) in &shapes {
        // As in the DiT: q carries 1/√dh, so scores have unit scale.
        let d = deviation((b, h, t, dh), 1.0 / (dh as f32).sqrt());
        assert!(d < 2e-6, "(b {b}, h {h}, t {t}, dh {dh}) unit scores: max |Δ| {d:e}");
        // Unscaled q: scores of ±20 and more, a nearly one-hot softmax (rounding grows with
        // the scores).
        let d = deviation((b, h, t, dh), 1.5);
        assert!(d < 1e-5, "(b {b}, h {h}, t {t}, dh {dh}) peaked scores: max |Δ| {d:e}");
    }
}

#[test]
fn non_contiguous_inputs_are_accepted() {
    let x = seeded_heads((2, 9, 4, 8), 99, 1.0); // (b, t, h, dh)
    let q = x.transpose(1, 2).unwrap(); // (b, h, t, dh) view
    let fused = attend(&q, &q, &q).unwrap();
    let qc = q.contiguous().unwrap(); // candle's batched matmul wants contiguous heads
    let reference = attend_materialised(&qc, &qc, &qc, FlowMatmul::F32, true).unwrap();
    assert!(max_abs_diff(&fused, &reference) < 1e-5);
}

/// Largest |fused − materialised| over a few seeds, for [`attend`] (the AVX-512 core where
/// the CPU has it) and for the portable core. The paths run the same f32 arithmetic in
/// different orders (gemm blocking, exp within 2 ulp, the division before or after `P·V`),
/// so they differ by rounding, which grows with the size of the scores.
fn deviation(shape: (usize, usize, usize, usize), q_scale: f32) -> f32 {
    let mut worst = 0f32;
    for seed in 0..4 {
        let q = seeded_heads(shape, 3 * seed, q_scale);
        let (k, v) =
            (seeded_heads(shape, 3 * seed + 1, 1.0), seeded_heads(shape, 3 * seed + 2, 1.0));
        let reference = attend_materialised(&q, &k, &v, FlowMatmul::F32, true).unwrap();
        for fused in [attend(&q, &k, &v).unwrap(), attend_portable(&q, &k, &v).unwrap()] {
            assert_eq!(fused.dims(), reference.dims());
            worst = worst.max(max_abs_diff(&fused, &reference));
        }
    }
    worst
}

#[test]
fn modulate_matches_candles_ops() {
    let (b, t, dim) = (2, 37, 96);
    let x = (seeded(&[b, t, dim], 1, 1.0) + 3.0).unwrap(); // a mean far from zero
    let m = seeded(&[b, 2 * dim], 2, 0.5);
    let (scale, shift) = (m.narrow(1, 0, dim).unwrap(), m.narrow(1, dim, dim).unwrap());
    let got = modulate(&x, &scale, &shift, 1e-6).unwrap();
    let want = dit::modulate(&x, &scale, &shift, false).unwrap();
    let d = max_abs_diff(&got, &want);
    assert!(d < 2e-6, "modulate: max |Δ| {d:e}");
}

#[test]
fn mish_matches_the_dits_mish() {
    let x = seeded(&[2, 16, 37], 13, 30.0);
    let want = dit::mish(&x).unwrap();
    let d = max_abs_diff(&mish(&x).unwrap(), &want);
    assert!(d < 2e-5, "mish over a tensor of ±30: max |Δ| {d:e}");
}

#[test]
fn qkv_matches_candles_path() {
    let (b, t, h, dh) = (2, 9, 3, 8);
    let qkv = seeded(&[b, t, 3 * h * dh], 9, 1.0);
    let bias = seeded(&[3 * h * dh], 10, 1.0);
    let inv_freq: Vec<f32> =
        (0..dh / 2).map(|j| 10000f32.powf(-2.0 * j as f32 / dh as f32)).collect();
    let rope = dit::Rope::new(&inv_freq, t, &Device::Cpu).unwrap();
    let (q, k, v) = qkv_bias_rope(&qkv, &bias, &rope.cos_sin, h).unwrap();
    // candle's path, as `Attention::qkv` runs it without these ops.
    let x = qkv.broadcast_add(&bias).unwrap();
    let x = x.reshape((b, t, 3, h, dh)).unwrap().permute((2, 0, 3, 1, 4)).unwrap();
    let x = x.contiguous().unwrap();
    let (cq, ck, cv) = (x.get(0).unwrap(), x.get(1).unwrap(), x.get(2).unwrap());
    for xs in [&cq, &ck] {
        let head0 = xs.narrow(1, 0, 1).unwrap().contiguous().unwrap();
        let r = candle_nn::rotary_emb::rope_i(&head0, &rope.cos().unwrap(), &rope.sin().unwrap())
            .unwrap();
        xs.slice_set(&r, 1, 0).unwrap();
    }
    assert_eq!(max_abs_diff(&q, &cq), 0.0);
    assert_eq!(max_abs_diff(&k, &ck), 0.0);
    assert_eq!(max_abs_diff(&v, &cv), 0.0);
}
