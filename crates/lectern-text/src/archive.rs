//! The ZIP container both document readers open (an EPUB, a Word document), and its errors:
//! each names the file and, where one is at fault, the entry inside it.

use std::io::Read;
use std::path::{Path, PathBuf};

/// Which kind of document a container holds, for its messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArchiveKind {
    Epub,
    Docx,
}

impl ArchiveKind {
    /// Its name with the article messages need ("an EPUB").
    fn a(self) -> &'static str {
        match self {
            Self::Epub => "an EPUB",
            Self::Docx => "a Word document",
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Epub => "EPUB",
            Self::Docx => "Word document",
        }
    }
}

/// Why a document could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    #[error("cannot read {path}: {cause}")]
    Io { path: PathBuf, cause: std::io::Error },
    #[error("{path}: not {} (not a ZIP container: {reason})", kind.a())]
    NotZip { kind: ArchiveKind, path: PathBuf, reason: String },
    #[error("{path}: the {} has no entry `{entry}` ({why})", kind.name())]
    Missing { kind: ArchiveKind, path: PathBuf, entry: String, why: String },
    #[error("{path}: entry `{entry}`: {reason}")]
    Entry { path: PathBuf, entry: String, reason: String },
}

/// An open container.
pub(crate) struct Archive {
    kind: ArchiveKind,
    path: PathBuf,
    zip: zip::ZipArchive<std::fs::File>,
}

impl Archive {
    pub(crate) fn open(path: &Path, kind: ArchiveKind) -> Result<Self, ArchiveError> {
        let file = std::fs::File::open(path)
            .map_err(|cause| ArchiveError::Io { path: path.to_path_buf(), cause })?;
        let zip = zip::ZipArchive::new(file).map_err(|e| ArchiveError::NotZip {
            kind,
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
        Ok(Self { kind, path: path.to_path_buf(), zip })
    }

    pub(crate) fn has(&self, entry: &str) -> bool {
        self.zip.index_for_name(entry).is_some()
    }

    /// An entry's bytes; `why` says what it was needed for, for the error when it is absent.
    pub(crate) fn bytes(&mut self, entry: &str, why: &str) -> Result<Vec<u8>, ArchiveError> {
        let (kind, path) = (self.kind, &self.path);
        let entry_error = |reason: String| ArchiveError::Entry {
            path: path.clone(),
            entry: entry.into(),
            reason,
        };
        let mut file = self.zip.by_name(entry).map_err(|e| match e {
            zip::result::ZipError::FileNotFound => ArchiveError::Missing {
                kind,
                path: path.clone(),
                entry: entry.to_string(),
                why: why.to_string(),
            },
            other => entry_error(other.to_string()),
        })?;
        let mut out = Vec::with_capacity(file.size().min(1 << 26) as usize);
        file.read_to_end(&mut out).map_err(|e| entry_error(e.to_string()))?;
        Ok(out)
    }

    /// An entry as UTF-8 text (a BOM is skipped).
    pub(crate) fn text(&mut self, entry: &str, why: &str) -> Result<String, ArchiveError> {
        let bytes = self.bytes(entry, why)?;
        let text = String::from_utf8(bytes)
            .map_err(|e| self.entry_error(entry, format!("not UTF-8 text ({e})")))?;
        Ok(text.strip_prefix('\u{feff}').map(str::to_string).unwrap_or(text))
    }

    pub(crate) fn entry_error(&self, entry: &str, reason: String) -> ArchiveError {
        ArchiveError::Entry { path: self.path.clone(), entry: entry.to_string(), reason }
    }
}
