//! Take files: atomic WAV writes, the take rows, and the startup check that reconciles them.
//!
//! Order of a save, so that a kill at any point loses no *finished* take and leaves no row
//! without a file: WAV to `takes/.NAME.tmp` → fsync → rename to `takes/NAME` → fsync the
//! directory → commit the row. A kill before the commit leaves a `.tmp` (removed at the next
//! open) or a complete WAV without a row (moved to `takes/orphans/`).

use std::collections::HashSet;
use std::fs::{self, File};
use std::io::{self, BufWriter, Seek, Write};
use std::path::{Path, PathBuf};

use rusqlite::{Connection, params};
use sha2::{Digest, Sha256};

use super::db::{now_ms, parse_hash};
use super::record::{NewRow, RECORD_CHUNK, SegmentIdentity, TakeFileRecord, append_chunk};
use super::{
    ORPHANS_DIR, OpenReport, Project, QUARANTINE_DIR, Result, SAMPLE_RATE_HZ, StoreError, TAKES_DIR,
};
use crate::review::{SegmentKey, TakeInfo, TakeStatus};
use lectern_engine::protocol::{Take, TakeId};

/// Writes a take's samples and its record ([`super::record`]) to a file and makes them
/// durable. The store uses [`FsWriter`]; tests inject failures (a full disk) through this trait.
pub trait TakeWriter {
    fn write_wav(&mut self, path: &Path, samples: &[f32], record: &[u8]) -> io::Result<()>;
}

/// The real writer: a 32-bit float WAV, fsynced before returning.
pub struct FsWriter;

impl TakeWriter for FsWriter {
    fn write_wav(&mut self, path: &Path, samples: &[f32], record: &[u8]) -> io::Result<()> {
        let file = File::create(path)?;
        let mut buf = BufWriter::new(file);
        write_wav_to(&mut buf, samples, record)?;
        let file = buf.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()
    }
}

/// The WAV format of take files: 24 kHz mono f32, so samples read back bit-exactly.
pub fn take_spec() -> hound::WavSpec {
    hound::WavSpec {
        channels: 1,
        sample_rate: SAMPLE_RATE_HZ,
        bits_per_sample: 32,
        sample_format: hound::SampleFormat::Float,
    }
}

/// Writes `samples` as a take WAV into any seekable writer, followed by the take's `record`
/// as a RIFF chunk (none when empty).
pub fn write_wav_to<W: Write + Seek>(w: &mut W, samples: &[f32], record: &[u8]) -> io::Result<()> {
    let mut wav = hound::WavWriter::new(&mut *w, take_spec()).map_err(hound_to_io)?;
    for &s in samples {
        wav.write_sample(s).map_err(hound_to_io)?;
    }
    wav.finalize().map_err(hound_to_io)?;
    if !record.is_empty() {
        append_chunk(w, RECORD_CHUNK, record)?;
    }
    Ok(())
}

fn hound_to_io(e: hound::Error) -> io::Error {
    match e {
        hound::Error::IoError(e) => e,
        other => io::Error::other(other.to_string()),
    }
}

/// SHA-256 of the samples as little-endian f32 bytes, lower-case hex.
pub fn audio_hash(samples: &[f32]) -> String {
    let mut h = Sha256::new();
    for s in samples {
        h.update(s.to_le_bytes());
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// Makes a rename inside `dir` durable.
pub(crate) fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        File::open(dir)?.sync_all()
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        Ok(())
    }
}

pub(crate) fn save_take(
    project: &mut Project,
    take: &Take,
    writer: &mut dyn TakeWriter,
) -> Result<TakeId> {
    let key = project.segment_key(take.record.segment_id)?;
    let ids = save_group(project, &[(key, take)], writer)?;
    Ok(ids[0])
}

/// A take file written and renamed into place, waiting for its row.
struct WrittenFile {
    path: PathBuf,
    rel_path: String,
    hash: String,
}

