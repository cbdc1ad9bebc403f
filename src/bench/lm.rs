//! `lectern bench --stage lm`: decode throughput of the speech LM on full-size Qwen2-0.5B
//! shapes (24 layers × 896) with seeded random weights, for 1/2/4/8 lanes in f32, f16 and q8_0.
//!
//! Workload (../shared/bench/README.md): a prompt of 32 prompt-text tokens (incl.
//! `<|endofprompt|>`), 20 text tokens and 294 prompt speech tokens. To stay within a few minutes
//! on a 2-core machine the prompt is prefilled **once** (f32, timed) and its KV cache copied
//! into every lane of every run; each run then decodes a forced number of tokens (stop ids are
//! fed back, never end a lane; 8 per lane by default, 4 with `--quick`, because a decode step
//! of the 0.5B model costs ~0.8 s (f32, 1 lane) on the shared 2-core machine) with upstream ras
//! sampling and per-lane seeds. Decode timing is
//! unaffected by sharing the prefill; the f16/q8_0 runs decode on an f32-prefilled cache.
//!
//! Weights: uniform(−0.05, 0.05) from `ChaCha8Rng(weights_seed)`. `embed_tokens`
//! (151936 × 896) is allocated in full but only the rows of the prompt's text ids are filled
//! (others stay 0): the LM only ever reads those rows. `lm_head` is not built (never used).

use std::collections::HashMap;
use std::time::Instant;

use anyhow::Result;
use candle::{DType, Device, Tensor};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::SeedableRng;
use serde_json::json;

use super::{BenchOptions, sync};
use crate::model::config::ModelConfig;
use crate::model::lm::{END_OF_PROMPT_ID, KvCache, LaneBatch, LmPrecision, SpeechLm};
use crate::model::sampling::{SamplingConfig, sampling_ids, segment_rng};
use crate::model::{Checkpoint, Weights};

const PROMPT_TEXT_TOKENS: usize = 32;
const TEXT_TOKENS: usize = 20;
const PROMPT_SPEECH_TOKENS: usize = 294;

fn uniform(rng: &mut ChaCha8Rng, shape: &[usize], device: &Device) -> Result<Tensor> {
    let n: usize = shape.iter().product();
    let data: Vec<f32> = (0..n).map(|_| rng.gen_range(-0.05f32..0.05)).collect();
    Ok(Tensor::from_vec(data, shape, device)?)
}

/// Seeded random `llm.pt` tensors of the full-size model (see the module doc).
pub(crate) fn random_checkpoint(
    cfg: &ModelConfig,
    seed: u64,
    text_ids: &[u32],
    device: &Device,
) -> Result<Checkpoint> {
    let q = &cfg.lm.qwen;
    let (h, kv, inter) = (q.hidden_size, q.num_key_value_heads * q.head_dim(), q.intermediate_size);
    let sv = cfg.lm.speech_vocab();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut t = HashMap::new();
    let p = "llm.model.model";
    for i in 0..q.num_hidden_layers {
        let l = format!("{p}.layers.{i}");
        for (name, shape) in [
            ("self_attn.q_proj.weight", vec![h, h]),
            ("self_attn.q_proj.bias", vec![h]),
            ("self_attn.k_proj.weight", vec![kv, h]),
            ("self_attn.k_proj.bias", vec![kv]),
            ("self_attn.v_proj.weight", vec![kv, h]),
            ("self_attn.v_proj.bias", vec![kv]),
            ("self_attn.o_proj.weight", vec![h, h]),
            ("mlp.gate_proj.weight", vec![inter, h]),
            ("mlp.up_proj.weight", vec![inter, h]),
            ("mlp.down_proj.weight", vec![h, inter]),
        ] {
            t.insert(format!("{l}.{name}"), uniform(&mut rng, &shape, device)?);
        }
        for n in ["input_layernorm.weight", "post_attention_layernorm.weight"] {
            t.insert(format!("{l}.{n}"), Tensor::ones(h, DType::F32, device)?);
        }
    }
    t.insert(format!("{p}.norm.weight"), Tensor::ones(h, DType::F32, device)?);
    let mut embed = vec![0f32; q.vocab_size * h];
    for &id in text_ids {
        let row = &mut embed[id as usize * h..(id as usize + 1) * h];
        row.iter_mut().for_each(|x| *x = rng.gen_range(-0.05f32..0.05));
    }
    t.insert(
        format!("{p}.embed_tokens.weight"),
        Tensor::from_vec(embed, (q.vocab_size, h), device)?,
    );
    t.insert("speech_embedding.weight".into(), uniform(&mut rng, &[sv, h], device)?);
    t.insert("llm_decoder.weight".into(), uniform(&mut rng, &[sv, h], device)?);
    Ok(Checkpoint::from_tensors("random-llm(full-size)", t))
}

/// Decodes `steps` forced tokens on `lanes` copies of `prefilled`; returns seconds.
fn decode_run(
    lm: &SpeechLm,
    prefilled: &KvCache,
    first_logp: &[f32],
    lanes: usize,
    steps: usize,
) -> Result<f64> {
    let caches: Vec<KvCache> =
        (0..lanes).map(|_| prefilled.duplicate()).collect::<crate::model::Result<_>>()?;
    // Joined as `SpeechLm::generate` decodes lanes: one attention call per layer for all.
    let mut batch = LaneBatch::join(caches)?;
    let mut rngs: Vec<ChaCha8Rng> = (0..lanes).map(|i| segment_rng(1000 + i as u64)).collect();
    let mut history: Vec<Vec<u32>> = vec![Vec::new(); lanes];
    let mut logp: Vec<Vec<f32>> = vec![first_logp.to_vec(); lanes];
    let cfg = SamplingConfig::default();
    let sts = lm.config().speech_token_size;
    sync(lm.device())?;
    let start = Instant::now();
    for _ in 0..steps {
        let tokens: Vec<u32> = (0..lanes)
            .map(|i| {
                let tok = sampling_ids(&mut logp[i], &history[i], &cfg, false, sts, &mut rngs[i]);
                history[i].push(tok);
                tok
            })
            .collect();
        let out = lm.step_batch(&mut batch, &tokens)?;
        logp = out.to_vec2::<f32>()?;
    }
    sync(lm.device())?;
    Ok(start.elapsed().as_secs_f64())
}

