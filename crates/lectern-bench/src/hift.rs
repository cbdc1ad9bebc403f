//! `lectern bench --stage hift`: the vocoder at full size (base channels 512, F0 cond 512) on
//! seeded random weights, for 1 s, 10 s and 60 s of mel (50, 500, 3000 frames; the fastest of
//! two calls up to 10 s, as upstream's profile script times them); `--quick` runs 1 s and 10 s.
//! Also times one full-size resblock conv of each stage every way Lectern has (candle's im2col
//! conv1d, a tap-major sum of matmuls, the stacked-tap GEMM and tap sum, and each kernel of the
//! direct convolution this CPU runs), and the whole 10 s call on the stacked-tap path and on
//! each direct kernel, so the choice of convolution stays measured.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use candle::{DType, Device, Tensor};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};

use crate::{BenchOptions, sync, time};
use lectern_kernels::conv::direct::{self as conv_direct, Kernel, Panels};
use lectern_kernels::conv::vocoder;
use lectern_kernels::cuda::hift::{self as kernels, ConvGeometry};
use lectern_model::config::{ModelConfig, SAMPLES_PER_FRAME};
use lectern_model::hift::Hift;
use lectern_model::weights::{Checkpoint, Weights};

/// Mel frames of each workload (50 frames per second of audio).
const FRAMES_FULL: [usize; 3] = [50, 500, 3000];
const FRAMES_QUICK: [usize; 2] = [50, 500];
/// Wall-clock budget of the sweep, seconds (workloads that would overrun it are skipped).
const BUDGET_S: f64 = 150.0;

/// Timed calls at `frames`, the fastest counting: two up to 10 s of audio, one beyond, as
/// upstream's vocoder profile (`scripts/upstream/upstream_hift_profile.py`) times upstream's, so
/// the two read alike. A size's first call also pays for fresh heap pages that the engine's
/// later calls reuse.
fn calls_at(frames: usize) -> usize {
    if frames <= 500 { 2 } else { 1 }
}

pub fn run(opts: &BenchOptions) -> anyhow::Result<serde_json::Value> {
    let cfg = ModelConfig::full_size();
    let t0 = Instant::now();
    let weights = random_weights(&cfg, opts.weights_seed, &opts.device)?;
    let mut hift = Hift::new(&cfg, &weights)?;
    hift.set_kernels(opts.vocoder_kernels);
    let load_s = t0.elapsed().as_secs_f64();
    println!(
        "hift bench: full size (base 512, F0 cond 512), seeded random weights ({load_s:.2} s to build)"
    );
    println!(
        "{:>10} {:>8} {:>10} {:>12} {:>14}",
        "audio s", "frames", "run", "wall s", "audio s / s"
    );
    let frames_list: &[usize] = if opts.quick { &FRAMES_QUICK } else { &FRAMES_FULL };
    let mut rows = Vec::new();
    let mut rng = ChaCha8Rng::seed_from_u64(opts.weights_seed + 1);
    let mut mel_of = |frames: usize| -> anyhow::Result<Tensor> {
        let mel: Vec<f32> = (0..80 * frames).map(|_| rng.gen_range(-8.0f32..2.0)).collect();
        Ok(Tensor::from_vec(mel, (1, 80, frames), &opts.device)?)
    };
    // One untimed warm-up call (first-touch allocations, the first noise rows).
    hift.forward(&mel_of(frames_list[0])?)?;
    let bench_start = Instant::now();
    let mut last_rate = None;
    for &frames in frames_list {
        let audio_s = (frames * SAMPLES_PER_FRAME) as f64 / 24_000.0;
        // Keep the default run near 3 minutes: skip a workload the measured rate says would
        // not fit, and say so.
        if let Some(rate) = last_rate {
            let estimate = audio_s / rate;
            let left = BUDGET_S - bench_start.elapsed().as_secs_f64();
            if estimate > left {
                println!(
                    "{audio_s:>10.1} {frames:>8} {:>10} skipped: ~{estimate:.0} s at the measured \
                     rate, {left:.0} s left of the {BUDGET_S:.0} s budget",
                    "-"
                );
                rows.push(json!({"audio_s": audio_s, "frames": frames, "skipped": true,
                    "estimated_s": estimate}));
                continue;
            }
        }
        let mel = mel_of(frames)?;
        let calls = calls_at(frames);
        let s = time(&opts.device, calls, || {
            let wav = hift.forward(&mel)?;
            anyhow::ensure!(wav.len() == frames * SAMPLES_PER_FRAME, "wrong output length");
            Ok(wav)
        })?;
        let run = if calls == 1 { "once".to_string() } else { format!("best of {calls}") };
        println!("{audio_s:>10.1} {frames:>8} {run:>10} {s:>12.3} {:>14.2}", audio_s / s);
        last_rate = Some(audio_s / s);
        rows.push(json!({"audio_s": audio_s, "frames": frames, "wall_s": s, "calls": calls,
            "audio_s_per_s": audio_s / s}));
    }
    if opts.quick {
        println!("(--quick: the 60 s / 3000-frame workload is skipped)");
    }
    let mel = mel_of(500)?;
    {
        // One more 10 s call for a kernel profiler (ncu).
        let _profiled = lectern_kernels::cuda::profiled_range();
        hift.forward(&mel)?;
        sync(&opts.device)?;
    }
    let kernels = kernel_comparison(&mut hift, &mel, &opts.device)?;
    let direct = direct_conv_comparison(&mut hift, &mel, &opts.device)?;
    let convs = conv_comparison(&opts.device, opts.weights_seed)?;
    Ok(json!({ "stage": "hift", "device": format!("{:?}", opts.device), "build_s": load_s,
        "runs": rows, "conv_comparison": convs, "kernel_comparison": kernels,
        "direct_conv_comparison": direct }))
}

