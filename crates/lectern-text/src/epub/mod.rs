//! EPUB 2 and 3 books as manuscripts: the container (`zip`), the package document (metadata,
//! manifest, spine, guide), the navigation (EPUB 3 nav document, else the EPUB 2 NCX) and the
//! XHTML content documents ([`xhtml`]), read with `quick-xml`.
//!
//! Chapters follow the navigation: a table-of-contents entry opens a chapter at its file (or at
//! the element its `#fragment` names), and every following spine item without an entry of its
//! own continues that chapter, so a chapter split over several files is one chapter. Spine
//! items marked `linear="no"` (covers, notes) are not read. Front matter is what the guide or
//! the landmarks place before the body matter, or what an `epub:type` calls front matter.
//! Errors name the book and the entry inside it.

mod package;
mod xhtml;

use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::{BookInfo, Cover, DocChapter, Document, ReadPolicy};
use package::{Package, TocEntry};

/// Why a book could not be read; every variant names the book and, where one is at fault,
/// the entry inside it.
#[derive(Debug, thiserror::Error)]
pub enum EpubError {
    #[error("cannot read {path}: {cause}")]
    Io { path: PathBuf, cause: std::io::Error },
    #[error("{path}: not an EPUB (not a ZIP container: {reason})")]
    NotZip { path: PathBuf, reason: String },
    #[error("{path}: the EPUB has no entry `{entry}` ({why})")]
    Missing { path: PathBuf, entry: String, why: String },
    #[error("{path}: entry `{entry}`: {reason}")]
    Entry { path: PathBuf, entry: String, reason: String },
}

pub type Result<T> = std::result::Result<T, EpubError>;

/// Whether a path names an EPUB (by its extension).
pub fn is_epub(path: &Path) -> bool {
    path.extension().and_then(|e| e.to_str()).is_some_and(|e| e.eq_ignore_ascii_case("epub"))
}

/// An open EPUB container.
struct Container {
    path: PathBuf,
    zip: zip::ZipArchive<std::fs::File>,
}

impl Container {
    fn open(path: &Path) -> Result<Self> {
        let file = std::fs::File::open(path)
            .map_err(|cause| EpubError::Io { path: path.to_path_buf(), cause })?;
        let zip = zip::ZipArchive::new(file)
            .map_err(|e| EpubError::NotZip { path: path.to_path_buf(), reason: e.to_string() })?;
        Ok(Self { path: path.to_path_buf(), zip })
    }

