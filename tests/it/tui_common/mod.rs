//! What the workstation's screen tests share: a saved take of a row, made as the engine makes
//! one (its record names the row's segment, text and seed).

use std::sync::Arc;

use lectern::quality::TakeFigures;
use lectern::tui::app::{App, Msg, TakeEntry};

/// The store's answer for a take of row `i` with these samples (`tokens` × 960 of them) and
/// the quality figures it was saved with.
pub fn saved_take(
    app: &App,
    i: usize,
    take_id: u64,
    samples: Vec<f32>,
    figures: Option<TakeFigures>,
) -> Msg {
    let row = &app.rows[i];
    let tokens = samples.len() / 960;
    let record = lectern_engine::protocol::TakeRecord {
        segment_id: row.id,
        text: row.text.clone(),
        voice_id: "narrator".into(),
        model_id: "tiny".into(),
        seed: row.seed,
        nfe: 10,
        cfg_rate: 0.7,
        precision: Default::default(),
        min_len_rule: Default::default(),
        backend: "cpu".into(),
        flow_matmul: "f32".into(),
        group: lectern_engine::protocol::GroupInfo {
            segment_ids: vec![row.id],
            token_counts: vec![tokens],
            tokens: Vec::new(),
            index: 0,
        },
        noise_source: "mt19937-seed0".into(),
        engine_version: "0.1.0".into(),
        tokens: vec![0; tokens],
        timings: Default::default(),
        content: Default::default(),
    };
    let take =
        TakeEntry { id: take_id, samples: Some(Arc::new(samples)), record, stale: false, figures };
    Msg::Saved { segment: row.id, take: Box::new(take), restored: false }
}
