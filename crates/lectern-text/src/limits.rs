//! How much a manuscript may make Lectern read, so that no file — a 1 MB EPUB whose entry
//! inflates to gigabytes, `/dev/zero` given as a manuscript, a FIFO — can exhaust the machine or
//! block it.
//!
//! Every read of a document goes through these bounds: a plain-text or Markdown manuscript must
//! be a regular file of at most [`InputLimits::manuscript_bytes`]; an archive's (EPUB, DOCX)
//! entries are read with [`InputLimits::entry_bytes`] each and [`InputLimits::archive_bytes`] in
//! all, and an entry that inflates more than [`InputLimits::ratio`] times its stored size is
//! refused (text compresses a few times; a bomb, hundreds or thousands); an image (a cover) is at
//! most [`InputLimits::image_bytes`] and must be a JPEG or PNG whose header gives a size of at
//! most [`InputLimits::image_side`] pixels a side. The sizes a ZIP header declares are not
//! trusted: reads stop at the limit whatever the header says.
//!
//! The defaults are far above any real book (the longest novels are a few MB of text) and are
//! overridden, for an unusual one, by environment variables, in MiB:
//! `LECTERN_MAX_MANUSCRIPT_MB`, `LECTERN_MAX_ENTRY_MB`, `LECTERN_MAX_BOOK_MB`,
//! `LECTERN_MAX_IMAGE_MB`, and the ratio by `LECTERN_MAX_RATIO`.

use std::io::Read;
use std::path::Path;

const MIB: u64 = 1 << 20;

/// The bounds on what a document may make Lectern read (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InputLimits {
    /// Most bytes of a plain-text or Markdown manuscript.
    pub manuscript_bytes: u64,
    /// Most bytes of one archive entry, inflated.
    pub entry_bytes: u64,
    /// Most bytes read from one archive, inflated, all entries together.
    pub archive_bytes: u64,
    /// Most an entry of more than [`Self::RATIO_FLOOR`] bytes may inflate, as a multiple of its
    /// stored size.
    pub ratio: u64,
    /// Most bytes of an image (a cover).
    pub image_bytes: u64,
    /// Most pixels on an image's longer side.
    pub image_side: u64,
}

impl Default for InputLimits {
    fn default() -> Self {
        Self {
            manuscript_bytes: 64 * MIB,
            entry_bytes: 64 * MIB,
            archive_bytes: 512 * MIB,
            ratio: 100,
            image_bytes: 32 * MIB,
            image_side: 12_000,
        }
    }
}

/// Why an input was refused.
#[derive(Debug, thiserror::Error)]
pub enum LimitError {
    #[error("{what} is not a regular file ({kind})")]
    NotRegular { what: String, kind: &'static str },
    #[error(
        "{what} is larger than {limit_mb} MiB, more than any book; if it really is one, raise \
         the limit with {variable}=MB"
    )]
    TooLarge { what: String, limit_mb: u64, variable: &'static str },
    #[error(
        "{what} inflates {ratio} times its stored size (at most {limit} is accepted: a \
         compression bomb, not a book); if it really is one, raise the limit with \
         LECTERN_MAX_RATIO={ratio}"
    )]
    Ratio { what: String, ratio: u64, limit: u64 },
    #[error("{what} is not a JPEG or PNG image")]
    NotImage { what: String },
    #[error("{what} is {width}×{height} pixels; at most {limit} a side is accepted")]
    ImageSize { what: String, width: usize, height: usize, limit: u64 },
    #[error("cannot read {what}: {cause}")]
    Io { what: String, cause: std::io::Error },
}

impl InputLimits {
    /// Entries smaller than this are never refused for their ratio: a small, highly repetitive
    /// file (a style sheet, an empty page) can compress very well and costs nothing.
    pub const RATIO_FLOOR: u64 = MIB;

    /// The defaults, with the environment's overrides (see the module docs).
    #[must_use]
    pub fn from_env() -> Self {
        let d = Self::default();
        let mb = |var: &str, default: u64| env_number(var).map_or(default, |n| n * MIB);
        Self {
            manuscript_bytes: mb("LECTERN_MAX_MANUSCRIPT_MB", d.manuscript_bytes),
            entry_bytes: mb("LECTERN_MAX_ENTRY_MB", d.entry_bytes),
            archive_bytes: mb("LECTERN_MAX_BOOK_MB", d.archive_bytes),
            ratio: env_number("LECTERN_MAX_RATIO").unwrap_or(d.ratio),
            image_bytes: mb("LECTERN_MAX_IMAGE_MB", d.image_bytes),
            image_side: d.image_side,
        }
    }

    /// A manuscript file's bytes: refused unless it is a regular file of at most
    /// [`Self::manuscript_bytes`].
    pub fn read_manuscript(&self, path: &Path) -> Result<Vec<u8>, LimitError> {
        let what = path.display().to_string();
        require_regular(path, &what)?;
        let file = std::fs::File::open(path)
            .map_err(|cause| LimitError::Io { what: what.clone(), cause })?;
        read_at_most(file, self.manuscript_bytes, &what, "LECTERN_MAX_MANUSCRIPT_MB")
    }

