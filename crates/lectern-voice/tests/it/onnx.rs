//! The prompt ONNX models under Lectern's interpreter vs ONNX Runtime (fixtures/voice-prompt).
//!
//! Run with `--nocapture` to see the measured deviations and per-call wall times.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Instant;

use candle::{Device, Tensor};
use lectern_voice::onnx::{OnnxError, SpeakerEncoder, SpeechTokenizer};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/voice-prompt").join(name)
}

fn load(name: &str) -> HashMap<String, Tensor> {
    candle::safetensors::load(fixture(name), &Device::Cpu).unwrap()
}

/// A fixture tensor flattened row-major, as f32.
fn f32s(tensors: &HashMap<String, Tensor>, key: &str) -> (Vec<usize>, Vec<f32>) {
    let t = &tensors[key];
    (t.dims().to_vec(), t.flatten_all().unwrap().to_vec1::<f32>().unwrap())
}

fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
}

/// The CAM++ fixture input: (661 frames, 80) row-major.
fn campplus_input() -> (usize, Vec<f32>) {
    let (dims, data) = f32s(&load("features.safetensors"), "campplus_input");
    assert_eq!(dims, [1, 661, 80]);
    (dims[1], data)
}

#[test]
fn tokens_match_onnx_runtime_exactly() {
    let t0 = Instant::now();
    let tokenizer = SpeechTokenizer::load(&fixture("speech_tokenizer_v3_tiny.onnx")).unwrap();
    let load_s = t0.elapsed().as_secs_f64();
    let (dims, feats) = f32s(&load("features.safetensors"), "whisper_logmel");
    assert_eq!(dims, [1, 128, 663]);
    let t1 = Instant::now();
    let tokens = tokenizer.tokens(&feats, dims[2]).unwrap();
    let call_s = t1.elapsed().as_secs_f64();
    let expected = load("model_outputs.safetensors")["tokens"]
        .flatten_all()
        .unwrap()
        .to_vec1::<i32>()
        .unwrap();
    assert_eq!(expected.len(), 166);
    let expected: Vec<i64> = expected.into_iter().map(i64::from).collect();
    let differing = tokens.iter().zip(&expected).filter(|(a, b)| a != b).count();
    eprintln!(
        "tokenizer: load {load_s:.3} s, tokens() on T=663 {call_s:.3} s; {} tokens, {differing} differ",
        tokens.len()
    );
    assert_eq!(tokens, expected);
}

/// Both CAM++ exports must give ORT's embedding (divide-by-kernel pooling), not PyTorch's.
fn check_embedding(file: &str) {
    let t0 = Instant::now();
    let encoder = SpeakerEncoder::load(&fixture(file)).unwrap();
    let load_s = t0.elapsed().as_secs_f64();
    let (frames, fbank) = campplus_input();
    let t1 = Instant::now();
    let embedding = encoder.embed(&fbank, frames).unwrap();
    let call_s = t1.elapsed().as_secs_f64();
    let outputs = load("model_outputs.safetensors");
    let (_, ort) = f32s(&outputs, "embedding");
    let (_, pytorch) = f32s(&outputs, "embedding_pytorch");
    let vs_ort = max_abs_diff(&embedding, &ort);
    let vs_pytorch = max_abs_diff(&embedding, &pytorch);
    eprintln!(
        "{file}: load {load_s:.3} s, embed() on 661 frames {call_s:.3} s; \
         max |ours − ORT| = {vs_ort:.3e}, max |ours − PyTorch| = {vs_pytorch:.3e}"
    );
    assert_eq!(embedding.len(), 192);
    assert!(vs_ort <= 1e-5, "{file}: max |ours − ORT| = {vs_ort}");
    assert!(vs_pytorch > 1e-3, "{file}: matched PyTorch's pooling ({vs_pytorch})");
}

#[test]
fn embedding_matches_onnx_runtime_opset11() {
    check_embedding("campplus_tiny.onnx");
}

#[test]
fn embedding_matches_onnx_runtime_opset17() {
    check_embedding("campplus_tiny_opset17.onnx");
}

/// ⌈Tk/2⌉ = 300: every pooling window is whole, the case where no padding is added at all.
#[test]
fn embedding_runs_when_pool_windows_are_whole() {
    let encoder = SpeakerEncoder::load(&fixture("campplus_tiny.onnx")).unwrap();
    let (_, fbank) = campplus_input();
    for frames in [599usize, 600] {
        assert_eq!(frames.div_ceil(2) % 100, 0);
        let embedding = encoder.embed(&fbank[..frames * 80], frames).unwrap();
        assert_eq!(embedding.len(), 192);
        assert!(embedding.iter().all(|v| v.is_finite()), "{frames} frames");
    }
}

