//! The speech LM: lanes against solo decoding, seeds, joined batches, KV-cache arithmetic and
//! bad inputs. Its log-prob and greedy-token gates against `fixtures/cosyvoice3-tiny-a`
//! (PARITY.md: logp 1e-4, tokens identical) run through the parity stage, in lectern-parity.

use std::collections::HashMap;
use std::sync::Arc;

use candle::{Device, Tensor};
use lectern_model::lm::{GenerateOptions, LaneMode, LaneRequest, LmPrecision, SpeechLm};
use lectern_model::{Checkpoint, Weights};
use lectern_test_support::fixtures::{ids, max_abs, tiny_a_case, tiny_a_model};

/// The tiny model's LM golden cases.
fn case() -> HashMap<String, Tensor> {
    tiny_a_case("llm.safetensors")
}

fn load(prec: LmPrecision) -> SpeechLm {
    SpeechLm::from_dir(&tiny_a_model(), prec, &Device::Cpu).unwrap()
}

/// Four segments with different prompt and text lengths (all from the fixture's id ranges).
fn four_requests(seed0: u64) -> Vec<LaneRequest> {
    let c = case();
    let r = |pt: &str, t: &str, ps: &str, seed: u64| {
        let mut req = LaneRequest::new(ids(&c, pt), ids(&c, t), ids(&c, ps), seed);
        req.max_len = req.max_len.min(30);
        req.record_logp = true;
        req
    };
    vec![
        r("case0.prompt_text_ids", "case0.text_ids", "case0.prompt_speech_tokens", seed0),
        r("case1.prompt_text_ids", "case1.text_ids", "case1.prompt_speech_tokens", seed0 + 1),
        r("case2.prompt_text_ids", "case2.text_ids", "case2.prompt_speech_tokens", seed0 + 2),
        r("case1.prompt_text_ids", "case2.text_ids", "case0.prompt_speech_tokens", seed0 + 3),
    ]
}

#[test]
fn four_sampled_lanes_equal_solo_decoding() {
    let lm = load(LmPrecision::F32);
    let reqs = four_requests(1000);
    let solo: Vec<_> = reqs
        .iter()
        .map(|r| {
            lm.generate(std::slice::from_ref(r), &GenerateOptions::default()).unwrap().remove(0)
        })
        .collect();
    for (max_lanes, mode) in [(8, LaneMode::Batched), (2, LaneMode::Batched), (4, LaneMode::Solo)] {
        let opts = GenerateOptions { max_lanes, mode };
        let lanes = lm.generate(&reqs, &opts).unwrap();
        let mut dev = 0f32;
        for (a, b) in lanes.iter().zip(&solo) {
            assert_eq!(a.lm_tokens, b.lm_tokens, "{mode:?} x{max_lanes}");
            assert_eq!(a.step_choice, b.step_choice);
            assert_eq!(a.tokens, b.tokens);
            for (x, y) in a.step_logp.iter().zip(&b.step_logp) {
                dev = dev.max(max_abs(x, y));
            }
        }
        println!("lanes {mode:?} max_lanes={max_lanes}: max logp deviation from solo {dev:e}");
        if mode == LaneMode::Solo {
            assert_eq!(dev, 0.0);
        }
        assert!(dev <= 1e-5);
    }
    // Sampled, several steps each (not all lanes stop at once).
    assert!(
        solo.iter().any(|g| g.step_choice.len() > 3),
        "{:?}",
        solo.iter().map(|g| g.step_choice.len()).collect::<Vec<_>>()
    );
}

#[test]
fn seeds_decide_the_tokens() {
    let lm = load(LmPrecision::F32);
    let opts = GenerateOptions::default();
    let a = lm.generate(&four_requests(1), &opts).unwrap();
    let b = lm.generate(&four_requests(1), &opts).unwrap();
    let c = lm.generate(&four_requests(50), &opts).unwrap();
    let toks = |g: &Vec<lectern_model::lm::Generated>| {
        g.iter().map(|x| x.step_choice.clone()).collect::<Vec<_>>()
    };
    assert_eq!(toks(&a), toks(&b));
    assert_ne!(toks(&a), toks(&c));
}

#[test]
fn kv_cache_bytes_arithmetic_matches_allocation() {
    let lm = load(LmPrecision::F32);
    let cache = lm.new_cache(77).unwrap();
    // 2 × kv_heads 2 × 77 × head_dim 8 × 4 bytes × 2 layers.
    assert_eq!(lm.kv_bytes_per_lane(77), 2 * 2 * 77 * 8 * 4 * 2);
    assert_eq!(cache.allocated_bytes(), lm.kv_bytes_per_lane(77));
    let g = lm.generate(&four_requests(3)[..1], &GenerateOptions::default()).unwrap();
    assert_eq!(g[0].kv_allocated_bytes, lm.kv_bytes_per_lane(g[0].kv_capacity));
}

#[test]
fn truncated_checkpoint_is_a_clear_error() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tiny_a_model();
    std::fs::create_dir_all(tmp.path().join("CosyVoice-BlankEN")).unwrap();
    for f in ["tiny.json", "CosyVoice-BlankEN/config.json"] {
        std::fs::copy(src.join(f), tmp.path().join(f)).unwrap();
    }
    let bytes = std::fs::read(src.join("llm.pt")).unwrap();
    std::fs::write(tmp.path().join("llm.pt"), &bytes[..bytes.len() / 2]).unwrap();
    let err =
        SpeechLm::from_dir(tmp.path(), LmPrecision::F32, &Device::Cpu).unwrap_err().to_string();
    assert!(err.contains("llm.pt"), "{err}");
}

