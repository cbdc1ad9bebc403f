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

use crate::{BenchOptions, sync};
use lectern_model::config::ModelConfig;
use lectern_model::lm::{
    END_OF_PROMPT_ID, GraphSlot, KvCache, LaneBatch, LmPrecision, SpeechLm, graph_stats,
};
use lectern_model::sampling::{SamplingConfig, sampling_ids, segment_rng};
use lectern_model::{Checkpoint, Weights};

const PROMPT_TEXT_TOKENS: usize = 32;
const TEXT_TOKENS: usize = 20;
const PROMPT_SPEECH_TOKENS: usize = 294;

fn uniform(rng: &mut ChaCha8Rng, shape: &[usize], device: &Device) -> Result<Tensor> {
    let n: usize = shape.iter().product();
    let data: Vec<f32> = (0..n).map(|_| rng.gen_range(-0.05f32..0.05)).collect();
    Ok(Tensor::from_vec(data, shape, device)?)
}

/// Seeded random `llm.pt` tensors of the full-size model (see the module doc).
pub fn random_checkpoint(
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

/// Where one decode run's time went: seconds in all, and of them on the host choosing tokens.
struct DecodeTimes {
    total_s: f64,
    sampling_s: f64,
}

/// `lanes` copies of `prefilled`, joined as `SpeechLm::generate` decodes lanes (one attention
/// call per layer for all).
fn joined_copies(prefilled: &KvCache, lanes: usize) -> Result<LaneBatch> {
    let caches: Vec<KvCache> =
        (0..lanes).map(|_| prefilled.duplicate()).collect::<lectern_model::Result<_>>()?;
    Ok(LaneBatch::join(caches)?)
}

/// Decodes `steps` forced tokens on `lanes` copies of `prefilled` as [`SpeechLm::generate`]
/// does (joined lanes; replayed CUDA graphs when `graphs`), timing the host's sampling apart.
fn decode_run(
    lm: &SpeechLm,
    prefilled: &KvCache,
    first_logp: &[f32],
    lanes: usize,
    steps: usize,
    graphs: bool,
) -> Result<DecodeTimes> {
    let mut batch = joined_copies(prefilled, lanes)?;
    let mut slot = GraphSlot::default();
    let mut rngs: Vec<ChaCha8Rng> = (0..lanes).map(|i| segment_rng(1000 + i as u64)).collect();
    let mut history: Vec<Vec<u32>> = vec![Vec::new(); lanes];
    let mut logp: Vec<Vec<f32>> = vec![first_logp.to_vec(); lanes];
    let cfg = SamplingConfig::default();
    let sts = lm.config().speech_token_size;
    sync(lm.device())?;
    let _profiled = lectern_kernels::cuda::profiled_range();
    let start = Instant::now();
    let mut sampling_s = 0.0;
    for _ in 0..steps {
        let sampling = Instant::now();
        let tokens: Vec<u32> = (0..lanes)
            .map(|i| {
                let tok = sampling_ids(&mut logp[i], &history[i], &cfg, false, sts, &mut rngs[i]);
                history[i].push(tok);
                tok
            })
            .collect();
        sampling_s += sampling.elapsed().as_secs_f64();
        let out = if graphs {
            lm.decode_step(&mut batch, &tokens, &mut slot)?
        } else {
            lm.step_batch(&mut batch, &tokens)?
        };
        logp = out.to_vec2::<f32>()?; // waits for the step, as generate's loop does
    }
    sync(lm.device())?;
    Ok(DecodeTimes { total_s: start.elapsed().as_secs_f64(), sampling_s })
}

pub fn run(opts: &BenchOptions) -> Result<serde_json::Value> {
    let device = &opts.device;
    let cfg = ModelConfig::full_size();
    let (default_lanes, default_steps): (&[usize], usize) =
        if opts.quick { (&[1, 4], 4) } else { (&[1, 2, 4, 8], 8) };
    let lane_counts = opts.lanes.as_deref().unwrap_or(default_lanes);
    let steps = opts.steps.unwrap_or(default_steps).max(1);
    let precisions = match opts.precision {
        Some(p) => vec![p],
        None => vec![LmPrecision::F32, LmPrecision::F16, LmPrecision::Q8_0],
    };
    // On CUDA each run decodes four times: with and without graphs, with candle's ops and
    // with the LM's own kernels (`lm::kernels`, what generate uses).
    let modes: &[(bool, bool)] = if device.is_cuda() {
        &[(false, false), (true, false), (false, true), (true, true)]
    } else {
        &[(false, false)]
    };

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
        "{:<6} {:>6} {:>7} {:>5} {:>12} {:>14} {:>10} {:>12} {:>12}",
        "prec",
        "graphs",
        "kernels",
        "lanes",
        "tok/s/lane",
        "tok/s total",
        "ms/step",
        "sampling ms",
        "weights MiB"
    );

    let mut rows = Vec::new();
    let mut baseline = None;
    for prec in precisions {
        let lm =
            if prec == LmPrecision::F32 { None } else { Some(SpeechLm::new(&cfg.lm, &w, prec)?) };
        let lm = lm.as_ref().unwrap_or(&lm32);
        for &lanes in lane_counts {
            for &(graphs, own_kernels) in modes {
                let mut lm = lm.clone();
                lm.set_kernels(own_kernels);
                let t = decode_run(&lm, &cache, &first, lanes, steps, graphs)?;
                let per_lane = steps as f64 / t.total_s;
                let total = per_lane * lanes as f64;
                if prec == LmPrecision::F32 && lanes == 1 && !graphs && !own_kernels {
                    baseline = Some(total);
                }
                let ms = |s: f64| s * 1000.0 / steps as f64;
                println!(
                    "{:<6} {:>6} {:>7} {:>5} {:>12.2} {:>14.2} {:>10.2} {:>12.3} {:>12.1}",
                    prec.name(),
                    if graphs { "yes" } else { "no" },
                    if own_kernels { "lectern" } else { "candle" },
                    lanes,
                    per_lane,
                    total,
                    ms(t.total_s),
                    ms(t.sampling_s),
                    lm.projection_bytes() as f64 / 1048576.0
                );
                rows.push(json!({
                    "precision": prec.name(), "lanes": lanes, "steps": steps,
                    "cuda_graphs": graphs,
                    "lm_kernels": own_kernels,
                    "tokens_per_s_per_lane": per_lane, "tokens_per_s_total": total,
                    "ms_per_step": ms(t.total_s),
                    "sampling_ms_per_step": ms(t.sampling_s),
                    "speedup_vs_f32_single_lane": baseline.map(|b| total / b),
                }));
            }
        }
    }
    if device.is_cuda() {
        println!("{:?}", graph_stats());
    }
    // The decode path the engine uses (graphs, Lectern's kernels) against candle's ops on the
    // same full-size weights and tokens: the fixtures' tiny model has 8-wide heads, which the
    // attention kernel does not take, so this is where it is checked.
    let kernel_check = if device.is_cuda() {
        let dev = kernel_deviation(&lm32, &cache, 3, 16)?;
        println!(
            "graphs + LM kernels vs candle ops, 3 lanes × 16 forced steps: max |Δ log-prob| {dev:.2e}"
        );
        Some(dev)
    } else {
        None
    };
    // Each reduced precision against f32 on the same weights and tokens: what a take made at
    // it would change (the figure a default may move on, issue 50).
    let mut precision_deviations = Vec::new();
    for prec in reduced_precisions(opts.precision) {
        let reduced = SpeechLm::new(&cfg.lm, &w, prec)?;
        let d = precision_deviation(&lm32, &reduced, &input, DEVIATION_STEPS)?;
        println!(
            "{} against f32, the prefill and {DEVIATION_STEPS} teacher-forced steps (f32's argmax \
             fed to both, each prefilled itself): top-1 agreement {}/{} ({:.1} %), log-prob max \
             |Δ| {:.3e}, mean |Δ| {:.3e}",
            prec.name(),
            d.agreeing,
            d.rows,
            100.0 * d.agreeing as f64 / d.rows as f64,
            d.max_abs,
            d.mean_abs
        );
        precision_deviations.push(json!({
            "precision": prec.name(), "rows": d.rows, "top1_agreeing": d.agreeing,
            "logp_max_abs": d.max_abs, "logp_mean_abs": d.mean_abs,
        }));
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
        "kernels_vs_candle_max_logp_deviation": kernel_check,
        "precision_vs_f32": precision_deviations,
    }))
}

