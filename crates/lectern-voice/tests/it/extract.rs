//! The whole zero-shot frontend against upstream's `frontend_zero_shot` output
//! (fixtures/voice-prompt/frontend_zero_shot.safetensors): the fixture's reference recording,
//! the two stand-in ONNX models, and the resulting voice — tokens identical, prompt mel within
//! 5e-4, speaker embedding within 1e-5 (the tolerances of fixtures/voice-prompt/README.md).

use std::collections::HashMap;
use std::path::Path;

use candle::{DType, Device, Tensor};
use lectern_voice::extract::{PromptModels, VoiceInfo, build_voice, extract_features};
use lectern_voice::reference::load_reference;
use lectern_voice::{ModelSignature, Voice};

const DIR: &str = "../../fixtures/voice-prompt";
const TINY_MODEL: &str = "../../fixtures/cosyvoice3-tiny-a/model";
const TRANSCRIPT: &str = "The quick brown fox jumps over the lazy dog, while seven little birds \
                          sing a happy song in the morning sun.";

fn fixture(file: &str) -> HashMap<String, Tensor> {
    candle::safetensors::load(Path::new(DIR).join(file), &Device::Cpu).expect(file)
}

fn f32s(t: &Tensor) -> Vec<f32> {
    t.to_dtype(DType::F32).unwrap().flatten_all().unwrap().to_vec1().unwrap()
}

fn i64s(t: &Tensor) -> Vec<i64> {
    t.to_dtype(DType::I64).unwrap().flatten_all().unwrap().to_vec1().unwrap()
}

fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
}

fn fixture_voice() -> (Voice, usize, usize) {
    let reference = load_reference(&Path::new(DIR).join("prompt.wav")).expect("reference");
    let models = PromptModels::load(Path::new(TINY_MODEL)).expect("stand-in models");
    let features = extract_features(&reference, &models).expect("features");
    let info = VoiceInfo {
        name: "fox".into(),
        prompt_text: TRANSCRIPT.into(),
        model: ModelSignature::from_model_dir(Path::new(TINY_MODEL)).unwrap(),
        created: "2026-11-29T00:00:00Z".into(),
    };
    let (p0, t_mel) = (features.speech_tokens.len(), features.mel_frames);
    (build_voice(&features, &reference, info).expect("voice"), p0, t_mel)
}

#[test]
fn frontend_zero_shot_matches_upstream() {
    let expected = fixture("frontend_zero_shot.safetensors");
    let (voice, p0, t_mel) = fixture_voice();
    // Before the cut: the tokenizer's 166 tokens, 331 mel frames; the mel side limits (P = 165).
    assert_eq!((p0, t_mel), (166, 331));
    assert_eq!(
        i64s(&voice.prompt_speech_tokens),
        i64s(&expected["llm_prompt_speech_token"]),
        "prompt speech tokens"
    );
    assert_eq!(i64s(&expected["llm_prompt_speech_token_len"]), vec![165]);
    assert_eq!(voice.manifest.prompt_tokens, 165);
    assert_eq!(voice.prompt_mel.dims(), &[1, 330, 80]);
    assert_eq!(voice.manifest.prompt_mel_frames, 330);

    let mel_dev = max_abs_diff(&f32s(&voice.prompt_mel), &f32s(&expected["prompt_speech_feat"]));
    eprintln!("prompt mel max |Δ| = {mel_dev:.3e}");
    assert!(mel_dev <= 5e-4, "prompt mel deviates by {mel_dev}");

    let spk_dev = max_abs_diff(&f32s(&voice.speaker_embedding), &f32s(&expected["llm_embedding"]));
    eprintln!("speaker embedding max |Δ| = {spk_dev:.3e}");
    assert!(spk_dev <= 1e-5, "speaker embedding deviates by {spk_dev}");
    // LLM and flow fields alias upstream: one tensor each serves both here.
    assert_eq!(i64s(&expected["flow_prompt_speech_token"]), i64s(&voice.prompt_speech_tokens));
    assert_eq!(f32s(&expected["flow_embedding"]), f32s(&expected["llm_embedding"]));
}

#[test]
fn extracted_voice_round_trips_and_fits_the_tiny_model() {
    let (voice, _, _) = fixture_voice();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("fox");
    voice.save(&dir).unwrap();
    let loaded = Voice::load_dir(&dir).expect("reload");
    assert_eq!(i64s(&loaded.prompt_speech_tokens), i64s(&voice.prompt_speech_tokens));
    assert_eq!(f32s(&loaded.prompt_mel), f32s(&voice.prompt_mel));
    assert_eq!(loaded.manifest.prompt_text, TRANSCRIPT);
    let secs = loaded.manifest.reference_seconds.expect("reference length recorded");
    assert!((secs - 146_221.0 / 22_050.0).abs() < 1e-9, "{secs}");
    assert_eq!(loaded.manifest.sample_rate_hz, 22_050);
    loaded.check_model(&ModelSignature::from_model_dir(Path::new(TINY_MODEL)).unwrap()).unwrap();
}

#[test]
fn a_model_directory_without_the_onnx_models_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let err = PromptModels::load(tmp.path()).err().expect("no models").to_string();
    assert!(err.contains("speech_tokenizer_v3.onnx"), "{err}");
    assert!(err.contains(&tmp.path().display().to_string()), "{err}");
}
