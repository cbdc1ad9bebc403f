//! Importing take files into a project database: the one step that turns files carrying
//! their own records ([`super::record`]) into take rows. `--rebuild` imports every take file
//! into a fresh database ([`super::rebuild`]); gathering takes rendered on other machines
//! imports theirs into an open project ([`super::Project::import_take_files`]).
//!
//! A file is imported once: a file whose path already has a row is left as it is. A file
//! whose audio does not match the hash and length its record gives is imported as a missing
//! take (its record is what regenerates it) and moved to `takes/quarantine/`. Files are imported oldest
//! first (by the time their record gives), so each segment's first take becomes its chosen
//! take again, as when it was made.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;

use super::db::MANUSCRIPT_ID;
use super::record::{NewRow, SegmentIdentity, TakeFileRecord, read_record};
use super::takes;
use super::{Result, StoreError, TAKES_DIR};

/// What an import found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ImportReport {
    /// Take rows added.
    pub takes: usize,
    /// Distinct segments those takes belong to.
    pub segments: usize,
    /// Files that already had a row (imported before): left as they were.
    pub already_present: Vec<PathBuf>,
    /// Take files without a record (made before records were written into them).
    pub without_record: Vec<PathBuf>,
    /// Take files whose audio does not match the hash or length in their record, though the
    /// record is readable: imported as missing takes (the render regenerates each from its
    /// record, in the flow group it names: the same audio), their files quarantined.
    pub to_regenerate: Vec<PathBuf>,
}

/// Imports the take WAVs among `files` into `conn` in one transaction. Every file must lie in
/// the project's `takes/` folder (`dir/takes/NAME`): a row records its path relative to the
/// project, so files from elsewhere are copied there first. `db_path` names the database in
/// errors.
pub(crate) fn import_take_files(
    conn: &mut Connection,
    db_path: &Path,
    dir: &Path,
    files: &[PathBuf],
) -> Result<ImportReport> {
    let mut report = ImportReport::default();
    let mut found = Vec::new();
    for path in files.iter().filter(|p| p.extension().is_some_and(|e| e == "wav")) {
        let rel = rel_take_path(dir, path)?;
        match read_record(path) {
            None => report.without_record.push(path.clone()),
            Some(rec) => found.push((path.clone(), rel, rec)),
        }
    }
    found.sort_by(|a, b| (a.2.created_ms, &a.0).cmp(&(b.2.created_ms, &b.0)));
    let sql = |e| StoreError::sqlite(db_path, e);
    let tx = conn.transaction().map_err(sql)?;
    let mut segments = HashSet::new();
    let mut damaged_ids = Vec::new();
    for (path, rel, rec) in found {
        if has_row(&tx, &rel).map_err(sql)? {
            report.already_present.push(path);
            continue;
        }
        let intact = audio_matches(&path, &rec);
        let key = segment_key(&tx, &rec.segment).map_err(sql)?;
        segments.insert(key);
        let row = NewRow {
            engine_take_id: rec.engine_take_id,
            record: &rec.record,
            audio_hash: &rec.audio_hash,
            rel_path: &rel,
            num_samples: rec.num_samples,
            created_ms: rec.created_ms,
        };
        let id = takes::insert_row(&tx, key, &row).map_err(sql)?;
        report.takes += 1;
        if !intact {
            damaged_ids.push(id);
            report.to_regenerate.push(path);
        }
        fault_step();
    }
    // Marked missing only now, so each segment's first take is chosen as when it was made,
    // damaged or not: the render regenerates it from its record, the same audio.
    for id in damaged_ids {
        tx.execute("UPDATE takes SET status = 'missing' WHERE id = ?1", [id as i64])
            .map_err(sql)?;
    }
    tx.commit().map_err(sql)?;
    report.segments = segments.len();
    quarantine_damaged(conn, db_path, dir, files)?;
    Ok(report)
}

