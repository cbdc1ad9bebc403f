//! Housekeeping: the files Lectern leaves behind on purpose or by interruption, and the policy
//! that removes them (`lectern clean BOOK`, and automatically when a project opens past a
//! limit).
//!
//! What is a leftover:
//! - `takes/orphans/*`: complete take files without a row, moved aside at open (a save killed
//!   between its rename and its commit) for inspection;
//! - `takes/quarantine/*`: damaged take files moved aside (their takes are made again);
//! - interrupted writes: `*.partial.wav` (render), `*.part` (export), `*.tmp` (a cover, a
//!   take) in the project directory; beside the manuscript and in the output folders, only
//!   those named after the manuscript (`NAME.partial.wav`, `NAME-01.partial.wav`,
//!   `NAME.flac.part`, …), so another book's file being written is never touched;
//! - playback files (`playback/session*.wav` in the project, `NAME.playback*.wav` beside a
//!   manuscript without one): all but the [`PLAYBACK_KEPT`] newest.
//!
//! `lectern clean` removes them all (`--dry-run` lists them). Opening a project removes those
//! inside the project directory without asking once they pass [`AUTO_CLEAN_BYTES`] or
//! [`AUTO_CLEAN_FILES`]. The project is locked while either runs, so nothing of this project is
//! being written meanwhile.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::Serialize;

use super::{ORPHANS_DIR, QUARANTINE_DIR, Result, StoreError, TAKES_DIR};

/// Playback files kept (the newest): a narrator may still want to hear the last sessions.
pub const PLAYBACK_KEPT: usize = 3;
/// Leftovers inside a project past this many bytes are removed when it opens.
pub const AUTO_CLEAN_BYTES: u64 = 1 << 30;
/// Leftovers inside a project past this many files are removed when it opens.
pub const AUTO_CLEAN_FILES: usize = 500;
/// The project's playback folder.
pub const PLAYBACK_DIR: &str = "playback";

/// Why a file is a leftover.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LeftoverKind {
    Orphan,
    Quarantined,
    Interrupted,
    Playback,
}

impl LeftoverKind {
    /// How a listing names the kind.
    pub fn label(self) -> &'static str {
        match self {
            Self::Orphan => "orphan take",
            Self::Quarantined => "damaged take",
            Self::Interrupted => "interrupted write",
            Self::Playback => "old playback",
        }
    }
}

/// A file housekeeping removes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Leftover {
    pub path: PathBuf,
    pub bytes: u64,
    pub kind: LeftoverKind,
}

/// The leftovers inside the project directory `dir`.
pub fn in_project(dir: &Path) -> Result<Vec<Leftover>> {
    let io_err = |e| StoreError::io("listing leftovers", dir, e);
    let takes = dir.join(TAKES_DIR);
    let mut out = all_files(&takes.join(ORPHANS_DIR), LeftoverKind::Orphan).map_err(io_err)?;
    out.extend(all_files(&takes.join(QUARANTINE_DIR), LeftoverKind::Quarantined).map_err(io_err)?);
    for folder in [dir.to_path_buf(), takes] {
        let files = files_in(&folder).map_err(io_err)?;
        out.extend(
            files.into_iter().filter(|(p, _)| is_interrupted(p)).map(|(path, bytes)| Leftover {
                path,
                bytes,
                kind: LeftoverKind::Interrupted,
            }),
        );
    }
    let playback = files_in(&dir.join(PLAYBACK_DIR)).map_err(io_err)?;
    out.extend(old_playback(playback.into_iter().filter(|(p, _)| is_wav(p)).collect()));
    Ok(out)
}