/// The 10 s call with and without Lectern's vocoder kernels (CUDA: [`kernels`]; CPU: the
/// stacked-tap convs and Snake of [`vocoder`]), time and the largest difference in the waveform.
///
/// [`kernels`]: lectern_kernels::cuda::hift
/// [`vocoder`]: lectern_kernels::conv::vocoder
fn kernel_comparison(hift: &mut Hift, mel: &Tensor, device: &Device) -> anyhow::Result<Value> {
    let mut timed = |on: bool| -> anyhow::Result<(f64, Vec<f32>)> {
        hift.set_kernels(on);
        hift.forward(mel)?; // warm
        sync(device)?;
        let t = Instant::now();
        let wav = hift.forward(mel)?;
        sync(device)?;
        Ok((t.elapsed().as_secs_f64(), wav))
    };
    let (candle_s, by_candle) = timed(false)?;
    let (kernel_s, by_kernels) = timed(true)?;
    let deviation = largest_difference(&by_candle, &by_kernels);
    println!(
        "\n10 s of audio with Lectern's vocoder kernels: {kernel_s:.4} s; candle's ops: \
         {candle_s:.4} s ({:.2}×); largest waveform difference {deviation:.2e}",
        candle_s / kernel_s
    );
    Ok(json!({"kernels_s": kernel_s, "candle_s": candle_s, "max_abs_diff": deviation}))
}

/// Timed calls per way in [`conv_comparison`]; the fastest counts (this VM's neighbours move
/// single calls by ±30 %).
const CONV_CALLS: usize = 3;

/// The largest sample-by-sample difference of two waveforms.
fn largest_difference(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max)
}

/// The 10 s call with its CPU convs on the stacked-tap path and on each direct-conv kernel this
/// CPU runs, alternated, fastest of two each; time and the largest waveform difference from the
/// stacked-tap path. The vocoder's own choice is restored afterwards.
fn direct_conv_comparison(hift: &mut Hift, mel: &Tensor, device: &Device) -> anyhow::Result<Value> {
    let kernels = if device.is_cpu() { Kernel::all_here() } else { Vec::new() };
    if kernels.is_empty() {
        return Ok(Value::Null);
    }
    let ways: Vec<Option<Kernel>> =
        std::iter::once(None).chain(kernels.into_iter().map(Some)).collect();
    let mut best = vec![f64::INFINITY; ways.len()];
    let mut waves = vec![Vec::new(); ways.len()];
    for _round in 0..2 {
        for (i, &way) in ways.iter().enumerate() {
            hift.set_direct_conv(way);
            hift.forward(mel)?; // warm: packs the weights on first use
            let t = Instant::now();
            waves[i] = hift.forward(mel)?;
            best[i] = best[i].min(t.elapsed().as_secs_f64());
        }
    }
    hift.set_direct_conv(conv_direct::vocoder_default());
    println!("\n10 s of audio, CPU convs on each path (fastest of 2, alternated):");
    let mut rows = Vec::new();
    for (i, way) in ways.iter().enumerate() {
        let name = way.map_or("stacked-tap".to_string(), |k| format!("direct {k:?}"));
        let diff = largest_difference(&waves[0], &waves[i]);
        println!(
            "{name:>14}: {:.4} s ({:.2}× the stacked-tap path's speed), largest waveform \
             difference from it {diff:.2e}",
            best[i],
            best[0] / best[i]
        );
        rows.push(json!({"path": name, "wall_s": best[i], "max_abs_diff": diff}));
    }
    Ok(Value::Array(rows))
}

