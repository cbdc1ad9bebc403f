//! The HiFT vocoder against upstream `CausalHiFTGenerator.inference` (fixtures/…/hift.safetensors),
//! tested in layers (fixtures/README.md, "HiFT is the sensitive stage"): F0, then the source from
//! the *recorded* F0, then the decoder from the *recorded* source, then the whole vocoder.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use candle::{Device, Tensor};
use lectern_model::ModelError;
use lectern_model::config::ModelConfig;
use lectern_model::hift::Hift;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/cosyvoice3-tiny-a")
}

fn case() -> HashMap<String, Tensor> {
    candle::safetensors::load(root().join("hift.safetensors"), &Device::Cpu).unwrap()
}

fn model() -> Hift {
    let dir = root().join("model");
    let cfg = ModelConfig::from_dir(&dir).unwrap();
    Hift::load(&dir.join("hift.pt"), &cfg, &Device::Cpu).unwrap()
}

fn flat(t: &Tensor) -> Vec<f32> {
    t.flatten_all().unwrap().to_vec1::<f32>().unwrap()
}

fn max_abs(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0f32, f32::max)
}

fn max_rel(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).map(|(x, y)| (x - y).abs() / y.abs().max(1e-3)).fold(0f32, f32::max)
}

#[test]
fn f0_matches_in_float64() {
    let (case, hift) = (case(), model());
    let mel = &case["mel"];
    let f0 = hift.f0(mel, true).unwrap();
    let d = max_rel(&f0, &flat(&case["final.f0"]));
    eprintln!("final.f0 max rel diff {d:e}");
    assert!(d < 1e-5, "final.f0 max rel diff {d}");
    let f0 = hift.f0(mel, false).unwrap();
    let d = max_rel(&f0, &flat(&case["chunk.f0"]));
    eprintln!("chunk.f0 max rel diff {d:e}");
    assert!(d < 1e-5, "chunk.f0 max rel diff {d}");
}

#[test]
fn source_from_recorded_f0_matches() {
    let (case, hift) = (case(), model());
    let noise = flat(&case["buffer.sine_waves"]);
    for c in ["final", "chunk"] {
        let f0 = flat(&case[&format!("{c}.f0")]);
        let len = f0.len() * 480;
        let out = hift.source_with_noise(&f0, &noise[..len * 9], true);
        let sw = out.sine_waves.unwrap();
        let d = max_abs(&sw, &flat(&case[&format!("{c}.sine_waves")]));
        eprintln!("{c}.sine_waves max abs diff {d:e}");
        assert!(d < 1e-5, "{c}.sine_waves max abs diff {d}");
        let d = max_abs(&out.uv.unwrap(), &flat(&case[&format!("{c}.uv")]));
        assert_eq!(d, 0.0, "{c}.uv");
        let d = max_abs(&out.source, &flat(&case[&format!("{c}.source")]));
        eprintln!("{c}.source max abs diff {d:e}");
        assert!(d < 1e-5, "{c}.source max abs diff {d}");
    }
}

/// The source without taps runs its frames in parallel tasks (one second of audio each): the
/// same bits as the serial path that keeps the taps, over several tasks and a partial one,
/// voiced and unvoiced frames, and the fixture's own F0 within it.
#[test]
fn source_in_parallel_tasks_gives_the_serial_bits() {
    let (case, hift) = (case(), model());
    let recorded = flat(&case["final.f0"]);
    let frames = 3 * 50 + 17;
    // Uniform noise in [0, 1) (any values serve: both paths read the same rows).
    let mut state = 0x2545_f491_u32;
    let noise: Vec<f32> = (0..frames * 480 * 9)
        .map(|_| {
            state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (state >> 8) as f32 / (1u32 << 24) as f32
        })
        .collect();
    let f0: Vec<f32> = (0..frames)
        .map(|i| match i % 5 {
            0 => 0.0,
            1 => recorded[i % recorded.len()],
            _ => 80.0 + 3.7 * (i % 40) as f32,
        })
        .collect();
    let parallel = hift.source_with_noise(&f0, &noise, false);
    assert!(parallel.sine_waves.is_none() && parallel.uv.is_none());
    let serial = hift.source_with_noise(&f0, &noise, true);
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&parallel.source), bits(&serial.source));
}

#[test]
fn decoder_from_recorded_source_matches() {
    let (case, hift) = (case(), model());
    let mel = &case["mel"];
    let source = flat(&case["final.source"]);
    let speech = hift.decode(mel, &source, true, None).unwrap();
    assert_eq!(speech.len(), 480 * 100);
    let d = max_abs(&speech, &flat(&case["final.speech"]));
    eprintln!("final.speech from recorded source: max abs diff {d:e}");
    assert!(d < 1e-4, "final.speech from recorded source: max abs diff {d}");
    // The streaming chunk: 3 mel frames of F0 look-ahead, 4 of conv_pre look-ahead.
    let source = flat(&case["chunk.source"]);
    let speech = hift.decode(&mel.narrow(2, 0, 97).unwrap(), &source, false, None).unwrap();
    let d = max_abs(&speech, &flat(&case["chunk.speech"]));
    eprintln!("chunk.speech from recorded source: max abs diff {d:e}");
    assert!(d < 1e-4, "chunk.speech from recorded source: max abs diff {d}");
}

#[test]
fn whole_vocoder_matches_with_rebuilt_noise() {
    let (case, hift) = (case(), model());
    let mel = &case["mel"];
    let out = hift.inference(mel, true, None).unwrap();
    assert_eq!(out.speech.len(), 480 * 100);
    let d = max_abs(&out.speech, &flat(&case["final.speech"]));
    eprintln!("final.speech max abs diff {d:e}");
    assert!(d < 2e-3, "final.speech max abs diff {d}");
    let speech = hift.forward(mel).unwrap();
    assert_eq!(speech, out.speech);
    let out = hift.inference(mel, false, None).unwrap();
    let d = max_abs(&out.speech, &flat(&case["chunk.speech"]));
    eprintln!("chunk.speech max abs diff {d:e}");
    assert!(d < 2e-3, "chunk.speech max abs diff {d}");
}

#[test]
fn bad_mels_are_invalid_input() {
    let hift = model();
    let dev = Device::Cpu;
    let wrong_bins = Tensor::zeros((1, 79, 10), candle::DType::F32, &dev).unwrap();
    let empty = Tensor::zeros((1, 80, 0), candle::DType::F32, &dev).unwrap();
    let flat2d = Tensor::zeros((80, 10), candle::DType::F32, &dev).unwrap();
    let mut v = vec![0f32; 800];
    v[123] = f32::NAN;
    let nan = Tensor::from_vec(v, (1, 80, 10), &dev).unwrap();
    for mel in [wrong_bins, empty, flat2d, nan] {
        let err = hift.forward(&mel).unwrap_err();
        assert!(matches!(err, ModelError::InvalidInput(_)), "{err}");
    }
    let short = Tensor::zeros((1, 80, 5), candle::DType::F32, &dev).unwrap();
    assert!(matches!(hift.inference(&short, false, None), Err(ModelError::InvalidInput(_))));
}

#[test]
fn one_frame_gives_480_samples() {
    let hift = model();
    let mel = Tensor::zeros((1, 80, 1), candle::DType::F32, &Device::Cpu).unwrap();
    assert_eq!(hift.forward(&mel).unwrap().len(), 480);
}
