//! The checks an output path passes before any work is done (see the module docs of
//! [`crate::output`]).

use std::path::{Path, PathBuf};

use super::ledger;

/// Why an output path was refused. Each message names the path and what to do instead.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    #[error("{path}: {what} would overwrite {input}; write elsewhere")]
    IsInput { path: PathBuf, what: &'static str, input: String },
    #[error("{path}: {what} would be written inside {folder}; write elsewhere")]
    Inside { path: PathBuf, what: &'static str, folder: String },
    #[error("{path}: {what} would hold {input}; give a folder of its own")]
    Holds { path: PathBuf, what: &'static str, input: String },
    #[error("{path} is {kind}, not a file Lectern can replace")]
    NotAFile { path: PathBuf, kind: &'static str },
    #[error(
        "{path} exists and Lectern did not write it (or it changed since); `--force` replaces it"
    )]
    Exists { path: PathBuf },
    #[error("{path}: {what} is {accepted}; {hint}")]
    Extension { path: PathBuf, what: &'static str, accepted: String, hint: String },
    #[error("the output folder {0} does not exist")]
    NoFolder(PathBuf),
    #[error("{0}: {1}")]
    Io(PathBuf, std::io::Error),
}

/// Something the run reads, which no output may be or overwrite.
#[derive(Debug, Clone)]
struct Input {
    path: PathBuf,
    /// How messages name it ("the manuscript", "the project folder").
    what: String,
    /// A folder: nothing may be written inside it.
    folder: bool,
}

/// The inputs of a run, and whether `--force` was given. See [`crate::output`].
#[derive(Debug, Clone, Default)]
pub struct Guard {
    inputs: Vec<Input>,
    force: bool,
}

impl Guard {
    /// A guard with no inputs yet; `force` lets an existing file Lectern did not write be
    /// replaced (never an input, never something that is not a file).
    #[must_use]
    pub fn new(force: bool) -> Self {
        Self { inputs: Vec::new(), force }
    }

    /// Protects a file or folder the run reads; a path that does not exist protects nothing.
    #[must_use]
    pub fn protect(mut self, path: &Path, what: &str) -> Self {
        if let Ok(canonical) = std::fs::canonicalize(path) {
            let folder = canonical.is_dir();
            self.inputs.push(Input { path: canonical, what: what.to_string(), folder });
        }
        self
    }

    /// Protects what a manuscript brings with it: itself, and the cast, pronunciations and
    /// project folder beside it.
    #[must_use]
    pub fn protect_manuscript(self, manuscript: &Path) -> Self {
        let dir =
            manuscript.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        self.protect(manuscript, "the manuscript")
            .protect(&dir.join(crate::cast::CAST_FILE), "the cast file")
            .protect(&dir.join(lectern_text::pronounce::PROJECT_FILE), "the pronunciation list")
            .protect(&crate::store::Project::dir_for_manuscript(manuscript), "the project folder")
    }

    /// Protects the configuration file, the voices and the demo model: every run reads them.
    #[must_use]
    pub fn protect_setup(self) -> Self {
        let mut guard = self;
        if let Some(config) = crate::assets::config_dir() {
            guard = guard.protect(&config.join("config.toml"), "the configuration file");
        }
        guard = guard.protect(&crate::voices::voices_dir(), "the voices folder");
        if let Some(demo) = crate::assets::demo_dir() {
            guard = guard.protect(&demo, "the demo model's folder");
        }
        guard
    }

    /// Checks a file output: `what` names it in messages ("the render's output"), `accepted`
    /// lists the extensions it may have (lower case, no dot), `hint` says what to do otherwise.
    pub fn file(
        &self,
        path: &Path,
        what: &'static str,
        accepted: &[&str],
        hint: &str,
    ) -> Result<(), OutputError> {
        let target = self.resolve(path)?;
        self.not_an_input(path, &target, what)?;
        check_extension(path, what, accepted, hint)?;
        let Ok(meta) = std::fs::metadata(path) else { return Ok(()) };
        if !meta.is_file() {
            return Err(OutputError::NotAFile {
                path: path.to_path_buf(),
                kind: lectern_text::limits::file_kind(&meta),
            });
        }
        if self.force || ledger::is_lecterns(path) {
            return Ok(());
        }
        Err(OutputError::Exists { path: path.to_path_buf() })
    }

    /// Checks a folder output (a set of files replaced as a whole): it is no input, holds none
    /// and lies in none; an existing folder is one Lectern wrote, an empty one, or `--force`.
    pub fn folder(&self, path: &Path, what: &'static str) -> Result<(), OutputError> {
        let target = self.resolve(path)?;
        self.not_an_input(path, &target, what)?;
        if let Some(input) = self.inputs.iter().find(|i| i.path.starts_with(&target)) {
            let input = format!("{} ({})", input.what, input.path.display());
            return Err(OutputError::Holds { path: path.to_path_buf(), what, input });
        }
        let Ok(meta) = std::fs::metadata(path) else { return Ok(()) };
        if !meta.is_dir() {
            return Err(OutputError::NotAFile {
                path: path.to_path_buf(),
                kind: lectern_text::limits::file_kind(&meta),
            });
        }
        if self.force || super::folder::is_lecterns(path) || is_empty_dir(path) {
            return Ok(());
        }
        Err(OutputError::Exists { path: path.to_path_buf() })
    }

    /// Checks only that `path` is none of the run's inputs nor inside one (before its format
    /// is known).
    pub fn not_input(&self, path: &Path, what: &'static str) -> Result<(), OutputError> {
        let target = self.resolve(path)?;
        self.not_an_input(path, &target, what)
    }

    /// The output's canonical path: its nearest existing folder resolved, the rest kept (an
    /// export creates the folders it is given).
    fn resolve(&self, path: &Path) -> Result<PathBuf, OutputError> {
        let absolute =
            std::path::absolute(path).map_err(|e| OutputError::Io(path.to_path_buf(), e))?;
        let mut existing = absolute.as_path();
        let mut rest = Vec::new();
        loop {
            if let Ok(canonical) = std::fs::canonicalize(existing) {
                return Ok(rest.iter().rev().fold(canonical, |p, name| p.join(name)));
            }
            match (existing.parent(), existing.file_name()) {
                (Some(parent), Some(name)) => {
                    rest.push(name.to_os_string());
                    existing = parent;
                }
                _ => return Err(OutputError::NoFolder(path.to_path_buf())),
            }
        }
    }

    fn not_an_input(
        &self,
        path: &Path,
        target: &Path,
        what: &'static str,
    ) -> Result<(), OutputError> {
        for input in &self.inputs {
            let named = || format!("{} ({})", input.what, input.path.display());
            let same = target == input.path || same_file(path, &input.path);
            if same {
                return Err(OutputError::IsInput {
                    path: path.to_path_buf(),
                    what,
                    input: named(),
                });
            }
            if input.folder && target.starts_with(&input.path) {
                return Err(OutputError::Inside {
                    path: path.to_path_buf(),
                    what,
                    folder: named(),
                });
            }
        }
        Ok(())
    }
}

fn check_extension(
    path: &Path,
    what: &'static str,
    accepted: &[&str],
    hint: &str,
) -> Result<(), OutputError> {
    let ext = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
    if ext.as_deref().is_some_and(|e| accepted.contains(&e)) {
        return Ok(());
    }
    let list: Vec<String> = accepted.iter().map(|e| format!(".{e}")).collect();
    Err(OutputError::Extension {
        path: path.to_path_buf(),
        what,
        accepted: format!("written as {}", list.join(" or ")),
        hint: hint.to_string(),
    })
}

/// Whether two paths name one file (a hard link, a symbolic link), by device and inode: no file
/// is opened (opening a FIFO would block).
fn same_file(a: &Path, b: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (std::fs::metadata(a), std::fs::metadata(b)) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        matches!((std::fs::canonicalize(a), std::fs::canonicalize(b)), (Ok(a), Ok(b)) if a == b)
    }
}

fn is_empty_dir(path: &Path) -> bool {
    std::fs::read_dir(path).is_ok_and(|mut d| d.next().is_none())
}