    /// An image file's bytes: a regular file of at most [`Self::image_bytes`] (its type and
    /// size are [`Self::check_image`]'s).
    pub fn read_image(&self, path: &Path) -> Result<Vec<u8>, LimitError> {
        let what = path.display().to_string();
        require_regular(path, &what)?;
        let file = std::fs::File::open(path)
            .map_err(|cause| LimitError::Io { what: what.clone(), cause })?;
        read_at_most(file, self.image_bytes, &what, "LECTERN_MAX_IMAGE_MB")
    }

    /// Checks an image's bytes: a JPEG or PNG whose header names a sane size.
    pub fn check_image(&self, bytes: &[u8], what: &str) -> Result<(), LimitError> {
        if bytes.len() as u64 > self.image_bytes {
            return Err(LimitError::TooLarge {
                what: what.to_string(),
                limit_mb: self.image_bytes / MIB,
                variable: "LECTERN_MAX_IMAGE_MB",
            });
        }
        let not_image = || LimitError::NotImage { what: what.to_string() };
        match imagesize::image_type(bytes) {
            Ok(imagesize::ImageType::Jpeg | imagesize::ImageType::Png) => {}
            _ => return Err(not_image()),
        }
        let size = imagesize::blob_size(bytes).map_err(|_| not_image())?;
        let longer = size.width.max(size.height) as u64;
        if size.width == 0 || size.height == 0 || longer > self.image_side {
            return Err(LimitError::ImageSize {
                what: what.to_string(),
                width: size.width,
                height: size.height,
                limit: self.image_side,
            });
        }
        Ok(())
    }
}

/// Refuses anything but a regular file (a FIFO would block, a device never end).
pub(crate) fn require_regular(path: &Path, what: &str) -> Result<(), LimitError> {
    let meta = std::fs::metadata(path)
        .map_err(|cause| LimitError::Io { what: what.to_string(), cause })?;
    if meta.is_file() {
        return Ok(());
    }
    Err(LimitError::NotRegular { what: what.to_string(), kind: file_kind(&meta) })
}

/// What a path is, for messages that refuse it: "a FIFO", "a device", "a folder", "a file", ….
#[must_use]
pub fn file_kind(meta: &std::fs::Metadata) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let t = meta.file_type();
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_char_device() || t.is_block_device() {
            return "a device";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    if meta.is_dir() {
        "a folder"
    } else if meta.is_file() {
        "a file"
    } else {
        "not a plain file"
    }
}

/// Reads at most `limit` bytes; more is an error, whatever a header claimed.
pub(crate) fn read_at_most(
    source: impl Read,
    limit: u64,
    what: &str,
    variable: &'static str,
) -> Result<Vec<u8>, LimitError> {
    let mut out = Vec::new();
    source
        .take(limit.saturating_add(1))
        .read_to_end(&mut out)
        .map_err(|cause| LimitError::Io { what: what.to_string(), cause })?;
    if out.len() as u64 > limit {
        return Err(LimitError::TooLarge {
            what: what.to_string(),
            limit_mb: limit / MIB,
            variable,
        });
    }
    Ok(out)
}

fn env_number(var: &str) -> Option<u64> {
    std::env::var(var).ok()?.trim().parse().ok().filter(|&n| n > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_stops_at_the_limit() {
        let zeros = std::io::repeat(0).take(10 * MIB);
        let err = read_at_most(zeros, MIB, "x", "V").unwrap_err();
        assert!(matches!(err, LimitError::TooLarge { limit_mb: 1, .. }), "{err}");
        assert_eq!(read_at_most(&b"abc"[..], 3, "x", "V").unwrap(), b"abc");
    }

    #[test]
    fn only_regular_files_are_manuscripts() {
        let dir = tempfile::tempdir().unwrap();
        let err = InputLimits::default().read_manuscript(dir.path()).unwrap_err();
        assert!(err.to_string().contains("(a folder)"), "{err}");
        #[cfg(unix)]
        {
            let err = InputLimits::default().read_manuscript(Path::new("/dev/zero")).unwrap_err();
            assert!(err.to_string().contains("a device"), "{err}");
        }
    }

    #[test]
    fn an_image_must_be_a_jpeg_or_png_of_sane_size() {
        let limits = InputLimits::default();
        let err = limits.check_image(&[0u8; 4096], "cover").unwrap_err();
        assert!(matches!(err, LimitError::NotImage { .. }), "{err}");
        assert!(limits.check_image(&png_header(640, 480), "cover").is_ok());
        let err = limits.check_image(&png_header(100_000, 10), "cover").unwrap_err();
        assert!(matches!(err, LimitError::ImageSize { width: 100_000, .. }), "{err}");
    }

    /// A PNG signature and IHDR chunk: enough for a header's size.
    fn png_header(width: u32, height: u32) -> Vec<u8> {
        let mut b = b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR".to_vec();
        b.extend(width.to_be_bytes());
        b.extend(height.to_be_bytes());
        b.extend([8, 6, 0, 0, 0, 0, 0, 0, 0]);
        b
    }
}
