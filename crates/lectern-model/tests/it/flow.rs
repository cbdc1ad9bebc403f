//! The flow (DiT estimator, pre-net, CFM solver, groups) against the upstream tiny fixtures.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use candle::{DType, Device, Tensor};
use lectern_kernels::gemm::blas::OpenBlas;
use lectern_kernels::gemm::sgemm::{self as cpu_gemm, F32Gemm};
use lectern_model::config::{ModelConfig, ModelFiles};
use lectern_model::flow::cfm::{cosine_schedule, euler_times};
use lectern_model::flow::dit::DiT;
use lectern_model::flow::{
    CausalMaskedDiffWithDiT, FlowMatmul, FlowPrompt, GroupRecord, NoiseSource,
};
use lectern_model::{Checkpoint, Weights};

type Tensors = HashMap<String, Tensor>;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}

fn model_dir() -> PathBuf {
    root().join("cosyvoice3-tiny-a/model")
}

fn case(name: &str) -> Tensors {
    candle::safetensors::load(root().join("cosyvoice3-tiny-a").join(name), &Device::Cpu).unwrap()
}

fn max_abs(a: &Tensor, b: &Tensor) -> f32 {
    assert_eq!(a.dims(), b.dims(), "shapes differ");
    (a - b).unwrap().abs().unwrap().flatten_all().unwrap().max(0).unwrap().to_scalar().unwrap()
}

fn assert_close(name: &str, got: &Tensor, want: &Tensor, tol: f32) {
    let d = max_abs(got, want);
    eprintln!("{name}: max abs diff {d:.3e} (tol {tol:.0e})");
    assert!(d <= tol, "{name}: max abs diff {d} > {tol}");
}

fn ids(t: &Tensor) -> Vec<u32> {
    t.flatten_all().unwrap().to_vec1::<i64>().unwrap().into_iter().map(|x| x as u32).collect()
}

fn flow() -> (CausalMaskedDiffWithDiT, ModelConfig) {
    let cfg = ModelConfig::from_dir(&model_dir()).unwrap();
    let files = ModelFiles::in_dir(&model_dir());
    let flow =
        CausalMaskedDiffWithDiT::load(&cfg.flow, &files.flow, &Device::Cpu, &NoiseSource::Rebuilt)
            .unwrap();
    (flow, cfg)
}

fn prompt(c: &Tensors) -> FlowPrompt {
    FlowPrompt {
        prompt_token: ids(&c["prompt_token"]),
        prompt_feat: c["prompt_feat"].clone(),
        embedding: c["embedding"].clone(),
    }
}

/// f32 on candle's matmul (the `gemm` crate), whatever OpenBLAS this machine has.
#[test]
fn dit_estimator_matches_upstream() {
    dit_estimator_matches_upstream_with(FlowMatmul::F32, None);
}

/// f32 with the blocks' projections on the system's OpenBLAS (`cpu_blas`; CI installs it):
/// the same gates.
#[test]
fn dit_estimator_on_openblas_matches_upstream() {
    if let Some(blas) = system_openblas() {
        dit_estimator_matches_upstream_with(FlowMatmul::F32, Some(F32Gemm::OpenBlas(blas)));
    }
}

/// f32 with the blocks' projections on Lectern's AVX2 GEMM (`cpu_gemm`; every x86-64 CPU CI
/// runs on has AVX2), whatever the CPU's widest kernels: the same gates.
#[test]
fn dit_estimator_on_the_avx2_gemm_matches_upstream() {
    if cpu_gemm::runs_here() {
        dit_estimator_matches_upstream_with(FlowMatmul::F32, Some(F32Gemm::Avx2));
    }
}

/// The system's OpenBLAS, or `None`: the test skips (fails where CI requires it).
fn system_openblas() -> Option<&'static OpenBlas> {
    lectern_test_support::optional::openblas_or_skip(lectern_kernels::gemm::blas::system_openblas())
}

/// 3xTF32 (`--flow-matmul tf32x3`), its tensor-core products emulated on the CPU: the same
/// gates.
#[test]
fn dit_estimator_as_3xtf32_matches_upstream() {
    dit_estimator_matches_upstream_with(FlowMatmul::Tf32x3, None);
}

