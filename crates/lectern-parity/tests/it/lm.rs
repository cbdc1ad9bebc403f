//! The LM parity stage against `fixtures/cosyvoice3-tiny-a/llm.safetensors` (PARITY.md: logp
//! 1e-4, tokens identical), solo and as lanes of one batch, and the reduced precisions
//! against their stated deviations.

use std::collections::HashMap;

use candle::{Device, Tensor};
use lectern_model::lm::{LmPrecision, SpeechLm};
use lectern_test_support::fixtures::{ids, max_abs, tiny_a_case, tiny_a_model};

const TOL: f32 = 1e-4;

/// The tiny model's LM golden cases.
fn case() -> HashMap<String, Tensor> {
    tiny_a_case("llm.safetensors")
}

fn load(prec: LmPrecision) -> SpeechLm {
    SpeechLm::from_dir(&tiny_a_model(), prec, &Device::Cpu).unwrap()
}

fn f32s(t: &Tensor) -> Vec<f32> {
    t.flatten_all().unwrap().to_vec1::<f32>().unwrap()
}

/// Runs the parity stage in-process; returns (max prefill/teacher-forced logp deviation,
/// greedy tokens identical in every case, greedy tokens agreeing / total).
fn parity_deviation(lm: &SpeechLm) -> (f32, bool, usize, usize) {
    let c = case();
    let out = lectern_parity::lm::run_with(lm, &c).unwrap();
    let (mut dev, mut same, mut agree, mut total) = (0f32, true, 0, 0);
    for n in 0..3 {
        let k = |s: &str| format!("case{n}.{s}");
        dev = dev.max(max_abs(&f32s(&out[&k("prefill_logp")]), &f32s(&c[&k("prefill_logp")])));
        if c.contains_key(&k("tf_logp")) {
            dev = dev.max(max_abs(&f32s(&out[&k("tf_logp")]), &f32s(&c[&k("tf_logp")])));
        }
        let got = ids(&out, &k("greedy_step_choice"));
        let want = ids(&c, &k("greedy_step_choice"));
        same &= got == want;
        agree += got.iter().zip(&want).take_while(|(a, b)| a == b).count();
        total += want.len();
    }
    (dev, same, agree, total)
}

#[test]
fn prefill_teacher_forcing_and_greedy_match_the_fixture() {
    let lm = load(LmPrecision::F32);
    let c = case();
    check_against_fixture(&c, &lectern_parity::lm::run_with(&lm, &c).unwrap());
}

#[test]
fn greedy_runs_decoded_together_as_lanes_match_the_fixture() {
    // The three cases have different prompt lengths and case1 stops early: a ragged batch
    // that loses a lane mid-decode, held to the same tolerances (`lectern parity --lanes`).
    let lm = load(LmPrecision::F32);
    let c = case();
    check_against_fixture(&c, &lectern_parity::lm::run_lanes(&lm, &c, true).unwrap());
}

fn check_against_fixture(c: &HashMap<String, Tensor>, out: &HashMap<String, Tensor>) {
    for n in 0..3 {
        let k = |s: &str| format!("case{n}.{s}");
        let d = max_abs(&f32s(&out[&k("lm_input")]), &f32s(&c[&k("lm_input")]));
        assert_eq!(d, 0.0, "case{n} lm_input");
        let d = max_abs(&f32s(&out[&k("prefill_logp")]), &f32s(&c[&k("prefill_logp")]));
        assert!(d <= TOL, "case{n} prefill_logp deviates by {d}");
        if c.contains_key(&k("tf_logp")) {
            assert_eq!(out[&k("tf_logp")].dims(), c[&k("tf_logp")].dims());
            let d = max_abs(&f32s(&out[&k("tf_logp")]), &f32s(&c[&k("tf_logp")]));
            assert!(d <= TOL, "case{n} tf_logp deviates by {d}");
        }
        assert_eq!(ids(out, &k("greedy_tokens")), ids(c, &k("greedy_tokens")), "case{n} tokens");
        assert_eq!(ids(out, &k("greedy_step_choice")), ids(c, &k("greedy_step_choice")), "case{n}");
        assert_eq!(ids(out, &k("greedy_step_ignore_eos")), ids(c, &k("greedy_step_ignore_eos")));
        assert_eq!(out[&k("greedy_step_logp")].dims(), c[&k("greedy_step_logp")].dims());
        let d = max_abs(&f32s(&out[&k("greedy_step_logp")]), &f32s(&c[&k("greedy_step_logp")]));
        assert!(d <= TOL, "case{n} greedy_step_logp deviates by {d}");
    }
    // case1 stops early on stop id 6649 (only 6561 is masked below min_len).
    assert_eq!(*ids(out, "case1.greedy_step_choice").last().unwrap(), 6649);
}

#[test]
fn reduced_precisions_report_their_deviation() {
    let (d32, same32, _, _) = parity_deviation(&load(LmPrecision::F32));
    assert!(d32 <= TOL && same32);
    for prec in [LmPrecision::F16, LmPrecision::Bf16, LmPrecision::Q8_0] {
        let (d, same, agree, total) = parity_deviation(&load(prec));
        println!(
            "{}: max prefill/teacher-forced logp deviation from the f32 fixture {d:.3e}; \
             greedy choices agreeing (prefix per case) {agree}/{total}, identical: {same}",
            prec.name()
        );
        assert!(d.is_finite(), "{}: {d}", prec.name());
    }
}
