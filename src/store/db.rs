//! The project database: opening (checks before any write), WAL, versioned migrations, and the
//! manuscript/segment queries.
//!
//! The schema version is SQLite's `user_version`. `MIGRATIONS[i]` takes a database from
//! version `i` to `i + 1`, each in its own transaction; a database newer than
//! [`SCHEMA_VERSION`] is refused untouched.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use rusqlite::{Connection, OpenFlags, OptionalExtension, Row, Transaction, params};
use sha2::{Digest, Sha256};

use super::{Diff, Result, StoreError, StoredSegment, carry};
use crate::review::{CastingOverride, Review};

/// Schema version 1: manuscripts and their versions, segments keyed by (hash, dup), takes
/// (indexed key columns + the full record as JSON), chosen takes, settings.
const V1: &str = "
CREATE TABLE manuscripts (
    id INTEGER PRIMARY KEY,
    path TEXT,
    created_ms INTEGER NOT NULL
);
CREATE TABLE manuscript_versions (
    id INTEGER PRIMARY KEY,
    manuscript_id INTEGER NOT NULL REFERENCES manuscripts(id),
    created_ms INTEGER NOT NULL,
    content_hash TEXT NOT NULL,
    segment_count INTEGER NOT NULL,
    segment_keys TEXT NOT NULL
);
CREATE TABLE segments (
    key INTEGER PRIMARY KEY,
    manuscript_id INTEGER NOT NULL REFERENCES manuscripts(id),
    hash TEXT NOT NULL,
    dup INTEGER NOT NULL,
    segment_id INTEGER NOT NULL,
    chapter INTEGER NOT NULL,
    ordinal INTEGER NOT NULL,
    text TEXT NOT NULL,
    span_line INTEGER NOT NULL,
    span_col INTEGER NOT NULL,
    pause_after_ms INTEGER NOT NULL,
    active INTEGER NOT NULL,
    first_version INTEGER,
    last_version INTEGER,
    UNIQUE (manuscript_id, hash, dup)
);
CREATE UNIQUE INDEX segments_active_id ON segments(segment_id) WHERE active = 1;
CREATE INDEX segments_order ON segments(active, chapter, ordinal);
CREATE TABLE takes (
    id INTEGER PRIMARY KEY,
    segment_key INTEGER NOT NULL REFERENCES segments(key),
    engine_take_id INTEGER NOT NULL,
    seed INTEGER NOT NULL,
    nfe INTEGER NOT NULL,
    precision TEXT NOT NULL,
    backend TEXT NOT NULL,
    group_json TEXT NOT NULL,
    lm_s REAL NOT NULL,
    flow_s REAL NOT NULL,
    vocoder_s REAL NOT NULL,
    audio_hash TEXT NOT NULL,
    wav_path TEXT NOT NULL UNIQUE,
    num_samples INTEGER NOT NULL,
    status TEXT NOT NULL DEFAULT 'ok' CHECK (status IN ('ok', 'missing')),
    record TEXT NOT NULL,
    created_ms INTEGER NOT NULL
);
CREATE INDEX takes_segment ON takes(segment_key);
CREATE INDEX takes_audio_hash ON takes(audio_hash);
CREATE TABLE chosen_takes (
    segment_key INTEGER PRIMARY KEY REFERENCES segments(key),
    take_id INTEGER NOT NULL REFERENCES takes(id)
);
CREATE TABLE settings (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
INSERT INTO manuscripts (id, path, created_ms) VALUES (1, NULL, 0);
";

/// Schema version 2: take keys and proofing. A take records the key of its content (LM input,
/// voice, model, mode, frontend) and a segment the key its current content gives, so a stale
/// take is one whose key differs; segments carry the narrator's review state and note; weight
/// and voice file hashes are cached by (path, size, mtime).
const V2: &str = "
ALTER TABLE takes ADD COLUMN content_key TEXT NOT NULL DEFAULT '';
ALTER TABLE segments ADD COLUMN content_key TEXT NOT NULL DEFAULT '';
ALTER TABLE segments ADD COLUMN review TEXT NOT NULL DEFAULT 'unheard';
ALTER TABLE segments ADD COLUMN note TEXT NOT NULL DEFAULT '';
CREATE TABLE file_hashes (
    path TEXT PRIMARY KEY,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    sha256 TEXT NOT NULL
);
";

/// Schema version 3: a take's own quality figures ([`crate::quality::TakeFigures`] as JSON:
/// voiced seconds, text units, loudness, similarity to the voice), measured when the take is
/// saved; NULL for takes saved before (measured and filled in by the next render).
const V3: &str = "
ALTER TABLE takes ADD COLUMN figures TEXT;
";

/// Schema version 4: the narrator's casting of a segment in the workstation (a voice and/or an
/// instruction), over what the manuscript and the cast give it. NULL: that part as written.
const V4: &str = "
CREATE TABLE casting_overrides (
    segment_key INTEGER PRIMARY KEY REFERENCES segments(key),
    voice TEXT,
    style TEXT
);
";

/// Migrations, in order: `MIGRATIONS[i]` goes from version `i` to `i + 1`.
const MIGRATIONS: &[&str] = &[V1, V2, V3, V4];

/// The schema version this build writes.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// The one manuscript row of a project (kept as a table so a project can grow more).
pub(crate) const MANUSCRIPT_ID: i64 = 1;

pub(crate) fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

/// Opens the database: checks readability, version and integrity before writing anything,
/// then switches to WAL (synchronous=FULL) and migrates.
pub fn open(path: &Path) -> Result<Connection> {
    let sql = |e| StoreError::sqlite(path, e);
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let mut conn = Connection::open_with_flags(path, flags).map_err(sql)?;
    conn.busy_timeout(std::time::Duration::from_secs(5)).map_err(sql)?;
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).map_err(sql)?;
    if version > SCHEMA_VERSION {
        return Err(StoreError::NewerSchema {
            path: path.to_path_buf(),
            found: version,
            supported: SCHEMA_VERSION,
        });
    }
    let check: String = conn.query_row("PRAGMA quick_check", [], |r| r.get(0)).map_err(sql)?;
    if check != "ok" {
        return Err(StoreError::Corrupt { path: path.to_path_buf(), detail: check });
    }
    if version > 0 && !has_table(&conn, "takes").map_err(sql)? {
        return Err(StoreError::Corrupt {
            path: path.to_path_buf(),
            detail: format!("schema v{version} but no `takes` table"),
        });
    }
    let mode: String =
        conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0)).map_err(sql)?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(StoreError::Corrupt {
            path: path.to_path_buf(),
            detail: format!("cannot switch to WAL (journal mode {mode})"),
        });
    }
    // FULL: a committed take survives power loss too, not just a killed process.
    conn.execute_batch("PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;").map_err(sql)?;
    migrate(&mut conn, version).map_err(sql)?;
    Ok(conn)
}

