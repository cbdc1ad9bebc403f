//! The package document (`content.opf`), `META-INF/container.xml`, the EPUB 3 navigation
//! document and the EPUB 2 NCX. Errors are reasons; the caller names the entry.

use std::collections::HashMap;

use quick_xml::Reader;
use quick_xml::events::{BytesRef, BytesStart, Event};

use super::resolve_href;

/// A failure inside one XML entry, as a reason with the byte offset.
pub(super) fn xml_error(reader: &Reader<&[u8]>, e: &quick_xml::Error) -> String {
    format!("malformed XML at byte {}: {e}", reader.error_position())
}

/// An attribute's value (entities resolved, HTML's named ones included), by qualified name.
pub(super) fn attr(e: &BytesStart<'_>, name: &str) -> Option<String> {
    let a = e.try_get_attribute(name).ok().flatten()?;
    a.normalized_value(quick_xml::XmlVersion::Implicit1_0).ok().map(|v| v.into_owned())
}

/// The tokens of a space-separated attribute (`epub:type`, `properties`).
pub(super) fn attr_tokens(e: &BytesStart<'_>, name: &str) -> Vec<String> {
    attr(e, name).map(|v| v.split_whitespace().map(str::to_string).collect()).unwrap_or_default()
}

/// The element's local name (`dc:title` → `title`).
pub(super) fn local(e: &BytesStart<'_>) -> String {
    e.local_name().as_ref().to_string()
}

/// The text an entity or character reference stands for.
pub(super) fn resolve_ref(r: &BytesRef<'_>) -> Result<String, String> {
    if let Some(c) = r.resolve_char_ref().map_err(|e| format!("bad character reference: {e}"))? {
        return Ok(c.to_string());
    }
    quick_xml::escape::resolve_predefined_entity(r)
        .map(str::to_string)
        .ok_or_else(|| format!("unknown entity `&{};`", &**r))
}

/// A reader over an entry's text that checks end tags.
pub(super) fn reader(xml: &str) -> Reader<&[u8]> {
    Reader::from_reader(xml.as_bytes())
}

/// `META-INF/container.xml` → the first rootfile's path.
pub(super) fn rootfile(xml: &str) -> Result<String, String> {
    let mut r = reader(xml);
    loop {
        match r.read_event() {
            Ok(Event::Start(e) | Event::Empty(e)) if local(&e) == "rootfile" => {
                if let Some(p) = attr(&e, "full-path") {
                    return Ok(p);
                }
            }
            Ok(Event::Eof) => return Err("no <rootfile full-path=…> names the package".into()),
            Err(e) => return Err(xml_error(&r, &e)),
            _ => {}
        }
    }
}

#[derive(Debug, Clone)]
pub(super) struct ManifestItem {
    pub href: String,
    pub media_type: String,
    pub properties: Vec<String>,
}

#[derive(Debug, Clone)]
pub(super) struct SpineItem {
    pub href: String,
    pub linear: bool,
}

/// A table-of-contents entry: the file and fragment it points at, its title, its depth (1: the
/// top level) and whether it sits in a list the nav hides (`hidden`: not meant for readers'
/// navigation, so never a chapter).
#[derive(Debug, Clone)]
pub(super) struct TocEntry {
    pub file: String,
    pub fragment: String,
    pub title: String,
    pub depth: usize,
    pub hidden: bool,
    /// The entry it is nested in (an item without a link of its own, such as an author's name
    /// over their stories, is no parent).
    pub parent: Option<usize>,
}

/// The navigation document's lists: contents, landmarks, and the page list's targets
/// ((file, fragment) of each printed page number).
#[derive(Debug, Default)]
pub(super) struct Nav {
    pub toc: Vec<TocEntry>,
    pub landmarks: Landmarks,
    pub page_targets: Vec<(String, String)>,
}

/// The package document, hrefs resolved to entry names.
#[derive(Debug, Default)]
pub(super) struct Package {
    pub title: Option<String>,
    pub creators: Vec<String>,
    pub language: Option<String>,
    /// `dc:publisher`, `dc:rights`, `dc:description`, `dc:date`: the first of each.
    pub publisher: Option<String>,
    pub rights: Option<String>,
    pub description: Option<String>,
    pub date: Option<String>,
    /// The first `dc:identifier` that is an ISBN (see [`isbn_of`]).
    pub isbn: Option<String>,
    pub manifest: HashMap<String, ManifestItem>,
    pub spine: Vec<SpineItem>,
    pub nav_href: Option<String>,
    pub ncx_href: Option<String>,
    pub cover_href: Option<String>,
    /// EPUB 2 guide references: (type, file, fragment).
    pub guide: Landmarks,
    /// EPUB 3 landmarks: (epub:type, file, fragment), filled from the navigation document.
    pub landmarks: Landmarks,
    /// The book is fixed-layout (`rendition:layout` `pre-paginated`): its text may sit in SVG.
    pub fixed_layout: bool,
}

