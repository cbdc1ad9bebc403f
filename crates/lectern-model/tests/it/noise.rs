//! The rebuilt fixed noise buffers against the upstream dumps.

use std::path::Path;

use candle::Device;
use lectern_model::noise;

fn fixture(name: &str) -> std::collections::HashMap<String, candle::Tensor> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures").join(name);
    candle::safetensors::load(path, &Device::Cpu).unwrap()
}

#[test]
fn flow_noise_matches_torch_randn_seed0() {
    let want = fixture("cfm_rand_noise.safetensors");
    let want = want.values().next().unwrap().flatten_all().unwrap().to_vec1::<f32>().unwrap();
    let got = noise::flow_noise();
    assert_eq!(got.len(), want.len());
    let max = got.iter().zip(&want).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
    // PyTorch's vectorised log/sin/cos may differ from libm by a few ulp (spec §10.2).
    assert!(max < 1e-5, "max abs diff {max}");
}

#[test]
fn hift_uniform_noise_matches_tiny_fixture_buffer() {
    // Tiny model A: flow dim 80, vocab 6561, spk 192, F0 cond channels 32, 9 harmonics.
    let offset = noise::hift_sine_word_offset(6561, 80, 192, 80, 32, 9);
    let want = fixture("cosyvoice3-tiny-a/hift.safetensors");
    let want = want["buffer.sine_waves"].flatten_all().unwrap().to_vec1::<f32>().unwrap();
    let got = noise::hift_uniform_noise(offset, want.len() / 9, 9);
    assert_eq!(got, want, "offset {offset}");
}
