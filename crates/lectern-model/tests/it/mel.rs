//! The 24 kHz prompt log-mel against matcha's `mel_spectrogram` (fixtures/…/mel.safetensors).

use std::collections::HashMap;
use std::path::Path;

use candle::{Device, Tensor};
use lectern_model::{ModelError, mel};

fn case() -> HashMap<String, Tensor> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/cosyvoice3-tiny-a/mel.safetensors");
    candle::safetensors::load(path, &Device::Cpu).unwrap()
}

fn flat(t: &Tensor) -> Vec<f32> {
    t.flatten_all().unwrap().to_vec1::<f32>().unwrap()
}

fn max_abs(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0f32, f32::max)
}

#[test]
fn filter_bank_matches_librosa_slaney() {
    let case = case();
    let got: Vec<f32> = mel::mel_basis().iter().map(|&v| v as f32).collect();
    let d = max_abs(&got, &flat(&case["mel_basis"]));
    eprintln!("mel_basis max abs diff {d:e}");
    assert!(d < 1e-6, "mel_basis max abs diff {d}");
}

#[test]
fn hann_window_matches_torch() {
    let case = case();
    let got: Vec<f32> = mel::hann_window().iter().map(|&v| v as f32).collect();
    let d = max_abs(&got, &flat(&case["hann_window"]));
    // torch.hann_window evaluates the cosine in f32; ours is f64 rounded once.
    eprintln!("hann max abs diff {d:e}");
    assert!(d < 1e-6, "hann max abs diff {d}");
}

#[test]
fn log_mel_matches_matcha() {
    let case = case();
    for (wav, want) in [("wav", "mel"), ("short_wav", "short_mel")] {
        let (got, frames) = mel::log_mel_24k(&flat(&case[wav])).unwrap();
        assert_eq!(frames, case[want].dims()[2], "{want} frames");
        let d = max_abs(&got, &flat(&case[want]));
        eprintln!("{want} max abs diff {d:e}");
        assert!(d < 1e-4, "{want} max abs diff {d}");
    }
}

#[test]
fn too_short_or_nan_audio_is_invalid_input() {
    assert!(matches!(mel::log_mel_24k(&[]), Err(ModelError::InvalidInput(_))));
    let mut wav = vec![0.0f32; 4800];
    wav[100] = f32::INFINITY;
    assert!(matches!(mel::log_mel_24k(&wav), Err(ModelError::InvalidInput(_))));
}