/// The metadata elements whose text the package keeps (by local name).
const METADATA_TEXT: &[&str] =
    &["title", "creator", "language", "publisher", "rights", "identifier", "description", "date"];

/// The ISBN in a `dc:identifier`'s text, digits only (a final `X` kept): a `urn:isbn:`/`isbn:`
/// value, an identifier whose EPUB 2 `opf:scheme` is `ISBN`, or a bare ISBN-10/13 whose check
/// digit holds. `None` for anything else (a UUID, a DOI), so a book's internal identifier is
/// never written into the audio's ISBN tag.
#[must_use]
fn isbn_of(value: &str, scheme: Option<&str>) -> Option<String> {
    let lower = value.trim().to_ascii_lowercase();
    let (named, rest) =
        match lower.strip_prefix("urn:isbn:").or_else(|| lower.strip_prefix("isbn:")) {
            Some(rest) => (true, rest.to_string()),
            None => (scheme.is_some_and(|s| s.eq_ignore_ascii_case("isbn")), lower.clone()),
        };
    let digits: String =
        rest.chars().filter(|c| !matches!(c, '-' | ' ')).map(|c| c.to_ascii_uppercase()).collect();
    let well_formed = match digits.len() {
        10 => {
            digits[..9].chars().all(|c| c.is_ascii_digit())
                && digits[9..].chars().all(|c| c.is_ascii_digit() || c == 'X')
        }
        13 => digits.chars().all(|c| c.is_ascii_digit()),
        _ => false,
    };
    (well_formed && (named || isbn_checks(&digits))).then_some(digits)
}

/// Whether an ISBN-10 or ISBN-13's check digit holds.
fn isbn_checks(digits: &str) -> bool {
    let values: Vec<u32> =
        digits.chars().map(|c| if c == 'X' { 10 } else { c.to_digit(10).unwrap_or(0) }).collect();
    match values.len() {
        10 => values.iter().enumerate().map(|(i, v)| (10 - i as u32) * v).sum::<u32>() % 11 == 0,
        13 => {
            values.iter().enumerate().map(|(i, v)| if i % 2 == 0 { *v } else { 3 * v }).sum::<u32>()
                % 10
                == 0
        }
        _ => false,
    }
}

/// A description as plain text: what looks like a tag removed (EPUBs often carry escaped
/// XHTML in `dc:description`), whitespace collapsed.
fn plain_description(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let mut in_tag = false;
    for c in value.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => {
                in_tag = false;
                out.push(' ');
            }
            _ if !in_tag => out.push(c),
            _ => {}
        }
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Guide and landmark types that mark where the body matter starts.
const BODY_START_TYPES: &[&str] = &["text", "bodymatter", "start"];

impl Package {
    /// Keeps the first publisher, rights, description or date the metadata gives.
    fn set_publication(&mut self, element: &str, value: String) {
        let slot = match element {
            "publisher" => &mut self.publisher,
            "rights" => &mut self.rights,
            "date" => &mut self.date,
            "description" => {
                let plain = plain_description(&value);
                if self.description.is_none() && !plain.is_empty() {
                    self.description = Some(plain);
                }
                return;
            }
            _ => return,
        };
        if slot.is_none() {
            *slot = Some(value);
        }
    }

