//! What travels with the binary, and where a user's files live.
//!
//! - The sample manuscript is embedded (`include_str!`) and written to the data directory when
//!   the workstation opens it; the built-in themes are code ([`crate::tui::theme::Theme`]).
//! - The demo model (the tiny random-weight CosyVoice3 with the real Qwen2 BPE, ~34 MB) and its
//!   demo voice are embedded by the `lectern` binary ([`register_demo`]) and materialised once
//!   into `DATA/demo/` on first use, checked against a fingerprint of the embedded bytes, so a
//!   `cargo install`ed or copied binary opens the workstation with no source tree around.
//!   The installed files heal themselves ([`ensure_demo`]): each start compares every file's
//!   size with the embedded one (a few `stat`s); a file whose modification time changed since
//!   it was last verified, and every file once every [`FULL_CHECK_DAYS`] days, is compared
//!   byte for byte with the embedded bytes. A damaged or missing file is written again.
//!   The bytes are embedded by the binary, not by this library, so the test binaries that link
//!   the library do not each carry 34 MB.
//! - Platform directories come from the `dirs` crate: `CONFIG` = `~/.config/lectern` on Linux
//!   (`$XDG_CONFIG_HOME`), `~/Library/Application Support/lectern` on macOS; `DATA` =
//!   `~/.local/share/lectern` on Linux (`$XDG_DATA_HOME`), the same Application Support
//!   folder on macOS.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use anyhow::{Context, bail};
use sha2::{Digest, Sha256};

/// The sample manuscript opened when none is given.
pub const SAMPLE_MANUSCRIPT: &str = include_str!("../samples/welcome.md");
/// Its file name in the data directory.
pub const SAMPLE_NAME: &str = "welcome.md";
/// The demo voice made for the demo model.
pub const DEMO_VOICE: &str = "tiny-demo";

/// One file carried inside the binary: its path under the demo directory, and its bytes.
#[derive(Debug, Clone, Copy)]
pub struct EmbeddedFile {
    pub path: &'static str,
    pub bytes: &'static [u8],
}

static DEMO: OnceLock<&'static [EmbeddedFile]> = OnceLock::new();

/// The binary hands over the demo model and voice it embeds (`model/…`, `voices/tiny-demo/…`).
pub fn register_demo(files: &'static [EmbeddedFile]) {
    let _ = DEMO.set(files);
}

/// The platform's configuration directory for Lectern.
pub fn config_dir() -> Option<PathBuf> {
    dirs::config_dir().map(|d| d.join("lectern"))
}

/// The platform's data directory for Lectern (voices, the demo model, the sample).
pub fn data_dir() -> Option<PathBuf> {
    dirs::data_dir().map(|d| d.join("lectern"))
}

fn require_data_dir() -> anyhow::Result<PathBuf> {
    data_dir().context("no data directory on this platform (is HOME set?)")
}

/// Where the demo model and voice are materialised.
pub fn demo_dir() -> Option<PathBuf> {
    data_dir().map(|d| d.join("demo"))
}

/// The directory holding the demo voice (`DATA/demo/voices`).
pub fn demo_voices_dir() -> Option<PathBuf> {
    demo_dir().map(|d| d.join("voices"))
}

const STAMP: &str = ".fingerprint";

fn fingerprint(files: &[EmbeddedFile]) -> String {
    let mut h = Sha256::new();
    for f in files {
        h.update(f.path.as_bytes());
        h.update((f.bytes.len() as u64).to_le_bytes());
        h.update(f.bytes);
    }
    format!("{:x}", h.finalize())
}

/// The demo directory, written from the embedded files if it is missing or stale. Errors when
/// this build carries no demo model and none was materialised before.
pub fn ensure_demo() -> anyhow::Result<PathBuf> {
    let dir = require_data_dir()?.join("demo");
    let Some(files) = DEMO.get() else {
        if dir.join(STAMP).is_file() {
            return Ok(dir);
        }
        bail!("this build carries no demo model: pass --model DIR (an upstream CosyVoice3 model)");
    };
    let want = fingerprint(files);
    if has_stamp(&dir, &want) {
        heal(&dir, files)
            .with_context(|| format!("repairing the demo model in {}", dir.display()))?;
        return Ok(dir);
    }
    install_locked(&dir, files, &want)
        .with_context(|| format!("installing the demo model in {}", dir.display()))?;
    Ok(dir)
}

/// How often every installed demo file is compared with the embedded bytes even when its size
/// and modification time look unchanged (a flipped bit changes neither).
pub const FULL_CHECK_DAYS: u64 = 7;

/// What was verified of the installed demo: when every file was last compared in full, and each
/// file's modification time when it was.
const VERIFIED: &str = ".verified";

#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct Verified {
    full_check_s: u64,
    mtimes_ns: std::collections::BTreeMap<String, u128>,
}

fn now_s() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

fn mtime_ns(meta: &std::fs::Metadata) -> u128 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos())
}

/// The installed demo files that differ from the embedded ones: by size always, by content
/// when their modification time changed since the last verification or a full check is due.
fn damaged_files<'a>(
    dir: &Path,
    files: &'a [EmbeddedFile],
    verified: &Verified,
    full: bool,
) -> Vec<&'a EmbeddedFile> {
    files
        .iter()
        .filter(|f| {
            let path = dir.join(f.path);
            let Ok(meta) = std::fs::metadata(&path) else { return true };
            if meta.len() != f.bytes.len() as u64 {
                return true;
            }
            let changed = verified.mtimes_ns.get(f.path) != Some(&mtime_ns(&meta));
            (full || changed) && std::fs::read(&path).map_or(true, |b| b != f.bytes)
        })
        .collect()
}

