//! The workload machinery of `lectern bench --workload` on tiny shapes (the bundled tiny
//! model's config with seeded random weights): forced lengths, cuts and the report's fields.
//! Not timed: speed is what the benchmark reports.

use lectern::bench::{self as workload, Workload, WorkloadOptions};
use lectern_model::config::{ModelConfig, SAMPLES_PER_TOKEN};

#[test]
fn smoke_text_is_the_first_two_sentences() {
    let text = Workload::Smoke.text();
    assert!(text.starts_with("The lighthouse keeper"));
    assert!(text.ends_with("like restless horses."));
    assert_eq!(Workload::Long.text().matches("lighthouse keeper").count(), 20);
    assert_eq!(workload::word_count(&Workload::Short.text()), 132);
}

#[test]
fn stand_in_ids_have_a_realistic_rate() {
    let text = Workload::Short.text();
    let ids = workload::stand_in_text_ids(&text);
    let per_word = ids.len() as f64 / 132.0;
    assert!((1.1..1.5).contains(&per_word), "{per_word} ids per word");
    assert!(ids.iter().all(|&i| i < 151_643));
    assert_eq!(ids, workload::stand_in_text_ids(&text), "deterministic");
}

#[test]
fn tiny_workload_forces_tokens_per_word_through_the_engine() {
    let mut opts = WorkloadOptions::new(Workload::Short);
    opts.max_segments = Some(3);
    opts.config = ModelConfig::from_dir(std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/cosyvoice3-tiny-a/model"
    )))
    .unwrap();
    opts.lanes = vec![1, 2];
    opts.nfe = 1;
    opts.group_target_frames = 200;
    opts.tokens_per_word = 2; // keeps the tiny run quick; the rule is the same
    opts.print = false;
    let segs = workload::segments(&Workload::Smoke.text(), 10, None, true).unwrap();
    assert!(!segs.is_empty());
    let short = workload::segments(&Workload::Short.text(), 10, None, false).unwrap();
    assert!(short.len() >= 3, "the passage spans several segments");
    assert_eq!(short.iter().map(|s| s.forced_tokens).sum::<usize>(), 1320);
    // Fast start: one more segment (the first sentence), the same words and tokens.
    let fast = workload::segments(&Workload::Short.text(), 10, None, true).unwrap();
    assert_eq!(fast.len(), short.len() + 1);
    assert_eq!(fast[0].words, 13);
    assert_eq!(fast.iter().map(|s| s.forced_tokens).sum::<usize>(), 1320);
    for s in &segs {
        assert_eq!(s.forced_tokens, 10 * s.words);
        assert_eq!(s.spec.seed, 1000 + s.spec.id);
    }

    let report = workload::run(&opts).unwrap();
    for key in [
        "workload",
        "model",
        "machine",
        "backend",
        "precision",
        "nfe",
        "group_target_frames",
        "lead_sentence",
        "segments",
        "words",
        "speech_tokens",
        "audio_s",
        "runs",
    ] {
        assert!(!report[key].is_null(), "missing top-level `{key}`");
    }
    assert!(report["machine"]["cpu_model"].is_string());
    assert!(report["machine"]["threads"].as_u64().unwrap() >= 1);
    let runs = report["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    for run in runs {
        for key in [
            "lanes",
            "wall_s",
            "total_rtf",
            "lm_rtf",
            "flow_rtf",
            "vocoder_rtf",
            "lm_tokens_per_s_per_lane",
            "lm_tokens_per_s_aggregate",
            "flow_frames_per_s",
            "vocoder_audio_s_per_s",
            "time_to_first_audio_s",
            "peak_rss_bytes",
            "settled_rss_bytes",
            "kv_bytes_per_lane",
        ] {
            assert!(run[key].is_number(), "run field `{key}`: {}", run[key]);
        }
        let segs_out = run["segments"].as_array().unwrap();
        assert_eq!(segs_out.len(), 3);
        let mut total = 0;
        for s in segs_out {
            let words = s["words"].as_u64().unwrap();
            let tokens = s["tokens"].as_u64().unwrap();
            assert_eq!(tokens, 2 * words, "forced tokens per word");
            assert_eq!(s["samples"].as_u64().unwrap(), tokens * SAMPLES_PER_TOKEN as u64);
            total += tokens;
        }
        assert_eq!(run["speech_tokens"].as_u64().unwrap(), total);
        assert!(run["flow_groups"].as_u64().unwrap() >= 1, "telemetry of every group collected");
        // The timeline: takes in the order they came, the first one's stages.
        let ready: Vec<f64> = segs_out.iter().map(|s| s["ready_s"].as_f64().unwrap()).collect();
        assert!(ready.windows(2).all(|w| w[0] <= w[1]), "takes in the order they came: {ready:?}");
        let first = &run["first_take"];
        assert_eq!(first["ready_s"].as_f64(), Some(ready[0]));
        assert_eq!(first["second_ready_s"].as_f64(), Some(ready[1]));
        for key in ["lm_s", "flow_s", "vocoder_s"] {
            assert_eq!(first[key], segs_out[0][key], "first take's `{key}`");
            assert!(first[key].as_f64().unwrap() >= 0.0);
        }
        assert!(first["flow_s"].as_f64().unwrap() > 0.0, "the first take ran the flow");
        assert!(run["kv_bytes_per_lane"].as_u64().unwrap() > 0);
    }
    // Batches follow the lanes asked for.
    assert!(runs[0]["lm_batches"].as_array().unwrap().iter().all(|b| b["lanes"] == 1));
    assert!(runs[1]["lm_batches"].as_array().unwrap().iter().any(|b| b["lanes"] == 2));
}

#[test]
fn a_sharded_workload_runs_its_share_and_the_shares_make_the_whole() {
    let mut opts = WorkloadOptions::new(Workload::Short);
    opts.config = ModelConfig::from_dir(std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/cosyvoice3-tiny-a/model"
    )))
    .unwrap();
    opts.lanes = vec![2];
    opts.nfe = 1;
    opts.group_target_frames = 200;
    opts.tokens_per_word = 2;
    opts.print = false;
    let whole = workload::run(&opts).unwrap();
    let mut segments = 0;
    let mut words = 0;
    for index in 1..=2 {
        opts.shard = Some(lectern::session::plan::Shard { index, count: 2 });
        let share = workload::run(&opts).unwrap();
        assert_eq!(share["shard"], format!("{index}/2"));
        let n = share["segments"].as_u64().unwrap();
        assert!(n > 0 && n < whole["segments"].as_u64().unwrap(), "shard {index}: {n} segments");
        segments += n;
        words += share["words"].as_u64().unwrap();
    }
    assert_eq!(segments, whole["segments"].as_u64().unwrap());
    assert_eq!(words, whole["words"].as_u64().unwrap());
}
