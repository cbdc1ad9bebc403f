//! The OPC package around the document: relationships (`_rels/.rels`, the main part's
//! `_rels/….rels`), which name the parts, and the core properties (`docProps/core.xml`).

use quick_xml::events::Event;

use super::xml::{attr, local, reader, resolve_ref, xml_error};

/// One relationship: the last segment of its type URI (`officeDocument`, `styles`,
/// `footnotes`, `core-properties`, …) and its target, resolved to a part name.
#[derive(Debug, Clone)]
pub(super) struct Relationship {
    pub kind: String,
    pub target: String,
}

/// A `.rels` part of the part `source` (`""` for the package) → its internal relationships.
pub(super) fn relationships(xml: &str, source: &str) -> Result<Vec<Relationship>, String> {
    let mut r = reader(xml);
    let mut out = Vec::new();
    loop {
        match r.read_event().map_err(|e| xml_error(&r, &e))? {
            Event::Start(e) | Event::Empty(e) if local(&e) == "Relationship" => {
                if attr(&e, "TargetMode").as_deref() == Some("External") {
                    continue;
                }
                let (Some(kind), Some(target)) = (attr(&e, "Type"), attr(&e, "Target")) else {
                    continue;
                };
                let kind = kind.rsplit('/').next().unwrap_or_default().to_string();
                out.push(Relationship { kind, target: resolve_target(source, &target) });
            }
            Event::Eof => return Ok(out),
            _ => {}
        }
    }
}

/// The `.rels` part that holds a part's relationships (`word/document.xml` →
/// `word/_rels/document.xml.rels`).
pub(super) fn rels_of(part: &str) -> String {
    match part.rsplit_once('/') {
        Some((dir, name)) => format!("{dir}/_rels/{name}.rels"),
        None => format!("_rels/{part}.rels"),
    }
}

/// A relationship target as a part name: absolute (`/word/document.xml`) or relative to the
/// source part's folder, `.` and `..` folded.
fn resolve_target(source: &str, target: &str) -> String {
    let mut parts: Vec<&str> = match (target.strip_prefix('/'), source.rsplit_once('/')) {
        (Some(_), _) | (None, None) => Vec::new(),
        (None, Some((dir, _))) => dir.split('/').collect(),
    };
    for p in target.trim_start_matches('/').split('/') {
        match p {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    parts.join("/")
}

/// What `docProps/core.xml` says of the book.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct CoreProperties {
    pub title: Option<String>,
    pub creator: Option<String>,
    pub language: Option<String>,
}

impl CoreProperties {
    pub fn parse(xml: &str) -> Result<Self, String> {
        let mut out = Self::default();
        let mut r = reader(xml);
        let mut reading: Option<String> = None;
        let mut text = String::new();
        loop {
            match r.read_event().map_err(|e| xml_error(&r, &e))? {
                Event::Start(e)
                    if matches!(local(&e).as_str(), "title" | "creator" | "language") =>
                {
                    reading = Some(local(&e));
                    text.clear();
                }
                Event::Text(t) if reading.is_some() => text.push_str(&t.xml10_content()),
                Event::GeneralRef(g) if reading.is_some() => text.push_str(&resolve_ref(&g)?),
                Event::End(_) if reading.is_some() => {
                    let value = text.split_whitespace().collect::<Vec<_>>().join(" ");
                    let slot = match reading.take().as_deref() {
                        Some("title") => &mut out.title,
                        Some("creator") => &mut out.creator,
                        _ => &mut out.language,
                    };
                    if !value.is_empty() && slot.is_none() {
                        *slot = Some(value);
                    }
                }
                Event::Eof => return Ok(out),
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_resolve_against_their_source() {
        assert_eq!(resolve_target("", "word/document.xml"), "word/document.xml");
        assert_eq!(resolve_target("word/document.xml", "styles.xml"), "word/styles.xml");
        assert_eq!(resolve_target("word/document.xml", "/customXml/a.xml"), "customXml/a.xml");
        assert_eq!(resolve_target("word/document.xml", "../docProps/x.xml"), "docProps/x.xml");
        assert_eq!(rels_of("word/document.xml"), "word/_rels/document.xml.rels");
        assert_eq!(rels_of("doc.xml"), "_rels/doc.xml.rels");
    }

    #[test]
    fn core_properties_give_title_creator_and_language() {
        let xml = r#"<cp:coreProperties xmlns:cp="c" xmlns:dc="http://purl.org/dc/elements/1.1/">
<dc:title>A &amp; B</dc:title><dc:creator>Mara  Quill</dc:creator><dc:language/></cp:coreProperties>"#;
        let core = CoreProperties::parse(xml).unwrap();
        assert_eq!(core.title.as_deref(), Some("A & B"));
        assert_eq!(core.creator.as_deref(), Some("Mara Quill"));
        assert_eq!(core.language, None);
    }
}