/// A take shorter than one 100-frame context window (the app measures every take, some under a
/// second): ceil mode makes it one window, divided by the kernel size as in ONNX Runtime.
#[test]
fn embedding_runs_on_a_take_shorter_than_a_pool_window() {
    let encoder = SpeakerEncoder::load(&fixture("campplus_tiny.onnx")).unwrap();
    let (_, fbank) = campplus_input();
    for frames in [11usize, 61, 150] {
        assert!(frames.div_ceil(2) < 100);
        let embedding = encoder.embed(&fbank[..frames * 80], frames).unwrap();
        assert_eq!(embedding.len(), 192);
        assert!(embedding.iter().all(|v| v.is_finite()), "{frames} frames");
    }
}

/// 30 s of audio: the longest prompt upstream accepts. Reports the per-call times.
#[test]
fn thirty_second_inputs_run() {
    let tokenizer = SpeechTokenizer::load(&fixture("speech_tokenizer_v3_tiny.onnx")).unwrap();
    let (_, logmel) = f32s(&load("features.safetensors"), "whisper_logmel");
    let frames = 3000; // ⌊480 000 / 160⌋
    // (128, 663) rows tiled along time to (128, 3000).
    let feats: Vec<f32> =
        logmel.chunks(663).flat_map(|row| (0..frames).map(move |t| row[t % 663])).collect();
    let t0 = Instant::now();
    let tokens = tokenizer.tokens(&feats, frames).unwrap();
    let tok_s = t0.elapsed().as_secs_f64();
    assert_eq!(tokens.len(), frames.div_ceil(2).div_ceil(2));
    assert!(tokens.iter().all(|&t| (0..6561).contains(&t)));

    let encoder = SpeakerEncoder::load(&fixture("campplus_tiny.onnx")).unwrap();
    let (_, fbank) = campplus_input();
    let tk = 1 + (480_000 - 400) / 160;
    let input: Vec<f32> = (0..tk * 80).map(|i| fbank[i % fbank.len()]).collect();
    let t1 = Instant::now();
    let embedding = encoder.embed(&input, tk).unwrap();
    let emb_s = t1.elapsed().as_secs_f64();
    assert_eq!(embedding.len(), 192);
    assert!(embedding.iter().all(|v| v.is_finite()));
    eprintln!("30 s input: tokens() T=3000 {tok_s:.3} s; embed() Tk={tk} {emb_s:.3} s");
}

fn assert_names_file(err: &OnnxError, file: &std::path::Path, what: &str) {
    let msg = err.to_string();
    eprintln!("{what}: {msg}");
    assert!(msg.contains(&file.display().to_string()), "{what}: {msg}");
}

#[test]
fn missing_file_is_named() {
    let path = fixture("no_such_model.onnx");
    let err = SpeechTokenizer::load(&path).err().unwrap();
    assert!(matches!(err, OnnxError::Io { .. }), "{err:?}");
    assert_names_file(&err, &path, "missing tokenizer");
    let err = SpeakerEncoder::load(&path).err().unwrap();
    assert_names_file(&err, &path, "missing campplus");
}

#[test]
fn text_file_is_not_onnx() {
    let path = fixture("README.md");
    let err = SpeakerEncoder::load(&path).err().unwrap();
    assert!(matches!(err, OnnxError::NotOnnx { .. }), "{err:?}");
    assert_names_file(&err, &path, "text file");
}

#[test]
fn swapped_models_are_refused() {
    let campplus = fixture("campplus_tiny.onnx");
    let err = SpeechTokenizer::load(&campplus).err().unwrap();
    assert!(matches!(err, OnnxError::Signature { .. }), "{err:?}");
    assert_names_file(&err, &campplus, "campplus as tokenizer");

    let tokenizer = fixture("speech_tokenizer_v3_tiny.onnx");
    let err = SpeakerEncoder::load(&tokenizer).err().unwrap();
    assert!(matches!(err, OnnxError::Signature { .. }), "{err:?}");
    assert_names_file(&err, &tokenizer, "tokenizer as campplus");
}

#[test]
fn wrong_input_length_is_refused() {
    let encoder = SpeakerEncoder::load(&fixture("campplus_tiny.onnx")).unwrap();
    let err = encoder.embed(&[0.0; 79], 1).err().unwrap();
    assert!(matches!(err, OnnxError::Input { .. }), "{err:?}");
}
