//! Parity stage `e2e`: `CosyVoice3Model.tts(stream=False)` with greedy sampling — LM (with the
//! silent-run filter) → flow (NFE 10) → HiFT, through the three stages together.

use std::path::Path;

use anyhow::Context;
use candle::{DType, Device, Tensor};

use super::{Tensors, ids, input};
use lectern_model::config::{ModelConfig, ModelFiles};
use lectern_model::flow::{
    CausalMaskedDiffWithDiT, DEFAULT_NFE, FlowMatmul, FlowPrompt, NoiseSource,
};
use lectern_model::hift::Hift;
use lectern_model::lm::{GenerateOptions, LaneRequest, LmPrecision, SpeechLm};
use lectern_model::sampling::SamplingConfig;

pub fn run(
    model_dir: &Path,
    case: &Tensors,
    device: &Device,
    matmul: FlowMatmul,
    precision: LmPrecision,
) -> anyhow::Result<Tensors> {
    let cfg = ModelConfig::from_dir(model_dir)?;
    let files = ModelFiles::in_dir(model_dir);
    let lm = SpeechLm::from_dir(model_dir, precision, device)
        .with_context(|| format!("loading the LM from {}", model_dir.display()))?;
    let mut flow =
        CausalMaskedDiffWithDiT::load(&cfg.flow, &files.flow, device, &NoiseSource::Rebuilt)
            .with_context(|| format!("loading {}", files.flow.display()))?;
    flow.set_matmul(matmul)?;
    let mut hift = Hift::load(&files.hift, &cfg, device)
        .with_context(|| format!("loading {}", files.hift.display()))?;
    if let Some(buf) = case.get("buffer.sine_waves") {
        hift.set_noise_buffer(buf.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>()?);
    }

    let prompt_speech = ids(case, "prompt_speech_tokens")?;
    let mut req = LaneRequest::new(
        ids(case, "prompt_text_ids")?,
        ids(case, "text_ids")?,
        prompt_speech.clone(),
        0,
    );
    req.sampling = SamplingConfig::greedy();
    let generated = lm.generate(&[req], &GenerateOptions::default())?.remove(0);

    let prompt = FlowPrompt {
        prompt_token: prompt_speech,
        prompt_feat: input(case, "prompt_feat")?.to_dtype(DType::F32)?.to_device(device)?,
        embedding: input(case, "embedding")?.to_dtype(DType::F32)?.to_device(device)?,
    };
    let mel = flow.inference(&prompt, &generated.tokens, DEFAULT_NFE)?; // (1, 80, 2N)
    let speech = hift.forward(&mel)?;

    let cpu = Device::Cpu;
    let as_i64 = |v: &[u32]| v.iter().map(|&t| i64::from(t)).collect::<Vec<_>>();
    let mut out = Tensors::new();
    out.insert("llm.tokens".into(), Tensor::new(as_i64(&generated.lm_tokens), &cpu)?);
    let flow_tokens = as_i64(&generated.tokens);
    let n = flow_tokens.len();
    out.insert("flow.token".into(), Tensor::from_vec(flow_tokens, (1, n), &cpu)?);
    out.insert("flow.mel".into(), mel.to_device(&cpu)?);
    let len = speech.len();
    out.insert("tts_speech".into(), Tensor::from_vec(speech, (1, len), &cpu)?);
    Ok(out)
}