fn has_table(conn: &Connection, name: &str) -> rusqlite::Result<bool> {
    conn.query_row(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
        [name],
        |r| r.get::<_, i64>(0),
    )
    .map(|n| n > 0)
}

fn migrate(conn: &mut Connection, from: i64) -> rusqlite::Result<()> {
    for (i, step) in MIGRATIONS.iter().enumerate().skip(from as usize) {
        let tx = conn.transaction()?;
        tx.execute_batch(step)?;
        tx.pragma_update(None, "user_version", (i + 1) as i64)?;
        tx.commit()?;
    }
    Ok(())
}

/// `PRAGMA integrity_check` (the full one).
pub fn integrity_check(conn: &Connection, path: &Path) -> Result<()> {
    let mut stmt =
        conn.prepare("PRAGMA integrity_check").map_err(|e| StoreError::sqlite(path, e))?;
    let rows: Vec<String> = stmt
        .query_map([], |r| r.get(0))
        .and_then(|rows| rows.collect())
        .map_err(|e| StoreError::sqlite(path, e))?;
    if rows == ["ok"] {
        Ok(())
    } else {
        Err(StoreError::Corrupt { path: path.to_path_buf(), detail: rows.join("; ") })
    }
}

pub(crate) fn hash_text(hash: u64) -> String {
    format!("{hash:016x}")
}