fn dit_estimator_matches_upstream_with(matmul: FlowMatmul, gemm: Option<F32Gemm>) {
    let cfg = ModelConfig::from_dir(&model_dir()).unwrap();
    let ckpt =
        Arc::new(Checkpoint::load(&ModelFiles::in_dir(&model_dir()).flow, &Device::Cpu).unwrap());
    let mut dit = DiT::new(&cfg.flow.dit, &Weights::root(ckpt).pp("decoder.estimator"))
        .unwrap()
        .with_matmul(matmul)
        .unwrap();
    dit.set_f32_gemm(gemm);
    assert_eq!(dit.matmul(), matmul);
    let label = gemm.map_or(matmul.name(), F32Gemm::label);
    assert_eq!(dit.matmul_label(), label);
    let c = case("dit_block.safetensors");
    let mut taps = Vec::new();
    let out = dit
        .forward_with_taps(
            &c["in.x"],
            &c["in.mu"],
            &c["in.t"],
            &c["in.spks"],
            &c["in.cond"],
            Some(&mut taps),
        )
        .unwrap();
    let taps: Tensors = taps.into_iter().collect();
    for name in [
        "time_embed",
        "input_embed",
        "block0.attn_norm_x",
        "block0.gate_msa",
        "block0.attn_out",
        "block0.ff_out",
        "block0.out",
        "block1.out",
        "norm_out",
    ] {
        assert_close(name, &taps[name], &c[name], 1e-4);
    }
    assert_close("nonstream.out", &out, &c["nonstream.out"], 1e-4);
}

/// The CFG batch shares one time, so the estimator computes the time embedding and every
/// AdaLN projection on one row; rows with times of their own still get their own.
#[test]
fn dit_estimator_shares_one_time_and_keeps_distinct_ones() {
    let cfg = ModelConfig::from_dir(&model_dir()).unwrap();
    let ckpt =
        Arc::new(Checkpoint::load(&ModelFiles::in_dir(&model_dir()).flow, &Device::Cpu).unwrap());
    let dit = DiT::new(&cfg.flow.dit, &Weights::root(ckpt).pp("decoder.estimator")).unwrap();
    let c = case("dit_block.safetensors");
    let (x, mu, spks, cond) = (&c["in.x"], &c["in.mu"], &c["in.spks"], &c["in.cond"]);
    let b = x.dim(0).unwrap();
    assert!(b >= 2, "the fixture's batch is a CFG pair");
    let run = |t: &[f32]| {
        let t = Tensor::new(t, &Device::Cpu).unwrap();
        dit.forward(x, mu, &t, spks, cond).unwrap()
    };
    let one = run(&[0.4]);
    assert_eq!(max_abs(&run(&vec![0.4; b]), &one), 0.0, "equal times are one shared time");

    let mut times = vec![0.4; b];
    times[b - 1] = 0.7;
    let mixed = run(&times);
    let last = |t: &Tensor| t.narrow(0, b - 1, 1).unwrap();
    let alone = dit
        .forward(
            &last(x),
            &last(mu),
            &Tensor::new(&[0.7f32], &Device::Cpu).unwrap(),
            &last(spks),
            &last(cond),
        )
        .unwrap();
    assert_close("last row at its own time", &last(&mixed), &alone, 1e-5);
    assert!(max_abs(&last(&mixed), &last(&one)) > 1e-3, "the time reaches the row");
    assert_close("first row", &mixed.narrow(0, 0, 1).unwrap(), &one.narrow(0, 0, 1).unwrap(), 1e-5);
}

/// Largest deviation from upstream's f32 allowed of `--flow-matmul bf16` (a reduced precision,
/// not held to the f32 gates): about twice what it measures, so a change that makes it worse
/// is caught. Mostly the position embedding's bf16 convs: the tiny fixture model's have 4
/// channels a group, so their rounding errors do not average out as full-size ones do.
const BF16_DIT_BOUND: f32 = 2.5e-2;

const BF16_MEL_BOUND: f32 = 3e-2;