pub(crate) fn save_group(
    project: &mut Project,
    group: &[(SegmentKey, &Take)],
    writer: &mut dyn TakeWriter,
) -> Result<Vec<TakeId>> {
    for (_, take) in group {
        check_finite(take)?;
    }
    // Strictly later than every take before it: a rebuild from the take files orders takes by
    // this time to choose each segment's first take again, and two saves within one
    // millisecond would otherwise tie (and the rebuilt project choose the other take).
    let latest: i64 = project
        .conn
        .query_row("SELECT COALESCE(MAX(created_ms), 0) FROM takes", [], |r| r.get(0))
        .map_err(|e| project.sql_err(e))?;
    let created_ms = now_ms().max(latest + 1);
    let mut hashes = Vec::with_capacity(group.len());
    let mut records = Vec::with_capacity(group.len());
    for (key, take) in group {
        let hash = audio_hash(&take.samples);
        let identity = SegmentIdentity::of(&project.conn, *key).map_err(|e| project.sql_err(e))?;
        let row = NewRow {
            engine_take_id: take.id,
            record: &take.record,
            audio_hash: &hash,
            rel_path: "",
            num_samples: take.samples.len() as u64,
            created_ms,
        };
        records.push(TakeFileRecord::new(identity, &row).to_bytes());
        hashes.push(hash);
    }
    let mut written: Vec<WrittenFile> = Vec::with_capacity(group.len());
    for (((_, take), hash), record) in group.iter().zip(hashes).zip(&records) {
        match write_file(project, &take.samples, hash, record, writer) {
            Ok(f) => written.push(f),
            Err(e) => {
                remove_files(&written);
                return Err(e);
            }
        }
    }
    let takes_dir = project.dir.join(TAKES_DIR);
    if let Err(e) = sync_dir(&takes_dir) {
        remove_files(&written);
        return Err(StoreError::io("syncing take directory", &takes_dir, e));
    }
    fault_point(FaultPoint::BeforeGroupCommit);
    match insert_rows(&mut project.conn, group, &written, created_ms) {
        Ok(ids) => Ok(ids),
        Err(e) => {
            // No rows: the files would be orphans; remove them now rather than at next open.
            remove_files(&written);
            Err(project.sql_err(e))
        }
    }
}

fn check_finite(take: &Take) -> Result<()> {
    match take.samples.iter().position(|s| !s.is_finite()) {
        Some(i) => Err(StoreError::InvalidInput(format!(
            "take of segment {}: sample {i} is not finite",
            take.record.segment_id
        ))),
        None => Ok(()),
    }
}

/// Writes samples to a new take file: temp file, fsync, rename.
fn write_file(
    project: &Project,
    samples: &[f32],
    hash: String,
    record: &[u8],
    writer: &mut dyn TakeWriter,
) -> Result<WrittenFile> {
    let name = format!("{}-{:016x}.wav", &hash[..16], rand::random::<u64>());
    let takes_dir = project.dir.join(TAKES_DIR);
    let tmp = takes_dir.join(format!(".{name}.tmp"));
    let path = takes_dir.join(&name);
    if let Err(e) = writer.write_wav(&tmp, samples, record) {
        let _ = fs::remove_file(&tmp);
        return Err(StoreError::io("writing take file", &tmp, e));
    }
    if let Err(e) = fs::rename(&tmp, &path) {
        let _ = fs::remove_file(&tmp);
        return Err(StoreError::io("renaming take file", &path, e));
    }
    Ok(WrittenFile { path, rel_path: format!("{TAKES_DIR}/{name}"), hash })
}

fn remove_files(written: &[WrittenFile]) {
    for f in written {
        let _ = fs::remove_file(&f.path);
    }
}

/// Where a test can stop the process inside a save (see `fault_point`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultPoint {
    /// Every file of a group is in place, no row is committed yet.
    BeforeGroupCommit,
}

/// Test-only fault injection: with `LECTERN_FAULT=abort-before-group-commit:N` in the
/// environment, the N-th group save of the process aborts it there (like a `kill -9`), so the
/// kill tests can stop a render inside a group's save deterministically. Unset, it costs one
/// environment read per group.
fn fault_point(point: FaultPoint) {
    use std::sync::atomic::{AtomicU64, Ordering};
    static SEEN: AtomicU64 = AtomicU64::new(0);
    let Ok(spec) = std::env::var("LECTERN_FAULT") else { return };
    let Some(n) = spec.strip_prefix("abort-before-group-commit:") else { return };
    if point == FaultPoint::BeforeGroupCommit {
        let seen = SEEN.fetch_add(1, Ordering::SeqCst) + 1;
        if n.trim().parse::<u64>().is_ok_and(|n| n == seen) {
            std::process::abort();
        }
    }
}

