//! `lectern bench --stage flow`: the DiT flow on full-size shapes (dim 1024, depth 22, 16
//! heads) with seeded random weights, a 588-frame voice prompt, CFG batch 2.
//!
//! A full NFE-10 call at 4000 generated frames costs minutes on a 2-core machine, so the sweep
//! times what the cost is made of and composes it honestly:
//! * one DiT block per size (all 22 blocks have identical shapes and cost), plus the parts
//!   outside the blocks (time/input embedding with the conv position embedding, final norm and
//!   projection) → one estimator call = outside + depth × block;
//! * NFE-10 frames/s = generated frames / (10 × estimator call) (the pre-net runs once per
//!   call and is timed separately; it is negligible);
//! * one real 2-block estimator call at the smallest size checks the composition;
//! * the share of attention (and of its materialised scores), feed-forward, modulation and
//!   the position-embedding conv in one block at 1000 generated frames;
//! * on the CPU, one whole estimator call at that size step by step ([`op_clock`]: each step
//!   timed where it runs, read beside upstream's `torch.profiler` table);
//! * a least-squares fit of the block time to `a·n + b·n²` over total frames n.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use candle::{DType, Device, Tensor};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::json;

use crate::{BenchOptions, sync, time};
use lectern_kernels::attention;
use lectern_kernels::cuda::flow as cuda_flow;
use lectern_model::config::{DitConfig, FlowConfig, ModelConfig};
use lectern_model::flow::cfm::{Estimator, FlowCond};
use lectern_model::flow::dit::{
    CONV_POS_GROUPS, CONV_POS_KERNEL, DiT, FREQ_EMBED_DIM, attend, attend_materialised, modulate,
};
use lectern_model::flow::{CausalMaskedDiffWithDiT, FlowMatmul, FlowPrompt, NoiseSource};
use lectern_model::hift::Hift;
use lectern_model::op_clock;
use lectern_model::{Checkpoint, Weights};

/// Voice prompt of the standard workloads (bench/README.md): 294 tokens, 588 frames.
const PROMPT_TOKENS: usize = 294;
/// Tokens per segment in the group sweep.
const SEGMENT_TOKENS: usize = 100;

/// Uniform(−1/√fan_in, 1/√fan_in), torch's default Linear/Conv init scale.
fn uniform(
    rng: &mut ChaCha8Rng,
    shape: &[usize],
    fan_in: usize,
    dev: &Device,
) -> candle::Result<Tensor> {
    let a = 1.0 / (fan_in as f32).sqrt();
    let n: usize = shape.iter().product();
    let data: Vec<f32> = (0..n).map(|_| rng.gen_range(-a..a)).collect();
    Tensor::from_vec(data, shape, dev)
}