/// One resblock conv of each stage at 10 s of audio, every way Lectern has.
fn conv_comparison(device: &Device, seed: u64) -> anyhow::Result<serde_json::Value> {
    println!(
        "\nresblock conv (10 s of audio), dilation 3, fastest of {CONV_CALLS}: candle conv1d vs \
         tap-major matmuls vs one stacked-tap GEMM + tap sum (Lectern's, CPU and CUDA) vs the \
         direct conv's kernels (CPU; the vocoder's here: {})",
        conv_direct::vocoder_default().map_or("stacked".into(), |k| format!("direct {k:?}"))
    );
    println!(
        "{:>8} {:>8} {:>4} {:>12} {:>12} {:>12} {:>12} {:>12}",
        "channels", "frames", "k", "conv1d s", "tap-major s", "stacked s", "avx2 s", "avx512 s"
    );
    let kernels_here = if device.is_cpu() { Kernel::all_here() } else { Vec::new() };
    let mut rng = ChaCha8Rng::seed_from_u64(seed + 2);
    let mut out = Vec::new();
    for (c, frames, k) in [(256, 4000, 11), (128, 20_000, 11), (64, 60_000, 11), (64, 60_000, 3)] {
        let d = 3;
        let x = rand_tensor(&mut rng, &[1, c, frames + (k - 1) * d], 1.0, device)?;
        let w = rand_tensor(&mut rng, &[c, c, k], 0.05, device)?;
        let w_taps = w.permute((2, 0, 1))?.contiguous()?; // (k, out, in)
        let time = |f: &dyn Fn() -> candle::Result<Tensor>| -> anyhow::Result<(f64, Tensor)> {
            let mut y = f()?;
            let mut best = f64::INFINITY;
            for _ in 0..CONV_CALLS {
                sync(device)?;
                let t = Instant::now();
                y = f()?;
                sync(device)?;
                best = best.min(t.elapsed().as_secs_f64());
            }
            Ok((best, y))
        };
        let max_diff = |a: &Tensor, b: &Tensor| -> anyhow::Result<f32> {
            Ok((a - b)?.abs()?.flatten_all()?.max(0)?.to_scalar::<f32>()?)
        };
        let (t_conv, y1) = time(&|| x.conv1d(&w, 0, 1, d, 1))?;
        let (t_taps, y2) =
            time(&|| lectern_kernels::conv::tap_major::conv1d_tap_major(&x, &w_taps, d))?;
        let diff = max_diff(&y1, &y2)?;
        let stacked = w_taps.flatten_to(1)?;
        let bias = Tensor::zeros(c, DType::F32, device)?;
        let geometry = ConvGeometry { k, dilation: d, pad_left: 0, pad_right: 0 };
        let stacked_conv = || -> candle::Result<Tensor> {
            if device.is_cpu() {
                let plain = vocoder::ConvInput::Plain;
                return vocoder::conv1d(&x, &stacked, &bias, geometry, None, plain, None);
            }
            match kernels::conv1d(&x, &stacked, &bias, geometry, None)? {
                Some(y) => Ok(y),
                None => candle::bail!("no stacked-tap conv on {device:?}"),
            }
        };
        let (t_stacked, diff_stacked) = match time(&stacked_conv) {
            Ok((t, y3)) => (Some(t), Some(max_diff(&y1, &y3)?)),
            Err(_) => (None, None),
        };
        let mut direct = HashMap::new();
        if !kernels_here.is_empty() {
            let (xs, x_frames) = (x.flatten_all()?.to_vec1::<f32>()?, x.dim(2)?);
            let panels = Panels::pack(&stacked.flatten_all()?.to_vec1::<f32>()?, k, c, c);
            let zeros = vec![0f32; c];
            for &kernel in &kernels_here {
                let conv = || -> candle::Result<Tensor> {
                    let mut y = vec![0f32; c * frames];
                    let plain = vocoder::ConvInput::Plain;
                    conv_direct::conv1d(
                        kernel, &xs, x_frames, &panels, &zeros, geometry, None, plain, &mut y,
                    );
                    Tensor::from_vec(y, (1, c, frames), device)
                };
                let (t, y) = time(&conv)?;
                direct.insert(kernel, (t, max_diff(&y1, &y)?));
            }
        }
        let secs = |t: Option<f64>| t.map_or("-".into(), |t| format!("{t:.4}"));
        let of = |kernel| direct.get(&kernel).copied();
        let diffs: Vec<String> =
            direct.iter().map(|(kernel, (_, d))| format!(", {kernel:?} {d:.1e}")).collect();
        println!(
            "{c:>8} {frames:>8} {k:>4} {t_conv:>12.4} {t_taps:>12.4} {:>12} {:>12} {:>12}   (max \
             diff {diff:.1e}, stacked {:.1e}{})",
            secs(t_stacked),
            secs(of(Kernel::Avx2).map(|(t, _)| t)),
            secs(of(Kernel::Avx512).map(|(t, _)| t)),
            diff_stacked.unwrap_or(f32::NAN),
            diffs.concat(),
        );
        out.push(json!({"channels": c, "frames": frames, "k": k, "dilation": d,
            "conv1d_s": t_conv, "tap_major_s": t_taps, "stacked_s": t_stacked,
            "direct_avx2_s": of(Kernel::Avx2).map(|(t, _)| t),
            "direct_avx512_s": of(Kernel::Avx512).map(|(t, _)| t)}));
    }
    Ok(serde_json::Value::Array(out))
}

