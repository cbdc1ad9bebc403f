//! How a manuscript file is read: plain text and Markdown by the text frontend, EPUB through
//! [`lectern_text::epub`], Word documents through [`lectern_text::docx`]; and the reading options a project records, so `export book.epub` reads
//! the book as the render did.

use std::path::Path;

use anyhow::Context;

use lectern_text::{
    Cover, Frontend, Manuscript, ParseOptions, Pronunciations, ReadPolicy, Tokenizer,
    UnspokenPolicy,
};

/// Choices about what of a manuscript is read.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct ReadOptions {
    /// Leave out every front-matter section of a document, on top of `policy`. Projects
    /// recorded before the policy existed say `--skip-front-matter` here; the CLI now folds it
    /// into `policy` (so `--read` can take a kind back) and leaves this false.
    pub skip_front_matter: bool,
    /// How a paragraph's language is decided (per run, or upstream's one per paragraph).
    pub frontend: Frontend,
    /// What of a document (EPUB, DOCX) is read: skipped kinds, notes, the chapter level.
    pub policy: ReadPolicy,
    /// Text in a language CosyVoice3 does not speak: the book is refused (the default),
    /// such text is skipped, or read anyway (`--unspoken-languages`). Projects recorded
    /// before it existed read as `refuse`.
    pub unspoken_languages: UnspokenPolicy,
}

impl ReadOptions {
    /// The policy the document readers apply.
    #[must_use]
    pub fn effective_policy(&self) -> ReadPolicy {
        let policy = self.policy.clone();
        if self.skip_front_matter { policy.skipping_front_matter() } else { policy }
    }
}

/// Reads a manuscript to be voiced: [`load_for_listing`], refused where it holds text in a
/// language the model does not speak and `read` says to refuse such books (before any work
/// is done, naming the language, chapter and line).
pub fn load(path: &Path, tokenizer: &Tokenizer, read: &ReadOptions) -> anyhow::Result<Manuscript> {
    let book = load_for_listing(path, tokenizer, read)?;
    if read.unspoken_languages == UnspokenPolicy::Refuse {
        refuse_unspoken(path, &book)?;
    }
    Ok(book)
}

/// The refusal of a book with text the model does not speak: the first such stretch, and how
/// many more there are.
fn refuse_unspoken(path: &Path, book: &Manuscript) -> anyhow::Result<()> {
    let Some(first) = book.unspoken.first() else { return Ok(()) };
    let title = book.chapters.get(first.chapter).and_then(|c| c.title.as_deref());
    let chapter = match title {
        Some(t) => format!("chapter {} (\u{201c}{t}\u{201d})", first.chapter + 1),
        None => format!("chapter {}", first.chapter + 1),
    };
    let more = match book.unspoken.len() - 1 {
        0 => String::new(),
        n => format!(" and {n} more such stretch{}", if n == 1 { "" } else { "es" }),
    };
    anyhow::bail!(
        "{}: {chapter}, line {}: {} text, a language CosyVoice3 does not speak \
         (\u{201c}{}\u{201d}){more}; `--unspoken-languages skip` leaves such text out, \
         `--unspoken-languages read` sends it to the model anyway (`--dry-run` lists it)",
        path.display(),
        first.line,
        lectern_text::manuscript::language_name(&first.language),
        first.text
    )
}

/// Reads a manuscript: EPUB and DOCX by their extensions, else plain text or Markdown; text in
/// a language the model does not speak is listed in [`Manuscript::unspoken`] (and skipped
/// under `--unspoken-languages skip`).
pub fn load_for_listing(
    path: &Path,
    tokenizer: &Tokenizer,
    read: &ReadOptions,
) -> anyhow::Result<Manuscript> {
    // The project's pronunciations (`pronunciations.txt` beside the manuscript), so an entry
    // changes the text of exactly the segments that hold its word.
    let prons = Pronunciations::beside(path)?;
    // The cast's characters: their names start `NAME:` paragraphs and `[as:NAME]` spans.
    let characters = crate::cast::Cast::beside(path, "")?.character_names();
    let opts = ParseOptions::default()
        .with_characters(characters)
        .with_tokenizer(tokenizer)
        .with_frontend(read.frontend)
        .with_unspoken(read.unspoken_languages)
        .with_pronunciations(prons);
    let book = if lectern_text::epub::is_epub(path) {
        let doc = lectern_text::epub::read(path, &read.effective_policy())?;
        Manuscript::from_document(&doc, path, &opts)
    } else if lectern_text::docx::is_docx(path) {
        let doc = lectern_text::docx::read(path, &read.effective_policy())?;
        Manuscript::from_document(&doc, path, &opts)
    } else {
        Manuscript::load(path, &opts)
    };
    let mut book = book.with_context(|| format!("reading {}", path.display()))?;
    if let Some(cover) = book.info.cover_path.take() {
        book.info.cover = Some(front_matter_cover(path, &cover)?);
    }
    Ok(book)
}

/// The cover a Markdown front matter names (`cover: art/cover.jpg`, relative to the
/// manuscript): a JPEG or PNG file, checked by its first bytes.
fn front_matter_cover(manuscript: &Path, cover: &str) -> anyhow::Result<Cover> {
    let path = manuscript.parent().unwrap_or(Path::new(".")).join(cover);
    let limits = lectern_text::InputLimits::from_env();
    let context = || format!("{}: front matter `cover: {cover}`", manuscript.display());
    let bytes = limits.read_image(&path).with_context(context)?;
    limits.check_image(&bytes, &path.display().to_string()).with_context(context)?;
    let media_type = image_type(&bytes).unwrap_or("image/jpeg");
    Ok(Cover { media_type: media_type.to_string(), bytes })
}

/// `image/jpeg` or `image/png` by the file's signature; None for anything else.
#[must_use]
pub fn image_type(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else {
        None
    }
}