/// A `flow.pt`-shaped checkpoint of seeded random weights. All blocks share one weight set
/// (60 MB per block, far beyond any cache, so the cost per block is unchanged) to keep the
/// benchmark's memory and set-up time small.
pub fn random_flow(cfg: &FlowConfig, seed: u64, dev: &Device) -> candle::Result<Checkpoint> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let d = &cfg.dit;
    let (dim, mel) = (d.dim, cfg.input_size);
    let inner = d.heads * d.dim_head;
    let mut t: HashMap<String, Tensor> = HashMap::new();
    let lin = |t: &mut HashMap<String, Tensor>,
               rng: &mut ChaCha8Rng,
               name: &str,
               out: usize,
               inp: usize| {
        t.insert(format!("{name}.weight"), uniform(rng, &[out, inp], inp, dev)?);
        t.insert(format!("{name}.bias"), uniform(rng, &[out], inp, dev)?);
        candle::Result::Ok(())
    };
    t.insert("input_embedding.weight".into(), uniform(&mut rng, &[cfg.vocab_size, mel], 1, dev)?);
    lin(&mut t, &mut rng, "spk_embed_affine_layer", cfg.output_size, cfg.spk_embed_dim)?;
    let c = cfg.pre_lookahead_channels;
    let k1 = cfg.pre_lookahead_len + 1;
    t.insert(
        "pre_lookahead_layer.conv1.weight".into(),
        uniform(&mut rng, &[c, mel, k1], mel * k1, dev)?,
    );
    t.insert("pre_lookahead_layer.conv1.bias".into(), uniform(&mut rng, &[c], mel * k1, dev)?);
    t.insert(
        "pre_lookahead_layer.conv2.weight".into(),
        uniform(&mut rng, &[mel, c, 3], c * 3, dev)?,
    );
    t.insert("pre_lookahead_layer.conv2.bias".into(), uniform(&mut rng, &[mel], c * 3, dev)?);
    let e = "decoder.estimator";
    lin(&mut t, &mut rng, &format!("{e}.time_embed.time_mlp.0"), dim, FREQ_EMBED_DIM)?;
    lin(&mut t, &mut rng, &format!("{e}.time_embed.time_mlp.2"), dim, dim)?;
    lin(
        &mut t,
        &mut rng,
        &format!("{e}.input_embed.proj"),
        dim,
        d.mel_dim * 2 + d.mu_dim + d.spk_dim,
    )?;
    let g_in = dim / CONV_POS_GROUPS;
    for conv in ["conv1.0", "conv2.0"] {
        let p = format!("{e}.input_embed.conv_pos_embed.{conv}");
        let fan = g_in * CONV_POS_KERNEL;
        t.insert(
            format!("{p}.weight"),
            uniform(&mut rng, &[dim, g_in, CONV_POS_KERNEL], fan, dev)?,
        );
        t.insert(format!("{p}.bias"), uniform(&mut rng, &[dim], fan, dev)?);
    }
    let inv_freq: Vec<f32> =
        (0..d.dim_head / 2).map(|j| 10000f32.powf(-2.0 * j as f32 / d.dim_head as f32)).collect();
    t.insert(
        format!("{e}.rotary_embed.inv_freq"),
        Tensor::from_vec(inv_freq, d.dim_head / 2, dev)?,
    );
    let mut block = HashMap::new();
    lin(&mut block, &mut rng, "attn_norm.linear", 6 * dim, dim)?;
    for name in ["attn.to_q", "attn.to_k", "attn.to_v"] {
        lin(&mut block, &mut rng, name, inner, dim)?;
    }
    lin(&mut block, &mut rng, "attn.to_out.0", dim, inner)?;
    lin(&mut block, &mut rng, "ff.ff.0.0", dim * d.ff_mult, dim)?;
    lin(&mut block, &mut rng, "ff.ff.2", dim, dim * d.ff_mult)?;
    for i in 0..d.depth {
        for (k, v) in &block {
            t.insert(format!("{e}.transformer_blocks.{i}.{k}"), v.clone());
        }
    }
    lin(&mut t, &mut rng, &format!("{e}.norm_out.linear"), 2 * dim, dim)?;
    lin(&mut t, &mut rng, &format!("{e}.proj_out"), d.out_channels, dim)?;
    Ok(Checkpoint::from_tensors("random-flow(seeded)", t))
}

/// Inputs of one estimator call at `n_frames` total frames (CFG batch 2).
struct CallInputs {
    x: Tensor,
    t: Tensor,
    cond: FlowCond,
}

/// One of the CUDA attention kernels: `None` where it does not apply.
type AttentionKernel = fn(&Tensor, &Tensor, &Tensor) -> candle::Result<Option<Tensor>>;

fn call_inputs(rng: &mut ChaCha8Rng, n_frames: usize, dev: &Device) -> anyhow::Result<CallInputs> {
    let mut randn = |shape: &[usize]| uniform(rng, shape, 1, dev);
    let mu = randn(&[1, 80, n_frames])?;
    let cond = randn(&[1, 80, n_frames])?;
    let spks = randn(&[1, 80])?;
    Ok(CallInputs {
        x: randn(&[2, 80, n_frames])?,
        t: Tensor::full(0.3f32, 1, dev)?, // the CFG batch's one time, as the engine passes it
        cond: FlowCond::cfg_batch(&mu, &spks, &cond)?,
    })
}

