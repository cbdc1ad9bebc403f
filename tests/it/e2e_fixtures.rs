//! `e2e.safetensors`: greedy LM → flow → HiFT through the three stages together, via the real
//! `lectern parity` binary (PARITY.md: tokens identical, mel 1e-3, speech 2e-3).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use candle::{Device, Tensor};
use lectern_test_support::tensors::max_abs_diff;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/cosyvoice3-tiny-a")
}

fn load(path: &Path) -> HashMap<String, Tensor> {
    candle::safetensors::load(path, &Device::Cpu).unwrap()
}

#[test]
fn e2e_parity_matches_upstream_tts() {
    let out_dir = tempfile::tempdir().unwrap();
    let out = out_dir.path().join("e2e.out.safetensors");
    let status = Command::new(env!("CARGO_BIN_EXE_lectern"))
        .args(["parity", "--model"])
        .arg(fixtures().join("model"))
        .arg("--case")
        .arg(fixtures().join("e2e.safetensors"))
        .arg("--out")
        .arg(&out)
        .status()
        .unwrap();
    assert!(status.success());
    let want = load(&fixtures().join("e2e.safetensors"));
    let got = load(&out);

    let tokens = |t: &Tensor| t.flatten_all().unwrap().to_vec1::<i64>().unwrap();
    assert_eq!(tokens(&got["llm.tokens"]), tokens(&want["llm.tokens"]), "LM tokens");
    assert_eq!(tokens(&got["flow.token"]), tokens(&want["flow.token"]), "flow tokens");

    let mel = max_abs_diff(&got["flow.mel"], &want["flow.mel"]);
    assert!(mel <= 1e-3, "flow.mel max abs diff {mel}");
    let speech = max_abs_diff(&got["tts_speech"], &want["tts_speech"]);
    assert!(speech <= 2e-3, "tts_speech max abs diff {speech}");
    // n tokens → exactly n × 960 samples.
    assert_eq!(got["tts_speech"].dim(1).unwrap(), tokens(&want["flow.token"]).len() * 960);
    eprintln!("e2e: mel {mel:.2e}, speech {speech:.2e}");
}
