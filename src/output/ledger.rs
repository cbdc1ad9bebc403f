//! The files Lectern wrote: one small record per output path in `DATA/outputs/`, holding the
//! file's size and modification time when Lectern finished it.
//!
//! An existing output is replaced without `--force` only when its record matches the file as it
//! is now: a file the narrator made, copied over or edited since (its time or size changed) is
//! not Lectern's to replace. A record is kept outside the output's folder so that no output
//! grows a hidden companion; a path's record is keyed by the hash of its canonical form.

use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use sha2::{Digest, Sha256};

/// Records kept before the oldest are pruned: the records of files that are gone or changed are
/// dropped then.
const PRUNE_ABOVE: usize = 2000;

/// The folder holding the records, when the platform has a data directory.
fn ledger_dir() -> Option<PathBuf> {
    crate::assets::data_dir().map(|d| d.join("outputs"))
}

/// What a record holds: the file's size and modification time, in nanoseconds.
fn stamp(path: &Path) -> Option<String> {
    let meta = std::fs::metadata(path).ok().filter(std::fs::Metadata::is_file)?;
    let modified = meta.modified().ok()?.duration_since(UNIX_EPOCH).ok()?.as_nanos();
    Some(format!("{} {modified}", meta.len()))
}

fn record_path(dir: &Path, path: &Path) -> Option<PathBuf> {
    let canonical = std::fs::canonicalize(path).ok()?;
    let key = Sha256::digest(canonical.as_os_str().as_encoded_bytes());
    Some(dir.join(format!("{key:x}")))
}

/// Records `path` as written by Lectern. Best effort: without a record, the next run asks for
/// `--force` before replacing it, which is the safe side.
pub fn record(path: &Path) {
    let Some(dir) = ledger_dir() else { return };
    let (Some(stamp), Some(record)) = (stamp(path), record_path(&dir, path)) else { return };
    if std::fs::create_dir_all(&dir).is_err() {
        return;
    }
    let text = format!("{stamp}\n{}\n", path.display());
    let tmp = record.with_extension(format!("tmp{}", std::process::id()));
    if std::fs::write(&tmp, text).is_ok() && std::fs::rename(&tmp, &record).is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    prune(&dir);
}

/// Whether the file at `path` is one Lectern wrote and nobody changed since.
#[must_use]
pub fn is_lecterns(path: &Path) -> bool {
    let Some(dir) = ledger_dir() else { return false };
    let (Some(now), Some(record)) = (stamp(path), record_path(&dir, path)) else { return false };
    std::fs::read_to_string(record).is_ok_and(|text| text.lines().next() == Some(now.as_str()))
}

/// Drops the records of files that are gone or changed, once there are many.
fn prune(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let records: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    if records.len() <= PRUNE_ABOVE {
        return;
    }
    for record in records {
        let Ok(text) = std::fs::read_to_string(&record) else { continue };
        let mut lines = text.lines();
        let (Some(recorded), Some(path)) = (lines.next(), lines.next()) else { continue };
        if stamp(Path::new(path)).as_deref() != Some(recorded) {
            let _ = std::fs::remove_file(&record);
        }
    }
}
