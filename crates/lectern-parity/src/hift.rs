//! Parity stages `hift` (the vocoder on a case's mel, with the case's recorded noise buffer) and
//! `mel` (the 24 kHz prompt log-mel).
use std::path::Path;

use anyhow::Context;
use candle::{DType, Device, Tensor};

use super::{Tensors, input};
use lectern_model::config::{ModelConfig, ModelFiles, N_MELS};
use lectern_model::hift::{Hift, Taps};
use lectern_model::mel;

pub fn run_hift(model_dir: &Path, case: &Tensors, device: &Device) -> anyhow::Result<Tensors> {
    let cfg = ModelConfig::from_dir(model_dir)?;
    let files = ModelFiles::in_dir(model_dir);
    let mut hift = Hift::load(&files.hift, &cfg, device)
        .with_context(|| format!("loading {}", files.hift.display()))?;
    if let Some(buf) = case.get("buffer.sine_waves") {
        hift.set_noise_buffer(buf.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>()?);
    }
    let mel = input(case, "mel")?.to_dtype(DType::F32)?;
    let mut out = Tensors::new();
    for (prefix, finalize) in [("final", true), ("chunk", false)] {
        let mut taps = Taps::new();
        hift.inference(&mel, finalize, Some(&mut taps))
            .with_context(|| format!("running the vocoder ({prefix})"))?;
        for (name, t) in taps {
            out.insert(format!("{prefix}.{name}"), t);
        }
    }
    Ok(out)
}

pub fn run_mel(case: &Tensors, _device: &Device) -> anyhow::Result<Tensors> {
    let mut out = Tensors::new();
    for (wav_name, mel_name) in [("wav", "mel"), ("short_wav", "short_mel")] {
        let Some(wav) = case.get(wav_name) else {
            anyhow::ensure!(wav_name != "wav", "case file has no tensor `wav`");
            continue;
        };
        let wav = wav.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>()?;
        let (m, frames) =
            mel::log_mel_24k(&wav).with_context(|| format!("log-mel of `{wav_name}`"))?;
        let m = Tensor::from_vec(m, (1, N_MELS, frames), &Device::Cpu)?;
        if mel_name == "mel" {
            out.insert("frontend_speech_feat".into(), m.transpose(1, 2)?.contiguous()?);
        }
        out.insert(mel_name.into(), m);
    }
    let basis: Vec<f32> = mel::mel_basis().iter().map(|&v| v as f32).collect();
    out.insert("mel_basis".into(), Tensor::from_vec(basis, (N_MELS, mel::N_BINS), &Device::Cpu)?);
    Ok(out)
}
