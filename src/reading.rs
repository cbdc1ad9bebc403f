//! How a manuscript file is read: plain text and Markdown by the text frontend, EPUB through
//! [`crate::epub`]; and the reading options a project records, so `export book.epub` reads
//! the book as the render did.

use std::path::Path;

use anyhow::Context;

use lectern_text::{Frontend, Manuscript, ParseOptions, Pronunciations, Tokenizer};

/// Choices about what of a manuscript is read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct ReadOptions {
    /// Leave out an EPUB's front matter (cover, title page, copyright, contents, dedication).
    pub skip_front_matter: bool,
    /// How a paragraph's language is decided (per run, or upstream's one per paragraph).
    pub frontend: Frontend,
}

/// Reads a manuscript: EPUB by its `.epub` extension, else plain text or Markdown.
pub fn load(path: &Path, tokenizer: &Tokenizer, read: &ReadOptions) -> anyhow::Result<Manuscript> {
    // The project's pronunciations (`pronunciations.txt` beside the manuscript), so an entry
    // changes the text of exactly the segments that hold its word.
    let prons = Pronunciations::beside(path)?;
    let opts = ParseOptions::default()
        .with_tokenizer(tokenizer)
        .with_frontend(read.frontend)
        .with_pronunciations(prons);
    let book = if crate::epub::is_epub(path) {
        let doc = crate::epub::read(path)?;
        Manuscript::from_document(&doc, path, read.skip_front_matter, &opts)
    } else {
        Manuscript::load(path, &opts)
    };
    book.with_context(|| format!("reading {}", path.display()))
}