#[test]
fn wrong_shape_tensor_is_named() {
    let ckpt = Checkpoint::load(&tiny_a_model().join("llm.pt"), &Device::Cpu).unwrap();
    let mut map = HashMap::new();
    for name in ckpt.names() {
        let t = ckpt.get_unchecked(name).unwrap();
        let name_s = name.to_string();
        let t = if name_s == "llm.model.model.layers.1.self_attn.k_proj.weight" {
            t.t().unwrap().contiguous().unwrap()
        } else {
            t
        };
        map.insert(name_s, t);
    }
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("llm.safetensors");
    candle::safetensors::save(&map, &path).unwrap();
    let ckpt = Arc::new(Checkpoint::load(&path, &Device::Cpu).unwrap());
    let cfg = lectern_model::config::ModelConfig::from_dir(&tiny_a_model()).unwrap();
    let err =
        SpeechLm::new(&cfg.lm, &Weights::root(ckpt), LmPrecision::F32).unwrap_err().to_string();
    assert!(err.contains("layers.1.self_attn.k_proj.weight") && err.contains("[32, 16]"), "{err}");
}

#[test]
fn missing_config_file_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::copy(tiny_a_model().join("llm.pt"), tmp.path().join("llm.pt")).unwrap();
    let err =
        SpeechLm::from_dir(tmp.path(), LmPrecision::F32, &Device::Cpu).unwrap_err().to_string();
    assert!(err.contains("config.json"), "{err}");
}

#[test]
fn empty_text_and_missing_endofprompt_are_clear_errors() {
    let lm = load(LmPrecision::F32);
    let opts = GenerateOptions::default();
    let empty = LaneRequest::new(vec![151_646, 10], vec![], vec![1, 2], 0);
    let err = lm.generate(&[empty], &opts).unwrap_err().to_string();
    assert!(err.contains("empty"), "{err}");
    let no_eop = LaneRequest::new(vec![10, 11], vec![12], vec![1, 2], 0);
    let err = lm.generate(&[no_eop], &opts).unwrap_err().to_string();
    assert!(err.contains("<|endofprompt|>"), "{err}");
    let bad_speech = LaneRequest::new(vec![151_646], vec![12], vec![7000], 0);
    let err = lm.generate(&[bad_speech], &opts).unwrap_err().to_string();
    assert!(err.contains("7000"), "{err}");
}

#[test]
fn a_joined_batch_decodes_as_its_lanes_do_alone() {
    use lectern_model::lm::LaneBatch;
    let lm = load(LmPrecision::F32);
    let reqs = four_requests(7);
    let prompts: Vec<(Tensor, usize)> = reqs
        .iter()
        .map(|r| {
            let t = lm.lm_input(&r.prompt_text_ids, &r.text_ids, &r.prompt_speech_tokens).unwrap();
            let n = t.dim(0).unwrap();
            (t, n)
        })
        .collect();
    let capacity = prompts.iter().map(|p| p.1).max().unwrap() + 8;
    let prefilled = || {
        prompts
            .iter()
            .map(|(input, _)| {
                let mut c = lm.new_cache(capacity).unwrap();
                lm.prefill(input, &mut c).unwrap();
                c
            })
            .collect::<Vec<_>>()
    };
    assert!(prompts.iter().any(|p| p.1 != prompts[0].1), "ragged lanes exercise the mask");
    // Alone: each lane with its own cache.
    let mut alone = prefilled();
    let mut batch = LaneBatch::join(prefilled()).unwrap();
    assert_eq!(batch.lens(), alone.iter().map(|c| c.len()).collect::<Vec<_>>());
    let mut dev = 0f32;
    for step in 0..6u32 {
        let tokens: Vec<u32> =
            (0..batch.lanes() as u32).map(|l| (step * 37 + l * 11) % 60).collect();
        let joined = lm.step_batch(&mut batch, &tokens).unwrap().to_vec2::<f32>().unwrap();
        let live: Vec<usize> = if step < 3 { vec![0, 1, 2, 3] } else { vec![0, 2, 3] };
        for ((row, &lane), &tok) in joined.iter().zip(&live).zip(&tokens) {
            let solo = lm.step(&mut [&mut alone[lane]], &[tok], LaneMode::Solo).unwrap();
            dev = dev.max(max_abs(row, &solo.to_vec2::<f32>().unwrap()[0]));
        }
        if step == 2 {
            // Lane 1 leaves mid-decode: the others carry on from their own positions.
            batch.retain(&[true, false, true, true]).unwrap();
            assert_eq!(batch.lanes(), 3);
        }
    }
    println!("joined batch vs lanes alone: max logp deviation {dev:e}");
    assert!(dev <= 1e-5, "{dev}");
    // One lane joined is bit-identical to the lane alone.
    let mut one = LaneBatch::join(vec![prefilled().remove(0)]).unwrap();
    let mut own = prefilled().remove(0);
    for tok in [3u32, 17, 29] {
        let a = lm.step_batch(&mut one, &[tok]).unwrap().to_vec2::<f32>().unwrap();
        let b = lm.step(&mut [&mut own], &[tok], LaneMode::Solo).unwrap().to_vec2::<f32>().unwrap();
        assert_eq!(a, b);
    }
    // A capacity mismatch is refused.
    let odd = lm.new_cache(capacity + 1).unwrap();
    assert!(LaneBatch::join(vec![prefilled().remove(0), odd]).is_err());
}
