//! Bad input: a newer schema, a corrupt database, a missing WAV, a read-only project, a full
//! disk. Each gives a clear error and loses nothing already saved.
//!
//! The read-only and full-disk cases mount a small tmpfs (root with mount rights, as on the
//! dev machines and CI); where mounting is refused they say so and test only the injected
//! writer failure.

use crate::store_common;

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use lectern::review::TakeStatus;
use lectern::store::export::{ExportOptions, export};
use lectern::store::takes::{TakeWriter, take_files};
use lectern::store::{DB_FILE, Project, StoreError};
use store_common::{manuscript, orphan_rows, sentences, synthetic_samples, synthetic_take};

/// A project with 3 segments, each with one take; returns (take ids, seeds).
fn saved_project(dir: &Path) -> Vec<u64> {
    let segments = manuscript(&sentences(3), 3, 1);
    let mut p = Project::open(dir).unwrap();
    p.sync_manuscript(&segments).unwrap();
    segments.iter().map(|s| p.save_take(&synthetic_take(0, s, 5)).unwrap()).collect()
}

fn assert_takes_intact(dir: &Path, ids: &[u64]) {
    let p = Project::open(dir).unwrap();
    p.integrity_check().unwrap();
    assert!(orphan_rows(&p).is_empty());
    for (i, &id) in ids.iter().enumerate() {
        assert_eq!(p.load_samples(id).unwrap(), synthetic_samples(i as u64 + 1, 5));
    }
}

#[test]
fn newer_schema_is_refused_untouched() {
    let tmp = tempfile::tempdir().unwrap();
    let ids = saved_project(tmp.path());
    let db = tmp.path().join(DB_FILE);
    rusqlite::Connection::open(&db).unwrap().pragma_update(None, "user_version", 99).unwrap();
    let before = std::fs::read(&db).unwrap();
    let err = Project::open(tmp.path()).unwrap_err();
    assert!(matches!(err, StoreError::NewerSchema { found: 99, supported: 4, .. }), "{err}");
    assert!(err.to_string().contains("newer"), "{err}");
    assert_eq!(std::fs::read(&db).unwrap(), before);
    assert_eq!(take_files(tmp.path()).unwrap().len(), 3);
    let current = lectern::store::db::SCHEMA_VERSION;
    rusqlite::Connection::open(&db).unwrap().pragma_update(None, "user_version", current).unwrap();
    assert_takes_intact(tmp.path(), &ids);
}

#[test]
fn corrupt_database_is_reported_and_take_files_are_untouched() {
    let tmp = tempfile::tempdir().unwrap();
    saved_project(tmp.path());
    let db = tmp.path().join(DB_FILE);
    let good = std::fs::read(&db).unwrap();
    let files = take_files(tmp.path()).unwrap();

    std::fs::write(&db, b"this is not an sqlite database, just some bytes....").unwrap();
    let err = Project::open(tmp.path()).unwrap_err();
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err}");
    assert!(err.to_string().contains("corrupt"), "{err}");
    assert_eq!(take_files(tmp.path()).unwrap(), files);

    // A real database with every page after the header page overwritten.
    let mut damaged = good.clone();
    let page = 4096;
    let end = damaged.len();
    for b in &mut damaged[page + 16..end - 16] {
        *b = 0xA5;
    }
    std::fs::write(&db, &damaged).unwrap();
    let err = Project::open(tmp.path()).unwrap_err();
    assert!(matches!(err, StoreError::Corrupt { .. } | StoreError::Db(_)), "{err}");
    assert_eq!(take_files(tmp.path()).unwrap(), files);
    assert!(!tmp.path().join("takes/orphans").exists());
}

#[test]
fn missing_wav_is_reported_requeued_and_restored_when_it_returns() {
    let tmp = tempfile::tempdir().unwrap();
    let ids = saved_project(tmp.path());
    let path = Project::open(tmp.path()).unwrap().take(ids[1]).unwrap().wav_path;
    let backup = tmp.path().join("backup.wav");
    std::fs::rename(&path, &backup).unwrap();

    let p = Project::open(tmp.path()).unwrap();
    assert_eq!(p.open_report().missing_files, vec![ids[1]]);
    assert_eq!(p.take(ids[1]).unwrap().status, TakeStatus::Missing);
    let needing: Vec<u64> = p.segments_needing_takes().unwrap().iter().map(|s| s.id).collect();
    assert_eq!(needing, vec![2]);
    assert!(matches!(p.load_samples(ids[1]), Err(StoreError::TakeFileMissing { .. })));
    let opts = ExportOptions { out: tmp.path().join("b.wav"), ..Default::default() };
    assert!(matches!(export(&p, &opts), Err(StoreError::MissingTakes { count: 1, .. })));
    // The other takes are untouched, and the record of the lost one is kept.
    assert_eq!(p.load_samples(ids[0]).unwrap(), synthetic_samples(1, 5));
    assert_eq!(p.take(ids[1]).unwrap().record.seed, 5);
    drop(p);

    std::fs::rename(&backup, &path).unwrap();
    let p = Project::open(tmp.path()).unwrap();
    assert_eq!(p.open_report().restored_files, vec![ids[1]]);
    assert!(p.segments_needing_takes().unwrap().is_empty());
    drop(p);
    assert_takes_intact(tmp.path(), &ids);
}

