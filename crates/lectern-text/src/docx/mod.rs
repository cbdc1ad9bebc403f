//! Word manuscripts (`.docx`, Office Open XML) as documents: the container (`zip`), its
//! relationships, `word/document.xml` and the parts it refers to (styles, footnotes, endnotes,
//! comments), and the core properties, read with `quick-xml`.
//!
//! Chapters follow the headings: paragraphs whose style is named `heading 1`…`heading 9`, or
//! that have an outline level (their own or their style's, through `w:basedOn`), are headings,
//! and the top level present opens chapters; deeper ones are sections ([`crate::DocMark`]s)
//! of their chapter. Text before the first heading is an untitled chapter. A `Title` paragraph
//! is read as a heading and names the book when the core properties do not. Headers and
//! footers are never opened; comments, tracked deletions and hidden text are never read
//! (each is recorded in [`Document::skipped`]); notes follow [`crate::NotesPolicy`]; tables are
//! read row by row ([`crate::table`]) unless the policy skips `table`. Errors name the file
//! and the entry inside it.

mod assemble;
mod package;
mod story;
mod styles;
mod xml;

use std::collections::HashMap;
use std::path::Path;

use crate::archive::{Archive as Container, ArchiveError, ArchiveKind};
use crate::{BookInfo, Document, ReadPolicy};
use package::{CoreProperties, Relationship};
use styles::Styles;

/// Why a manuscript could not be read ([`ArchiveError`], naming the file and the entry at
/// fault).
pub type DocxError = ArchiveError;

pub type Result<T> = std::result::Result<T, DocxError>;

/// Whether a path names a Word document (by its extension).
pub fn is_docx(path: &Path) -> bool {
    path.extension().and_then(|e| e.to_str()).is_some_and(|e| e.eq_ignore_ascii_case("docx"))
}

/// Where the main part is when the package has no relationships part.
const DEFAULT_MAIN: &str = "word/document.xml";

/// The container's own parts: its relationships.
impl Container {
    /// The relationships of `source` (`""`: the package's), empty when it has none.
    fn relationships(&mut self, source: &str) -> Result<Vec<Relationship>> {
        let rels =
            if source.is_empty() { "_rels/.rels".to_string() } else { package::rels_of(source) };
        if !self.has(&rels) {
            return Ok(Vec::new());
        }
        let xml = self.text(&rels, "a relationships part")?;
        package::relationships(&xml, source).map_err(|r| self.entry_error(&rels, r))
    }
}

/// The parts a manuscript is read from, by their entry names.
#[derive(Debug)]
struct Parts {
    main: String,
    styles: Option<String>,
    footnotes: Option<String>,
    endnotes: Option<String>,
    comments: Option<String>,
    core: Option<String>,
}

impl Parts {
    /// Follows the package's relationships to the main part, and the main part's to the rest.
    fn find(c: &mut Container) -> Result<Self> {
        let package = c.relationships("")?;
        let of = |rels: &[Relationship], kind: &str| {
            rels.iter().find(|r| r.kind == kind).map(|r| r.target.clone())
        };
        let main = of(&package, "officeDocument").unwrap_or_else(|| DEFAULT_MAIN.to_string());
        let core = of(&package, "core-properties")
            .or_else(|| Some("docProps/core.xml".to_string()))
            .filter(|e| c.has(e));
        let rels = c.relationships(&main)?;
        Ok(Self {
            styles: of(&rels, "styles"),
            footnotes: of(&rels, "footnotes"),
            endnotes: of(&rels, "endnotes"),
            comments: of(&rels, "comments"),
            main,
            core,
        })
    }
}

/// Reads a manuscript: its metadata and its chapters of headings and paragraphs, in reading
/// order, with what was left out.
pub fn read(path: &Path, policy: &ReadPolicy) -> Result<Document> {
    let mut c = Container::open(path, ArchiveKind::Docx)?;
    let parts = Parts::find(&mut c)?;
    let styles = match &parts.styles {
        Some(entry) => {
            let xml = c.text(entry, "the main part's relationships name it as the styles")?;
            Styles::parse(&xml).map_err(|r| c.entry_error(entry, r))?
        }
        None => Styles::default(),
    };
    let xml = c.text(&parts.main, "every Word document has its text there")?;
    let body = story::parse(&xml, &["body"], &styles).map_err(|r| c.entry_error(&parts.main, r))?;
    let notes = assemble::Notes {
        footnotes: texts(&mut c, parts.footnotes.as_deref(), "footnote", &styles)?,
        endnotes: texts(&mut c, parts.endnotes.as_deref(), "endnote", &styles)?,
        comments: texts(&mut c, parts.comments.as_deref(), "comment", &styles)?,
        footnotes_part: parts.footnotes.clone(),
        endnotes_part: parts.endnotes.clone(),
        comments_part: parts.comments.clone(),
        main_part: parts.main.clone(),
    };
    let core = match &parts.core {
        Some(entry) => {
            let xml = c.text(entry, "the package's core properties")?;
            CoreProperties::parse(&xml).map_err(|r| c.entry_error(entry, r))?
        }
        None => CoreProperties::default(),
    };
    let items = body.into_iter().flat_map(|s| s.items).collect();
    let (mut doc, title_paragraph) = assemble::document(items, &styles, &notes, policy);
    doc.info = BookInfo {
        title: core.title.or(title_paragraph),
        author: core.creator,
        language: core.language.or_else(|| styles.language.clone()),
        ..BookInfo::default()
    };
    Ok(doc)
}

/// The texts of a notes or comments part, by id. Note separators are left out: typed ones,
/// and Word's ids -1 and 0 (which are separators even untyped).
fn texts(
    c: &mut Container,
    entry: Option<&str>,
    element: &str,
    styles: &Styles,
) -> Result<HashMap<String, String>> {
    let Some(entry) = entry else { return Ok(HashMap::new()) };
    let xml = c.text(entry, "the main part's relationships name it")?;
    let stories = story::parse(&xml, &[element], styles).map_err(|r| c.entry_error(entry, r))?;
    Ok(stories
        .into_iter()
        .filter(|s| {
            !s.special && (element == "comment" || !matches!(s.id.as_deref(), Some("-1" | "0")))
        })
        .filter_map(|s| Some((s.id.clone()?, s.text())))
        .collect())
}