fn insert_rows(
    conn: &mut Connection,
    group: &[(SegmentKey, &Take)],
    written: &[WrittenFile],
    created_ms: i64,
) -> rusqlite::Result<Vec<TakeId>> {
    let tx = conn.transaction()?;
    let mut ids = Vec::with_capacity(group.len());
    for ((key, take), file) in group.iter().zip(written) {
        let row = NewRow {
            engine_take_id: take.id,
            record: &take.record,
            audio_hash: &file.hash,
            rel_path: &file.rel_path,
            num_samples: take.samples.len() as u64,
            created_ms,
        };
        ids.push(insert_row(&tx, *key, &row)?);
    }
    tx.commit()?;
    Ok(ids)
}

pub(crate) fn insert_row(
    tx: &rusqlite::Transaction<'_>,
    key: SegmentKey,
    row: &NewRow<'_>,
) -> rusqlite::Result<TakeId> {
    let r = row.record;
    let record_json = serde_json::to_string(r)
        .map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))?;
    let group_json = serde_json::to_string(&r.group)
        .map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))?;
    let precision = serde_json::to_string(&r.precision)
        .map(|s| s.trim_matches('"').to_string())
        .unwrap_or_default();
    let content_key = r.content_key();
    tx.execute(
        "INSERT INTO takes (segment_key, engine_take_id, seed, nfe, precision, backend,
         group_json, lm_s, flow_s, vocoder_s, audio_hash, wav_path, num_samples, status,
         record, created_ms, content_key)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, 'ok', ?14, ?15, ?16)",
        params![
            key,
            row.engine_take_id as i64,
            r.seed as i64,
            r.nfe as i64,
            precision,
            r.backend,
            group_json,
            r.timings.lm_s,
            r.timings.flow_s,
            r.timings.vocoder_s,
            row.audio_hash,
            row.rel_path,
            row.num_samples as i64,
            record_json,
            row.created_ms,
            content_key
        ],
    )?;
    let id = tx.last_insert_rowid();
    choose_if_unusable(tx, key, id, &content_key)?;
    Ok(id as TakeId)
}

/// A current take (its content is the segment's) becomes the chosen take when the segment
/// has none that is usable — none yet, a missing file, or stale content. A usable choice
/// stays whatever comes after it. When a new take replaces an earlier choice, the review
/// state goes back to unheard: what was approved or heard was other audio.
fn choose_if_unusable(
    tx: &rusqlite::Transaction<'_>,
    key: SegmentKey,
    take: i64,
    content_key: &str,
) -> rusqlite::Result<()> {
    use rusqlite::OptionalExtension;
    let before: Option<i64> = tx
        .query_row("SELECT take_id FROM chosen_takes WHERE segment_key = ?1", [key], |r| r.get(0))
        .optional()?;
    tx.execute(
        "INSERT INTO chosen_takes (segment_key, take_id)
         SELECT ?1, ?2 WHERE (SELECT content_key FROM segments WHERE key = ?1) = ?3
         ON CONFLICT(segment_key) DO UPDATE SET take_id = excluded.take_id
         WHERE NOT EXISTS (SELECT 1 FROM takes t JOIN segments s ON s.key = t.segment_key
                           WHERE t.id = chosen_takes.take_id AND t.status = 'ok'
                           AND t.content_key = s.content_key)",
        params![key, take, content_key],
    )?;
    let after: Option<i64> = tx
        .query_row("SELECT take_id FROM chosen_takes WHERE segment_key = ?1", [key], |r| r.get(0))
        .optional()?;
    if before.is_some() && after != before {
        tx.execute("UPDATE segments SET review = 'unheard' WHERE key = ?1", [key])?;
    }
    Ok(())
}

