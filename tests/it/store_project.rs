//! Resume and edits: reopening restores segments, chosen takes and settings; only segments
//! without a usable take are queued again; editing one sentence keeps every other take.

use crate::store_common;

use lectern::review::TakeStatus;
use lectern::store::{Project, StoreError};
use lectern_engine::protocol::{Precision, RenderParams};
use store_common::{manuscript, orphan_rows, sentences, synthetic_take};

#[test]
fn reopen_restores_segments_choices_and_settings() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("p");
    let segments = manuscript(&sentences(6), 3, 10);
    let mut chosen = Vec::new();
    {
        let mut p = Project::open(&dir).unwrap();
        let diff = p.sync_manuscript(&segments).unwrap();
        assert_eq!(diff.changed.len(), 6);
        assert!(diff.unchanged.is_empty() && diff.removed.is_empty());
        for (k, s) in segments.iter().take(4).enumerate() {
            let first = p.save_take(&synthetic_take(k as u64, s, 1)).unwrap();
            let second = p.save_take(&synthetic_take(k as u64, s, 2)).unwrap();
            // The first take stays chosen until the caller picks another.
            assert_eq!(p.chosen_take(s.id).unwrap().unwrap().id, first);
            if k % 2 == 1 {
                p.choose_take(s.id, second).unwrap();
                chosen.push(second);
            } else {
                chosen.push(first);
            }
        }
        let params =
            RenderParams { nfe: 6, lanes: 3, precision: Precision::Bf16, ..Default::default() };
        p.set_settings(&params).unwrap();
    }
    let p = Project::open(&dir).unwrap();
    assert!(p.open_report().is_clean(), "{:?}", p.open_report());
    assert_eq!(p.segments().unwrap(), segments);
    for (s, id) in segments.iter().zip(&chosen) {
        assert_eq!(p.chosen_take(s.id).unwrap().unwrap().id, *id);
        assert_eq!(p.takes_of(s.id).unwrap().len(), 2);
    }
    let needing: Vec<u64> = p.segments_needing_takes().unwrap().iter().map(|s| s.id).collect();
    assert_eq!(needing, vec![segments[4].id, segments[5].id]);
    assert_eq!(p.settings().unwrap().nfe, 6);
    assert_eq!(p.settings().unwrap().precision, Precision::Bf16);
    p.integrity_check().unwrap();
}

#[test]
fn editing_one_sentence_keeps_every_other_take() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("p");
    let mut texts = sentences(8);
    let segments = manuscript(&texts, 4, 1);
    {
        let mut p = Project::open(&dir).unwrap();
        p.sync_manuscript(&segments).unwrap();
        for (k, s) in segments.iter().enumerate() {
            p.save_take(&synthetic_take(k as u64, s, 7)).unwrap();
        }
    }
    // Edit sentence 3 and renumber ids (a frontend may assign positional ids).
    texts[3] = "An edited sentence.".into();
    let edited = manuscript(&texts, 4, 100);
    let mut p = Project::open(&dir).unwrap();
    let before = p.all_takes().unwrap();
    let diff = p.sync_manuscript(&edited).unwrap();
    assert_eq!(diff.changed, vec![103]);
    assert_eq!(diff.removed, vec![4]);
    assert_eq!(diff.unchanged.len(), 7);
    drop(p);
    let p = Project::open(&dir).unwrap();
    let needing: Vec<u64> = p.segments_needing_takes().unwrap().iter().map(|s| s.id).collect();
    assert_eq!(needing, vec![103]);
    for (i, s) in edited.iter().enumerate() {
        let chosen = p.chosen_take(s.id).unwrap();
        if i == 3 {
            assert!(chosen.is_none());
        } else {
            let chosen = chosen.unwrap();
            assert_eq!(chosen.id, before[i].id);
            assert_eq!(chosen.status, TakeStatus::Ok);
            assert_eq!(chosen.segment_hash, s.hash);
        }
    }
    // The edited-away take is kept: reverting the edit brings it back.
    assert_eq!(p.all_takes().unwrap().len(), 8);
    drop(p);
    let mut p = Project::open(&dir).unwrap();
    let diff = p.sync_manuscript(&segments).unwrap();
    assert_eq!(diff.changed, vec![4]);
    assert!(p.segments_needing_takes().unwrap().is_empty());
    assert_eq!(p.chosen_take(4).unwrap().unwrap().id, before[3].id);
}