/// Forced steps [`precision_deviation`] compares.
const DEVIATION_STEPS: usize = 64;

/// The reduced precisions a run measures against f32: the one asked for, or without one every
/// reduced precision the LM has (bf16 too, which a run without one does not time).
fn reduced_precisions(asked: Option<LmPrecision>) -> Vec<LmPrecision> {
    let all = [LmPrecision::F16, LmPrecision::Bf16, LmPrecision::Q8_0];
    match asked {
        Some(LmPrecision::F32) => Vec::new(),
        Some(p) => vec![p],
        None => all.to_vec(),
    }
}

/// How far a reduced-precision LM's log-probs are from f32's on the same input.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PrecisionDeviation {
    /// Log-prob rows compared: the prefill's and one per forced step.
    pub rows: usize,
    /// Rows whose argmax is the same id.
    pub agreeing: usize,
    pub max_abs: f32,
    pub mean_abs: f64,
}

/// Prefills `input` into each model, then feeds both f32's argmax for `steps` steps (teacher
/// forcing: one model's choices, so a first disagreement does not send the two on different
/// paths) and compares every step's log-probs, the prefill's included. Through the engine's
/// decode path (graphs and Lectern's kernels where the device has them).
pub fn precision_deviation(
    f32_lm: &SpeechLm,
    reduced: &SpeechLm,
    input: &Tensor,
    steps: usize,
) -> Result<PrecisionDeviation> {
    let capacity = input.dim(0)? + steps + 1;
    let mut lanes = Vec::new();
    for lm in [f32_lm, reduced] {
        let mut cache = lm.new_cache(capacity)?;
        let first = lm.prefill(input, &mut cache)?.to_vec1::<f32>()?;
        lanes.push((first, joined_copies(&cache, 1)?, GraphSlot::default()));
    }
    let mut d = PrecisionDeviation { rows: 0, agreeing: 0, max_abs: 0.0, mean_abs: 0.0 };
    let mut sum_abs = 0f64;
    let mut compared = 0usize;
    for step in 0..=steps {
        let (a, b) = (&lanes[0].0, &lanes[1].0);
        let top = |row: &[f32]| lectern_model::sampling::argmax(row);
        d.rows += 1;
        d.agreeing += usize::from(top(a) == top(b));
        for (x, y) in a.iter().zip(b) {
            d.max_abs = d.max_abs.max((x - y).abs());
            sum_abs += f64::from((x - y).abs());
        }
        compared += a.len();
        if step == steps {
            break;
        }
        let token = top(a);
        for (lm, (row, batch, slot)) in [f32_lm, reduced].into_iter().zip(lanes.iter_mut()) {
            *row = lm.decode_step(batch, &[token], slot)?.to_vec2::<f32>()?.remove(0);
        }
    }
    d.mean_abs = sum_abs / compared.max(1) as f64;
    Ok(d)
}

/// Largest |Δ log-prob| between the engine's decode path (graphs and Lectern's kernels) and
/// candle's plain ops, over `steps` forced steps of `lanes` lanes fed the same tokens.
fn kernel_deviation(lm: &SpeechLm, prefilled: &KvCache, lanes: usize, steps: usize) -> Result<f32> {
    let (mut plain, mut engine) =
        (joined_copies(prefilled, lanes)?, joined_copies(prefilled, lanes)?);
    let mut slot = GraphSlot::default();
    let mut worst = 0f32;
    let mut candle_only = lm.clone();
    candle_only.set_kernels(false);
    for step in 0..steps {
        let tokens: Vec<u32> = (0..lanes).map(|l| ((step * 977 + l * 131) % 6561) as u32).collect();
        let a = candle_only.step_batch(&mut plain, &tokens)?;
        let a = a.to_vec2::<f32>()?;
        let b = lm.decode_step(&mut engine, &tokens, &mut slot)?.to_vec2::<f32>()?;
        for (x, y) in a.iter().flatten().zip(b.iter().flatten()) {
            worst = worst.max((x - y).abs());
        }
    }
    Ok(worst)
}