#[test]
fn tampered_take_file_fails_its_hash_check() {
    let tmp = tempfile::tempdir().unwrap();
    let ids = saved_project(tmp.path());
    let p = Project::open(tmp.path()).unwrap();
    let info = p.take(ids[0]).unwrap();
    let mut f = std::fs::File::create(&info.wav_path).unwrap();
    let mut other = synthetic_samples(1, 5);
    other[10] += 0.25;
    lectern::store::takes::write_wav_to(&mut f, &other, &[]).unwrap();
    drop(f);
    assert!(matches!(p.load_samples(ids[0]), Err(StoreError::HashMismatch { .. })));
}

/// Fails like a full disk after writing part of the file.
struct FullDiskWriter;

impl TakeWriter for FullDiskWriter {
    fn write_wav(&mut self, path: &Path, _samples: &[f32], _record: &[u8]) -> io::Result<()> {
        std::fs::File::create(path)?.write_all(b"RIFF\0\0\0\0WAVE")?;
        Err(io::Error::from_raw_os_error(28)) // ENOSPC
    }
}

#[test]
fn injected_disk_full_is_a_clear_error_and_loses_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let ids = saved_project(tmp.path());
    let mut p = Project::open(tmp.path()).unwrap();
    let segment = p.segments().unwrap()[0].clone();
    let err = p.save_take_with(&synthetic_take(9, &segment, 9), &mut FullDiskWriter).unwrap_err();
    assert!(matches!(err, StoreError::DiskFull { .. }), "{err}");
    assert!(err.to_string().contains("no space left"), "{err}");
    assert_eq!(take_files(tmp.path()).unwrap().len(), 3, "temp file left behind");
    assert_eq!(p.all_takes().unwrap().len(), 3);
    drop(p);
    assert_takes_intact(tmp.path(), &ids);
}

/// A tmpfs mounted for one test, unmounted on drop.
struct Tmpfs {
    path: PathBuf,
    _dir: tempfile::TempDir,
}

impl Tmpfs {
    fn mount(size: &str) -> Option<Self> {
        let dir = tempfile::tempdir().ok()?;
        let path = dir.path().to_path_buf();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&path)
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false);
        if !ok {
            eprintln!("mount refused: skipping the tmpfs part of this test");
            return None;
        }
        Some(Self { path, _dir: dir })
    }

    fn remount(&self, opts: &str) {
        let status = Command::new("mount")
            .args(["-o", &format!("remount,{opts}")])
            .arg(&self.path)
            .status()
            .unwrap();
        assert!(status.success(), "remount {opts}");
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.path).status();
    }
}

#[test]
fn read_only_project_directory_is_a_clear_error() {
    let Some(fs) = Tmpfs::mount("8m") else { return };
    let dir = fs.path.join("book.lectern");
    let ids = saved_project(&dir);
    fs.remount("ro");
    let err = Project::open(&dir).unwrap_err();
    assert!(matches!(err, StoreError::ReadOnly { .. }), "{err}");
    assert!(err.to_string().contains("read-only"), "{err}");
    fs.remount("rw");
    assert_takes_intact(&dir, &ids);
}

#[test]
fn full_disk_is_a_clear_error_and_loses_nothing() {
    let Some(fs) = Tmpfs::mount("1m") else { return };
    let dir = fs.path.join("book.lectern");
    let segments = manuscript(&sentences(200), 10, 1);
    let mut p = Project::open(&dir).unwrap();
    p.sync_manuscript(&segments).unwrap();
    let mut saved = Vec::new();
    let err = loop {
        let s = &segments[saved.len()];
        match p.save_take(&synthetic_take(0, s, 3)) {
            Ok(id) => saved.push(id),
            Err(e) => break e,
        }
        assert!(saved.len() < segments.len(), "a 1 MiB tmpfs never filled up");
    };
    assert!(matches!(err, StoreError::DiskFull { .. }), "{err}");
    assert!(saved.len() >= 3, "only {} takes fitted", saved.len());
    drop(p);
    fs.remount("size=16m");
    let p = Project::open(&dir).unwrap();
    p.integrity_check().unwrap();
    assert!(orphan_rows(&p).is_empty());
    assert_eq!(p.all_takes().unwrap().len(), saved.len());
    for (i, &id) in saved.iter().enumerate() {
        assert_eq!(p.load_samples(id).unwrap(), synthetic_samples(i as u64 + 1, 3));
    }
}