pub fn run(opts: &BenchOptions) -> Result<serde_json::Value> {
    let device = &opts.device;
    let cfg = ModelConfig::full_size();
    let (lane_counts, steps): (&[usize], usize) =
        if opts.quick { (&[1, 4], 4) } else { (&[1, 2, 4, 8], 8) };

    // The prompt (seed 1): 32 prompt-text ids ending in <|endofprompt|>, 20 text ids, 294 speech.
    let mut prng = ChaCha8Rng::seed_from_u64(1);
    let mut prompt_text: Vec<u32> =
        (0..PROMPT_TEXT_TOKENS - 1).map(|_| prng.gen_range(0..151_643)).collect();
    prompt_text.push(END_OF_PROMPT_ID);
    let text: Vec<u32> = (0..TEXT_TOKENS).map(|_| prng.gen_range(0..151_643)).collect();
    let speech: Vec<u32> = (0..PROMPT_SPEECH_TOKENS).map(|_| prng.gen_range(0..6561)).collect();
    let all_text: Vec<u32> = prompt_text.iter().chain(&text).copied().collect();

    let t0 = Instant::now();
    let ckpt = std::sync::Arc::new(random_checkpoint(&cfg, opts.weights_seed, &all_text, device)?);
    let w = Weights::root(ckpt);
    println!(
        "lm bench: full-size random weights (seed {}) built in {:.1}s",
        opts.weights_seed,
        t0.elapsed().as_secs_f64()
    );

    // One prefill (f32), shared by every lane of every run.
    let lm32 = SpeechLm::new(&cfg.lm, &w, LmPrecision::F32)?;
    let input = lm32.lm_input(&prompt_text, &text, &speech)?;
    let prompt_len = input.dim(0)?;
    let capacity = prompt_len + 20 * TEXT_TOKENS;
    let mut cache = lm32.new_cache(capacity)?;
    sync(device)?;
    let t0 = Instant::now();
    let first = lm32.prefill(&input, &mut cache)?.to_vec1::<f32>()?;
    let prefill_s = t0.elapsed().as_secs_f64();
    let kv_bytes = lm32.kv_bytes_per_lane(capacity);
    println!(
        "prefill: {prompt_len} positions in {prefill_s:.2}s ({:.1} tok/s); KV per lane {:.1} MiB at capacity {capacity} (allocated {:.1} MiB)",
        prompt_len as f64 / prefill_s,
        kv_bytes as f64 / 1048576.0,
        cache.allocated_bytes() as f64 / 1048576.0
    );
    println!(
        "decode: {steps} forced tokens per lane, batched lanes, ras sampling{}",
        if opts.quick { " (--quick)" } else { "" }
    );
    println!(
        "{:<6} {:>5} {:>12} {:>14} {:>10} {:>12}",
        "prec", "lanes", "tok/s/lane", "tok/s total", "ms/step", "weights MiB"
    );

    let mut rows = Vec::new();
    let mut baseline = None;
    for prec in [LmPrecision::F32, LmPrecision::F16, LmPrecision::Q8_0] {
        let lm =
            if prec == LmPrecision::F32 { None } else { Some(SpeechLm::new(&cfg.lm, &w, prec)?) };
        let lm = lm.as_ref().unwrap_or(&lm32);
        for &lanes in lane_counts {
            let secs = decode_run(lm, &cache, &first, lanes, steps)?;
            let per_lane = steps as f64 / secs;
            let total = per_lane * lanes as f64;
            if prec == LmPrecision::F32 && lanes == 1 {
                baseline = Some(total);
            }
            println!(
                "{:<6} {:>5} {:>12.2} {:>14.2} {:>10.1} {:>12.1}",
                prec.name(),
                lanes,
                per_lane,
                total,
                secs * 1000.0 / steps as f64,
                lm.projection_bytes() as f64 / 1048576.0
            );
            rows.push(json!({
                "precision": prec.name(), "lanes": lanes, "steps": steps,
                "tokens_per_s_per_lane": per_lane, "tokens_per_s_total": total,
                "ms_per_step": secs * 1000.0 / steps as f64,
                "speedup_vs_f32_single_lane": baseline.map(|b| total / b),
            }));
        }
    }
    if let Some(b) = baseline {
        println!("baseline: plain single-lane f32 decode {b:.2} tok/s");
    }
    Ok(json!({
        "stage": "lm",
        "model": "full-size shapes, seeded random weights",
        "quick": opts.quick,
        "threads": candle::utils::get_num_threads(),
        "prompt_positions": prompt_len,
        "prefill_seconds_f32": prefill_s,
        "kv_capacity": capacity,
        "kv_bytes_per_lane": kv_bytes,
        "kv_bytes_allocated_per_lane": cache.allocated_bytes(),
        "baseline_f32_single_lane_tokens_per_s": baseline,
        "runs": rows,
    }))
}
