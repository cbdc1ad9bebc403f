//! Seeded random tensors for the tests, and how far two tensors are apart.

use candle::{Device, Tensor};

/// A CPU f32 tensor of `shape`, values uniform in [−1, 1), reproducible from `seed`.
pub fn seeded(shape: &[usize], seed: u64) -> Tensor {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let n: usize = shape.iter().product();
    let data: Vec<f32> = (0..n).map(|_| rng.gen_range(-1.0f32..1.0)).collect();
    Tensor::from_vec(data, shape, &Device::Cpu).unwrap()
}

/// A CPU f32 tensor of `shape`, values of unit variance (uniform on ±√3) times `scale`,
/// reproducible from `seed`: attention inputs whose scores have a known scale.
pub fn seeded_unit(shape: &[usize], seed: u64, scale: f32) -> Tensor {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let n: usize = shape.iter().product();
    let a = 3f32.sqrt();
    let data: Vec<f32> = (0..n).map(|_| scale * rng.gen_range(-a..a)).collect();
    Tensor::from_vec(data, shape, &Device::Cpu).unwrap()
}

/// The largest |a − b| over two equally shaped tensors, compared in f32.
pub fn max_abs_diff(a: &Tensor, b: &Tensor) -> f32 {
    assert_eq!(a.dims(), b.dims());
    let f32 = |t: &Tensor| t.to_dtype(candle::DType::F32).unwrap();
    let d = (f32(a) - f32(b)).unwrap();
    d.abs().unwrap().flatten_all().unwrap().max(0).unwrap().to_scalar::<f32>().unwrap()
}