/// Least squares `y ≈ a·n + b·n²`.
fn fit_linear_quadratic(points: &[(f64, f64)]) -> (f64, f64) {
    let (mut s2, mut s3, mut s4, mut sy1, mut sy2) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for &(n, y) in points {
        s2 += n * n;
        s3 += n * n * n;
        s4 += n * n * n * n;
        sy1 += n * y;
        sy2 += n * n * y;
    }
    let det = s2 * s4 - s3 * s3;
    ((sy1 * s4 - sy2 * s3) / det, (s2 * sy2 - s3 * sy1) / det)
}

pub fn run(opts: &BenchOptions) -> anyhow::Result<serde_json::Value> {
    let dev = &opts.device;
    let cfg = ModelConfig::full_size().flow;
    let depth = cfg.dit.depth;
    let (prompt_tokens, groups, gen_sizes, reps): (usize, &[usize], &[usize], usize) = if opts.quick
    {
        (50, &[1, 2], &[100, 300], 2)
    } else {
        // On a GPU the first call of a shape pays kernel JIT and GEMM heuristics: best of 3.
        // On the CPU the first call at a larger size than before writes fresh heap pages (each
        // faults in and is cleared: a fifth of a block's time at 1208 frames, `perf`), which
        // the engine's repeated estimator calls do not: best of 2.
        (PROMPT_TOKENS, &[1, 2, 4], &[500, 1000, 2000, 4000], if dev.is_cuda() { 3 } else { 2 })
    };
    let matmul = opts.flow_matmul.unwrap_or_else(|| FlowMatmul::default_for(dev));
    // The other way of running the matmuls, timed beside it where it can differ (CUDA).
    let other = match matmul {
        FlowMatmul::F32 if dev.is_cuda() => Some(FlowMatmul::Tf32x3),
        FlowMatmul::F32 => None,
        // On CUDA bf16 against the f32-accurate way it replaced as the default.
        FlowMatmul::Bf16 if dev.is_cuda() => Some(FlowMatmul::Tf32x3),
        FlowMatmul::Tf32x3 | FlowMatmul::Bf16 => Some(FlowMatmul::F32),
    };
    let prompt_frames = 2 * prompt_tokens;
    println!(
        "flow bench: dim {} depth {depth} heads {} (seeded random weights, seed {}), prompt \
         {prompt_frames} frames, CFG batch 2, f32 ({} matmuls), {dev:?}",
        cfg.dit.dim,
        cfg.dit.heads,
        opts.weights_seed,
        matmul.label(dev)
    );
    let setup = Instant::now();
    let ckpt = Arc::new(random_flow(&cfg, opts.weights_seed, dev)?);
    let weights = Weights::root(ckpt);
    let mut flow = CausalMaskedDiffWithDiT::new(&cfg, &weights, &NoiseSource::Rebuilt)?;
    let other_dit = other.map(|m| flow.estimator().with_matmul(m)).transpose()?;
    flow.set_matmul(matmul)?;
    let dit = flow.estimator();
    let dit0 =
        DiT::new(&DitConfig { depth: 0, ..cfg.dit.clone() }, &weights.pp("decoder.estimator"))?;
    println!("set-up (random weights, noise buffer): {:.1} s", setup.elapsed().as_secs_f64());
    let mut rng = ChaCha8Rng::seed_from_u64(opts.weights_seed + 1);

    // Sizes: the group sweep (segments of 100 tokens) and the generated-frames sweep.
    let mut sizes: Vec<(String, usize)> = groups
        .iter()
        .map(|g| (format!("group of {g} × {SEGMENT_TOKENS} tokens"), g * SEGMENT_TOKENS * 2))
        .collect();
    sizes.extend(gen_sizes.iter().map(|&n| (format!("{n} generated frames"), n)));

    println!(
        "\nEstimator call = outside-blocks + {depth} × one block (timed per size); NFE-10 \
         frames/s = generated / (10 × call)."
    );
    println!(
        "{:<32} {:>7} {:>10} {:>11} {:>12} {:>12}",
        "workload", "frames", "block ms", "outside ms", "call s", "NFE10 fr/s"
    );
    let mut rows = Vec::new();
    let mut fit_points = Vec::new();
    for (label, gen_frames) in &sizes {
        let n_frames = prompt_frames + gen_frames;
        let inp = call_inputs(&mut rng, n_frames, dev)?;
        let temb = dit.time_embed().forward(&inp.t)?;
        let temb_silu = temb.silu()?;
        let rope = dit.rope(n_frames, dev)?;
        let xs = uniform(&mut rng, &[2, n_frames, cfg.dit.dim], 1, dev)?;
        let block = &dit.blocks()[0];
        let block_s = time(dev, reps, || Ok(block.forward(&xs, &temb_silu, &rope, None)?))?;
        // Outside the blocks: the same estimator built with depth 0 (time and input embedding
        // with the conv position embedding, rotary tables, final norm and projection).
        let outside_s = time(dev, reps, || Ok(dit0.velocity(&inp.x, 0.3, &inp.cond)?))?;
        let call_s = outside_s + depth as f64 * block_s;
        let fps = *gen_frames as f64 / (10.0 * call_s);
        println!(
            "{label:<32} {n_frames:>7} {:>10.1} {:>11.1} {call_s:>12.2} {fps:>12.1}",
            block_s * 1e3,
            outside_s * 1e3
        );
        fit_points.push((n_frames as f64, block_s));
        let other_block_s = match (&other_dit, other) {
            (Some(d), Some(m)) => {
                let b = &d.blocks()[0];
                let s = time(dev, reps, || Ok(b.forward(&xs, &temb_silu, &rope, None)?))?;
                println!(
                    "{:<32} {:>7} {:>10.1}  ({} matmuls: {:.2}× the time)",
                    "",
                    "",
                    s * 1e3,
                    m.name(),
                    s / block_s
                );
                Some(s)
            }
            _ => None,
        };
        rows.push(json!({
            "workload": label, "generated_frames": gen_frames, "total_frames": n_frames,
            "block_s": block_s, "outside_blocks_s": outside_s, "estimator_call_s": call_s,
            "nfe10_frames_per_s": fps, "other_matmul_block_s": other_block_s,
        }));
    }

    // A real 2-block estimator call at the smallest size checks the composition
    // (outside + depth × block) at a tenth of a full call's cost.
    let validation = {
        let n_frames = prompt_frames + sizes[0].1;
        let inp = call_inputs(&mut rng, n_frames, dev)?;
        let dit2 =
            DiT::new(&DitConfig { depth: 2, ..cfg.dit.clone() }, &weights.pp("decoder.estimator"))?
                .with_matmul(matmul)?;
        let measured = time(dev, 1, || Ok(dit2.velocity(&inp.x, 0.3, &inp.cond)?))?;
        let composed = rows[0]["outside_blocks_s"].as_f64().unwrap_or(f64::NAN)
            + 2.0 * rows[0]["block_s"].as_f64().unwrap_or(f64::NAN);
        println!(
            "\ncheck: a real 2-block estimator call at {n_frames} frames: {measured:.2} s \
             (outside + 2 × block = {composed:.2} s)"
        );
        json!({"total_frames": n_frames, "depth": 2, "measured_s": measured, "composed_s": composed})
    };

    // Pre-net (once per flow call) at the largest size.
    let gen_tokens = gen_sizes[gen_sizes.len() - 1] / 2;
    let prompt = FlowPrompt {
        prompt_token: (0..prompt_tokens as u32).map(|i| (i * 37) % 6561).collect(),
        prompt_feat: uniform(&mut rng, &[1, prompt_frames, 80], 1, dev)?,
        embedding: uniform(&mut rng, &[1, 192], 1, dev)?,
    };
    let tokens: Vec<u32> = (0..gen_tokens as u32).map(|i| (i * 101) % 6561).collect();
    let prenet_s = time(dev, reps, || Ok(flow.prepare(&prompt, &tokens)?))?;
    println!(
        "pre-net (speaker, embedding, pre-lookahead, mu, cond) at {gen_tokens} tokens: {:.1} ms",
        prenet_s * 1e3
    );

    // Component shares of one block at 1000 generated frames (or the quick size, or the frames
    // asked for).
    let n_frames =
        opts.breakdown_frames.unwrap_or(prompt_frames + gen_sizes[gen_sizes.len().min(2) - 1]);
    let block = &dit.blocks()[0];
    let xs = uniform(&mut rng, &[2, n_frames, cfg.dit.dim], 1, dev)?;
    let inp = call_inputs(&mut rng, n_frames, dev)?;
    let temb_silu = dit.time_embed().forward(&inp.t)?.silu()?;
    let rope = dit.rope(n_frames, dev)?;
    let whole = time(dev, reps, || Ok(block.forward(&xs, &temb_silu, &rope, None)?))?;
    // The whole estimator call at this size (every block's own weights, as the engine runs it)
    // beside the composition the sweep uses.
    let outside = time(dev, reps, || Ok(dit0.velocity(&inp.x, 0.3, &inp.cond)?))?;
    let call = time(dev, reps, || Ok(dit.velocity(&inp.x, 0.3, &inp.cond)?))?;
    let composed = outside + depth as f64 * whole;
    // One more whole call with the step clock on (CPU: steps finish when they return).
    let in_call = if dev.is_cpu() {
        op_clock::start();
        let start = Instant::now();
        dit.velocity(&inp.x, 0.3, &inp.cond)?;
        let wall = start.elapsed().as_secs_f64();
        Some((wall, op_clock::stop()))
    } else {
        None
    };
    let m = block.modulation(&temb_silu, 2)?;
    let modulation = time(dev, reps, || {
        let m = block.modulation(&temb_silu, 2)?;
        let a = modulate(&xs, &m[1], &m[0], opts.flow_kernels)?;
        let b = modulate(&xs, &m[4], &m[3], opts.flow_kernels)?;
        let g1 = xs.broadcast_mul(&m[2].unsqueeze(1)?)?;
        let g2 = (&xs + xs.broadcast_mul(&m[5].unsqueeze(1)?)?)?;
        Ok((a, b, g1, g2))
    })?;
    let norm = modulate(&xs, &m[1], &m[0], opts.flow_kernels)?;
    let attention = time(dev, reps, || Ok(block.attn.forward(&norm, &rope)?))?;
    let (q, k, v) = block.attn.qkv(&norm, &rope)?;
    let scores = time(dev, reps, || Ok(attend(&q, &k, &v, matmul, opts.flow_kernels)?))?;
    // In f32 `attend` is a fused kernel on the CPU and on CUDA; the materialised path
    // alongside, for the ratio and the largest difference between the two.
    let materialised = if matmul == FlowMatmul::F32 || dev.is_cuda() {
        let fused = attend(&q, &k, &v, matmul, opts.flow_kernels)?;
        let plain = attend_materialised(&q, &k, &v, FlowMatmul::F32, opts.flow_kernels)?;
        let deviation = (fused - &plain)?.abs()?.flatten_all()?.max(0)?.to_scalar::<f32>()?;
        let scale = plain.abs()?.flatten_all()?.max(0)?.to_scalar::<f32>()?;
        let s = time(dev, reps, || {
            Ok(attend_materialised(&q, &k, &v, FlowMatmul::F32, opts.flow_kernels)?)
        })?;
        Some((s, deviation, scale))
    } else {
        None
    };
    // On CUDA both attention kernels in one process, each against the materialised f32 path:
    // the f32 one on CUDA cores and the 3xTF32 one on tensor cores (where the GPU has them).
    let cuda_cores = if dev.is_cuda() {
        let plain = attend_materialised(&q, &k, &v, FlowMatmul::F32, opts.flow_kernels)?;
        let deviation = |o: &Tensor| -> anyhow::Result<f32> {
            Ok((o - &plain)?.abs()?.flatten_all()?.max(0)?.to_scalar::<f32>()?)
        };
        let mut kernels = Vec::new();
        for (name, kernel) in [
            ("CUDA cores, f32", cuda_flow::attention as AttentionKernel),
            ("tensor cores, 3xTF32", cuda_flow::attention_tf32x3),
            ("tensor cores, bf16", cuda_flow::attention_bf16),
        ] {
            if let Some(o) = kernel(&q, &k, &v)? {
                let s = time(dev, reps, || Ok(kernel(&q, &k, &v)?))?;
                kernels.push((name, s, deviation(&o)?));
            }
        }
        kernels
    } else {
        Vec::new()
    };
    // On the CPU in f32, where `attend` runs the AVX-512 core: the portable core beside it.
    let core = attention::f32_core(cfg.dit.dim_head);
    let portable = if matmul == FlowMatmul::F32 && dev.is_cpu() && core != "portable" {
        Some(time(dev, reps, || Ok(attention::attend_portable(&q, &k, &v)?))?)
    } else {
        None
    };
    let ff = time(dev, reps, || Ok(block.ff.forward(&norm)?))?;
    let embed = dit.input_embed();
    let conv = time(dev, reps, || Ok(embed.position_embedded(&xs)?))?;
    // On CUDA the conv is Lectern's kernel: candle's convs alongside, and how far apart.
    let conv_by_candle = if dev.is_cuda() {
        let d = (embed.position_embedded(&xs)? - embed.position_embedded_by_candle(&xs)?)?;
        let deviation = d.abs()?.flatten_all()?.max(0)?.to_scalar::<f32>()?;
        Some((time(dev, reps, || Ok(embed.position_embedded_by_candle(&xs)?))?, deviation))
    } else {
        None
    };
    {
        // One more block and one outside-the-blocks pass for a kernel profiler (ncu).
        let _profiled = lectern_kernels::cuda::profiled_range();
        block.forward(&xs, &temb_silu, &rope, None)?;
        dit0.velocity(&inp.x, 0.3, &inp.cond)?;
        crate::sync(dev)?;
    }
    let pct = |x: f64| 100.0 * x / whole;
    println!(
        "\nA whole estimator call at {n_frames} frames: {call:.2} s (outside + {depth} × one \
         block: {composed:.2} s)"
    );
    if let Some((wall, steps)) = &in_call {
        print_call_steps(*wall, steps, depth);
    }
    println!("One block at {n_frames} frames: {:.1} ms", whole * 1e3);
    println!(
        "  attention (qkv, rotary, scores, softmax, AV, out)  {:>7.1} ms  {:>5.1} %",
        attention * 1e3,
        pct(attention)
    );
    println!(
        "    of which scores + softmax + AV                  {:>7.1} ms  {:>5.1} %",
        scores * 1e3,
        pct(scores)
    );
    if let Some((m, deviation, scale)) = materialised {
        println!(
            "    (the same with materialised scores: {:.1} ms; fused kernel {:.2}× faster; \
             largest difference {deviation:.2e} at output magnitudes up to {scale:.2})",
            m * 1e3,
            m / scores
        );
    }
    for (name, s, deviation) in &cuda_cores {
        println!("    (the {name} kernel: {:.2} ms, largest difference {deviation:.2e})", s * 1e3);
    }
    if let Some(p) = portable {
        println!(
            "    (the {core} core; the portable one, the `gemm` crate's products: {:.1} ms, {:.2}× \
             the time)",
            p * 1e3,
            p / scores
        );
    }
    println!(
        "  feed-forward                                        {:>7.1} ms  {:>5.1} %",
        ff * 1e3,
        pct(ff)
    );
    println!(
        "  modulation (AdaLN linear, 2 LN+modulate, gates)     {:>7.1} ms  {:>5.1} %",
        modulation * 1e3,
        pct(modulation)
    );
    println!(
        "  position-embedding conv (once per call, not per block) {:>4.1} ms  {:>5.1} % of a block",
        conv * 1e3,
        pct(conv)
    );
    if let Some((c, deviation)) = conv_by_candle {
        println!(
            "    (the same with candle's convs: {:.1} ms; kernel {:.2}× faster; largest \
             difference {deviation:.2e})",
            c * 1e3,
            c / conv
        );
    }

    let bf16_deviation = if matmul == FlowMatmul::Bf16 {
        Some(bf16_deviation(&cfg, &weights, &prompt, dev, opts.weights_seed)?)
    } else {
        None
    };

    let (a, b) = fit_linear_quadratic(&fit_points);
    println!(
        "\nPer-block fit over total frames n: t(n) = {:.4} ms·n + {:.3e} ms·n²  \
         (n² term = linear term at n = {:.0})",
        a * 1e3,
        b * 1e3,
        a / b
    );
    for (n, y) in &fit_points {
        println!(
            "  n {n:>6}: measured {:>8.1} ms, fit {:>8.1} ms",
            y * 1e3,
            (a * n + b * n * n) * 1e3
        );
    }
    Ok(json!({
        "stage": "flow", "quick": opts.quick, "device": format!("{dev:?}"),
        "dims": {"dim": cfg.dit.dim, "depth": depth, "heads": cfg.dit.heads},
        "prompt_frames": prompt_frames, "sizes": rows, "validation": validation,
        "prenet_s": prenet_s,
        "block_breakdown": {
            "total_frames": n_frames, "estimator_call_s": call, "composed_call_s": composed,
            "block_s": whole, "attention_s": attention,
            "attention_scores_s": scores,
            "attention_scores_materialised_s": materialised.map(|m| m.0),
            "attention_scores_portable_s": portable,
            "attention_cpu_f32_core": (dev.is_cpu() && matmul == FlowMatmul::F32).then_some(core),
            "attention_fused_vs_materialised_max_abs": materialised.map(|m| m.1),
            "feed_forward_s": ff, "modulation_s": modulation,
            "conv_pos_embed_s": conv,
            "conv_pos_embed_by_candle_s": conv_by_candle.map(|c| c.0),
            "conv_pos_embed_kernel_vs_candle_max_abs": conv_by_candle.map(|c| c.1),
        },
        "call_steps": in_call.as_ref().map(|(wall, steps)| json!({
            "total_frames": n_frames, "wall_s": wall,
            "steps": steps.iter().map(|s| json!({"step": s.name, "s": s.seconds, "calls": s.calls}))
                .collect::<Vec<_>>(),
        })),
        "block_fit": {"a_s_per_frame": a, "b_s_per_frame2": b},
        "note": "estimator call = outside-blocks + depth × one timed block; NFE-10 frames/s \
                 derived as generated / (10 × call); DType F32",
        "dtype": format!("{:?}", DType::F32),
        "matmul": matmul.label(dev),
        "other_matmul": other.map(FlowMatmul::name),
        "bf16_backend": lectern_kernels::gemm::bf16_weight::backend(dev),
        "bf16_deviation": bf16_deviation,
    }))
}

