//! Seeded random tensors for the unit tests.

use candle::{Device, Tensor};

/// A CPU f32 tensor of `shape`, values uniform in [−1, 1), reproducible from `seed`.
pub fn seeded(shape: &[usize], seed: u64) -> Tensor {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let n: usize = shape.iter().product();
    let data: Vec<f32> = (0..n).map(|_| rng.gen_range(-1.0f32..1.0)).collect();
    Tensor::from_vec(data, shape, &Device::Cpu).unwrap()
}