#[test]
fn duplicate_sentences_keep_separate_takes() {
    let tmp = tempfile::tempdir().unwrap();
    let texts: Vec<String> = ["Yes.", "No.", "Yes."].iter().map(|s| s.to_string()).collect();
    let segments = manuscript(&texts, 10, 1);
    let mut p = Project::open(tmp.path()).unwrap();
    p.sync_manuscript(&segments).unwrap();
    let a = p.save_take(&synthetic_take(0, &segments[0], 1)).unwrap();
    assert_eq!(p.segments_needing_takes().unwrap().len(), 2);
    let c = p.save_take(&synthetic_take(1, &segments[2], 2)).unwrap();
    assert_eq!(p.chosen_take(1).unwrap().unwrap().id, a);
    assert_eq!(p.chosen_take(3).unwrap().unwrap().id, c);
}

#[test]
fn choose_take_rejects_foreign_takes_and_unknown_ids() {
    let tmp = tempfile::tempdir().unwrap();
    let segments = manuscript(&sentences(2), 10, 1);
    let mut p = Project::open(tmp.path()).unwrap();
    p.sync_manuscript(&segments).unwrap();
    let a = p.save_take(&synthetic_take(0, &segments[0], 1)).unwrap();
    assert!(matches!(p.choose_take(2, a), Err(StoreError::TakeMismatch { .. })));
    assert!(matches!(p.choose_take(99, a), Err(StoreError::UnknownSegment(99))));
    assert!(matches!(p.choose_take(1, 12345), Err(StoreError::UnknownTake(12345))));
    let mut orphan = synthetic_take(0, &segments[0], 1);
    orphan.record.segment_id = 42;
    assert!(matches!(p.save_take(&orphan), Err(StoreError::UnknownSegment(42))));
    let mut bad = synthetic_take(0, &segments[0], 1);
    bad.samples = std::sync::Arc::new(vec![0.0, f32::NAN]);
    assert!(matches!(p.save_take(&bad), Err(StoreError::InvalidInput(_))));
    assert!(orphan_rows(&p).is_empty());
}

#[test]
fn second_open_of_a_project_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let _p = Project::open(tmp.path()).unwrap();
    let err = Project::open(tmp.path()).unwrap_err();
    assert!(matches!(err, StoreError::Locked { .. }), "{err}");
}

#[test]
fn startup_check_removes_temp_files_and_quarantines_orphans() {
    let tmp = tempfile::tempdir().unwrap();
    let segments = manuscript(&sentences(2), 10, 1);
    let saved;
    {
        let mut p = Project::open(tmp.path()).unwrap();
        p.sync_manuscript(&segments).unwrap();
        saved = p.save_take(&synthetic_take(0, &segments[0], 1)).unwrap();
    }
    let takes = tmp.path().join("takes");
    std::fs::write(takes.join(".abc.wav.tmp"), b"partial").unwrap();
    let mut f = std::fs::File::create(takes.join("feedbeef-0000000000000001.wav")).unwrap();
    lectern::store::takes::write_wav_to(&mut f, &[0.1, 0.2], &[]).unwrap();
    drop(f);
    let p = Project::open(tmp.path()).unwrap();
    let r = p.open_report();
    assert_eq!(r.temp_files_removed.len(), 1);
    assert_eq!(r.orphans_quarantined.len(), 1);
    assert!(r.orphans_quarantined[0].is_file());
    assert!(!takes.join(".abc.wav.tmp").exists());
    assert!(r.missing_files.is_empty());
    assert_eq!(p.load_samples(saved).unwrap().len(), p.take(saved).unwrap().num_samples as usize);
}

/// A segment approved, then read differently (its spoken text changed at the same place in the
/// source: an edit, or a new reading rule): the new segment is marked for a pickup with the
/// approved reading in its note, never approved silently; the other approvals stay.
#[test]
fn an_approved_segment_read_differently_is_marked_for_a_pickup() {
    use lectern::review::Review;
    let tmp = tempfile::tempdir().unwrap();
    let mut texts = sentences(4);
    let segments = manuscript(&texts, 4, 1);
    let mut p = Project::open(tmp.path().join("p")).unwrap();
    p.sync_manuscript(&segments).unwrap();
    for (k, s) in segments.iter().enumerate() {
        p.save_take(&synthetic_take(k as u64, s, 7)).unwrap();
    }
    for proofed in p.proofed_segments().unwrap() {
        p.set_review(proofed.key, Review::Approved).unwrap();
    }
    texts[2] = "Sentence number two of the book.".into();
    let diff = p.sync_manuscript(&manuscript(&texts, 4, 1)).unwrap();
    assert_eq!(diff.reading_changed, vec![3]);
    let proofed = p.proofed_segments().unwrap();
    let reviews: Vec<Review> = proofed.iter().map(|s| s.review).collect();
    assert_eq!(reviews, [Review::Approved, Review::Approved, Review::Pickup, Review::Approved]);
    assert!(proofed[2].note.contains("Sentence number 2 of the book."), "{}", proofed[2].note);
}