/// One whole estimator call's wall time by step ([`op_clock`]): each step's total, per block,
/// and share of the call, then what no step covers (candle's glue: views, the rotary tables,
/// allocation).
fn print_call_steps(wall: f64, steps: &[op_clock::StepTotal], depth: usize) {
    println!("  by step (the same call again, every step timed where it runs):");
    println!(
        "  {:<46} {:>9} {:>12} {:>7} {:>6}",
        "step", "call ms", "per block ms", "share", "calls"
    );
    for s in steps {
        // Per block for the blocks' steps; the once-a-call steps outside them have none.
        let per_block = match s.calls as usize >= depth {
            true => format!("{:.2}", s.seconds * 1e3 / depth as f64),
            false => String::new(),
        };
        println!(
            "  {:<46} {:>9.1} {per_block:>12} {:>6.1}% {:>6}",
            s.name,
            s.seconds * 1e3,
            100.0 * s.seconds / wall,
            s.calls
        );
    }
    let covered: f64 = steps.iter().map(|s| s.seconds).sum();
    println!(
        "  {:<46} {:>9.1} {:>12} {:>6.1}%\n  {:<46} {:>9.1}",
        "(no step: views, rotary tables, allocation)",
        (wall - covered) * 1e3,
        "",
        100.0 * (wall - covered) / wall,
        "whole call",
        wall * 1e3
    );
}