    pub fn parse(xml: &str, opf_path: &str) -> Result<Self, String> {
        let mut pkg = Self::default();
        let mut r = reader(xml);
        let mut spine_ids: Vec<(String, bool)> = Vec::new();
        let mut ncx_id = None;
        let mut cover_id = None;
        // The metadata element whose text is being read.
        let mut reading: Option<String> = None;
        let mut text = String::new();
        // An EPUB 2 identifier's `opf:scheme` (`ISBN`), while its text is read.
        let mut scheme: Option<String> = None;
        loop {
            let event = r.read_event().map_err(|e| xml_error(&r, &e))?;
            match event {
                Event::Start(e)
                    if local(&e) == "meta"
                        && attr(&e, "property").as_deref() == Some("rendition:layout") =>
                {
                    reading = Some("layout".into());
                    text.clear();
                }
                Event::Start(e) if METADATA_TEXT.contains(&local(&e).as_str()) => {
                    scheme = attr(&e, "opf:scheme").or_else(|| attr(&e, "scheme"));
                    reading = Some(local(&e));
                    text.clear();
                }
                Event::Text(t) if reading.is_some() => text.push_str(&t.xml10_content()),
                Event::GeneralRef(g) if reading.is_some() => text.push_str(&resolve_ref(&g)?),
                Event::End(_) if reading.is_some() => {
                    let value = text.split_whitespace().collect::<Vec<_>>().join(" ");
                    match reading.take().as_deref() {
                        _ if value.is_empty() => {}
                        Some("title") if pkg.title.is_none() => pkg.title = Some(value),
                        Some("creator") => pkg.creators.push(value),
                        Some("language") if pkg.language.is_none() => pkg.language = Some(value),
                        Some("identifier") if pkg.isbn.is_none() => {
                            pkg.isbn = isbn_of(&value, scheme.as_deref());
                        }
                        Some("layout") => pkg.fixed_layout = value == "pre-paginated",
                        Some(other) => pkg.set_publication(other, value),
                        None => {}
                    }
                }
                Event::Start(e) | Event::Empty(e) => match local(&e).as_str() {
                    "item" => {
                        let (Some(id), Some(href)) = (attr(&e, "id"), attr(&e, "href")) else {
                            return Err("a manifest <item> lacks its id or href".into());
                        };
                        let item = ManifestItem {
                            href: resolve_href(opf_path, &href).0,
                            media_type: attr(&e, "media-type").unwrap_or_default(),
                            properties: attr_tokens(&e, "properties"),
                        };
                        pkg.manifest.insert(id, item);
                    }
                    "spine" => ncx_id = attr(&e, "toc"),
                    "itemref" => {
                        let id = attr(&e, "idref").ok_or("a spine <itemref> lacks its idref")?;
                        if attr_tokens(&e, "properties")
                            .iter()
                            .any(|p| p == "rendition:layout-pre-paginated")
                        {
                            pkg.fixed_layout = true;
                        }
                        spine_ids.push((id, attr(&e, "linear").as_deref() != Some("no")));
                    }
                    "meta" if attr(&e, "name").as_deref() == Some("cover") => {
                        cover_id = attr(&e, "content");
                    }
                    "reference" => {
                        if let (Some(t), Some(href)) = (attr(&e, "type"), attr(&e, "href")) {
                            let (file, fragment) = resolve_href(opf_path, &href);
                            pkg.guide.push((t, file, fragment));
                        }
                    }
                    _ => {}
                },
                Event::Eof => break,
                _ => {}
            }
        }
        for (id, linear) in spine_ids {
            let item = pkg
                .manifest
                .get(&id)
                .ok_or_else(|| format!("the spine names `{id}`, which the manifest lacks"))?;
            pkg.spine.push(SpineItem { href: item.href.clone(), linear });
        }
        if pkg.spine.is_empty() {
            return Err("the spine lists no content documents".into());
        }
        let with_property = |p: &str| {
            pkg.manifest
                .values()
                .find(|i| i.properties.iter().any(|x| x == p))
                .map(|i| i.href.clone())
        };
        pkg.nav_href = with_property("nav");
        pkg.cover_href = with_property("cover-image").or_else(|| {
            let item = pkg.manifest.get(cover_id.as_deref()?)?;
            item.media_type.starts_with("image/").then(|| item.href.clone())
        });
        pkg.ncx_href = ncx_id
            .and_then(|id| pkg.manifest.get(&id))
            .or_else(|| pkg.manifest.values().find(|i| i.media_type == "application/x-dtbncx+xml"))
            .map(|i| i.href.clone());
        Ok(pkg)
    }

    pub fn media_type_of(&self, href: &str) -> Option<&str> {
        self.manifest.values().find(|i| i.href == href).map(|i| i.media_type.as_str())
    }

    /// The kinds the guide and landmarks give whole files (`cover`, `title-page`, `toc`, …),
    /// and `frontmatter` for every spine item before the body matter's start when they mark
    /// one. A landmark that points inside a file (`#fragment`) says nothing of the file.
    pub fn file_kinds(&self) -> HashMap<&str, Vec<String>> {
        let marks = self.guide.iter().chain(&self.landmarks);
        let mut kinds: HashMap<&str, Vec<String>> = HashMap::new();
        for (t, file, fragment) in marks.clone() {
            if fragment.is_empty() && !BODY_START_TYPES.contains(&t.as_str()) {
                kinds.entry(file.as_str()).or_default().push(t.clone());
            }
        }
        let body_start = marks.clone().find(|(t, _, _)| BODY_START_TYPES.contains(&t.as_str()));
        if let Some((_, start, _)) = body_start {
            if let Some(k) = self.spine.iter().position(|i| &i.href == start) {
                for item in &self.spine[..k] {
                    kinds.entry(item.href.as_str()).or_default().push("frontmatter".into());
                }
            }
        }
        kinds
    }
}

