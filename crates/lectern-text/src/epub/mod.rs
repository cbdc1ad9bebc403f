//! EPUB 2 and 3 books as manuscripts: the container (`zip`), the package document (metadata,
//! manifest, spine, guide), the navigation (EPUB 3 nav document, else the EPUB 2 NCX) and the
//! XHTML content documents (`xhtml`), read with `quick-xml`.
//!
//! Chapters follow the navigation: a table-of-contents entry opens a chapter at its file (or at
//! the element its `#fragment` names), and every following spine item without an entry of its
//! own continues that chapter, so a chapter split over several files is one chapter. Spine
//! items marked `linear="no"` (covers, notes) are not read. Front matter is what the guide or
//! the landmarks place before the body matter, or what an `epub:type` calls front matter.
//! Errors name the book and the entry inside it.

mod chapters;
pub mod overlay;
mod package;
mod pls;
mod semantics;
mod ssml;
mod xhtml;

use std::collections::{HashMap, HashSet};
use std::path::Path;

use crate::archive::{Archive as Container, ArchiveError, ArchiveKind};
use crate::{BookInfo, Cover, Document, NotesPolicy, ReadPolicy};
use chapters::Piece;
use package::{Nav, Package};
use xhtml::Notes;

/// Why a book could not be read ([`ArchiveError`], naming the book and the entry at fault).
pub type EpubError = ArchiveError;

pub type Result<T> = std::result::Result<T, EpubError>;

/// Whether a path names an EPUB (by its extension).
pub fn is_epub(path: &Path) -> bool {
    path.extension().and_then(|e| e.to_str()).is_some_and(|e| e.eq_ignore_ascii_case("epub"))
}

/// Reads a book under a reading policy: its metadata, its chapters of headings, paragraphs,
/// stanzas and table rows in reading order, their marks, and what was left out.
pub fn read(path: &Path, policy: &ReadPolicy) -> Result<Document> {
    let mut container = Container::open(path, ArchiveKind::Epub)?;
    let opf_path = rootfile(&mut container)?;
    let opf = container.text(&opf_path, "the package document named by META-INF/container.xml")?;
    let mut pkg =
        Package::parse(&opf, &opf_path).map_err(|r| container.entry_error(&opf_path, r))?;
    let nav = navigation(&mut container, &mut pkg)?;
    let mut warnings = Vec::new();
    let cover = match &pkg.cover_href {
        Some(href) => cover(&mut container, href, &pkg, &mut warnings)?,
        None => None,
    };
    // The book's pronunciation lexicons, and what of them and of its `ssml:ph` cannot be used.
    let (lexicon, mut lexicon_warnings) = pls::book_lexicon(&mut container, &pkg);
    let info = BookInfo {
        title: pkg.title.clone(),
        author: (!pkg.creators.is_empty()).then(|| pkg.creators.join(", ")),
        language: pkg.language.clone(),
        publisher: pkg.publisher.clone(),
        rights: pkg.rights.clone(),
        isbn: pkg.isbn.clone(),
        description: pkg.description.clone(),
        date: pkg.date.clone(),
        cover,
        ..BookInfo::default()
    };
    let notes = match policy.notes {
        NotesPolicy::Skip => Notes::new(),
        NotesPolicy::Inline | NotesPolicy::ChapterEnd => all_notes(&mut container, &pkg)?,
    };
    let pieces = pieces(&mut container, &pkg, &nav, policy, &notes, &mut lexicon_warnings)?;
    let roles = chapters::roles(&nav.toc, &pieces, policy.chapter_level);
    let mut doc = chapters::assemble(pieces, &nav.toc, &roles);
    doc.info = BookInfo { lexicon, lexicon_warnings, warnings, ..info };
    Ok(doc)
}

/// The book's cover: its bytes within the archive's limits (a bomb is an error, as anywhere in
/// the book), kept only when they are a JPEG or PNG of sane size; another image (an SVG, a GIF)
/// or a broken one is left out with a warning, and the book is read without a cover.
fn cover(
    container: &mut Container,
    href: &str,
    pkg: &Package,
    warnings: &mut Vec<String>,
) -> Result<Option<Cover>> {
    let bytes = container.bytes(href, "the cover image")?;
    if let Err(why) = container.limits().check_image(&bytes, &format!("the cover `{href}`")) {
        warnings.push(format!("{why}: the book is read without a cover"));
        return Ok(None);
    }
    let media_type = pkg.media_type_of(href).unwrap_or("image/jpeg").to_string();
    Ok(Some(Cover { media_type, bytes }))
}

/// The package document's path, from `META-INF/container.xml`.
fn rootfile(container: &mut Container) -> Result<String> {
    const ENTRY: &str = "META-INF/container.xml";
    let xml = container.text(ENTRY, "every EPUB names its package document there")?;
    package::rootfile(&xml).map_err(|r| container.entry_error(ENTRY, r))
}

