//! A take with no speech retries itself: on the bundled tiny model (real engine, CPU), a book
//! whose segment gives no speech for its default seed renders whole, the segment's take made
//! by the next seeds of its retry sequence, flagged in the list and reproducible from its
//! record (its seed is the sequence's).

use crate::session_common;

use lectern::session::proof;
use lectern::session::retry::{NO_SPEECH_TRIES, retry_seeds};
use lectern_engine::Engine;
use lectern_engine::protocol::{Precision, RenderParams};
use session_common::{open_session, tiny};

/// With base seed [`SILENT_BASE`], the tiny model of the source tree (its test tokenizer) gives
/// no speech for the second paragraph's default seed (found by rendering a hundred and fifty
/// sentences at a few base seeds).
const BOOK: &str = "The first line is fine.\n\nCold over quiet came dark under breath river.\n\n\
                    The last line is fine too.\n";
const SILENT_BASE: u64 = 3;

#[test]
fn a_book_whose_segment_gives_no_speech_renders_with_the_automatic_retry() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("book.md");
    std::fs::write(&path, BOOK).unwrap();
    let (model, voice, _) = tiny();
    let mut s = open_session(&path, SILENT_BASE);
    let work = s.work().unwrap();
    assert_eq!(work.render.len(), 3);
    let backend =
        lectern::session::backend(&model, &s.voices(), &candle::Device::Cpu, Precision::F32, None)
            .unwrap();
    let engine = Engine::spawn(backend, voice.manifest.name.clone(), RenderParams::default());
    let mut log = Vec::new();
    let out = proof::render_with_retries(&mut s, &engine, work.render, |l| log.push(l));
    engine.shutdown();
    let out = out.unwrap();
    assert!(out.failed.is_empty(), "{:?}", out.failed);
    assert!(!out.retried.is_empty(), "segment 2 gave no speech and was retried");
    assert!(out.retried.iter().all(|r| r.try_number <= NO_SPEECH_TRIES));
    assert!(log.iter().any(|l| l.starts_with("segment 2: no speech with seed")), "{log:?}");
    assert!(s.work().unwrap().is_empty(), "every segment has its take");

    let views = s.views().unwrap();
    for (i, v) in views.iter().enumerate() {
        let chosen = v.takes.iter().find(|t| Some(t.id) == v.chosen).expect("a chosen take");
        let seeds = retry_seeds(v.planned.default_seed);
        match v.retry_of(chosen) {
            Some(n) => {
                assert_eq!(i, 1, "only segment 2 was retried");
                assert_eq!(
                    chosen.record.seed,
                    seeds[n as usize - 1],
                    "reproducible from its record"
                );
                assert_eq!(n, out.retried.last().unwrap().try_number);
            }
            None => {
                assert_ne!(i, 1, "segment 2's take came from a retry");
                assert_eq!(chosen.record.seed, v.planned.default_seed);
            }
        }
    }
}
