//! A take file carries its own record ([`super::record`]), so a lost database can be rebuilt
//! from the take files. `--rebuild` creates a new database from those records: segments come
//! back (inactive until the next sync with the manuscript), takes come back with their records,
//! and each segment's first take is chosen again — the default rule. What the database alone
//! held is gone: choices of another take, review states, notes, file-hash caches. Take files
//! without a readable record (made before records existed, or cut short) are left out and then
//! moved to `takes/orphans/` by the open check; a take whose audio no longer matches its hash
//! comes back missing, its file quarantined, and the render regenerates it from its record.
//!
//! The rebuild is atomic: the new database is built as [`REBUILD_FILE`] beside the lost one and
//! renamed to `project.db` only once every take is in it. That file is also the sign that a
//! rebuild is under way: killed anywhere, the next open of the project finds it and resumes
//! the rebuild (the import skips the files already in it) instead of opening an empty database
//! and quarantining every take as an orphan.

use std::fs;
use std::path::{Path, PathBuf};

use rusqlite::Connection;
use serde::Serialize;

use super::db::{self, now_ms};
use super::import::{self, fault_step};
use super::takes;
use super::{DB_FILE, Result, StoreError, TAKES_DIR};

/// The database a rebuild builds, renamed to [`DB_FILE`] when complete.
pub const REBUILD_FILE: &str = "project.db.rebuilding";

/// SQLite's files beside a database: its journals and shared memory.
const SIDE_SUFFIXES: [&str; 3] = ["-wal", "-shm", "-journal"];

/// What a rebuild found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RebuildReport {
    /// Where the lost (empty) database was moved, if there was a file.
    pub lost_database: Option<PathBuf>,
    pub takes: usize,
    pub segments: usize,
    /// Take files without a record (made before records were written into them).
    pub without_record: Vec<PathBuf>,
    /// Take files whose audio does not match the hash in their record: re-attached as missing
    /// takes, their files quarantined; the render regenerates them from their records.
    pub damaged: Vec<PathBuf>,
    /// An interrupted rebuild was finished (rather than a new one made).
    pub resumed: bool,
}

/// Whether a rebuild was started in `dir` and not finished.
pub(crate) fn is_pending(dir: &Path) -> bool {
    dir.join(REBUILD_FILE).exists()
}

/// Builds a new database from the take files of `dir` as [`REBUILD_FILE`] and swaps it in
/// (resuming an interrupted build). The caller holds the project lock and has checked that the
/// database is lost or a rebuild is pending.
pub(crate) fn run(dir: &Path) -> Result<RebuildReport> {
    let temp = dir.join(REBUILD_FILE);
    let resumed = temp.exists();
    if resumed && database_present(dir) {
        // A database came back beside an unfinished build (restored from a backup): it wins.
        remove_with_sides(&temp)?;
        return Ok(RebuildReport { resumed, ..RebuildReport::default() });
    }
    let mut conn = open_build(&temp)?;
    sync_dir(dir)?;
    fault_step();
    let lost_database = move_lost_database(dir)?;
    fault_step();
    let files = takes::take_files(dir)
        .map_err(|e| StoreError::io("listing take files", &dir.join(TAKES_DIR), e))?;
    let imported = import::import_take_files(&mut conn, &temp, dir, &files)?;
    fault_step();
    seal(conn, &temp)?;
    fault_step();
    swap_in(dir, &temp)?;
    fault_step();
    // Counted from the finished database: a resumed build imported only the files left.
    let (takes, segments) = counts(&dir.join(DB_FILE))?;
    Ok(RebuildReport {
        lost_database,
        takes,
        segments,
        without_record: imported.without_record,
        damaged: imported.to_regenerate,
        resumed,
    })
}

/// Whether `dir` holds a database with content (not lost).
fn database_present(dir: &Path) -> bool {
    fs::metadata(dir.join(DB_FILE)).is_ok_and(|m| m.len() > 0)
}