/// Moves a damaged take file aside and marks the take missing.
pub(crate) fn quarantine(project: &mut Project, id: TakeId) -> Result<PathBuf> {
    let info = project.take(id)?;
    let to = if info.wav_path.exists() {
        move_to_quarantine(&info.wav_path)?
    } else {
        let name = info.wav_path.file_name().map(ToOwned::to_owned).unwrap_or_default();
        project.dir.join(TAKES_DIR).join(QUARANTINE_DIR).join(name)
    };
    project
        .conn
        .execute("UPDATE takes SET status = 'missing' WHERE id = ?1", [id as i64])
        .map_err(|e| project.sql_err(e))?;
    Ok(to)
}

/// Writes a missing take's file back from regenerated samples (hash-checked) and marks it ok.
pub(crate) fn restore_file(
    project: &mut Project,
    id: TakeId,
    samples: &[f32],
    writer: &mut dyn TakeWriter,
) -> Result<()> {
    let info = project.take(id)?;
    if samples.len() as u64 != info.num_samples || audio_hash(samples) != info.audio_hash {
        return Err(StoreError::HashMismatch { take: id, path: info.wav_path });
    }
    let tmp = info.wav_path.with_extension("wav.tmp");
    let tmp = tmp.with_file_name(format!(
        ".{}",
        tmp.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
    ));
    let record = restored_record(project, id, &info).map_err(|e| project.sql_err(e))?;
    if let Err(e) = writer.write_wav(&tmp, samples, &record.to_bytes()) {
        let _ = fs::remove_file(&tmp);
        return Err(StoreError::io("writing take file", &tmp, e));
    }
    fs::rename(&tmp, &info.wav_path)
        .map_err(|e| StoreError::io("renaming take file", &info.wav_path, e))?;
    let takes_dir = project.dir.join(TAKES_DIR);
    sync_dir(&takes_dir).map_err(|e| StoreError::io("syncing take directory", &takes_dir, e))?;
    project
        .conn
        .execute("UPDATE takes SET status = 'ok' WHERE id = ?1", [id as i64])
        .map_err(|e| project.sql_err(e))?;
    Ok(())
}

/// The record a restored take file carries: the row's, as the original file carried it.
fn restored_record(
    project: &Project,
    id: TakeId,
    info: &TakeInfo,
) -> rusqlite::Result<TakeFileRecord> {
    let (key, engine_take_id, created_ms): (i64, i64, i64) = project.conn.query_row(
        "SELECT segment_key, engine_take_id, created_ms FROM takes WHERE id = ?1",
        [id as i64],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )?;
    let identity = SegmentIdentity::of(&project.conn, key)?;
    let row = NewRow {
        engine_take_id: engine_take_id as u64,
        record: &info.record,
        audio_hash: &info.audio_hash,
        rel_path: "",
        num_samples: info.num_samples,
        created_ms,
    };
    Ok(TakeFileRecord::new(identity, &row))
}

/// Takes matching `cond` (an SQL condition on `takes` with one parameter `?1`), by id.
pub(crate) fn takes_where(
    conn: &Connection,
    dir: &Path,
    cond: &str,
    param: i64,
) -> rusqlite::Result<Vec<TakeInfo>> {
    let sql = format!(
        "SELECT t.id, t.engine_take_id, t.record, t.audio_hash, t.wav_path, t.num_samples,
         t.status, s.hash, t.content_key, s.segment_id, s.span_line, s.text, t.figures
         FROM takes t JOIN segments s ON s.key = t.segment_key
         WHERE {cond} ORDER BY t.id"
    );
    let mut stmt = conn.prepare(&sql)?;
    stmt.query_map([param], |r| {
        let json: String = r.get(2)?;
        let record = serde_json::from_str(&json).map_err(|e| {
            let broken = BrokenRecord {
                take: r.get::<_, i64>(0).unwrap_or(-1),
                segment: r.get::<_, i64>(9).unwrap_or(-1) + 1,
                line: r.get(10).unwrap_or(0),
                text: r.get(11).unwrap_or_default(),
                cause: e.to_string(),
            };
            rusqlite::Error::FromSqlConversionFailure(
                2,
                rusqlite::types::Type::Text,
                Box::new(broken),
            )
        })?;
        let status: String = r.get(6)?;
        Ok(TakeInfo {
            id: r.get::<_, i64>(0)? as TakeId,
            engine_take_id: r.get::<_, i64>(1)? as u64,
            record,
            audio_hash: r.get(3)?,
            wav_path: dir.join(r.get::<_, String>(4)?),
            num_samples: r.get::<_, i64>(5)? as u64,
            status: if status == "ok" { TakeStatus::Ok } else { TakeStatus::Missing },
            segment_hash: parse_hash(&r.get::<_, String>(7)?),
            content_key: r.get(8)?,
            // Figures are derived from the audio: unreadable ones are measured again.
            figures: r
                .get::<_, Option<String>>(12)?
                .and_then(|json| serde_json::from_str(&json).ok()),
        })
    })?
    .collect()
}