/// Tokens of the bf16 deviation's flow call (200 mel frames, 4 s of audio).
const DEVIATION_TOKENS: usize = 100;

/// bf16 products against f32 on full-size random weights: one whole flow call (NFE 10, CFG
/// 0.7, the standard voice prompt, [`DEVIATION_TOKENS`] tokens) each way, and both mels through
/// the full-size random vocoder. Mel: largest and RMS difference (log-mel units) against the
/// mel's own RMS; waveform: SNR of the bf16 waveform against the f32 one.
fn bf16_deviation(
    cfg: &FlowConfig,
    weights: &Weights,
    prompt: &FlowPrompt,
    dev: &Device,
    seed: u64,
) -> anyhow::Result<serde_json::Value> {
    let tokens: Vec<u32> = (0..DEVIATION_TOKENS as u32).map(|i| (i * 101 + 7) % 6561).collect();
    let mel_of = |m: FlowMatmul| -> anyhow::Result<(Tensor, f64)> {
        let mut flow = CausalMaskedDiffWithDiT::new(cfg, weights, &NoiseSource::Rebuilt)?;
        flow.set_matmul(m)?;
        sync(dev)?;
        let t = Instant::now();
        let mel = flow.inference(prompt, &tokens, 10)?;
        sync(dev)?;
        Ok((mel, t.elapsed().as_secs_f64()))
    };
    let (mel32, t32) = mel_of(FlowMatmul::F32)?;
    let (mel16, t16) = mel_of(FlowMatmul::Bf16)?;
    let diff = (&mel16 - &mel32)?;
    let max_abs = diff.abs()?.flatten_all()?.max(0)?.to_scalar::<f32>()?;
    let rms = |t: &Tensor| -> anyhow::Result<f64> {
        Ok(f64::from(t.sqr()?.mean_all()?.to_scalar::<f32>()?).sqrt())
    };
    let (rms_diff, rms_mel) = (rms(&diff)?, rms(&mel32)?);
    let mean_abs = f64::from(diff.abs()?.mean_all()?.to_scalar::<f32>()?);
    let full = ModelConfig::full_size();
    let hift = Hift::new(&full, &crate::hift::random_weights(&full, seed, dev)?)?;
    let wav32 = hift.forward(&mel32)?;
    let wav16 = hift.forward(&mel16)?;
    let signal: f64 = wav32.iter().map(|&v| f64::from(v).powi(2)).sum();
    let noise: f64 = wav32.iter().zip(&wav16).map(|(&a, &b)| f64::from(a - b).powi(2)).sum();
    let snr_db = 10.0 * (signal / noise.max(f64::MIN_POSITIVE)).log10();
    let wav_max_abs = wav32.iter().zip(&wav16).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
    println!(
        "\nbf16 ({}) against f32, one whole flow call (NFE 10, {} frames generated), full-size \
         random weights:\n  mel: largest |Δ| {max_abs:.3e}, mean |Δ| {mean_abs:.3e}, RMS Δ \
         {rms_diff:.3e} (mel RMS {rms_mel:.3}); waveform through the random vocoder: SNR \
         {snr_db:.1} dB, largest |Δ| {wav_max_abs:.3e}; flow call {t32:.1} s (f32) vs {t16:.1} s \
         (bf16)",
        lectern_kernels::gemm::bf16_weight::backend(dev),
        2 * DEVIATION_TOKENS
    );
    Ok(json!({
        "backend": lectern_kernels::gemm::bf16_weight::backend(dev),
        "generated_frames": 2 * DEVIATION_TOKENS, "nfe": 10,
        "mel_max_abs": max_abs, "mel_mean_abs": mean_abs, "mel_rms_diff": rms_diff,
        "mel_rms": rms_mel, "wave_snr_db": snr_db, "wave_max_abs": wav_max_abs,
        "flow_call_f32_s": t32, "flow_call_bf16_s": t16,
    }))
}