/// bf16 products (`--flow-matmul bf16`; a bf16 kernel where the CPU has one, the same rounding
/// before f32 products elsewhere): the DiT's deviation from upstream's f32, measured and bounded.
#[test]
fn dit_estimator_as_bf16_stays_within_its_stated_deviation() {
    let cfg = ModelConfig::from_dir(&model_dir()).unwrap();
    let ckpt =
        Arc::new(Checkpoint::load(&ModelFiles::in_dir(&model_dir()).flow, &Device::Cpu).unwrap());
    let dit = DiT::new(&cfg.flow.dit, &Weights::root(ckpt).pp("decoder.estimator"))
        .unwrap()
        .with_matmul(FlowMatmul::Bf16)
        .unwrap();
    let c = case("dit_block.safetensors");
    let out = dit.forward(&c["in.x"], &c["in.mu"], &c["in.t"], &c["in.spks"], &c["in.cond"]);
    let d = max_abs(&out.unwrap(), &c["nonstream.out"]);
    eprintln!("bf16 DiT nonstream.out: max abs diff from upstream f32 {d:.3e}");
    assert!(d > 0.0, "bf16 products should not reproduce f32 exactly");
    assert!(d <= BF16_DIT_BOUND, "bf16 DiT deviation {d} > {BF16_DIT_BOUND}");
}

/// The whole flow in bf16 at NFE 10 and 4: the mel's deviation from upstream's f32.
#[test]
fn flow_inference_as_bf16_stays_within_its_stated_deviation() {
    let (mut flow, _) = flow();
    flow.set_matmul(FlowMatmul::Bf16).unwrap();
    assert_eq!(flow.matmul().name(), "bf16");
    let c = case("flow.safetensors");
    let (p, tokens) = (prompt(&c), ids(&c["token"]));
    for (nfe, name) in [(10, "nonstream.mel"), (4, "nonstream.mel_n4")] {
        let mel = flow.inference(&p, &tokens, nfe).unwrap();
        let d = max_abs(&mel, &c[name]);
        eprintln!("bf16 {name}: max abs diff from upstream f32 {d:.3e}");
        assert!(d <= BF16_MEL_BOUND, "bf16 {name} deviation {d} > {BF16_MEL_BOUND}");
    }
}

#[test]
fn dit_checkpoint_from_safetensors_loads_too() {
    // Round-trip flow.pt through a safetensors file and check the estimator still loads.
    let files = ModelFiles::in_dir(&model_dir());
    let tensors = candle::pickle::read_all(&files.flow).unwrap();
    let map: Tensors = tensors.into_iter().collect();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("flow.safetensors");
    candle::safetensors::save(&map, &path).unwrap();
    let cfg = ModelConfig::from_dir(&model_dir()).unwrap();
    CausalMaskedDiffWithDiT::load(&cfg.flow, &path, &Device::Cpu, &NoiseSource::Rebuilt).unwrap();
}

#[test]
fn cosine_grid_reproduces_upstream_euler_times() {
    let c = case("flow.safetensors");
    let want = c["nonstream.euler_t"].to_vec1::<f32>().unwrap();
    let got = euler_times(&cosine_schedule(10).unwrap());
    assert_eq!(got, want, "t recurrence differs from upstream");
}

#[test]
fn flow_inference_matches_upstream() {
    flow_inference_matches_upstream_with(FlowMatmul::F32, None);
}

/// f32 on the system's OpenBLAS: the same gates at NFE 10 and 4.
#[test]
fn flow_inference_on_openblas_matches_upstream() {
    if let Some(blas) = system_openblas() {
        flow_inference_matches_upstream_with(FlowMatmul::F32, Some(F32Gemm::OpenBlas(blas)));
    }
}

/// f32 on Lectern's AVX2 GEMM: the same gates at NFE 10 and 4.
#[test]
fn flow_inference_on_the_avx2_gemm_matches_upstream() {
    if cpu_gemm::runs_here() {
        flow_inference_matches_upstream_with(FlowMatmul::F32, Some(F32Gemm::Avx2));
    }
}

/// 3xTF32 (`--flow-matmul tf32x3`), emulated on the CPU: the same gates at NFE 10 and 4.
#[test]
fn flow_inference_as_3xtf32_matches_upstream() {
    flow_inference_matches_upstream_with(FlowMatmul::Tf32x3, None);
}

