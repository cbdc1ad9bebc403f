//! Builds `voices/tiny-demo/` from the tiny fixture's flow inputs (`prompt_token` [1,30],
//! `prompt_feat` [1,60,80], `embedding` [1,192] in fixtures/cosyvoice3-tiny-a/flow.safetensors).
//!
//! `cargo run --example make_tiny_voice [OUT_DIR]` — deterministic; the result is committed.

use std::path::{Path, PathBuf};

use lectern_voice::{FORMAT_VERSION, Manifest, ModelSignature, Voice};

fn main() -> anyhow::Result<()> {
    let out =
        std::env::args().nth(1).map_or_else(|| PathBuf::from("voices/tiny-demo"), PathBuf::from);
    let fixture = Path::new("fixtures/cosyvoice3-tiny-a/flow.safetensors");
    let ts = candle::safetensors::load(fixture, &candle::Device::Cpu)?;
    let get =
        |k: &str| ts.get(k).cloned().ok_or_else(|| anyhow::anyhow!("{k} missing in {fixture:?}"));
    let model = ModelSignature::from_model_dir(Path::new("fixtures/cosyvoice3-tiny-a/model"))?;
    let manifest = Manifest {
        format_version: FORMAT_VERSION,
        name: "tiny-demo".into(),
        prompt_text: "Hello, this is the tiny demo voice.".into(),
        model,
        source_wav:
            "fixtures/cosyvoice3-tiny-a/flow.safetensors (prompt_token, prompt_feat, embedding)"
                .into(),
        sample_rate_hz: 24_000,
        created: "2026-11-29T00:00:00Z".into(),
        prompt_tokens: 0,
        prompt_mel_frames: 0,
        reference_seconds: None,
    };
    let voice = Voice::from_prompt(
        manifest,
        &get("prompt_token")?,
        &get("prompt_feat")?,
        &get("embedding")?,
    )?;
    voice.save(&out)?;
    println!("wrote {} ({} tokens)", out.display(), voice.manifest.prompt_tokens);
    Ok(())
}
