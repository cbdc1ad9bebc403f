//! A take file carries its own record ([`super::record`]), so a lost database can be rebuilt
//! from the take files. `--rebuild` creates a new database from those records: segments come
//! back (inactive until the next sync with the manuscript), takes come back with their records,
//! and each segment's first take is chosen again — the default rule. What the database alone
//! held is gone: choices of another take, review states, notes, file-hash caches. Take files
//! without a record (made before records existed) or whose audio no longer matches its hash are
//! left out and then moved to `takes/orphans/` by the open check.

use std::fs;
use std::path::{Path, PathBuf};

use rusqlite::{Connection, OptionalExtension, params};
use serde::Serialize;

use super::db::{MANUSCRIPT_ID, now_ms};
use super::record::{NewRow, SegmentIdentity, read_record};
use super::takes;
use super::{DB_FILE, Result, StoreError, TAKES_DIR};

/// What a rebuild found.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RebuildReport {
    /// Where the lost (empty) database was moved, if there was a file.
    pub lost_database: Option<PathBuf>,
    pub takes: usize,
    pub segments: usize,
    /// Take files without a record (made before records were written into them).
    pub without_record: Vec<PathBuf>,
    /// Take files whose audio does not match the hash in their record.
    pub damaged: Vec<PathBuf>,
}

/// Moves a lost (empty) database and its journal files aside, keeping them for inspection.
pub(crate) fn move_lost_database(dir: &Path) -> Result<Option<PathBuf>> {
    let db = dir.join(DB_FILE);
    if !db.exists() {
        return Ok(None);
    }
    let to = dir.join(format!("{DB_FILE}.lost-{}", now_ms()));
    fs::rename(&db, &to).map_err(|e| StoreError::io("moving the lost database aside", &db, e))?;
    for suffix in ["-wal", "-shm", "-journal"] {
        let side = dir.join(format!("{DB_FILE}{suffix}"));
        if side.exists() {
            let side_to = dir.join(format!("{DB_FILE}.lost-{}{suffix}", now_ms()));
            fs::rename(&side, &side_to)
                .map_err(|e| StoreError::io("moving the lost database aside", &side, e))?;
        }
    }
    Ok(Some(to))
}

/// Re-attaches every take file of `dir/takes` that carries a record, oldest first, into the
/// fresh database `conn`.
pub(crate) fn reattach(conn: &mut Connection, dir: &Path) -> Result<RebuildReport> {
    let db_path = dir.join(DB_FILE);
    let mut report = RebuildReport::default();
    let mut found = Vec::new();
    for path in takes::take_files(dir)
        .map_err(|e| StoreError::io("listing take files", &dir.join(TAKES_DIR), e))?
    {
        if path.extension().is_none_or(|e| e != "wav") {
            continue;
        }
        match read_record(&path) {
            None => report.without_record.push(path),
            Some(rec) => found.push((path, rec)),
        }
    }
    found.sort_by(|a, b| (a.1.created_ms, &a.0).cmp(&(b.1.created_ms, &b.0)));
    let tx = conn.transaction().map_err(|e| StoreError::sqlite(&db_path, e))?;
    let mut segments = std::collections::HashSet::new();
    for (path, rec) in found {
        let intact = takes::read_wav(&path).is_ok_and(|s| {
            s.len() as u64 == rec.num_samples && takes::audio_hash(&s) == rec.audio_hash
        });
        if !intact {
            report.damaged.push(path);
            continue;
        }
        let key = segment_key(&tx, &rec.segment).map_err(|e| StoreError::sqlite(&db_path, e))?;
        segments.insert(key);
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let row = NewRow {
            engine_take_id: rec.engine_take_id,
            record: &rec.record,
            audio_hash: &rec.audio_hash,
            rel_path: &format!("{TAKES_DIR}/{name}"),
            num_samples: rec.num_samples,
            created_ms: rec.created_ms,
        };
        takes::insert_row(&tx, key, &row).map_err(|e| StoreError::sqlite(&db_path, e))?;
        report.takes += 1;
    }
    tx.commit().map_err(|e| StoreError::sqlite(&db_path, e))?;
    report.segments = segments.len();
    Ok(report)
}

/// The key of the segment row with this identity, inserted (inactive) when it is new.
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
