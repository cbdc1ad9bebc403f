//! `lectern bench --stage gemm`: GFLOP/s of the DiT's four projection products on the CPU, at
//! the row counts of real flow calls (CFG batch 2 × frames), each way Lectern can run them:
//! * `candle`: what the f32 flow runs (`x.matmul(&w.t())`, the `gemm` crate's kernels, with
//!   the AVX-512 ones where the build enables its `x86-v4` feature);
//! * `openblas`: the system's OpenBLAS where the f32 flow uses it ([`cpu_blas`]: CPUs with
//!   AVX-512), also when `LECTERN_OPENBLAS=0` keeps the flow on the `gemm` crate;
//! * `bf16`: the `--flow-matmul bf16` product ([`lectern_kernels::gemm::bf16_weight`]): AMX or
//!   AVX512-BF16 where the CPU has it, bf16-rounded inputs through the f32 product elsewhere.
//!
//! Pair it with `scripts/upstream/torch_gemm.py` (PyTorch's `F.linear`, same shapes)
//! in the same run for a ratio.

use std::time::Instant;

use candle::{Device, Tensor};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::json;

use crate::BenchOptions;
use lectern_kernels::gemm::bf16_weight::{self as bf16, Bf16Weight};
use lectern_kernels::gemm::{blas as cpu_blas, sgemm as cpu_gemm};

/// The DiT's projections: (name, in, out).
const SHAPES: [(&str, usize, usize); 4] =
    [("qkv", 1024, 3072), ("out", 1024, 1024), ("ff0", 1024, 2048), ("ff2", 2048, 1024)];
/// Rows: CFG batch 2 × (588 prompt frames + 620 generated: `smoke`'s one flow call; + 1000).
const ROWS: [usize; 2] = [2416, 3176];

fn best(reps: usize, mut f: impl FnMut() -> anyhow::Result<()>) -> anyhow::Result<f64> {
    f()?;
    let mut t = f64::INFINITY;
    for _ in 0..reps {
        let s = Instant::now();
        f()?;
        t = t.min(s.elapsed().as_secs_f64());
    }
    Ok(t)
}

fn random(rng: &mut ChaCha8Rng, shape: (usize, usize), scale: f32) -> candle::Result<Tensor> {
    let v: Vec<f32> = (0..shape.0 * shape.1).map(|_| rng.gen_range(-scale..scale)).collect();
    Tensor::from_vec(v, shape, &Device::Cpu)
}

pub fn run(opts: &BenchOptions) -> anyhow::Result<serde_json::Value> {
    anyhow::ensure!(opts.device.is_cpu(), "--stage gemm measures the CPU's products");
    let reps = if opts.quick { 2 } else { 5 };
    let rows_list: &[usize] = if opts.quick { &ROWS[..1] } else { &ROWS };
    let mut rng = ChaCha8Rng::seed_from_u64(opts.weights_seed);
    let blas = cpu_blas::system_openblas();
    println!(
        "gemm bench: the DiT's projections x·Wᵀ, best of {reps}, {} threads; bf16 runs as {}; \
         the f32 flow runs on {}",
        candle::utils::get_num_threads(),
        bf16::backend(&opts.device),
        cpu_gemm::describe()
    );
    if let Some(b) = blas {
        println!("openblas column: {} ({})", b.core, b.config);
    }
    println!(
        "{:>6} {:>5} {:>6} {:>6} {:>12} {:>12} {:>12} {:>12}",
        "name", "rows", "in", "out", "candle GF/s", "openblas", "own avx2", "bf16 GF/s"
    );
    let mut out = Vec::new();
    for &rows in rows_list {
        for (name, inp, outd) in SHAPES {
            let x = random(&mut rng, (rows, inp), 1.0)?;
            let w = random(&mut rng, (outd, inp), 1.0 / (inp as f32).sqrt())?;
            let flop = 2.0 * (rows * inp * outd) as f64;
            let t_candle = best(reps, || {
                x.matmul(&w.t()?)?;
                Ok(())
            })?;
            let want = x.matmul(&w.t()?)?;
            let (t_blas, blas_diff) = match blas {
                Some(b) => {
                    let t = best(reps, || {
                        b.matmul_t(&x, &w)?;
                        Ok(())
                    })?;
                    let got = b.matmul_t(&x, &w)?.expect("f32 CPU operands");
                    let d = (&got - &want)?.abs()?.flatten_all()?.max(0)?.to_scalar::<f32>()?;
                    (Some(t), Some(d))
                }
                None => (None, None),
            };
            let (t_avx2, avx2_diff) = match cpu_gemm::runs_here() {
                true => {
                    let (xs, ws) =
                        (x.flatten_all()?.to_vec1::<f32>()?, w.flatten_all()?.to_vec1::<f32>()?);
                    let mut ys = vec![0f32; rows * outd];
                    let t = best(reps, || {
                        cpu_gemm::product_into(&xs, &ws, &mut ys, (rows, inp, outd));
                        Ok(())
                    })?;
                    let got = Tensor::from_vec(ys, (rows, outd), &Device::Cpu)?;
                    let d = (&got - &want)?.abs()?.flatten_all()?.max(0)?.to_scalar::<f32>()?;
                    (Some(t), Some(d))
                }
                false => (None, None),
            };
            let wb = Bf16Weight::new(&w)?;
            let t_bf16 = best(reps, || {
                wb.matmul_t(&x)?;
                Ok(())
            })?;
            let got = wb.matmul_t(&x)?;
            let bf16_diff = (&got - &want)?.abs()?.flatten_all()?.max(0)?.to_scalar::<f32>()?;
            // The bf16 kernel against the same rounding through the f32 product: only the order
            // of the f32 sums may differ (the check that the kernel computes what it should).
            let rounded = Bf16Weight::Rounded(bf16::round(&w)?).matmul_t(&x)?;
            let bf16_vs_rounded =
                (&got - rounded)?.abs()?.flatten_all()?.max(0)?.to_scalar::<f32>()?;
            let gf = |t: f64| flop / t / 1e9;
            let blas_column = t_blas.map_or_else(|| "-".to_string(), |t| format!("{:.1}", gf(t)));
            let avx2_column = t_avx2.map_or_else(|| "-".to_string(), |t| format!("{:.1}", gf(t)));
            println!(
                "{name:>6} {rows:>5} {inp:>6} {outd:>6} {:>12.1} {blas_column:>12} {avx2_column:>12} {:>12.1}",
                gf(t_candle),
                gf(t_bf16)
            );
            out.push(json!({
                "name": name, "rows": rows, "in": inp, "out": outd,
                "candle_s": t_candle, "candle_gflops": gf(t_candle),
                "openblas_s": t_blas, "openblas_gflops": t_blas.map(gf),
                "openblas_max_abs_vs_candle": blas_diff,
                "avx2_s": t_avx2, "avx2_gflops": t_avx2.map(gf),
                "avx2_max_abs_vs_candle": avx2_diff,
                "bf16_s": t_bf16, "bf16_gflops": gf(t_bf16),
                "bf16_max_abs_vs_f32": bf16_diff,
                "bf16_max_abs_vs_rounded_f32": bf16_vs_rounded,
                "f32_max_abs_output": want.abs()?.flatten_all()?.max(0)?.to_scalar::<f32>()?,
            }));
        }
    }
    Ok(json!({
        "stage": "gemm", "threads": candle::utils::get_num_threads(),
        "bf16_backend": bf16::backend(&opts.device), "reps": reps,
        "f32_flow_product": cpu_gemm::describe(),
        "openblas": blas.map(|b| json!({"core": b.core, "config": b.config})),
        "shapes": out,
    }))
}
