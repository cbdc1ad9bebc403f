//! `lectern parity` as a program (PARITY.md): for every stage, the outputs it writes under the
//! fixture's tensor names are within the contract's tolerances of upstream's. The stages'
//! numerics themselves are gated in lectern-model's and lectern-parity's own tests.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use candle::{Device, Tensor};

type Tensors = HashMap<String, Tensor>;

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/cosyvoice3-tiny-a")
}

fn load(path: &Path) -> Tensors {
    candle::safetensors::load(path, &Device::Cpu).unwrap()
}

fn f32s(t: &Tensor) -> Vec<f32> {
    t.flatten_all().unwrap().to_dtype(candle::DType::F32).unwrap().to_vec1::<f32>().unwrap()
}

/// Largest |a − b| (or |a − b| / |b| when `relative`) over two tensors of equal shape.
fn max_diff(a: &Tensor, b: &Tensor, relative: bool) -> f32 {
    assert_eq!(a.dims(), b.dims(), "shapes differ");
    let (a, b) = (f32s(a), f32s(b));
    let diff = |(x, y): (&f32, &f32)| {
        let d = if x == y { 0.0 } else { (x - y).abs() };
        if relative { d / y.abs().max(1e-3) } else { d }
    };
    a.iter().zip(&b).map(diff).fold(0.0, f32::max)
}

/// Runs `lectern parity` on one case file of the tiny fixture; returns its outputs.
fn run_parity(case_file: &str, out_dir: &Path) -> Tensors {
    let out = out_dir.join(format!("out-{case_file}"));
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_lectern"))
        .arg("parity")
        .arg("--model")
        .arg(fixture_dir().join("model"))
        .arg("--case")
        .arg(fixture_dir().join(case_file))
        .arg("--out")
        .arg(&out)
        .status()
        .unwrap();
    assert!(status.success(), "lectern parity on {case_file} failed");
    load(&out)
}

/// Each named output has the fixture's dtype and shape and is within `tol` of it.
fn assert_within(case_file: &str, got: &Tensors, checks: &[(&str, f32, bool)]) {
    let want = load(&fixture_dir().join(case_file));
    for &(name, tol, relative) in checks {
        let (g, w) = (&got[name], &want[name]);
        assert_eq!(g.dtype(), w.dtype(), "{case_file} {name}: dtype");
        let d = max_diff(g, w, relative);
        assert!(d <= tol, "{case_file} {name}: max diff {d:e} (tolerance {tol:e})");
    }
}

#[test]
fn flow_stages_are_written_within_tolerance() {
    let dir = tempfile::tempdir().unwrap();
    let dit = [
        ("time_embed", 1e-4, false),
        ("input_embed", 1e-4, false),
        ("block0.out", 1e-4, false),
        ("nonstream.out", 1e-4, false),
    ];
    assert_within("dit_block.safetensors", &run_parity("dit_block.safetensors", dir.path()), &dit);
    let flow = [
        ("nonstream.h", 1e-4, false),
        ("nonstream.mu", 1e-4, false),
        ("nonstream.cond", 1e-4, false),
        ("nonstream.mel", 1e-3, false),
        ("nonstream.mel_n4", 1e-3, false),
    ];
    assert_within("flow.safetensors", &run_parity("flow.safetensors", dir.path()), &flow);
}

#[test]
fn vocoder_and_mel_are_written_within_tolerance() {
    let dir = tempfile::tempdir().unwrap();
    let hift =
        [("final.f0", 1e-5, true), ("final.source", 1e-4, false), ("final.speech", 2e-3, false)];
    assert_within("hift.safetensors", &run_parity("hift.safetensors", dir.path()), &hift);
    let mel = [("mel", 1e-4, false), ("short_mel", 1e-4, false)];
    assert_within("mel.safetensors", &run_parity("mel.safetensors", dir.path()), &mel);
}

#[test]
fn lm_log_probs_and_tokens_are_written_within_tolerance() {
    let dir = tempfile::tempdir().unwrap();
    let got = run_parity("llm.safetensors", dir.path());
    let want = load(&fixture_dir().join("llm.safetensors"));
    for n in 0..3 {
        let k = |s: &str| format!("case{n}.{s}");
        let mut checks = vec![(k("prefill_logp"), 1e-4), (k("greedy_step_logp"), 1e-4)];
        if want.contains_key(&k("tf_tokens")) {
            checks.push((k("tf_logp"), 1e-4));
        }
        let checks: Vec<(&str, f32, bool)> =
            checks.iter().map(|(name, tol)| (name.as_str(), *tol, false)).collect();
        assert_within("llm.safetensors", &got, &checks);
        let tokens = k("greedy_tokens");
        assert_eq!(got[&tokens].dims(), want[&tokens].dims(), "{tokens}");
        assert_eq!(max_diff(&got[&tokens], &want[&tokens], false), 0.0, "{tokens} differ");
    }
}