#[test]
fn a_version_1_project_migrates_and_keeps_its_takes() {
    let tmp = tempfile::tempdir().unwrap();
    let ids = saved_project(tmp.path());
    // Undo version 2 by hand: drop what it added, as a project written by the previous
    // release has it.
    let db = tmp.path().join(DB_FILE);
    let c = rusqlite::Connection::open(&db).unwrap();
    c.execute_batch(
        "ALTER TABLE takes DROP COLUMN figures;
         ALTER TABLE takes DROP COLUMN content_key; ALTER TABLE segments DROP COLUMN content_key;
         ALTER TABLE segments DROP COLUMN review; ALTER TABLE segments DROP COLUMN note;
         DROP TABLE file_hashes; DROP TABLE casting_overrides; PRAGMA user_version = 1;",
    )
    .unwrap();
    drop(c);
    let p = Project::open(tmp.path()).unwrap();
    assert_eq!(p.all_takes().unwrap().len(), ids.len());
    // Takes from before take keys have no content key: they are stale, kept in the history.
    assert!(p.all_takes().unwrap().iter().all(|t| t.content_key.is_empty()));
}

/// A project of the release before quality figures (schema 2) opens, keeps its takes, and
/// its takes have no figures until they are measured; then they keep them (#19).
#[test]
fn a_version_2_project_migrates_and_its_takes_get_figures_when_measured() {
    let tmp = tempfile::tempdir().unwrap();
    let ids = saved_project(tmp.path());
    let db = tmp.path().join(DB_FILE);
    let c = rusqlite::Connection::open(&db).unwrap();
    c.execute_batch(
        "ALTER TABLE takes DROP COLUMN figures; DROP TABLE casting_overrides;
         PRAGMA user_version = 2;",
    )
    .unwrap();
    drop(c);
    let mut p = Project::open(tmp.path()).unwrap();
    let takes = p.all_takes().unwrap();
    assert_eq!(takes.len(), ids.len());
    assert!(takes.iter().all(|t| t.figures.is_none()));
    let figures = lectern::quality::TakeFigures::measure(
        "one two three",
        &p.load_samples(ids[0]).unwrap(),
        Some(0.5),
    )
    .unwrap();
    p.set_take_figures(ids[0], &figures).unwrap();
    drop(p);
    let p = Project::open(tmp.path()).unwrap();
    assert_eq!(p.take(ids[0]).unwrap().figures, Some(figures));
    assert_eq!(p.take(ids[1]).unwrap().figures, None);
    drop(p);
    assert_takes_intact(tmp.path(), &ids);
}

/// A project of the release before casting overrides (schema 3) opens with its takes and
/// no override; an override set then is kept (#22).
#[test]
fn a_version_3_project_migrates_and_keeps_casting_overrides() {
    let tmp = tempfile::tempdir().unwrap();
    let ids = saved_project(tmp.path());
    let db = tmp.path().join(DB_FILE);
    let c = rusqlite::Connection::open(&db).unwrap();
    c.execute_batch("DROP TABLE casting_overrides; PRAGMA user_version = 3;").unwrap();
    drop(c);
    let mut p = Project::open(tmp.path()).unwrap();
    assert!(p.casting_overrides().unwrap().is_empty());
    let key = p.proofed_segments().unwrap()[1].key;
    let over = lectern::review::CastingOverride { voice: Some("alto".into()), style: None };
    p.set_casting_override(key, &over).unwrap();
    let err = p.set_casting_override(9999, &over).unwrap_err();
    assert!(matches!(err, StoreError::UnknownSegment(9999)), "{err}");
    drop(p);
    let mut p = Project::open(tmp.path()).unwrap();
    let kept = p.casting_overrides().unwrap();
    assert_eq!(kept.len(), 1);
    assert_eq!((kept[0].1, &kept[0].2), (0, &over));
    p.set_casting_override(key, &Default::default()).unwrap();
    assert!(p.casting_overrides().unwrap().is_empty(), "an empty override is removed");
    drop(p);
    assert_takes_intact(tmp.path(), &ids);
}