pub(crate) fn parse_hash(text: &str) -> u64 {
    u64::from_str_radix(text, 16).unwrap_or(0)
}

const SEGMENT_COLUMNS: &str = "s.segment_id, s.chapter, s.ordinal, s.text, s.span_line, \
     s.span_col, s.hash, s.pause_after_ms, s.content_key, s.key, s.review, s.note";

fn segment_from_row(r: &Row<'_>) -> rusqlite::Result<StoredSegment> {
    Ok(StoredSegment {
        id: r.get::<_, i64>(0)? as u64,
        chapter: r.get(1)?,
        ordinal: r.get(2)?,
        text: r.get(3)?,
        span: (r.get(4)?, r.get(5)?),
        hash: parse_hash(&r.get::<_, String>(6)?),
        pause_after_ms: r.get(7)?,
        content_key: r.get(8)?,
    })
}

/// A segment with its store key and the narrator's proofing state.
fn proofed_from_row(r: &Row<'_>) -> rusqlite::Result<super::ProofedSegment> {
    Ok(super::ProofedSegment {
        segment: segment_from_row(r)?,
        key: r.get(9)?,
        review: Review::parse(&r.get::<_, String>(10)?),
        note: r.get(11)?,
    })
}

pub(crate) fn proofed_segments(conn: &Connection) -> rusqlite::Result<Vec<super::ProofedSegment>> {
    let sql = format!(
        "SELECT {SEGMENT_COLUMNS} FROM segments s WHERE s.active = 1 ORDER BY s.chapter, s.ordinal"
    );
    let mut stmt = conn.prepare(&sql)?;
    stmt.query_map([], proofed_from_row)?.collect()
}

pub(crate) fn active_segments(conn: &Connection) -> rusqlite::Result<Vec<StoredSegment>> {
    let sql = format!(
        "SELECT {SEGMENT_COLUMNS} FROM segments s WHERE s.active = 1 ORDER BY s.chapter, s.ordinal"
    );
    let mut stmt = conn.prepare(&sql)?;
    stmt.query_map([], segment_from_row)?.collect()
}

pub(crate) fn segments_needing_takes(conn: &Connection) -> rusqlite::Result<Vec<StoredSegment>> {
    let sql = format!(
        "SELECT {SEGMENT_COLUMNS} FROM segments s
         LEFT JOIN chosen_takes c ON c.segment_key = s.key
         LEFT JOIN takes t ON t.id = c.take_id AND t.status = 'ok'
              AND t.content_key = s.content_key
         WHERE s.active = 1 AND t.id IS NULL
         ORDER BY s.chapter, s.ordinal"
    );
    let mut stmt = conn.prepare(&sql)?;
    stmt.query_map([], segment_from_row)?.collect()
}

/// Every segment's casting override with the segment's (hash, occurrence): what a sync needs
/// before it knows the segments' keys.
pub(crate) fn casting_overrides(
    conn: &Connection,
) -> rusqlite::Result<Vec<(u64, u32, CastingOverride)>> {
    let mut stmt = conn.prepare(
        "SELECT s.hash, s.dup, o.voice, o.style FROM casting_overrides o
         JOIN segments s ON s.key = o.segment_key WHERE s.manuscript_id = ?1",
    )?;
    stmt.query_map([MANUSCRIPT_ID], |r| {
        let over = CastingOverride { voice: r.get(2)?, style: r.get(3)? };
        Ok((parse_hash(&r.get::<_, String>(0)?), r.get(1)?, over))
    })?
    .collect()
}

/// Sets (or, when it overrides nothing, removes) a segment's casting override.
pub(crate) fn set_casting_override(
    conn: &Connection,
    key: i64,
    over: &CastingOverride,
) -> rusqlite::Result<()> {
    if over.is_empty() {
        conn.execute("DELETE FROM casting_overrides WHERE segment_key = ?1", [key])?;
    } else {
        conn.execute(
            "INSERT INTO casting_overrides (segment_key, voice, style) VALUES (?1, ?2, ?3)
             ON CONFLICT (segment_key) DO UPDATE SET voice = ?2, style = ?3",
            params![key, over.voice, over.style],
        )?;
    }
    Ok(())
}