/// The leftovers named after `manuscript` beside it and in `folders` (output folders).
pub fn beside_manuscript(manuscript: &Path, folders: &[PathBuf]) -> Result<Vec<Leftover>> {
    let stem = manuscript.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let here = manuscript.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let mut dirs: Vec<PathBuf> = vec![here.to_path_buf()];
    for f in folders {
        if !dirs.iter().any(|d| same_dir(d, f)) {
            dirs.push(f.clone());
        }
    }
    let mut out = Vec::new();
    let mut playback = Vec::new();
    for dir in &dirs {
        let files = files_in(dir).map_err(|e| StoreError::io("listing leftovers", dir, e))?;
        for (path, bytes) in files {
            let name =
                path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            if !named_after(&name, &stem) {
                continue;
            }
            if is_interrupted(&path) {
                out.push(Leftover { path, bytes, kind: LeftoverKind::Interrupted });
            } else if name.starts_with(&format!("{stem}.playback")) && is_wav(&path) {
                playback.push((path, bytes));
            }
        }
    }
    out.extend(old_playback(playback));
    Ok(out)
}

/// Whether the leftovers are past the limit at which an open removes them.
pub fn past_auto_limit(leftovers: &[Leftover]) -> bool {
    let bytes: u64 = leftovers.iter().map(|l| l.bytes).sum();
    bytes > AUTO_CLEAN_BYTES || leftovers.len() > AUTO_CLEAN_FILES
}

/// Removes the leftovers (those already gone are skipped); returns the bytes freed.
pub fn remove(leftovers: &[Leftover]) -> Result<u64> {
    let mut freed = 0;
    for l in leftovers {
        match fs::remove_file(&l.path) {
            Ok(()) => freed += l.bytes,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(StoreError::io("removing a leftover", &l.path, e)),
        }
    }
    Ok(freed)
}

/// `NAME.…`, `NAME-…` (split chapters, numbered playback): a file this manuscript's outputs
/// are named like.
fn named_after(name: &str, stem: &str) -> bool {
    !stem.is_empty()
        && name
            .strip_prefix(stem)
            .is_some_and(|rest| rest.starts_with('.') || rest.starts_with('-'))
}

/// An interrupted write of Lectern's: a render's `*.partial.wav`, an export's `*.EXT.part`
/// (only of the formats it writes: a browser's download is left alone), a `*.tmp`.
fn is_interrupted(path: &Path) -> bool {
    const EXPORTED: [&str; 9] = ["wav", "flac", "mp3", "m4b", "m4a", "cue", "json", "jpg", "png"];
    let name = path.file_name().map(|n| n.to_string_lossy().to_lowercase()).unwrap_or_default();
    if name.ends_with(".partial.wav") || name.ends_with(".tmp") {
        return true;
    }
    name.strip_suffix(".part")
        .and_then(|inner| inner.rsplit_once('.'))
        .is_some_and(|(_, ext)| EXPORTED.contains(&ext))
}

fn is_wav(path: &Path) -> bool {
    path.extension().is_some_and(|e| e.eq_ignore_ascii_case("wav"))
        && !path.to_string_lossy().ends_with(".partial.wav")
}

/// All but the newest [`PLAYBACK_KEPT`] playback files.
fn old_playback(mut files: Vec<(PathBuf, u64)>) -> Vec<Leftover> {
    let modified =
        |p: &Path| fs::metadata(p).and_then(|m| m.modified()).unwrap_or(SystemTime::UNIX_EPOCH);
    files.sort_by_key(|(p, _)| std::cmp::Reverse((modified(p), p.clone())));
    files
        .into_iter()
        .skip(PLAYBACK_KEPT)
        .map(|(path, bytes)| Leftover { path, bytes, kind: LeftoverKind::Playback })
        .collect()
}

/// Every file in `dir` (none when it does not exist), as `kind`.
fn all_files(dir: &Path, kind: LeftoverKind) -> io::Result<Vec<Leftover>> {
    Ok(files_in(dir)?.into_iter().map(|(path, bytes)| Leftover { path, bytes, kind }).collect())
}

/// The regular files directly in `dir` with their sizes, by name (none when it is missing).
fn files_in(dir: &Path) -> io::Result<Vec<(PathBuf, u64)>> {
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry?;
        let meta = entry.metadata()?;
        if meta.is_file() {
            out.push((entry.path(), meta.len()));
        }
    }
    out.sort();
    Ok(out)
}

fn same_dir(a: &Path, b: &Path) -> bool {
    match (fs::canonicalize(a), fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}
