//! `lectern export --format srt|vtt|epub` and `--captions srt|vtt`: the delivery, then its
//! captions (one SRT or WebVTT file beside each delivered file) or the book's read-along EPUB
//! (`NAME.epub` beside the chapters' MP3s).

use std::path::{Path, PathBuf};

use anyhow::Result;

use super::{CaptionsArg, ExportFormatArg};
use crate::deliver::captions::{self, CaptionFormat, PrintedTexts};
use crate::deliver::{DeliveredFile, DeliveryOptions, read_along};
use crate::store::Project;

/// What a delivery writes besides its audio.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct Companions {
    /// A caption file beside each delivered file.
    pub captions: Option<CaptionFormat>,
    /// The book's read-along EPUB.
    pub epub: bool,
}

impl Companions {
    /// The companions `--format` and `--captions` ask for; both naming captions, in two
    /// formats, is an error.
    pub(super) fn of(
        format: Option<ExportFormatArg>,
        captions: Option<CaptionsArg>,
    ) -> Result<Self> {
        let asked = captions.map(|c| match c {
            CaptionsArg::Srt => CaptionFormat::Srt,
            CaptionsArg::Vtt => CaptionFormat::Vtt,
        });
        let by_format = match format {
            Some(ExportFormatArg::Srt) => Some(CaptionFormat::Srt),
            Some(ExportFormatArg::Vtt) => Some(CaptionFormat::Vtt),
            _ => None,
        };
        if let (Some(a), Some(b)) = (asked, by_format) {
            anyhow::ensure!(
                a == b,
                "--format {} and --captions {}: one caption format per delivery",
                b.extension(),
                a.extension()
            );
        }
        Ok(Self { captions: asked.or(by_format), epub: format == Some(ExportFormatArg::Epub) })
    }

    /// Refuses a read-along EPUB of a book that is no EPUB, before anything is rendered or
    /// written.
    pub(super) fn check(self, book: &Path) -> Result<()> {
        if !self.epub {
            return Ok(());
        }
        match manuscript_of(book) {
            Some(m) if read_along::is_epub(&m) => Ok(()),
            Some(m) => anyhow::bail!(
                "--format epub makes a read-along edition of an EPUB book, and {} is not one: \
                 `--format srt` or `--format vtt` write captions of any book",
                m.display()
            ),
            None => anyhow::bail!(
                "--format epub needs the EPUB the project was read from: give the book \
                 (`lectern export BOOK.epub --format epub`), or put it beside {}",
                book.display()
            ),
        }
    }
}

/// Writes the companions of the delivered `files` (in the staged folder), returning the files
/// written.
pub(super) fn write(
    companions: Companions,
    book: &Path,
    project: &Project,
    opts: &DeliveryOptions,
    files: &[DeliveredFile],
    stem: &str,
) -> Result<Vec<PathBuf>> {
    if companions == Companions::default() {
        return Ok(Vec::new());
    }
    // Captions print the book's words where the manuscript is at hand.
    let manuscript = manuscript_of(book);
    let printed = match &manuscript {
        Some(m) => match read_along::printed_texts(project, m) {
            Ok(texts) => texts,
            // The read-along EPUB needs the book's own words; captions can do without them.
            Err(e) if !companions.epub => {
                eprintln!("warning: captions print the store's text: {e}");
                PrintedTexts::new()
            }
            Err(e) => return Err(e.into()),
        },
        None => PrintedTexts::new(),
    };
    let rate = opts.targets.rate_hz;
    let mut written = Vec::new();
    if let Some(format) = companions.captions {
        let disclosure = &opts.meta.disclosure;
        written.extend(captions::write_beside(files, format, rate, &printed, disclosure)?);
    }
    if let Some(source) = manuscript.filter(|_| companions.epub) {
        let out = opts.out_dir.join(format!("{stem}.epub"));
        let report = read_along::write_epub(&source, &out, files, rate, &printed, &opts.meta)?;
        if !report.unanchored.is_empty() {
            eprintln!(
                "warning: {} of {} segment(s) were not found in the book's text: they play \
                 without highlighting",
                report.unanchored.len(),
                report.unanchored.len() + report.anchors.len()
            );
        }
        written.push(out);
    }
    Ok(written)
}

/// The manuscript of `book` (the manuscript itself, or the one beside a project folder).
fn manuscript_of(book: &Path) -> Option<PathBuf> {
    if book.is_file() {
        return Some(book.to_path_buf());
    }
    ["epub", "md", "markdown", "txt", "docx"]
        .iter()
        .map(|ext| book.with_extension(ext))
        .find(|p| p.is_file())
}
