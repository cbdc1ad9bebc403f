//! Voice files: round trip, the demo voice, and clear errors.

use std::path::Path;

use candle::{Device, Tensor};
use lectern_voice::{FORMAT_VERSION, Manifest, ModelSignature, Voice, VoiceError};

fn tiny_sig() -> ModelSignature {
    ModelSignature::from_model_dir(Path::new("../../fixtures/cosyvoice3-tiny-a/model")).unwrap()
}

fn manifest(name: &str) -> Manifest {
    Manifest {
        format_version: FORMAT_VERSION,
        name: name.into(),
        prompt_text: "A test prompt.".into(),
        model: tiny_sig(),
        source_wav: "test.wav".into(),
        sample_rate_hz: 24_000,
        created: "2026-11-29T00:00:00Z".into(),
        prompt_tokens: 0,
        prompt_mel_frames: 0,
        reference_seconds: None,
    }
}

fn sample_voice(name: &str) -> Voice {
    let dev = Device::Cpu;
    let tokens = Tensor::arange(0i64, 10, &dev).unwrap().reshape((1, 10)).unwrap();
    let mel = Tensor::randn(0f32, 1.0, (1, 25, 80), &dev).unwrap();
    let spk = Tensor::randn(0f32, 1.0, (1, 192), &dev).unwrap();
    Voice::from_prompt(manifest(name), &tokens, &mel, &spk).unwrap()
}

fn max_diff(a: &Tensor, b: &Tensor) -> f32 {
    let d = (a.to_dtype(candle::DType::F32).unwrap() - b.to_dtype(candle::DType::F32).unwrap())
        .unwrap();
    d.abs().unwrap().flatten_all().unwrap().max(0).unwrap().to_scalar().unwrap()
}

#[test]
fn alignment_rule_applied_on_creation() {
    let v = sample_voice("t");
    // 10 tokens, 25 frames → P = min(10, 12) = 10 tokens and 20 frames.
    assert_eq!(v.prompt_speech_tokens.dims(), [1, 10]);
    assert_eq!(v.prompt_mel.dims(), [1, 20, 80]);
    assert_eq!(v.speaker_embedding.dims(), [192]);
    assert_eq!((v.manifest.prompt_tokens, v.manifest.prompt_mel_frames), (10, 20));
}

#[test]
fn round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let v = sample_voice("round");
    v.save(&dir.path().join("round")).unwrap();
    let back = Voice::load_dir(&dir.path().join("round")).unwrap();
    assert_eq!(back.manifest, v.manifest);
    assert_eq!(max_diff(&back.prompt_speech_tokens, &v.prompt_speech_tokens), 0.0);
    assert_eq!(max_diff(&back.prompt_mel, &v.prompt_mel), 0.0);
    assert_eq!(max_diff(&back.speaker_embedding, &v.speaker_embedding), 0.0);
    let listed = lectern_voice::list(dir.path()).unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].name, "round");
}

#[test]
fn demo_voice_loads_for_the_tiny_model() {
    let v = Voice::load_dir(Path::new("../../voices/tiny-demo")).unwrap();
    assert_eq!(v.manifest.name, "tiny-demo");
    assert_eq!(v.prompt_speech_tokens.dims(), [1, 30]);
    assert_eq!(v.prompt_mel.dims(), [1, 60, 80]);
    assert_eq!(v.speaker_embedding.dims(), [192]);
    v.check_model(&tiny_sig()).unwrap();
    assert!((v.duration_s() - 1.2).abs() < 1e-9);
    assert!(v.describe().contains("tokens:       30"));
    // Same numbers as the fixture it was built from.
    let fx = candle::safetensors::load(
        "../../fixtures/cosyvoice3-tiny-a/flow.safetensors",
        &Device::Cpu,
    )
    .unwrap();
    assert_eq!(max_diff(&v.prompt_speech_tokens, &fx["prompt_token"]), 0.0);
    assert_eq!(max_diff(&v.prompt_mel, &fx["prompt_feat"]), 0.0);
    assert_eq!(max_diff(&v.speaker_embedding, &fx["embedding"].flatten_all().unwrap()), 0.0);
}

#[test]
fn voice_for_another_model_size_is_refused() {
    let v = Voice::load_dir(Path::new("../../voices/tiny-demo")).unwrap();
    let e = v.check_model(&ModelSignature::full_size()).unwrap_err();
    assert!(matches!(e, VoiceError::ModelMismatch { .. }));
    let msg = e.to_string();
    assert!(msg.contains("LM hidden 32") && msg.contains("LM hidden 896"), "{msg}");
}

#[test]
fn corrupt_files_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("v");
    sample_voice("v").save(&d).unwrap();
    // Garbage tensors.
    std::fs::write(d.join("prompt.safetensors"), b"not a safetensors file").unwrap();
    let e = Voice::load_dir(&d).unwrap_err();
    assert!(
        matches!(e, VoiceError::Corrupt { .. }) && e.to_string().contains("prompt.safetensors"),
        "{e}"
    );
    // Missing tensor file.
    std::fs::remove_file(d.join("prompt.safetensors")).unwrap();
    assert!(Voice::load_dir(&d).unwrap_err().to_string().contains("missing"));
    // Broken manifest.
    std::fs::write(d.join("voice.json"), "{ \"name\": ").unwrap();
    let e = Voice::load_dir(&d).unwrap_err();
    assert!(e.to_string().contains("voice.json"), "{e}");
}

#[test]
fn broken_alignment_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("v");
    let mut v = sample_voice("v");
    v.prompt_mel = v.prompt_mel.narrow(1, 0, 19).unwrap();
    v.manifest.prompt_mel_frames = 19;
    v.save(&d).unwrap();
    let e = Voice::load_dir(&d).unwrap_err();
    assert!(e.to_string().contains("alignment rule"), "{e}");
}

#[test]
fn rfc3339_formats_utc_dates() {
    assert_eq!(lectern_voice::rfc3339_utc(0), "1970-01-01T00:00:00Z");
    assert_eq!(lectern_voice::rfc3339_utc(951_782_400), "2000-02-29T00:00:00Z");
    assert_eq!(lectern_voice::rfc3339_utc(1_795_970_283), "2026-11-29T16:38:03Z");
}
