//! What a take file says of itself, so a lost database can be rebuilt from the take files
//! ([`super::rebuild`]). Every take WAV ends with a RIFF chunk `lcTK` after its audio (WAV
//! readers skip chunks they do not know): JSON with the take's record, its audio hash and the
//! identity of its segment (content hash and occurrence, text, place, content key).
//!
//! A leaf of the store: the chunk's format, how it is written and read, and the take row it
//! describes (`NewRow`). [`super::takes`] writes it and [`super::rebuild`] reads it; it uses
//! neither of them.

use std::fs;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::Path;

use rusqlite::Connection;
use serde::{Deserialize, Serialize};

use crate::review::SegmentKey;
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

/// A take row to insert.
#[derive(Debug, Clone, Copy)]
pub(crate) struct NewRow<'a> {
    pub engine_take_id: u64,
    pub record: &'a TakeRecord,
    pub audio_hash: &'a str,
    /// The file's path relative to the project directory.
    pub rel_path: &'a str,
    pub num_samples: u64,
    pub created_ms: i64,
}