/// Landmarks of a navigation document or guide references: (type, file, fragment).
pub(super) type Landmarks = Vec<(String, String, String)>;

/// The EPUB 3 navigation document → its contents, landmarks and page list.
pub(super) fn nav(xml: &str, nav_path: &str) -> Result<Nav, String> {
    let mut r = reader(xml);
    let mut out = Nav::default();
    // Which nav we are in, by its epub:type, and its nesting depth.
    let mut in_nav: Option<(String, usize)> = None;
    let mut depth = 0usize;
    // Open lists inside the nav: whether each is hidden (or inside a hidden one).
    let mut lists: Vec<bool> = Vec::new();
    // The link being read: (href, epub:type, text).
    let mut link: Option<(String, String, String)> = None;
    // Open list items of the contents: the entry each holds, once its link is read.
    let mut items: Vec<Option<usize>> = Vec::new();
    loop {
        let event = r.read_event().map_err(|e| xml_error(&r, &e))?;
        match event {
            Event::Start(e) => {
                depth += 1;
                let name = local(&e);
                if name == "li" && in_nav.is_some() {
                    items.push(None);
                }
                if name == "nav" && in_nav.is_none() {
                    let kind = attr_tokens(&e, "epub:type")
                        .into_iter()
                        .chain(attr_tokens(&e, "role"))
                        .map(|k| crate::policy::canonical_kind(&k).to_string())
                        .next()
                        .unwrap_or_default();
                    in_nav = Some((kind, depth));
                } else if in_nav.is_some() && matches!(name.as_str(), "ol" | "ul") {
                    let hidden =
                        lists.last().copied().unwrap_or(false) || attr(&e, "hidden").is_some();
                    lists.push(hidden);
                } else if name == "a" && in_nav.is_some() {
                    let href = attr(&e, "href").unwrap_or_default();
                    let kind = attr(&e, "epub:type").unwrap_or_default();
                    link = Some((href, kind, String::new()));
                }
            }
            Event::Text(t) => {
                if let Some(l) = link.as_mut() {
                    l.2.push_str(&t.xml10_content());
                }
            }
            Event::GeneralRef(g) => {
                if let Some(l) = link.as_mut() {
                    l.2.push_str(&resolve_ref(&g)?);
                }
            }
            Event::End(e) => {
                let name = e.local_name().as_ref().to_string();
                if name == "a" {
                    if let (Some((href, kind, text)), Some((nav_kind, _))) = (link.take(), &in_nav)
                    {
                        let (file, fragment) = resolve_href(nav_path, &href);
                        let title = text.split_whitespace().collect::<Vec<_>>().join(" ");
                        match nav_kind.as_str() {
                            "toc" if !href.is_empty() => {
                                let k = out.toc.len();
                                let n = items.len();
                                let parent =
                                    items[..n.saturating_sub(1)].iter().rev().find_map(|i| *i);
                                if let Some(own @ None) = items.last_mut() {
                                    *own = Some(k);
                                }
                                out.toc.push(TocEntry {
                                    file,
                                    fragment,
                                    title,
                                    depth: lists.len().max(1),
                                    hidden: lists.last().copied().unwrap_or(false),
                                    parent,
                                });
                            }
                            "landmarks" => out.landmarks.push((kind, file, fragment)),
                            "page-list" | "pagelist" => out.page_targets.push((file, fragment)),
                            _ => {}
                        }
                    }
                }
                if in_nav.is_some() && matches!(name.as_str(), "ol" | "ul") {
                    lists.pop();
                }
                if in_nav.is_some() && name == "li" {
                    items.pop();
                }
                if name == "nav" && in_nav.as_ref().is_some_and(|(_, d)| *d == depth) {
                    in_nav = None;
                    lists.clear();
                    items.clear();
                }
                depth = depth.saturating_sub(1);
            }
            Event::Eof => break,
            _ => {}
        }
    }
    Ok(out)
}

