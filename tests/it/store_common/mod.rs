//! Shared helpers of the store tests: synthetic manuscripts and takes.
#![allow(dead_code)]

use std::sync::Arc;

use lectern::store::StoredSegment;
use lectern_engine::protocol::{
    GroupInfo, MinLenRule, Precision, StageTimings, Take, TakeContent, TakeRecord,
};

/// FNV-1a of the text: the segments' content hash in these tests.
pub fn text_hash(text: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// A manuscript of `texts`, `per_chapter` segments per chapter, ids from `first_id`.
pub fn manuscript(texts: &[String], per_chapter: usize, first_id: u64) -> Vec<StoredSegment> {
    texts
        .iter()
        .enumerate()
        .map(|(i, text)| StoredSegment {
            id: first_id + i as u64,
            chapter: (i / per_chapter) as u32 + 1,
            ordinal: i as u32,
            text: text.clone(),
            span: (i as u32 + 1, 1),
            hash: text_hash(text),
            pause_after_ms: 100 + 50 * (i as u32 % 3),
            // What the synthetic takes record: so they are current, not stale.
            content_key: TakeContent::default().key(),
        })
        .collect()
}

pub fn sentences(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("Sentence number {i} of the book.")).collect()
}

/// Deterministic synthetic audio for (segment, seed): 0.1–0.4 s of a tone plus noise.
pub fn synthetic_samples(segment_id: u64, seed: u64) -> Vec<f32> {
    let n = 2400 + ((segment_id * 7 + seed * 13) % 7) as usize * 960;
    let freq = 150.0 + ((segment_id + seed) % 300) as f32;
    let mut state = segment_id.wrapping_mul(6364136223846793005).wrapping_add(seed | 1);
    (0..n)
        .map(|i| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let noise = ((state >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 0.02;
            0.3 * (2.0 * std::f32::consts::PI * freq * i as f32 / 24000.0).sin() + noise
        })
        .collect()
}

pub fn synthetic_take(engine_id: u64, segment: &StoredSegment, seed: u64) -> Take {
    let samples = synthetic_samples(segment.id, seed);
    Take {
        id: engine_id,
        record: TakeRecord {
            segment_id: segment.id,
            text: segment.text.clone(),
            voice_id: "test-voice".into(),
            model_id: "synthetic".into(),
            seed,
            nfe: 10,
            cfg_rate: 0.7,
            precision: Precision::F32,
            min_len_rule: MinLenRule::Upstream,
            backend: "cpu".into(),
            flow_matmul: "f32".into(),
            group: GroupInfo {
                segment_ids: vec![segment.id],
                token_counts: vec![samples.len() / 960],
                tokens: Vec::new(),
                index: 0,
            },
            noise_source: "mt19937-seed0".into(),
            engine_version: "test".into(),
            tokens: vec![1, 2, 3],
            timings: StageTimings { lm_s: 0.1, flow_s: 0.2, vocoder_s: 0.05 },
            content: TakeContent::default(),
        },
        samples: Arc::new(samples),
    }
}

/// Rows of `takes` whose file is missing, plus chosen takes pointing nowhere: must be empty.
pub fn orphan_rows(project: &lectern::store::Project) -> Vec<String> {
    let mut bad = Vec::new();
    for t in project.all_takes().unwrap() {
        if !t.wav_path.is_file() {
            bad.push(format!("take {} without file {}", t.id, t.wav_path.display()));
        }
    }
    let dangling: i64 = project
        .connection()
        .query_row(
            "SELECT count(*) FROM chosen_takes c LEFT JOIN takes t ON t.id = c.take_id
             WHERE t.id IS NULL",
            [],
            |r| r.get(0),
        )
        .unwrap();
    if dangling > 0 {
        bad.push(format!("{dangling} chosen takes point to no take"));
    }
    bad
}
