//! The ZIP container both document readers open (an EPUB, a Word document), and its errors:
//! each names the file and, where one is at fault, the entry inside it.

use std::path::{Path, PathBuf};

use crate::limits::{InputLimits, LimitError, read_at_most, require_regular};

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
    #[error(transparent)]
    Limit(#[from] LimitError),
}

/// An open container, read within [`InputLimits`].
pub(crate) struct Archive {
    kind: ArchiveKind,
    path: PathBuf,
    zip: zip::ZipArchive<std::fs::File>,
    limits: InputLimits,
    /// Bytes inflated so far, all entries together.
    inflated: u64,
}

impl Archive {
    pub(crate) fn open(path: &Path, kind: ArchiveKind) -> Result<Self, ArchiveError> {
        // A missing file is an I/O error as before; a FIFO or device is refused before it is
        // opened (opening a FIFO would block).
        std::fs::metadata(path)
            .map_err(|cause| ArchiveError::Io { path: path.to_path_buf(), cause })?;
        require_regular(path, &path.display().to_string())?;
        let file = std::fs::File::open(path)
            .map_err(|cause| ArchiveError::Io { path: path.to_path_buf(), cause })?;
        let zip = zip::ZipArchive::new(file).map_err(|e| ArchiveError::NotZip {
            kind,
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
        Ok(Self {
            kind,
            path: path.to_path_buf(),
            zip,
            limits: InputLimits::from_env(),
            inflated: 0,
        })
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
        let what = format!("{}: entry `{entry}`", path.display());
        let limits = self.limits;
        let stored = file.compressed_size().max(1);
        // The header's sizes refuse a bomb before any inflating; the read stops at the limit
        // whatever the header says, and the ratio is checked again on what was inflated.
        check_ratio(&what, file.size(), limits.ratio, stored)?;
        let left = limits.archive_bytes.saturating_sub(self.inflated);
        let (limit, variable) = if left < limits.entry_bytes {
            (left, "LECTERN_MAX_BOOK_MB")
        } else {
            (limits.entry_bytes, "LECTERN_MAX_ENTRY_MB")
        };
        let out = read_at_most(&mut file, limit, &what, variable)?;
        check_ratio(&what, out.len() as u64, limits.ratio, stored)?;
        self.inflated += out.len() as u64;
        Ok(out)
    }

    /// An entry as UTF-8 text (a BOM is skipped).
    pub(crate) fn text(&mut self, entry: &str, why: &str) -> Result<String, ArchiveError> {
        let bytes = self.bytes(entry, why)?;
        let text = String::from_utf8(bytes)
            .map_err(|e| self.entry_error(entry, format!("not UTF-8 text ({e})")))?;
        Ok(text.strip_prefix('\u{feff}').map(str::to_string).unwrap_or(text))
    }

    /// The limits this archive is read within (a cover's image checks).
    pub(crate) fn limits(&self) -> &InputLimits {
        &self.limits
    }

    pub(crate) fn entry_error(&self, entry: &str, reason: String) -> ArchiveError {
        ArchiveError::Entry { path: self.path.clone(), entry: entry.to_string(), reason }
    }
}

/// Refuses an entry that inflates more than `limit` times its `stored` size, once it is large
/// enough to matter.
fn check_ratio(what: &str, inflated: u64, limit: u64, stored: u64) -> Result<(), LimitError> {
    let ratio = inflated / stored;
    if inflated > InputLimits::RATIO_FLOOR && ratio > limit {
        return Err(LimitError::Ratio { what: what.to_string(), ratio, limit });
    }
    Ok(())
}