/// Verifies the installed demo ([`damaged_files`]) and writes damaged files again from the
/// embedded bytes, under the install lock.
fn heal(dir: &Path, files: &[EmbeddedFile]) -> anyhow::Result<()> {
    let verified: Verified = std::fs::read(dir.join(VERIFIED))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    let full = now_s().saturating_sub(verified.full_check_s) >= FULL_CHECK_DAYS * 86_400;
    let up_to_date = !full
        && files.iter().all(|f| {
            std::fs::metadata(dir.join(f.path)).is_ok_and(|m| {
                m.len() == f.bytes.len() as u64
                    && verified.mtimes_ns.get(f.path) == Some(&mtime_ns(&m))
            })
        });
    if up_to_date {
        return Ok(());
    }
    let _lock = demo_lock(dir)?;
    for f in damaged_files(dir, files, &verified, full) {
        rewrite(dir, f).with_context(|| format!("writing {} again", f.path))?;
        eprintln!("lectern: the demo file {} was damaged; it was written again", f.path);
    }
    record_verified(dir, files, if full { now_s() } else { verified.full_check_s })
}

/// Writes one demo file again, atomically (a reader keeps the file it opened).
fn rewrite(dir: &Path, f: &EmbeddedFile) -> anyhow::Result<()> {
    let path = dir.join(f.path);
    let parent = path.parent().context("demo file has no folder")?;
    std::fs::create_dir_all(parent)?;
    let tmp = tempfile::NamedTempFile::new_in(parent)?;
    std::fs::write(tmp.path(), f.bytes)?;
    tmp.persist(&path)?;
    Ok(())
}

/// Records every file's modification time as verified now.
fn record_verified(dir: &Path, files: &[EmbeddedFile], full_check_s: u64) -> anyhow::Result<()> {
    let mut v = Verified { full_check_s, ..Verified::default() };
    for f in files {
        if let Ok(meta) = std::fs::metadata(dir.join(f.path)) {
            v.mtimes_ns.insert(f.path.to_string(), mtime_ns(&meta));
        }
    }
    let tmp = tempfile::NamedTempFile::new_in(dir)?;
    std::fs::write(tmp.path(), serde_json::to_vec(&v)?)?;
    tmp.persist(dir.join(VERIFIED))?;
    Ok(())
}

/// The lock beside the demo folder that installs and repairs hold.
fn demo_lock(dir: &Path) -> anyhow::Result<std::fs::File> {
    let parent = dir.parent().context("demo directory has no parent")?;
    std::fs::create_dir_all(parent)?;
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(parent.join(".demo.lock"))?;
    fs2::FileExt::lock_exclusive(&lock)?;
    Ok(lock)
}

fn has_stamp(dir: &Path, stamp: &str) -> bool {
    std::fs::read_to_string(dir.join(STAMP)).is_ok_and(|s| s.trim() == stamp)
}

/// Materialises the demo under a lock beside it: processes started together on a new build
/// (tests, a narrator's two terminals) would otherwise remove a stale copy while another
/// renames the fresh one in ("Directory not empty"), or remove the fresh one under a reader.
fn install_locked(dir: &Path, files: &[EmbeddedFile], stamp: &str) -> anyhow::Result<()> {
    let _lock = demo_lock(dir)?;
    // Another process may have installed it while this one waited.
    if has_stamp(dir, stamp) {
        return Ok(());
    }
    materialise(dir, files, stamp)?;
    // Just written from the embedded bytes: verified, fully, now.
    record_verified(dir, files, now_s())
}

fn materialise(dir: &Path, files: &[EmbeddedFile], stamp: &str) -> anyhow::Result<()> {
    let parent = dir.parent().context("demo directory has no parent")?;
    std::fs::create_dir_all(parent)?;
    let tmp = tempfile::Builder::new().prefix(".demo-").tempdir_in(parent)?;
    for f in files {
        let path = tmp.path().join(f.path);
        if let Some(p) = path.parent() {
            std::fs::create_dir_all(p)?;
        }
        std::fs::write(&path, f.bytes)?;
    }
    std::fs::write(tmp.path().join(STAMP), stamp)?;
    if dir.exists() {
        // Another process may have just written the same files: theirs are as good.
        if std::fs::read_to_string(dir.join(STAMP)).is_ok_and(|s| s.trim() == stamp) {
            return Ok(());
        }
        std::fs::remove_dir_all(dir)?;
    }
    let tmp = tmp.keep();
    if let Err(e) = std::fs::rename(&tmp, dir) {
        let _ = std::fs::remove_dir_all(&tmp);
        if !std::fs::read_to_string(dir.join(STAMP)).is_ok_and(|s| s.trim() == stamp) {
            return Err(e.into());
        }
    }
    Ok(())
}

/// The sample manuscript on disk (`DATA/sample/welcome.md`), rewritten from the binary when it
/// differs (copy it elsewhere to edit it).
pub fn sample_manuscript() -> anyhow::Result<PathBuf> {
    let dir = require_data_dir()?.join("sample");
    let path = dir.join(SAMPLE_NAME);
    if std::fs::read_to_string(&path).ok().as_deref() != Some(SAMPLE_MANUSCRIPT) {
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        std::fs::write(&path, SAMPLE_MANUSCRIPT)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(path)
}

/// Whether `path` is the sample manuscript in the data directory.
pub fn is_sample(path: &Path) -> bool {
    data_dir().is_some_and(|d| path == d.join("sample").join(SAMPLE_NAME))
}
