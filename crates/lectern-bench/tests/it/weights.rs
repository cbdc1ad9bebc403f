//! The benchmarks' random weights: reproducible from their seed, different across seeds, and
//! complete (the model loads from them, so a benchmark times the real model).

use candle::{Device, Tensor};
use lectern_model::config::ModelConfig;
use lectern_model::hift::Hift;

fn tiny_config() -> ModelConfig {
    ModelConfig::from_dir(&lectern_test_support::fixtures::tiny_a_model()).unwrap()
}

fn vocoded(cfg: &ModelConfig, seed: u64) -> Vec<f32> {
    let weights = lectern_bench::hift::random_weights(cfg, seed, &Device::Cpu).unwrap();
    let hift = Hift::new(cfg, &weights).unwrap();
    let mel = lectern_test_support::tensors::seeded(&[1, cfg.hift.in_channels, 20], 7);
    hift.forward(&mel).unwrap()
}

#[test]
fn the_vocoders_weights_follow_their_seed() {
    let cfg = tiny_config();
    let first = vocoded(&cfg, 0);
    assert!(!first.is_empty() && first.iter().all(|x| x.is_finite()));
    assert_eq!(first, vocoded(&cfg, 0), "the same seed, the same weights");
    assert_ne!(first, vocoded(&cfg, 1), "another seed, other weights");
}

#[test]
fn the_flows_and_lms_checkpoints_follow_their_seed() {
    let cfg = tiny_config();
    let flow = |seed| lectern_bench::flow::random_flow(&cfg.flow, seed, &Device::Cpu).unwrap();
    let lm = |seed| lectern_bench::lm::random_checkpoint(&cfg, seed, &[1, 2, 3], &Device::Cpu);
    let name = "input_embedding.weight";
    let values = |seed| {
        let t: Tensor = flow(seed).get_unchecked(name).unwrap();
        t.flatten_all().unwrap().to_vec1::<f32>().unwrap()
    };
    assert_eq!(values(0), values(0));
    assert_ne!(values(0), values(1));
    assert!(lm(0).is_ok());
}

/// The precision comparison finds nothing between a model and itself, and a reduced precision's
/// rounding where there is one; it compares the prefill's row and one row per forced step.
#[test]
fn a_reduced_precision_is_measured_against_f32_on_the_same_tokens() {
    use lectern_bench::lm::{precision_deviation, random_checkpoint};
    use lectern_model::lm::{END_OF_PROMPT_ID, LmPrecision, SpeechLm};
    let cfg = tiny_config();
    let (prompt, text, speech) = (vec![5, 6, END_OF_PROMPT_ID], vec![8, 9, 10], vec![1, 2, 3, 4]);
    let ids = [&prompt[..], &text[..]].concat();
    let ckpt = random_checkpoint(&cfg, 3, &ids, &Device::Cpu).unwrap();
    let w = lectern_model::Weights::root(std::sync::Arc::new(ckpt));
    let f32_lm = SpeechLm::new(&cfg.lm, &w, LmPrecision::F32).unwrap();
    let f16_lm = SpeechLm::new(&cfg.lm, &w, LmPrecision::F16).unwrap();
    let input = f32_lm.lm_input(&prompt, &text, &speech).unwrap();
    let same = precision_deviation(&f32_lm, &f32_lm, &input, 6).unwrap();
    assert_eq!((same.rows, same.agreeing, same.max_abs), (7, 7, 0.0));
    let f16 = precision_deviation(&f32_lm, &f16_lm, &input, 6).unwrap();
    assert_eq!(f16.rows, 7);
    assert!(f16.max_abs > 0.0 && f16.max_abs.is_finite(), "{f16:?}");
    assert!(f16.mean_abs > 0.0 && f16.mean_abs <= f64::from(f16.max_abs), "{f16:?}");
}