/// The EPUB 2 NCX → its toc entries, in document order (nested points after their parent),
/// and its page list's targets (`pageList`/`pageTarget`: the printed page numbers).
pub(super) fn ncx(xml: &str, ncx_path: &str) -> Result<Nav, String> {
    let mut r = reader(xml);
    let mut toc = Vec::new();
    let mut page_targets = Vec::new();
    let mut in_page_target = false;
    // Labels of the open navPoints, innermost last, and the entry each made.
    let mut labels: Vec<String> = Vec::new();
    let mut entries: Vec<Option<usize>> = Vec::new();
    let mut in_label_text = false;
    loop {
        let event = r.read_event().map_err(|e| xml_error(&r, &e))?;
        match event {
            Event::Start(e) if local(&e) == "navPoint" => {
                labels.push(String::new());
                entries.push(None);
            }
            Event::Start(e) if local(&e) == "pageTarget" => in_page_target = true,
            Event::Start(e) | Event::Empty(e) if local(&e) == "content" && in_page_target => {
                if let Some(src) = attr(&e, "src") {
                    page_targets.push(resolve_href(ncx_path, &src));
                }
            }
            Event::Start(e) if local(&e) == "text" && !labels.is_empty() => in_label_text = true,
            Event::Start(e) | Event::Empty(e) if local(&e) == "content" => {
                if let (Some(src), Some(label)) = (attr(&e, "src"), labels.last()) {
                    let (file, fragment) = resolve_href(ncx_path, &src);
                    let title = label.split_whitespace().collect::<Vec<_>>().join(" ");
                    let depth = labels.len();
                    let n = entries.len();
                    let parent = entries[..n.saturating_sub(1)].iter().rev().find_map(|i| *i);
                    if let Some(own @ None) = entries.last_mut() {
                        *own = Some(toc.len());
                    }
                    toc.push(TocEntry { file, fragment, title, depth, hidden: false, parent });
                }
            }
            Event::Text(t) if in_label_text => {
                labels.last_mut().expect("in a navPoint").push_str(&t.xml10_content());
            }
            Event::GeneralRef(g) if in_label_text => {
                labels.last_mut().expect("in a navPoint").push_str(&resolve_ref(&g)?);
            }
            Event::End(e) => match e.local_name().as_ref() {
                "navPoint" => {
                    labels.pop();
                    entries.pop();
                }
                "text" => in_label_text = false,
                "pageTarget" => in_page_target = false,
                _ => {}
            },
            Event::Eof => break,
            _ => {}
        }
    }
    Ok(Nav { toc, page_targets, ..Nav::default() })
}

#[cfg(test)]
mod tests {
    use super::*;

    const OPF: &str = r#"<?xml version="1.0"?>
<package xmlns="http://www.idpf.org/2007/opf" xmlns:opf="http://www.idpf.org/2007/opf" version="3.0">
<metadata xmlns:dc="http://purl.org/dc/elements/1.1/">
  <dc:identifier id="uid">urn:uuid:0a1b2c3d-0000-4000-8000-000000000000</dc:identifier>
  <dc:identifier opf:scheme="ISBN">978-0-306-40615-7</dc:identifier>
  <dc:title>The Lighthouse</dc:title>
  <dc:publisher>Harbour &amp; Sons</dc:publisher>
  <dc:rights>© 2024 Ada Writer. All rights reserved.</dc:rights>
  <dc:description>&lt;p&gt;A keeper and   her light.&lt;/p&gt;</dc:description>
  <dc:date>2024-03-01</dc:date>
  <dc:date>1999</dc:date>
</metadata>
<manifest><item id="c1" href="c1.xhtml" media-type="application/xhtml+xml"/></manifest>
<spine><itemref idref="c1"/></spine>
</package>"#;

    #[test]
    fn publication_metadata_is_read_from_the_package() {
        let pkg = Package::parse(OPF, "OEBPS/content.opf").unwrap();
        assert_eq!(pkg.publisher.as_deref(), Some("Harbour & Sons"));
        assert_eq!(pkg.rights.as_deref(), Some("© 2024 Ada Writer. All rights reserved."));
        assert_eq!(pkg.description.as_deref(), Some("A keeper and her light."));
        assert_eq!(pkg.date.as_deref(), Some("2024-03-01"));
        // The UUID is the book's own identifier, not an ISBN: the second identifier is.
        assert_eq!(pkg.isbn.as_deref(), Some("9780306406157"));
    }

    #[test]
    fn only_isbns_are_taken_as_isbns() {
        assert_eq!(isbn_of("urn:isbn:0-306-40615-2", None).as_deref(), Some("0306406152"));
        assert_eq!(isbn_of("9780306406157", None).as_deref(), Some("9780306406157"));
        // A bare number whose check digit fails is some other identifier.
        assert_eq!(isbn_of("9780306406158", None), None);
        assert_eq!(isbn_of("urn:uuid:12345678-1234", None), None);
        assert_eq!(isbn_of("doi:10.1000/182", Some("DOI")), None);
        assert_eq!(isbn_of("080442957X", None).as_deref(), Some("080442957X"));
    }
}