/// The navigation: the EPUB 3 nav document's contents, landmarks and page list, else the NCX's
/// contents and page list; empty contents when the book has neither (each spine item is then a
/// chapter).
/// The nav document's landmarks go to the package.
fn navigation(container: &mut Container, pkg: &mut Package) -> Result<Nav> {
    let mut out = Nav::default();
    if let Some(nav) = pkg.nav_href.clone() {
        let xml = container.text(&nav, "the manifest lists it as the navigation document")?;
        out = package::nav(&xml, &nav).map_err(|r| container.entry_error(&nav, r))?;
        pkg.landmarks = std::mem::take(&mut out.landmarks);
    }
    if out.toc.is_empty() || out.page_targets.is_empty() {
        if let Some(ncx) = &pkg.ncx_href {
            let xml = container.text(ncx, "the spine names it as the NCX table of contents")?;
            let old = package::ncx(&xml, ncx).map_err(|r| container.entry_error(ncx, r))?;
            if out.toc.is_empty() {
                out.toc = old.toc;
            }
            if out.page_targets.is_empty() {
                out.page_targets = old.page_targets;
            }
        }
    }
    Ok(out)
}

/// Every note of the book by (file, id), from every content document of the manifest (notes
/// often sit in a non-linear one).
fn all_notes(container: &mut Container, pkg: &Package) -> Result<Notes> {
    let mut notes = Notes::new();
    let mut files: Vec<&str> = pkg
        .manifest
        .values()
        .filter(|i| i.media_type == "application/xhtml+xml")
        .map(|i| i.href.as_str())
        .collect();
    files.sort_unstable();
    for file in files {
        let xml = container.text(file, "the manifest lists it")?;
        let found = xhtml::collect_notes(&xml).map_err(|r| container.entry_error(file, r))?;
        for (id, text) in found {
            notes.insert((file.to_string(), id), text);
        }
    }
    Ok(notes)
}

/// The linear spine items read in order, cut where contents entries start.
fn pieces(
    container: &mut Container,
    pkg: &Package,
    nav: &Nav,
    policy: &ReadPolicy,
    notes: &Notes,
    warnings: &mut Vec<String>,
) -> Result<Vec<Piece>> {
    // Per file, the contents entries that start in it, by fragment ("" for the file's top).
    let mut opens: HashMap<&str, Vec<(&str, usize)>> = HashMap::new();
    let mut seen = HashSet::new();
    for (k, e) in nav.toc.iter().enumerate() {
        if seen.insert((e.file.as_str(), e.fragment.as_str())) {
            opens.entry(&e.file).or_default().push((&e.fragment, k));
        }
    }
    let file_kinds = pkg.file_kinds();
    let mut out = Vec::new();
    for item in pkg.spine.iter().filter(|i| i.linear) {
        let xml = container.text(&item.href, "the spine lists it")?;
        let here = opens.get(item.href.as_str()).cloned().unwrap_or_default();
        let ctx = xhtml::Context {
            policy,
            file: &item.href,
            starts: here.iter().map(|(f, _)| *f).filter(|f| !f.is_empty()).collect(),
            file_kinds: file_kinds.get(item.href.as_str()).cloned().unwrap_or_default(),
            page_targets: nav
                .page_targets
                .iter()
                .filter(|(f, _)| *f == item.href)
                .map(|(_, id)| id.as_str())
                .collect(),
            toc_targets: here.iter().map(|(f, _)| *f).collect(),
            notes,
            fixed_layout: pkg.fixed_layout,
        };
        let mut doc = xhtml::read(&xml, &ctx).map_err(|r| container.entry_error(&item.href, r))?;
        warnings.append(&mut doc.ssml_warnings);
        let front =
            file_kinds.get(item.href.as_str()).is_some_and(|k| !k.is_empty()) || doc.front_matter;
        let entry_at = |fragment: &str| here.iter().find(|(f, _)| *f == fragment).map(|(_, k)| *k);
        for (k, part) in doc.parts.into_iter().enumerate() {
            let entry = match &part.starts_at {
                Some(fragment) => entry_at(fragment),
                None if k == 0 => entry_at(""),
                None => None,
            };
            out.push(Piece {
                entry,
                file: item.href.clone(),
                file_title: doc.title.clone(),
                starts_file: k == 0,
                front,
                part,
            });
        }
    }
    Ok(out)
}

/// Resolves an href against the directory of the document it appears in: `%20` decoded,
/// `./` and `../` folded, the fragment split off.
fn resolve_href(base_doc: &str, href: &str) -> (String, String) {
    let (path, fragment) = href.split_once('#').unwrap_or((href, ""));
    let path = percent_encoding::percent_decode_str(path).decode_utf8_lossy();
    let mut parts: Vec<&str> = match base_doc.rfind('/') {
        Some(k) if !path.is_empty() => base_doc[..k].split('/').collect(),
        _ if path.is_empty() => return (base_doc.to_string(), fragment.to_string()),
        _ => Vec::new(),
    };
    for p in path.split('/') {
        match p {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    (parts.join("/"), fragment.to_string())
}

#[cfg(test)]
mod tests {
    use super::resolve_href;

    #[test]
    fn hrefs_resolve_against_their_document() {
        let r = |b, h| resolve_href(b, h);
        assert_eq!(
            r("OEBPS/content.opf", "text/ch%201.xhtml"),
            ("OEBPS/text/ch 1.xhtml".into(), "".into())
        );
        assert_eq!(
            r("OEBPS/text/nav.xhtml", "../text/c2.xhtml#s3"),
            ("OEBPS/text/c2.xhtml".into(), "s3".into())
        );
        assert_eq!(r("content.opf", "./c.xhtml"), ("c.xhtml".into(), "".into()));
        assert_eq!(r("OEBPS/c1.xhtml", "#note"), ("OEBPS/c1.xhtml".into(), "note".into()));
    }
}
