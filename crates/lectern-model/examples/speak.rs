//! Speaks one line with CosyVoice3: text → speech tokens (LM) → mel (flow) → 24 kHz WAV (HiFT).
//!
//! ```text
//! cargo run -p lectern-model --example speak -- MODEL_DIR VOICE_DIR "Text to say." out.wav
//! # on the bundled tiny random-weight model (noise, but every stage runs):
//! cargo run -p lectern-model --example speak -- \
//!     fixtures/cosyvoice3-tiny-a/model voices/tiny-demo "Hello there." /tmp/hello.wav
//! ```
//!
//! `MODEL_DIR` is an upstream CosyVoice3 model directory (`llm.pt`, `flow.pt`, `hift.pt`,
//! `CosyVoice-BlankEN/`); `VOICE_DIR` a Lectern voice (`voice.json` with the prompt's
//! transcript, `prompt.safetensors` with its speech tokens, mel and speaker embedding, as
//! `lectern voice add` makes them). The text goes to the tokenizer as given: Lectern's text
//! frontend (`lectern-text`) would normalise numbers and split long text into segments first.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use candle::{DType, Device, Tensor};
use lectern_model::config::{ModelConfig, ModelFiles, SAMPLE_RATE_HZ};
use lectern_model::flow::{CausalMaskedDiffWithDiT, FlowPrompt, NoiseSource};
use lectern_model::hift::Hift;
use lectern_model::lm::{GenerateOptions, LaneRequest, LmPrecision, SpeechLm};
use lectern_text::Tokenizer;

/// Flow steps (upstream's default).
const NFE: usize = 10;
/// The LM's sampling seed: the same seed gives the same speech tokens.
const SEED: u64 = 0;

/// A voice prompt as the three stages take it.
struct VoicePrompt {
    transcript: String,
    speech_tokens: Vec<u32>,
    mel: Tensor,
    speaker_embedding: Tensor,
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [model_dir, voice_dir, text, out] = args.as_slice() else {
        bail!("usage: speak MODEL_DIR VOICE_DIR TEXT OUT.wav");
    };
    let (model_dir, voice_dir) = (Path::new(model_dir), Path::new(voice_dir));
    let device = Device::Cpu;

    let cfg = ModelConfig::from_dir(model_dir)?;
    let files = ModelFiles::in_dir(model_dir);
    let tokenizer = Tokenizer::from_model_dir(model_dir)?;
    let voice = load_voice(voice_dir, &device)?;

    // 1. LM: text ids after the prompt's → speech tokens (25 per second).
    let lm = SpeechLm::from_dir(model_dir, LmPrecision::F32, &device)?;
    let request = LaneRequest::new(
        tokenizer.prompt_ids(&voice.transcript)?,
        tokenizer.encode(text)?,
        voice.speech_tokens.clone(),
        SEED,
    );
    let generated = lm.generate(&[request], &GenerateOptions::default())?;
    let tokens = &generated[0].tokens;
    if tokens.is_empty() {
        bail!("the LM stopped at once: no speech tokens for {text:?}");
    }

    // 2. Flow: speech tokens → 80-bin mel (50 frames per second), conditioned on the voice.
    let flow =
        CausalMaskedDiffWithDiT::load(&cfg.flow, &files.flow, &device, &NoiseSource::Rebuilt)?;
    let prompt = FlowPrompt {
        prompt_token: voice.speech_tokens,
        prompt_feat: voice.mel,
        embedding: voice.speaker_embedding,
    };
    let mel = flow.decode_group(&prompt, &[tokens], NFE)?.remove(0);

    // 3. Vocoder: mel → 24 kHz samples.
    let hift = Hift::load(&files.hift, &cfg, &device)?;
    let samples = hift.forward(&mel)?;

    write_wav(Path::new(out), &samples)?;
    println!(
        "{} speech tokens, {} mel frames, {:.2} s of audio → {out}",
        tokens.len(),
        mel.dim(2)?,
        samples.len() as f64 / f64::from(SAMPLE_RATE_HZ)
    );
    Ok(())
}

fn load_voice(dir: &Path, device: &Device) -> Result<VoicePrompt> {
    let manifest_path = dir.join("voice.json");
    let manifest: serde_json::Value = serde_json::from_slice(
        &std::fs::read(&manifest_path).with_context(|| manifest_path.display().to_string())?,
    )
    .with_context(|| manifest_path.display().to_string())?;
    let transcript = manifest["prompt_text"]
        .as_str()
        .with_context(|| format!("{}: no `prompt_text`", manifest_path.display()))?
        .to_string();
    let tensors_path: PathBuf = dir.join("prompt.safetensors");
    let mut tensors = candle::safetensors::load(&tensors_path, device)
        .with_context(|| tensors_path.display().to_string())?;
    let mut take = |name: &str| {
        tensors
            .remove(name)
            .with_context(|| format!("{}: no tensor `{name}`", tensors_path.display()))
    };
    let speech_tokens = take("prompt_speech_tokens")?
        .flatten_all()?
        .to_dtype(DType::I64)?
        .to_vec1::<i64>()?
        .into_iter()
        .map(|t| u32::try_from(t).context("a negative prompt speech token"))
        .collect::<Result<_>>()?;
    Ok(VoicePrompt {
        transcript,
        speech_tokens,
        mel: take("prompt_mel")?,
        speaker_embedding: take("speaker_embedding")?.reshape((1, ()))?,
    })
}

fn write_wav(path: &Path, samples: &[f32]) -> Result<()> {
    let spec = hound::WavSpec {
        channels: 1,
        sample_rate: SAMPLE_RATE_HZ,
        bits_per_sample: 32,
        sample_format: hound::SampleFormat::Float,
    };
    let mut wav =
        hound::WavWriter::create(path, spec).with_context(|| path.display().to_string())?;
    for &s in samples {
        wav.write_sample(s)?;
    }
    wav.finalize()?;
    Ok(())
}
