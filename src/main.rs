//! The `lectern` binary: parse arguments, dispatch. No logic lives here, apart from the demo
//! model and voice the binary carries (see `lectern::assets`).

use clap::Parser;
use lectern::assets::EmbeddedFile;

macro_rules! embed {
    ($path:literal, $src:literal) => {
        EmbeddedFile { path: $path, bytes: include_bytes!($src) }
    };
}

/// The tiny random-weight demo model (~34 MB, mostly the LM's 151,936-row text embedding and
/// the Qwen2 vocabulary) and its demo voice, written to the data directory on first use. The
/// model gets the real Qwen2 BPE (`fixtures/qwen2-tokenizer`) beside its config, so the demo
/// segments and counts tokens exactly as a real CosyVoice3 model directory does; the fixture
/// model itself has none (its parity goldens use the byte fallback).
static DEMO: &[EmbeddedFile] = &[
    embed!("model/tiny.json", "../fixtures/cosyvoice3-tiny-a/model/tiny.json"),
    embed!("model/llm.pt", "../fixtures/cosyvoice3-tiny-a/model/llm.pt"),
    embed!("model/flow.pt", "../fixtures/cosyvoice3-tiny-a/model/flow.pt"),
    embed!("model/hift.pt", "../fixtures/cosyvoice3-tiny-a/model/hift.pt"),
    embed!("model/campplus.onnx", "../fixtures/cosyvoice3-tiny-a/model/campplus.onnx"),
    embed!(
        "model/speech_tokenizer_v3.onnx",
        "../fixtures/cosyvoice3-tiny-a/model/speech_tokenizer_v3.onnx"
    ),
    embed!(
        "model/CosyVoice-BlankEN/config.json",
        "../fixtures/cosyvoice3-tiny-a/model/CosyVoice-BlankEN/config.json"
    ),
    embed!("model/CosyVoice-BlankEN/vocab.json", "../fixtures/qwen2-tokenizer/vocab.json"),
    embed!("model/CosyVoice-BlankEN/merges.txt", "../fixtures/qwen2-tokenizer/merges.txt"),
    embed!(
        "model/CosyVoice-BlankEN/tokenizer_config.json",
        "../fixtures/qwen2-tokenizer/tokenizer_config.json"
    ),
    embed!("voices/tiny-demo/voice.json", "../voices/tiny-demo/voice.json"),
    embed!("voices/tiny-demo/prompt.safetensors", "../voices/tiny-demo/prompt.safetensors"),
];

fn main() -> std::process::ExitCode {
    // Before any thread starts: the engine's large tensors reuse freed memory (`memory`).
    lectern::memory::keep_freed_memory();
    // Before any thread starts and before OpenBLAS loads: its thread count and core (`cpu_blas`).
    lectern_kernels::gemm::blas::prepare_environment();
    lectern::assets::register_demo(DEMO);
    let cli = lectern::cli::Cli::parse();
    match lectern::cli::run(cli) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