fn flow_inference_matches_upstream_with(matmul: FlowMatmul, gemm: Option<F32Gemm>) {
    let (mut flow, _) = flow();
    flow.set_matmul(matmul).unwrap();
    flow.set_f32_gemm(gemm);
    let c = case("flow.safetensors");
    let p = prompt(&c);
    let tokens = ids(&c["token"]);
    let inputs = flow.prepare(&p, &tokens).unwrap();
    assert_close("nonstream.h", &inputs.h, &c["nonstream.h"], 1e-4);
    assert_close("nonstream.spks", &inputs.spks, &c["nonstream.spks"], 1e-4);
    assert_close("nonstream.mu", &inputs.mu, &c["nonstream.mu"], 1e-4);
    assert_close("nonstream.cond", &inputs.cond, &c["nonstream.cond"], 1e-4);
    let mel = flow.inference(&p, &tokens, 10).unwrap();
    assert_close("nonstream.mel", &mel, &c["nonstream.mel"], 1e-3);
    let mel4 = flow.inference(&p, &tokens, 4).unwrap();
    assert_close("nonstream.mel_n4", &mel4, &c["nonstream.mel_n4"], 1e-3);
}

#[test]
fn exact_noise_file_matches_upstream_too() {
    let cfg = ModelConfig::from_dir(&model_dir()).unwrap();
    let noise = NoiseSource::File(root().join("cfm_rand_noise.safetensors"));
    let files = ModelFiles::in_dir(&model_dir());
    let flow = CausalMaskedDiffWithDiT::load(&cfg.flow, &files.flow, &Device::Cpu, &noise).unwrap();
    let c = case("flow.safetensors");
    let mel = flow.inference(&prompt(&c), &ids(&c["token"]), 4).unwrap();
    assert_close("nonstream.mel_n4 (file noise)", &mel, &c["nonstream.mel_n4"], 1e-3);
}

#[test]
fn group_cuts_at_exact_frame_boundaries() {
    let (flow, cfg) = flow();
    let c = case("flow.safetensors");
    let p = prompt(&c);
    let tokens = ids(&c["token"]);
    let segs: [&[u32]; 3] = [&tokens[..7], &tokens[7..20], &tokens[20..31]];
    let mels = flow.decode_group(&p, &segs, 2).unwrap();
    assert_eq!(mels.len(), 3);
    for (m, s) in mels.iter().zip(segs) {
        assert_eq!(m.dims(), [1, 80, 2 * s.len()]);
    }
    // The cuts tile the one-shot call over the concatenated tokens.
    let whole = flow.inference(&p, &tokens[..31], 2).unwrap();
    let joined = Tensor::cat(&mels, 2).unwrap();
    assert_eq!(max_abs(&joined, &whole), 0.0);

    // A group of one is the single-segment call, bit for bit.
    let one = flow.decode_group(&p, &[&tokens[7..20]], 2).unwrap();
    let single = flow.inference(&p, &tokens[7..20], 2).unwrap();
    assert_eq!(one.len(), 1);
    assert_eq!(
        one[0].flatten_all().unwrap().to_vec1::<f32>().unwrap(),
        single.flatten_all().unwrap().to_vec1::<f32>().unwrap()
    );
    // ... and a segment's mel depends on its group.
    assert!(max_abs(&one[0], &mels[1]) > 0.0);

    let recs = GroupRecord::for_group(&[7, 13, 11], flow.solver_options(2), &NoiseSource::Rebuilt);
    assert_eq!(recs[2].offset_tokens, 20);
    assert_eq!(recs[1].frames(cfg.flow.token_mel_ratio), 26);
    assert_eq!(recs[0].cfg_rate(), 0.7);
}

#[test]
fn bad_input_gets_clear_errors() {
    let (flow, _) = flow();
    let c = case("flow.safetensors");
    let p = prompt(&c);
    let tokens = ids(&c["token"]);
    let err = |r: lectern_model::Result<Tensor>| r.unwrap_err().to_string();

    assert!(err(flow.inference(&p, &[], 10)).contains("empty token list"));
    let e = err(flow.inference(&p, &[1, 6561, 2], 10));
    assert!(e.contains("6561") && e.contains("vocabulary"), "{e}");
    let mut bad = p.clone();
    bad.prompt_feat = Tensor::zeros((1, 60, 81), DType::F32, &Device::Cpu).unwrap();
    let e = err(flow.inference(&bad, &tokens, 10));
    assert!(e.contains("prompt mel") && e.contains("81"), "{e}");
    let e = err(flow.inference(&p, &tokens, 0));
    assert!(e.contains("NFE"), "{e}");
    let long = vec![1u32; 7500];
    let e = err(flow.inference(&p, &long, 10));
    assert!(e.contains("15000"), "{e}");
    let e = flow.decode_group(&p, &[&tokens[..3], &[]], 10).unwrap_err().to_string();
    assert!(e.contains("segment 1"), "{e}");
}