/// Opens the database being built, creating it; one left damaged by a crash is started over
/// (the take files are the source, nothing is lost).
fn open_build(temp: &Path) -> Result<Connection> {
    match db::open(temp) {
        Err(StoreError::Corrupt { .. }) => {
            remove_with_sides(temp)?;
            db::open(temp)
        }
        other => other,
    }
}

/// Makes the built database one self-contained, durable file: its WAL checkpointed into it
/// and removed (rollback journal), closed and synced, so renaming the file moves all of it.
fn seal(conn: Connection, temp: &Path) -> Result<()> {
    let sql = |e| StoreError::sqlite(temp, e);
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(())).map_err(sql)?;
    let mode: String =
        conn.query_row("PRAGMA journal_mode = DELETE", [], |r| r.get(0)).map_err(sql)?;
    if !mode.eq_ignore_ascii_case("delete") {
        return Err(StoreError::Corrupt {
            path: temp.to_path_buf(),
            detail: format!("cannot leave WAL mode to finish the rebuild (journal mode {mode})"),
        });
    }
    conn.close().map_err(|(_, e)| sql(e))?;
    fs::File::open(temp)
        .and_then(|f| f.sync_all())
        .map_err(|e| StoreError::io("syncing the rebuilt database", temp, e))
}

/// Renames the built database to `project.db` (atomic) and makes the rename durable.
fn swap_in(dir: &Path, temp: &Path) -> Result<()> {
    let db = dir.join(DB_FILE);
    fs::rename(temp, &db).map_err(|e| StoreError::io("moving the rebuilt database in", &db, e))?;
    sync_dir(dir)?;
    remove_with_sides(temp)
}

/// Takes and segments of the database at `path`.
fn counts(path: &Path) -> Result<(usize, usize)> {
    let conn = Connection::open(path).map_err(|e| StoreError::sqlite(path, e))?;
    let count = |sql: &str| {
        conn.query_row(sql, [], |r| r.get::<_, i64>(0))
            .map(|n| n as usize)
            .map_err(|e| StoreError::sqlite(path, e))
    };
    Ok((
        count("SELECT count(*) FROM takes")?,
        count("SELECT count(DISTINCT segment_key) FROM takes")?,
    ))
}

/// Removes a database file and its side files, those that exist.
fn remove_with_sides(path: &Path) -> Result<()> {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let sides = SIDE_SUFFIXES.iter().map(|s| path.with_file_name(format!("{name}{s}")));
    for file in std::iter::once(path.to_path_buf()).chain(sides) {
        match fs::remove_file(&file) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(StoreError::io("removing an unfinished rebuild", &file, e));
            }
            _ => {}
        }
    }
    Ok(())
}

fn sync_dir(dir: &Path) -> Result<()> {
    takes::sync_dir(dir).map_err(|e| StoreError::io("syncing the project directory", dir, e))
}

/// Moves a lost (empty) database and its journal files aside, keeping them for inspection. Side
/// files are moved even without the database: a stale WAL must never meet the new database.
pub(crate) fn move_lost_database(dir: &Path) -> Result<Option<PathBuf>> {
    let db = dir.join(DB_FILE);
    let stamp = now_ms();
    let to = dir.join(format!("{DB_FILE}.lost-{stamp}"));
    let moved = if db.exists() {
        fs::rename(&db, &to)
            .map_err(|e| StoreError::io("moving the lost database aside", &db, e))?;
        Some(to)
    } else {
        None
    };
    for suffix in SIDE_SUFFIXES {
        let side = dir.join(format!("{DB_FILE}{suffix}"));
        if side.exists() {
            let side_to = dir.join(format!("{DB_FILE}.lost-{stamp}{suffix}"));
            fs::rename(&side, &side_to)
                .map_err(|e| StoreError::io("moving the lost database aside", &side, e))?;
        }
    }
    Ok(moved)
}