/// Moves the files of imported takes marked missing whose audio does not match their row out
/// of `takes/` (a file left there would pass the open's size check and be taken for restored).
/// A step of its own after the commit, so a rebuild killed before it does it when resumed.
fn quarantine_damaged(
    conn: &Connection,
    db_path: &Path,
    dir: &Path,
    files: &[PathBuf],
) -> Result<()> {
    for path in files.iter().filter(|p| p.is_file()) {
        let rel = rel_take_path(dir, path)?;
        let row: Option<(String, i64)> = conn
            .query_row(
                "SELECT audio_hash, num_samples FROM takes WHERE wav_path = ?1 AND status = 'missing'",
                [&rel],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map_err(|e| StoreError::sqlite(db_path, e))?;
        let Some((hash, n)) = row else { continue };
        let matches = takes::read_wav(path)
            .is_ok_and(|s| s.len() as u64 == n as u64 && takes::audio_hash(&s) == hash);
        if !matches {
            takes::move_to_quarantine(path)?;
        }
    }
    Ok(())
}

/// `takes/NAME` for a file directly inside `dir/takes`; anything else is refused.
fn rel_take_path(dir: &Path, path: &Path) -> Result<String> {
    let takes_dir = dir.join(TAKES_DIR);
    let inside = path.parent().is_some_and(|p| p == takes_dir);
    match (inside, path.file_name()) {
        (true, Some(name)) => Ok(format!("{TAKES_DIR}/{}", name.to_string_lossy())),
        _ => Err(StoreError::InvalidInput(format!(
            "take file {} is not in the project's take folder {}: copy it there first",
            path.display(),
            takes_dir.display()
        ))),
    }
}

fn has_row(tx: &rusqlite::Transaction<'_>, rel: &str) -> rusqlite::Result<bool> {
    tx.query_row("SELECT 1 FROM takes WHERE wav_path = ?1", [rel], |_| Ok(()))
        .optional()
        .map(|r| r.is_some())
}

/// The file's samples are the ones its record describes (count and hash).
fn audio_matches(path: &Path, rec: &TakeFileRecord) -> bool {
    takes::read_wav(path)
        .is_ok_and(|s| s.len() as u64 == rec.num_samples && takes::audio_hash(&s) == rec.audio_hash)
}

/// The key of the segment row with this identity, inserted (inactive until the next sync with
/// the manuscript) when it is new.
fn segment_key(tx: &rusqlite::Transaction<'_>, s: &SegmentIdentity) -> rusqlite::Result<i64> {
    let existing: Option<i64> = tx
        .query_row(
            "SELECT key FROM segments WHERE manuscript_id = ?1 AND hash = ?2 AND dup = ?3",
            params![MANUSCRIPT_ID, s.hash, s.dup],
            |r| r.get(0),
        )
        .optional()?;
    if let Some(key) = existing {
        return Ok(key);
    }
    tx.execute(
        "INSERT INTO segments (manuscript_id, hash, dup, segment_id, chapter, ordinal, text,
         span_line, span_col, pause_after_ms, active, content_key)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, 0, ?11)",
        params![
            MANUSCRIPT_ID,
            s.hash,
            s.dup,
            s.segment_id,
            s.chapter,
            s.ordinal,
            s.text,
            s.span_line,
            s.span_col,
            s.pause_after_ms,
            s.content_key
        ],
    )?;
    Ok(tx.last_insert_rowid())
}

/// Test-only fault injection: with `LECTERN_FAULT=abort-rebuild-step:N` in the environment the
/// process aborts (like a `kill -9`) at the N-th step of a rebuild — each imported file is a
/// step, and so is each stage of the rebuild around the import — so the kill tests can stop a
/// rebuild anywhere deterministically. Unset, it costs one environment read per step.
pub(crate) fn fault_step() {
    use std::sync::atomic::{AtomicU64, Ordering};
    static SEEN: AtomicU64 = AtomicU64::new(0);
    let Ok(spec) = std::env::var("LECTERN_FAULT") else { return };
    let Some(n) = spec.strip_prefix("abort-rebuild-step:") else { return };
    let seen = SEEN.fetch_add(1, Ordering::SeqCst) + 1;
    if n.trim().parse::<u64>().is_ok_and(|n| n == seen) {
        std::process::abort();
    }
}