#[test]
fn an_empty_or_missing_database_beside_takes_is_refused_not_restarted() {
    let tmp = tempfile::tempdir().unwrap();
    let ids = saved_project(tmp.path());
    let db = tmp.path().join(DB_FILE);
    let saved = std::fs::read(&db).unwrap();
    for damage in ["truncate", "delete"] {
        match damage {
            "truncate" => std::fs::write(&db, b"").unwrap(),
            _ => std::fs::remove_file(&db).unwrap(),
        }
        let _ = std::fs::remove_file(tmp.path().join(format!("{DB_FILE}-wal")));
        let err = Project::open(tmp.path()).unwrap_err();
        assert!(matches!(err, StoreError::LostDatabase { take_files: 3, .. }), "{damage}: {err}");
        assert!(err.to_string().contains("backup"), "{err}");
        assert_eq!(take_files(tmp.path()).unwrap().len(), 3, "no take moved or removed");
        std::fs::write(&db, &saved).unwrap();
    }
    assert_takes_intact(tmp.path(), &ids);
}

/// `--rebuild`: a lost database comes back from the records in the take files — segments,
/// takes, records and choices as the default rule makes them — and the export is the same
/// bytes as before the loss. A take file made without a record is left out and orphaned.
#[test]
fn a_lost_database_is_rebuilt_from_the_take_files() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("p");
    let segments = manuscript(&sentences(4), 2, 1);
    let mut p = Project::open(&dir).unwrap();
    p.sync_manuscript(&segments).unwrap();
    for s in &segments {
        p.save_take(&synthetic_take(0, s, 5)).unwrap();
        p.save_take(&synthetic_take(0, s, 6)).unwrap();
    }
    let before_takes = p.takes_of(segments[1].id).unwrap();
    drop(p);
    // Saved within one millisecond or not, each take is later than the one before it (the
    // rebuild chooses each segment's oldest take again; a tie once chose the other).
    let mut times: Vec<(i64, u64)> = lectern::store::takes::take_files(&dir)
        .unwrap()
        .iter()
        .filter_map(|f| lectern::store::record::read_record(f))
        .map(|r| (r.created_ms, r.record.seed))
        .collect();
    times.sort();
    assert!(times.windows(2).all(|w| w[0].0 < w[1].0), "{times:?}");
    let export_bytes = |name: &str| {
        let p = Project::open(&dir).unwrap();
        let out = tmp.path().join(name);
        export(&p, &ExportOptions { out: out.clone(), ..Default::default() }).unwrap();
        std::fs::read(out).unwrap()
    };
    let before = export_bytes("before.wav");
    // A file without a record, as older versions wrote them.
    let old = dir.join("takes/old-take.wav");
    let mut f = std::fs::File::create(&old).unwrap();
    lectern::store::takes::write_wav_to(&mut f, &[0.1, 0.2], &[]).unwrap();
    drop(f);

    let db = dir.join(DB_FILE);
    std::fs::write(&db, b"").unwrap();
    let _ = std::fs::remove_file(dir.join(format!("{DB_FILE}-wal")));
    assert!(matches!(Project::open(&dir), Err(StoreError::LostDatabase { .. })));
    let report = Project::rebuild(&dir).unwrap();
    assert_eq!((report.takes, report.segments), (8, 4));
    assert_eq!(report.without_record, vec![old.clone()]);
    assert!(report.damaged.is_empty());
    assert!(report.lost_database.as_ref().is_some_and(|p| p.exists()));

    let mut p = Project::open(&dir).unwrap();
    p.integrity_check().unwrap();
    p.sync_manuscript(&segments).unwrap();
    let after_takes = p.takes_of(segments[1].id).unwrap();
    assert_eq!(after_takes.len(), 2);
    for (a, b) in before_takes.iter().zip(&after_takes) {
        assert_eq!(
            (&a.record, &a.audio_hash, &a.wav_path),
            (&b.record, &b.audio_hash, &b.wav_path)
        );
    }
    assert!(p.segments_needing_takes().unwrap().is_empty());
    drop(p);
    assert_eq!(export_bytes("after.wav"), before, "the rebuilt project exports the same bytes");
    assert!(!old.exists(), "the file without a record went to the orphans");
    // An intact database is not rebuilt.
    let err = Project::rebuild(&dir).unwrap_err();
    assert!(err.to_string().contains("nothing to rebuild"), "{err}");
}

/// A take row whose record is not valid JSON: the error names the take, its segment (number,
/// line, text) and the way back (`--rebuild` from the take files).
#[test]
fn a_broken_take_record_names_the_take_and_its_segment() {
    let tmp = tempfile::tempdir().unwrap();
    let ids = saved_project(tmp.path());
    let p = Project::open(tmp.path()).unwrap();
    p.connection()
        .execute("UPDATE takes SET record = '{broken' WHERE id = ?1", [ids[1] as i64])
        .unwrap();
    // Store ids start at 1 here: the second segment has id 2, shown as segment 3, on line 2.
    let err = p.takes_of(2).unwrap_err();
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err}");
    let message = err.to_string();
    assert!(message.contains(&format!("take {}", ids[1])), "{message}");
    assert!(message.contains("segment 3 at line 2"), "{message}");
    assert!(message.contains("--rebuild"), "{message}");
}
