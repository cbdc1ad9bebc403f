//! A take file carries its own record, so a lost database can be rebuilt from the take files.
//!
//! Every take WAV ends with a RIFF chunk `lcTK` after its audio (WAV readers skip chunks they
//! do not know): JSON with the take's record, its audio hash and the identity of its segment
//! (content hash and occurrence, text, place, content key). `--rebuild` creates a new database
//! from those chunks: segments come back (inactive until the next sync with the manuscript),
//! takes come back with their records, and each segment's first take is chosen again — the
//! default rule. What the database alone held is gone: choices of another take, review states,
//! notes, file-hash caches. Take files without a chunk (made before it existed) or whose audio
//! no longer matches its hash are left out and then moved to `takes/orphans/` by the open check.

use std::fs;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};

use super::db::{MANUSCRIPT_ID, now_ms};
use super::takes::{self, NewRow};
use super::{DB_FILE, Result, SegmentKey, StoreError, TAKES_DIR};
use lectern_engine::protocol::TakeRecord;

/// RIFF chunk id of a take's record inside its WAV.
pub const RECORD_CHUNK: [u8; 4] = *b"lcTK";

/// Version of the chunk's JSON.
const RECORD_FORMAT: u32 = 1;

/// What a take file says of itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TakeFileRecord {
    pub format: u32,
    pub segment: SegmentIdentity,
    pub engine_take_id: u64,
    pub audio_hash: String,
    pub num_samples: u64,
    pub created_ms: i64,
    pub record: TakeRecord,
}

/// A segment row as far as it is needed to re-attach a take: the store's unique key of a
/// segment is (content hash, occurrence); the rest is where it was when the take was made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SegmentIdentity {
    pub hash: String,
    pub dup: i64,
    pub segment_id: i64,
    pub chapter: i64,
    pub ordinal: i64,
    pub text: String,
    pub span_line: i64,
    pub span_col: i64,
    pub pause_after_ms: i64,
    pub content_key: String,
}

impl SegmentIdentity {
    /// The identity of the segment with store key `key`.
    pub(crate) fn of(conn: &Connection, key: SegmentKey) -> rusqlite::Result<Self> {
        conn.query_row(
            "SELECT hash, dup, segment_id, chapter, ordinal, text, span_line, span_col,
             pause_after_ms, content_key FROM segments WHERE key = ?1",
            [key],
            |r| {
                Ok(Self {
                    hash: r.get(0)?,
                    dup: r.get(1)?,
                    segment_id: r.get(2)?,
                    chapter: r.get(3)?,
                    ordinal: r.get(4)?,
                    text: r.get(5)?,
                    span_line: r.get(6)?,
                    span_col: r.get(7)?,
                    pause_after_ms: r.get(8)?,
                    content_key: r.get(9)?,
                })
            },
        )
    }
}

impl TakeFileRecord {
    pub(crate) fn new(segment: SegmentIdentity, row: &NewRow<'_>) -> Self {
        Self {
            format: RECORD_FORMAT,
            segment,
            engine_take_id: row.engine_take_id,
            audio_hash: row.audio_hash.to_string(),
            num_samples: row.num_samples,
            created_ms: row.created_ms,
            record: row.record.clone(),
        }
    }

    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        // A record is plain data: serialising it cannot fail.
        serde_json::to_vec(self).unwrap_or_default()
    }
}

/// Appends a RIFF chunk to a complete RIFF file and updates the RIFF size.
pub(crate) fn append_chunk<W: Write + Seek>(w: &mut W, id: [u8; 4], body: &[u8]) -> io::Result<()> {
    let len = u32::try_from(body.len()).map_err(|_| io::Error::other("RIFF chunk too large"))?;
    w.seek(SeekFrom::End(0))?;
    w.write_all(&id)?;
    w.write_all(&len.to_le_bytes())?;
    w.write_all(body)?;
    if body.len() % 2 == 1 {
        w.write_all(&[0])?;
    }
    let end = w.seek(SeekFrom::End(0))?;
    let riff = u32::try_from(end - 8).map_err(|_| io::Error::other("RIFF file too large"))?;
    w.seek(SeekFrom::Start(4))?;
    w.write_all(&riff.to_le_bytes())?;
    w.seek(SeekFrom::End(0))?;
    Ok(())
}

/// The body of the first chunk `id` of a RIFF file, if it has one.
pub fn read_chunk(path: &Path, id: [u8; 4]) -> io::Result<Option<Vec<u8>>> {
    let mut f = fs::File::open(path)?;
    let mut header = [0u8; 12];
    f.read_exact(&mut header)?;
    if &header[..4] != b"RIFF" || &header[8..] != b"WAVE" {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "not a RIFF WAVE file"));
    }
    let file_len = f.metadata()?.len();
    let mut pos = 12u64;
    while pos + 8 <= file_len {
        let mut chunk = [0u8; 8];
        f.read_exact(&mut chunk)?;
        let len = u64::from(u32::from_le_bytes([chunk[4], chunk[5], chunk[6], chunk[7]]));
        if chunk[..4] == id {
            if pos + 8 + len > file_len {
                return Err(io::Error::new(io::ErrorKind::InvalidData, "truncated chunk"));
            }
            let mut body = vec![0u8; len as usize];
            f.read_exact(&mut body)?;
            return Ok(Some(body));
        }
        pos += 8 + len + (len % 2);
        f.seek(SeekFrom::Start(pos))?;
    }
    Ok(None)
}

/// The record a take file carries, if it carries a readable one.
pub fn read_record(path: &Path) -> Option<TakeFileRecord> {
    let body = read_chunk(path, RECORD_CHUNK).ok()??;
    serde_json::from_slice(&body).ok()
}

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