fn validate(segments: &[StoredSegment]) -> Result<()> {
    let mut ids = HashSet::new();
    for s in segments {
        if !ids.insert(s.id) {
            return Err(StoreError::InvalidInput(format!("segment id {} appears twice", s.id)));
        }
    }
    Ok(())
}

/// Content hash of a manuscript version: the ordered segment hashes and their positions.
fn content_hash(segments: &[StoredSegment]) -> String {
    let mut h = Sha256::new();
    for s in segments {
        h.update(s.hash.to_le_bytes());
        h.update(s.chapter.to_le_bytes());
        h.update(s.pause_after_ms.to_le_bytes());
        h.update(s.span.0.to_le_bytes());
        h.update(s.span.1.to_le_bytes());
        h.update(s.content_key.as_bytes());
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

const SIDE_COLUMNS: &str = "key, segment_id, text, span_line, review, note";

fn side_from_row(r: &Row<'_>) -> rusqlite::Result<carry::Side> {
    Ok(carry::Side {
        key: r.get(0)?,
        id: r.get::<_, i64>(1)? as u64,
        text: r.get(2)?,
        line: r.get(3)?,
        review: r.get(4)?,
        note: r.get(5)?,
    })
}

/// The current version's segments in order, with the narrator's work on each.
fn active_sides(tx: &Transaction<'_>) -> rusqlite::Result<Vec<carry::Side>> {
    let sql = format!(
        "SELECT {SIDE_COLUMNS} FROM segments WHERE active = 1 AND manuscript_id = ?1
         ORDER BY chapter, ordinal"
    );
    let mut stmt = tx.prepare(&sql)?;
    stmt.query_map([MANUSCRIPT_ID], side_from_row)?.collect()
}

/// Moves the narrator's work from the segments the sync removed to those that took their place
/// ([`carry`]), and records in `diff` where each one's work went.
fn carry_work(
    tx: &Transaction<'_>,
    before: &[carry::Side],
    diff: &mut Diff,
) -> rusqlite::Result<()> {
    let after = active_sides(tx)?;
    let moves = carry::plan(before, &after);
    let landings = carry::landings(before, &after, &moves);
    for l in &landings {
        tx.execute(
            "UPDATE segments SET review = ?2, note = ?3 WHERE key = ?1",
            params![after[l.at].key, l.review, l.note],
        )?;
        if l.newly_edited {
            diff.reading_changed.push(after[l.at].id);
        }
    }
    let received: HashSet<usize> = landings.iter().map(|l| l.at).collect();
    for m in &moves {
        let from = &before[m.from];
        diff.carried.push(super::CarriedWork {
            text: from.text.clone(),
            line: from.line,
            review: Review::parse(&from.review),
            note: from.note.clone(),
            to: m.to.iter().filter(|j| received.contains(j)).map(|&j| after[j].id).collect(),
            left_behind: carry::unplaced(from, m, &after, &received),
        });
    }
    Ok(())
}

/// The keys of the current segments that are "edited since approval".
pub(crate) fn edited_since_approval(conn: &Connection) -> rusqlite::Result<Vec<i64>> {
    let mut stmt = conn.prepare(
        "SELECT key FROM segments WHERE active = 1 AND manuscript_id = ?1 AND review = ?2",
    )?;
    stmt.query_map(params![MANUSCRIPT_ID, carry::EDITED_SINCE_APPROVAL], |r| r.get(0))?.collect()
}

pub(crate) fn sync_manuscript(conn: &mut Connection, segments: &[StoredSegment]) -> Result<Diff> {
    validate(segments)?;
    let tx = conn.transaction().map_err(StoreError::Db)?;
    let diff = sync_in(&tx, segments).map_err(StoreError::Db)?;
    tx.commit().map_err(StoreError::Db)?;
    Ok(diff)
}

fn sync_in(tx: &Transaction<'_>, segments: &[StoredSegment]) -> rusqlite::Result<Diff> {
    let mut previous: HashMap<i64, u64> = HashMap::new();
    {
        let mut stmt = tx.prepare(
            "SELECT key, segment_id FROM segments WHERE active = 1 AND manuscript_id = ?1",
        )?;
        for row in
            stmt.query_map([MANUSCRIPT_ID], |r| Ok((r.get(0)?, r.get::<_, i64>(1)? as u64)))?
        {
            let (key, id) = row?;
            previous.insert(key, id);
        }
    }
    let last_hash: Option<String> = tx
        .query_row(
            "SELECT content_hash FROM manuscript_versions WHERE manuscript_id = ?1
             ORDER BY id DESC LIMIT 1",
            [MANUSCRIPT_ID],
            |r| r.get(0),
        )
        .optional()?;
    let version_hash = content_hash(segments);
    let version: Option<i64> = if last_hash.as_deref() == Some(version_hash.as_str()) {
        tx.query_row("SELECT max(id) FROM manuscript_versions", [], |r| r.get(0))?
    } else {
        tx.execute(
            "INSERT INTO manuscript_versions
             (manuscript_id, created_ms, content_hash, segment_count, segment_keys)
             VALUES (?1, ?2, ?3, ?4, '[]')",
            params![MANUSCRIPT_ID, now_ms(), version_hash, segments.len() as i64],
        )?;
        Some(tx.last_insert_rowid())
    };

    let before = active_sides(tx)?;
    tx.execute("UPDATE segments SET active = 0 WHERE manuscript_id = ?1", [MANUSCRIPT_ID])?;
    let mut dups: HashMap<u64, i64> = HashMap::new();
    let mut diff = Diff::default();
    let mut keys = Vec::with_capacity(segments.len());
    for s in segments {
        let dup = dups.entry(s.hash).or_insert(0);
        let key: Option<i64> = tx
            .query_row(
                "SELECT key FROM segments WHERE manuscript_id = ?1 AND hash = ?2 AND dup = ?3",
                params![MANUSCRIPT_ID, hash_text(s.hash), *dup],
                |r| r.get(0),
            )
            .optional()?;
        let key = match key {
            Some(key) => {
                tx.execute(
                    "UPDATE segments SET segment_id = ?2, chapter = ?3, ordinal = ?4, text = ?5,
                     span_line = ?6, span_col = ?7, pause_after_ms = ?8, active = 1,
                     last_version = ?9, content_key = ?10 WHERE key = ?1",
                    params![
                        key,
                        s.id as i64,
                        s.chapter,
                        s.ordinal,
                        s.text,
                        s.span.0,
                        s.span.1,
                        s.pause_after_ms,
                        version,
                        s.content_key
                    ],
                )?;
                key
            }
            None => {
                tx.execute(
                    "INSERT INTO segments (manuscript_id, hash, dup, segment_id, chapter, ordinal,
                     text, span_line, span_col, pause_after_ms, active, first_version, last_version,
                     content_key)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, 1, ?11, ?11, ?12)",
                    params![
                        MANUSCRIPT_ID,
                        hash_text(s.hash),
                        *dup,
                        s.id as i64,
                        s.chapter,
                        s.ordinal,
                        s.text,
                        s.span.0,
                        s.span.1,
                        s.pause_after_ms,
                        version,
                        s.content_key
                    ],
                )?;
                tx.last_insert_rowid()
            }
        };
        *dup += 1;
        if previous.remove(&key).is_some() {
            diff.unchanged.push(s.id);
        } else {
            diff.changed.push(s.id);
        }
        keys.push(key);
    }
    let mut removed: Vec<(i64, u64)> = previous.into_iter().collect();
    removed.sort_unstable();
    diff.removed = removed.into_iter().map(|(_, id)| id).collect();
    carry_work(tx, &before, &mut diff)?;
    if let Some(version) = version {
        let keys_json = serde_json::to_string(&keys).unwrap_or_else(|_| "[]".into());
        tx.execute(
            "UPDATE manuscript_versions SET segment_keys = ?2 WHERE id = ?1",
            params![version, keys_json],
        )?;
    }
    Ok(diff)
}
