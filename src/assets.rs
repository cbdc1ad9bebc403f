//! What travels with the binary, and where a user's files live.
//!
//! - The sample manuscript is embedded (`include_str!`) and written to the data directory when
//!   the workstation opens it; the built-in themes are code ([`crate::tui::theme::Theme`]).
//! - The demo model (the tiny random-weight CosyVoice3 with the real Qwen2 BPE, ~34 MB) and its
//!   demo voice are embedded by the `lectern` binary ([`register_demo`]) and materialised once
//!   into `DATA/demo/` on first use, checked against a fingerprint of the embedded bytes, so a
//!   `cargo install`ed or copied binary opens the workstation with no source tree around.
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
        return Ok(dir);
    }
    install_locked(&dir, files, &want)
        .with_context(|| format!("installing the demo model in {}", dir.display()))?;
    Ok(dir)
}

fn has_stamp(dir: &Path, stamp: &str) -> bool {
    std::fs::read_to_string(dir.join(STAMP)).is_ok_and(|s| s.trim() == stamp)
}

/// Materialises the demo under a lock beside it: processes started together on a new build
/// (tests, a narrator's two terminals) would otherwise remove a stale copy while another
/// renames the fresh one in ("Directory not empty"), or remove the fresh one under a reader.
fn install_locked(dir: &Path, files: &[EmbeddedFile], stamp: &str) -> anyhow::Result<()> {
    let parent = dir.parent().context("demo directory has no parent")?;
    std::fs::create_dir_all(parent)?;
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(parent.join(".demo.lock"))?;
    fs2::FileExt::lock_exclusive(&lock)?;
    // Another process may have installed it while this one waited.
    if has_stamp(dir, stamp) {
        return Ok(());
    }
    materialise(dir, files, stamp)
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