/// A take row whose `record` column is not a readable record, named for the narrator.
#[derive(Debug, Clone)]
pub struct BrokenRecord {
    pub take: i64,
    /// 1-based segment number (as the workstation and the errors show it).
    pub segment: i64,
    pub line: i64,
    pub text: String,
    pub cause: String,
}

impl std::fmt::Display for BrokenRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let text: String = self.text.chars().take(40).collect();
        write!(
            f,
            "the record of take {} (segment {} at line {}: \"{text}\") is damaged ({}); its \
             audio file also carries it: move the project's database aside and run with \
             --rebuild to restore the records from the take files",
            self.take, self.segment, self.line, self.cause
        )
    }
}

impl std::error::Error for BrokenRecord {}

/// Reads a take WAV's samples.
pub fn read_wav(path: &Path) -> std::result::Result<Vec<f32>, hound::Error> {
    let reader = hound::WavReader::open(path)?;
    let spec = reader.spec();
    if spec != take_spec() {
        return Err(hound::Error::Unsupported);
    }
    reader.into_samples::<f32>().collect()
}

/// Reads a take's samples and checks its audio hash.
pub(crate) fn read_verified(info: &TakeInfo) -> Result<Vec<f32>> {
    let samples = read_wav(&info.wav_path)
        .map_err(|_| StoreError::TakeFileMissing { take: info.id, path: info.wav_path.clone() })?;
    if samples.len() as u64 != info.num_samples || audio_hash(&samples) != info.audio_hash {
        return Err(StoreError::HashMismatch { take: info.id, path: info.wav_path.clone() });
    }
    Ok(samples)
}

/// Cheap file check at open, a few header reads per take: the WAV exists, has the take format
/// and the recorded length, and the file is exactly as long as its RIFF header says (a
/// truncated file, or one with bytes appended, fails). The audio hash is checked when the
/// samples are read, and for every take by `lectern check-project`.
pub(crate) fn file_complete(path: &Path, num_samples: u64) -> bool {
    let header_ok = hound::WavReader::open(path)
        .map(|r| r.spec() == take_spec() && u64::from(r.duration()) == num_samples)
        .unwrap_or(false);
    header_ok && riff_length_matches(path).unwrap_or(false)
}

/// Whether the file's length is the RIFF size its header gives, plus the 8 bytes before it.
fn riff_length_matches(path: &Path) -> io::Result<bool> {
    use std::io::Read;
    let mut f = File::open(path)?;
    let mut header = [0u8; 8];
    f.read_exact(&mut header)?;
    let riff = u64::from(u32::from_le_bytes([header[4], header[5], header[6], header[7]]));
    Ok(&header[..4] == b"RIFF" && f.metadata()?.len() == riff + 8)
}

/// A free path in `takes/quarantine/` for a damaged file named `name`: an earlier file of the
/// same name there is kept, the new one gets a numbered name.
fn quarantine_path(takes_dir: &Path, name: &std::ffi::OsStr) -> io::Result<PathBuf> {
    let dir = takes_dir.join(QUARANTINE_DIR);
    fs::create_dir_all(&dir)?;
    let mut to = dir.join(name);
    let mut n = 1;
    while to.exists() {
        to = dir.join(format!("{}.{n}", name.to_string_lossy()));
        n += 1;
    }
    Ok(to)
}