fn rand_tensor(
    rng: &mut ChaCha8Rng,
    shape: &[usize],
    scale: f32,
    dev: &Device,
) -> anyhow::Result<Tensor> {
    let n: usize = shape.iter().product();
    let v: Vec<f32> = (0..n).map(|_| rng.gen_range(-scale..scale)).collect();
    Ok(Tensor::from_vec(v, shape, dev)?)
}

/// Every HiFT tensor at full size, plain (already folded) weights, uniform ±1/√fan_in.
pub fn random_weights(cfg: &ModelConfig, seed: u64, dev: &Device) -> anyhow::Result<Weights> {
    let h = &cfg.hift;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut map = HashMap::new();
    let mut conv = |map: &mut HashMap<String, Tensor>, name: &str, o: usize, i: usize, k: usize| {
        let scale = 1.0 / ((i * k) as f32).sqrt();
        let w = rand_tensor(&mut rng, &[o, i, k], scale, dev)?;
        let b = rand_tensor(&mut rng, &[o], 0.01, dev)?;
        map.insert(format!("{name}.weight"), w);
        map.insert(format!("{name}.bias"), b);
        anyhow::Ok(())
    };
    let base = h.base_channels;
    let n_fft2 = h.n_fft + 2;
    let stage: Vec<usize> = (1..=h.upsample_rates.len()).map(|i| base >> i).collect();
    conv(&mut map, "conv_pre", base, h.in_channels, h.conv_pre_look_right + 1)?;
    let mut prev = base;
    for (i, &k) in h.upsample_kernel_sizes.iter().enumerate() {
        conv(&mut map, &format!("ups.{i}"), stage[i], prev, k)?;
        prev = stage[i];
    }
    for (i, k) in [30, 6, 1].into_iter().enumerate() {
        conv(&mut map, &format!("source_downs.{i}"), stage[i], n_fft2, k)?;
    }
    let mut resblock = |map: &mut HashMap<String, Tensor>, name: String, c: usize, k: usize| {
        for j in 0..3 {
            conv(map, &format!("{name}.convs1.{j}"), c, c, k)?;
            conv(map, &format!("{name}.convs2.{j}"), c, c, k)?;
            for a in ["activations1", "activations2"] {
                map.insert(format!("{name}.{a}.{j}.alpha"), Tensor::ones(c, DType::F32, dev)?);
            }
        }
        anyhow::Ok(())
    };
    for (i, &k) in h.source_resblock_kernel_sizes.iter().enumerate() {
        resblock(&mut map, format!("source_resblocks.{i}"), stage[i], k)?;
    }
    for (i, &c) in stage.iter().enumerate() {
        for (j, &k) in h.resblock_kernel_sizes.iter().enumerate() {
            resblock(&mut map, format!("resblocks.{}", 3 * i + j), c, k)?;
        }
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed + 3);
    let mut conv = |map: &mut HashMap<String, Tensor>, name: &str, o: usize, i: usize, k: usize| {
        let scale = 1.0 / ((i * k) as f32).sqrt();
        map.insert(format!("{name}.weight"), rand_tensor(&mut rng, &[o, i, k], scale, dev)?);
        map.insert(format!("{name}.bias"), rand_tensor(&mut rng, &[o], 0.01, dev)?);
        anyhow::Ok(())
    };
    conv(&mut map, "conv_post", n_fft2, prev, 7)?;
    let c = h.f0_cond_channels;
    conv(&mut map, "f0_predictor.condnet.0", c, h.in_channels, 4)?;
    for i in [2, 4, 6, 8] {
        conv(&mut map, &format!("f0_predictor.condnet.{i}"), c, c, 3)?;
    }
    // Classifier scaled so F0 lands in a speech-like range (tens to hundreds of Hz).
    map.insert("f0_predictor.classifier.weight".into(), rand_tensor(&mut rng, &[1, c], 20.0, dev)?);
    map.insert("f0_predictor.classifier.bias".into(), Tensor::full(150f32, 1, dev)?);
    map.insert(
        "m_source.l_linear.weight".into(),
        rand_tensor(&mut rng, &[1, h.nb_harmonics + 1], 0.3, dev)?,
    );
    map.insert("m_source.l_linear.bias".into(), Tensor::zeros(1, DType::F32, dev)?);
    let ckpt = Checkpoint::from_tensors("random-hift(seeded)", map);
    Ok(Weights::root(Arc::new(ckpt)))
}
