//! Parity stage `lm`: for every `caseN` of an `llm.safetensors` fixture, the prefill log-probs,
//! the teacher-forced KV-cache steps and a greedy decode under upstream's stop rule (with
//! `--lanes`, the cases' greedy decodes run together as lanes of one batch).
//!
//! The fixture generator consumed at most [`FIXTURE_CONSUMED_TOKENS`] tokens of each greedy run
//! (`llm.json` calls: "consumed up to 40 tokens"), so the greedy decode is capped there:
//! case2 (max_len 140) therefore ends after 40 tokens exactly like the fixture.

use std::path::Path;

use anyhow::Context;
use candle::{Device, Tensor};

use super::{Tensors, ids};
use lectern_model::lm::{GenerateOptions, LaneMode, LaneRequest, LmPrecision, SpeechLm};
use lectern_model::sampling::SamplingConfig;

/// Tokens the fixture generator consumed from each greedy `llm.inference` generator.
pub const FIXTURE_CONSUMED_TOKENS: usize = 40;

/// `lanes`: decode the cases' greedy runs together, as lanes of one batch (the way the engine
/// decodes segments), instead of one after another; the outputs and their tolerances are the
/// same, so this checks batched decoding against the reference on any device.
pub fn run(
    model_dir: &Path,
    case: &Tensors,
    device: &Device,
    lanes: bool,
    precision: LmPrecision,
) -> anyhow::Result<Tensors> {
    let lm = SpeechLm::from_dir(model_dir, precision, device)
        .with_context(|| format!("loading the LM from {}", model_dir.display()))?;
    run_lanes(&lm, case, lanes)
}

/// Runs every case of `case` on an already loaded LM (any precision), one after another.
pub fn run_with(lm: &SpeechLm, case: &Tensors) -> anyhow::Result<Tensors> {
    run_lanes(lm, case, false)
}

/// [`run_with`], with the greedy runs decoded together when `lanes`.
pub fn run_lanes(lm: &SpeechLm, case: &Tensors, lanes: bool) -> anyhow::Result<Tensors> {
    let mut out = Tensors::new();
    let mut greedy = Vec::new();
    let mut n = 0;
    while case.contains_key(&format!("case{n}.text_ids")) {
        let c = format!("case{n}");
        greedy.push((run_case(lm, case, &c, &mut out)?, c));
        n += 1;
    }
    anyhow::ensure!(n > 0, "the case file has no `case0.text_ids`");
    let reqs: Vec<LaneRequest> = greedy.iter().map(|(r, _)| r.clone()).collect();
    let generated = if lanes {
        let opts = GenerateOptions { max_lanes: reqs.len(), mode: LaneMode::Batched };
        lm.generate(&reqs, &opts)?
    } else {
        let mut g = Vec::with_capacity(reqs.len());
        for r in &reqs {
            g.push(lm.generate(std::slice::from_ref(r), &GenerateOptions::default())?.remove(0));
        }
        g
    };
    for ((req, c), g) in greedy.iter().zip(generated) {
        greedy_outputs(lm, c, req.min_len, g, &mut out)?;
    }
    Ok(out)
}

fn scalar(case: &Tensors, name: &str) -> anyhow::Result<usize> {
    let v = ids(case, name)?;
    anyhow::ensure!(v.len() == 1, "`{name}` must hold one value");
    Ok(v[0] as usize)
}

/// Prefill and teacher forcing of one case into `out`; returns its greedy request.
fn run_case(
    lm: &SpeechLm,
    case: &Tensors,
    c: &str,
    out: &mut Tensors,
) -> anyhow::Result<LaneRequest> {
    let prompt_text = ids(case, &format!("{c}.prompt_text_ids"))?;
    let text = ids(case, &format!("{c}.text_ids"))?;
    let prompt_speech = ids(case, &format!("{c}.prompt_speech_tokens"))?;
    let min_len = scalar(case, &format!("{c}.min_len"))?;
    let max_len = scalar(case, &format!("{c}.max_len"))?;

    // Prefill and teacher forcing through the KV cache.
    let input_emb = lm.lm_input(&prompt_text, &text, &prompt_speech)?;
    let prompt_len = input_emb.dim(0)?;
    let tf_name = format!("{c}.tf_tokens");
    let tf = if case.contains_key(&tf_name) { ids(case, &tf_name)? } else { Vec::new() };
    let mut cache = lm.new_cache(prompt_len + tf.len())?;
    let prefill = lm.prefill(&input_emb, &mut cache)?;
    out.insert(format!("{c}.lm_input"), input_emb.unsqueeze(0)?);
    out.insert(format!("{c}.prefill_logp"), prefill.to_device(&Device::Cpu)?);
    if !tf.is_empty() {
        let mut rows = Vec::with_capacity(tf.len());
        for &tok in &tf {
            rows.push(lm.step(&mut [&mut cache], &[tok], LaneMode::Solo)?);
        }
        out.insert(format!("{c}.tf_logp"), Tensor::cat(&rows, 0)?);
    }

    // Greedy decode under upstream's stop rule, capped where the fixture stopped consuming.
    let mut req = LaneRequest::new(prompt_text, text, prompt_speech, 0);
    req.sampling = SamplingConfig::greedy();
    req.min_len = min_len;
    req.max_len = max_len.min(FIXTURE_CONSUMED_TOKENS);
    req.record_logp = true;
    Ok(req)
}

/// The greedy run's outputs of case `c`.
fn greedy_outputs(
    lm: &SpeechLm,
    c: &str,
    min_len: usize,
    g: lectern_model::lm::Generated,
    out: &mut Tensors,
) -> anyhow::Result<()> {
    let dev = lm.device();
    let tokens: Vec<i64> = g.lm_tokens.iter().map(|&t| t as i64).collect();
    let n_tokens = tokens.len();
    out.insert(format!("{c}.greedy_tokens"), Tensor::from_vec(tokens, n_tokens, dev)?);
    let steps = g.step_logp.len();
    let flat: Vec<f32> = g.step_logp.into_iter().flatten().collect();
    let vocab = lm.config().speech_vocab();
    out.insert(format!("{c}.greedy_step_logp"), Tensor::from_vec(flat, (steps, vocab), dev)?);
    let choice: Vec<i64> = g.step_choice.iter().map(|&t| t as i64).collect();
    out.insert(format!("{c}.greedy_step_choice"), Tensor::from_vec(choice, steps, dev)?);
    let ignore: Vec<i64> = (0..steps).map(|i| i64::from(i < min_len)).collect();
    out.insert(format!("{c}.greedy_step_ignore_eos"), Tensor::from_vec(ignore, steps, dev)?);
    Ok(())
}