    /// An entry's bytes; `why` says what it was needed for, for the error when it is absent.
    fn bytes(&mut self, entry: &str, why: &str) -> Result<Vec<u8>> {
        let path = &self.path;
        let entry_error =
            |reason: String| EpubError::Entry { path: path.clone(), entry: entry.into(), reason };
        let mut file = self.zip.by_name(entry).map_err(|e| match e {
            zip::result::ZipError::FileNotFound => EpubError::Missing {
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
    fn text(&mut self, entry: &str, why: &str) -> Result<String> {
        let bytes = self.bytes(entry, why)?;
        let text = String::from_utf8(bytes)
            .map_err(|e| self.entry_error(entry, format!("not UTF-8 text ({e})")))?;
        Ok(text.strip_prefix('\u{feff}').map(str::to_string).unwrap_or(text))
    }

    fn entry_error(&self, entry: &str, reason: String) -> EpubError {
        EpubError::Entry { path: self.path.clone(), entry: entry.to_string(), reason }
    }
}

/// Reads a book: its metadata and its chapters of headings and paragraphs, in reading order.
pub fn read(path: &Path, _policy: &ReadPolicy) -> Result<Document> {
    let mut container = Container::open(path)?;
    let opf_path = rootfile(&mut container)?;
    let opf = container.text(&opf_path, "the package document named by META-INF/container.xml")?;
    let mut pkg =
        Package::parse(&opf, &opf_path).map_err(|r| container.entry_error(&opf_path, r))?;
    let toc = table_of_contents(&mut container, &mut pkg)?;
    let cover = match &pkg.cover_href {
        Some(href) => {
            let media_type = pkg.media_type_of(href).unwrap_or("image/jpeg").to_string();
            Some(Cover { media_type, bytes: container.bytes(href, "the cover image")? })
        }
        None => None,
    };
    let info = BookInfo {
        title: pkg.title.clone(),
        author: (!pkg.creators.is_empty()).then(|| pkg.creators.join(", ")),
        language: pkg.language.clone(),
        cover,
        ..BookInfo::default()
    };
    let chapters = chapters(&mut container, &pkg, &toc)?;
    Ok(Document { info, chapters, ..Document::default() })
}

/// The package document's path, from `META-INF/container.xml`.
fn rootfile(container: &mut Container) -> Result<String> {
    const ENTRY: &str = "META-INF/container.xml";
    let xml = container.text(ENTRY, "every EPUB names its package document there")?;
    package::rootfile(&xml).map_err(|r| container.entry_error(ENTRY, r))
}

/// The table of contents: the EPUB 3 nav document's `toc` nav, else the NCX; empty when the
/// book has neither (each spine item is then a chapter). The nav document's landmarks go to
/// the package.
fn table_of_contents(container: &mut Container, pkg: &mut Package) -> Result<Vec<TocEntry>> {
    if let Some(nav) = pkg.nav_href.clone() {
        let xml = container.text(&nav, "the manifest lists it as the navigation document")?;
        let (entries, landmarks) =
            package::nav(&xml, &nav).map_err(|r| container.entry_error(&nav, r))?;
        pkg.landmarks = landmarks;
        if !entries.is_empty() {
            return Ok(entries);
        }
    }
    if let Some(ncx) = &pkg.ncx_href {
        let xml = container.text(ncx, "the spine names it as the NCX table of contents")?;
        return package::ncx_toc(&xml, ncx).map_err(|r| container.entry_error(ncx, r));
    }
    Ok(Vec::new())
}

/// The book's chapters: spine items in order (linear ones only), cut where the table of
/// contents opens a chapter.
fn chapters(container: &mut Container, pkg: &Package, toc: &[TocEntry]) -> Result<Vec<DocChapter>> {
    // Per file, the chapters the contents open in it: (fragment or "" for the file's top, title).
    let mut opens: HashMap<&str, Vec<(&str, &str)>> = HashMap::new();
    let mut seen = HashSet::new();
    for e in toc {
        if seen.insert((e.file.as_str(), e.fragment.as_str())) {
            opens.entry(&e.file).or_default().push((&e.fragment, &e.title));
        }
    }
    let front = pkg.front_matter_files();
    let mut out: Vec<DocChapter> = Vec::new();
    for item in pkg.spine.iter().filter(|i| i.linear) {
        let xml = container.text(&item.href, "the spine lists it")?;
        let here = opens.get(item.href.as_str()).cloned().unwrap_or_default();
        let starts: HashSet<&str> =
            here.iter().map(|(f, _)| *f).filter(|f| !f.is_empty()).collect();
        let doc = xhtml::read(&xml, &starts).map_err(|r| container.entry_error(&item.href, r))?;
        let is_front = front.contains(item.href.as_str()) || doc.front_matter;
        let title_of =
            |fragment: &str| here.iter().find(|(f, _)| *f == fragment).map(|(_, t)| t.to_string());
        for (k, part) in doc.parts.into_iter().enumerate() {
            // The file's first part opens a chapter when the contents point at the file itself,
            // when no contents exist (each file is then a chapter), or when nothing came before.
            let opens_here = match &part.starts_at {
                Some(fragment) => title_of(fragment).map(Some),
                None if k == 0 => {
                    if let Some(t) = title_of("") {
                        Some(Some(t))
                    } else if toc.is_empty() || out.is_empty() {
                        Some(doc.title.clone())
                    } else {
                        None
                    }
                }
                None => None,
            };
            match opens_here {
                Some(title) => out.push(DocChapter {
                    title: title.filter(|t| !t.is_empty()),
                    front_matter: is_front,
                    blocks: part.blocks,
                    ..DocChapter::default()
                }),
                None => {
                    let last = out.last_mut().expect("a chapter is open after the first part");
                    last.blocks.extend(part.blocks);
                }
            }
        }
    }
    out.retain(|c| !c.blocks.is_empty());
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
