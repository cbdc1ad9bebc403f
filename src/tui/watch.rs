//! Manuscript hot reload: watches the manuscript file (and the `pronunciations.txt` beside it)
//! and, a short debounce after the last
//! change, says it changed (the session re-reads it). The directory is watched, not the file, because editors save by writing
//! a temp file and renaming it over the original, which a watch on the file itself would lose.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The manuscript on disk.
#[derive(Debug, Clone)]
pub struct ManuscriptSource {
    pub path: PathBuf,
}

/// Editors touch a file several times per save; changes closer together than this are one.
pub const DEBOUNCE: Duration = Duration::from_millis(150);

/// Watches one manuscript file; [`ManuscriptWatcher::poll`] yields a re-parse once the file
/// has been quiet for the debounce.
pub struct ManuscriptWatcher {
    _watcher: notify::RecommendedWatcher,
    rx: mpsc::Receiver<()>,
    source: ManuscriptSource,
    debounce: Duration,
    due: Option<Instant>,
}

impl ManuscriptWatcher {
    pub fn new(source: ManuscriptSource, debounce: Duration) -> notify::Result<Self> {
        use notify::Watcher;
        let name = source.path.file_name().map(ToOwned::to_owned);
        let dir = match source.path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let (tx, rx) = mpsc::channel();
        let mut watcher =
            notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
                if let Ok(ev) = res {
                    // The pronunciation list beside it changes the text as much as an edit.
                    let watched = |p: &Path| {
                        p.file_name() == name.as_deref()
                            || p.file_name() == Some(lectern_text::pronounce::PROJECT_FILE.as_ref())
                    };
                    let ours = !ev.kind.is_access() && ev.paths.iter().any(|p| watched(p));
                    if ours {
                        let _ = tx.send(());
                    }
                }
            })?;
        watcher.watch(&dir, notify::RecursiveMode::NonRecursive)?;
        Ok(Self { _watcher: watcher, rx, source, debounce, due: None })
    }

    pub fn path(&self) -> &Path {
        &self.source.path
    }

    /// When a burst of changes settles, if one is under way.
    pub fn due(&self) -> Option<Instant> {
        self.due
    }

    /// Non-blocking. True once changes have settled (once per burst of changes).
    pub fn poll(&mut self, now: Instant) -> bool {
        if self.rx.try_iter().count() > 0 {
            self.due = Some(now + self.debounce);
        }
        match self.due {
            Some(due) if now >= due => {
                self.due = None;
                true
            }
            _ => false,
        }
    }
}