/// Moves a damaged take file into `takes/quarantine/` (kept for inspection; its take is
/// regenerated from its record, or rendered again). Returns where it went.
pub(crate) fn move_to_quarantine(path: &Path) -> Result<PathBuf> {
    let takes_dir = path.parent().unwrap_or(Path::new("."));
    let name = path.file_name().unwrap_or_default();
    let to = quarantine_path(takes_dir, name)
        .map_err(|e| StoreError::io("creating quarantine directory", takes_dir, e))?;
    fs::rename(path, &to).map_err(|e| StoreError::io("quarantining take file", path, e))?;
    Ok(to)
}

/// Reads a take's samples for an export: a damaged file is moved into quarantine (the next
/// open marks its take missing) and the error says which take and what to run.
pub(crate) fn read_for_export(info: &TakeInfo) -> Result<Vec<f32>> {
    match read_verified(info) {
        Err(StoreError::HashMismatch { .. } | StoreError::TakeFileMissing { .. }) => {
            let quarantined = if info.wav_path.exists() {
                Some(move_to_quarantine(&info.wav_path)?)
            } else {
                None
            };
            Err(StoreError::DamagedTake {
                take: info.id,
                text: info.record.text.clone(),
                path: info.wav_path.clone(),
                quarantined,
            })
        }
        other => other,
    }
}

/// Reconciles rows and files: marks rows whose file is gone as missing (and back when it
/// returns), removes interrupted temp files, quarantines complete files without a row.
pub(crate) fn check_files(conn: &Connection, dir: &Path) -> Result<OpenReport> {
    let db_path = dir.join(super::DB_FILE);
    let sql = |e| StoreError::sqlite(&db_path, e);
    let mut report = OpenReport::default();
    let rows: Vec<(i64, String, i64, String)> = {
        let mut stmt =
            conn.prepare("SELECT id, wav_path, num_samples, status FROM takes").map_err(sql)?;
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .and_then(|rows| rows.collect())
            .map_err(sql)?
    };
    let mut referenced = HashSet::new();
    for (id, rel, n, status) in &rows {
        referenced.insert(rel.clone());
        let path = dir.join(rel);
        let ok = file_complete(&path, *n as u64);
        if !ok && path.exists() {
            report.damaged_quarantined.push(move_to_quarantine(&path)?);
        }
        let new_status = match (ok, status.as_str()) {
            (false, "ok") => {
                report.missing_files.push(*id as TakeId);
                "missing"
            }
            (true, "missing") => {
                report.restored_files.push(*id as TakeId);
                "ok"
            }
            _ => continue,
        };
        conn.execute("UPDATE takes SET status = ?2 WHERE id = ?1", params![id, new_status])
            .map_err(sql)?;
    }

    let takes_dir = dir.join(TAKES_DIR);
    let entries = fs::read_dir(&takes_dir)
        .map_err(|e| StoreError::io("listing take files", &takes_dir, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| StoreError::io("listing take files", &takes_dir, e))?;
        let path = entry.path();
        if !path.is_file() {
            continue;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".tmp") {
            fs::remove_file(&path).map_err(|e| StoreError::io("removing temp file", &path, e))?;
            report.temp_files_removed.push(path);
        } else if name.ends_with(".wav") && !referenced.contains(&format!("{TAKES_DIR}/{name}")) {
            let orphans = takes_dir.join(ORPHANS_DIR);
            fs::create_dir_all(&orphans)
                .map_err(|e| StoreError::io("creating orphans directory", &orphans, e))?;
            let to = orphans.join(&name);
            fs::rename(&path, &to).map_err(|e| StoreError::io("moving orphan file", &path, e))?;
            report.orphans_quarantined.push(to);
        }
    }
    Ok(report)
}

/// Paths of files in `takes/` (not orphans), for tests and reports.
pub fn take_files(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir.join(TAKES_DIR))? {
        let path = entry?.path();
        if path.is_file() {
            out.push(path);
        }
    }
    out.sort();
    Ok(out)
}
