//! The package document of a read-along edition: the source's, with the overlays, audio and
//! style sheet added to the manifest, `media-overlay` on each content document that has one,
//! and the Media Overlays metadata (durations, active class, narrator) and the disclosure.

use super::super::resolve_href;
use super::tree::{Element, Node, parse};

/// A manifest item to add: id, href relative to the package document, media type.
pub(super) struct NewItem {
    pub id: String,
    pub href: String,
    pub media_type: String,
}

/// A metadata entry to add: property, the id it refines (without `#`), its value.
pub(super) struct NewMeta {
    pub property: String,
    pub refines: Option<String>,
    pub value: String,
}

/// What a read-along edition changes in the package document.
pub(super) struct PackageEdit {
    /// Content document (full path in the container) → its overlay's manifest id.
    pub overlays: Vec<(String, String)>,
    pub items: Vec<NewItem>,
    pub metas: Vec<NewMeta>,
    /// A vocabulary prefix the metas use (`name`, IRI), declared on `<package>`.
    pub prefix: (String, String),
}

/// The package document `opf` (at `opf_path`) with `edit` applied. Refuses an EPUB 2 package
/// (Media Overlays are EPUB 3) and one whose documents already have overlays.
pub(super) fn rewrite(opf: &str, opf_path: &str, edit: &PackageEdit) -> Result<String, String> {
    let mut root = parse(opf)?;
    let package_path = root.find_path("package").ok_or("no <package> element")?;
    let package = root.at_mut(&package_path).ok_or("no <package> element")?;
    let version = package.attr("version").unwrap_or_default();
    if !version.starts_with('3') {
        return Err(format!(
            "an EPUB {version} package: a read-along edition (EPUB 3 Media Overlays) is made \
             from an EPUB 3 book"
        ));
    }
    declare_prefix(package, &edit.prefix);
    let manifest = child_mut(package, "manifest")?;
    for child in &mut manifest.children {
        let Node::Element(item) = child else { continue };
        if item.local_name() != "item" {
            continue;
        }
        let href = resolve_href(opf_path, &item.attr("href").unwrap_or_default()).0;
        if let Some((_, id)) = edit.overlays.iter().find(|(doc, _)| *doc == href) {
            if item.attr("media-overlay").is_some() {
                return Err(format!("`{href}` already has a media overlay"));
            }
            item.push_attr("media-overlay", id);
        }
    }
    for item in &edit.items {
        manifest.children.push(Node::Raw(format!(
            "  <item id=\"{}\" href=\"{}\" media-type=\"{}\"/>\n  ",
            esc(&item.id),
            esc(&item.href),
            esc(&item.media_type)
        )));
    }
    let metadata = child_mut(package, "metadata")?;
    for meta in &edit.metas {
        let refines =
            meta.refines.as_ref().map_or(String::new(), |r| format!(" refines=\"#{}\"", esc(r)));
        metadata.children.push(Node::Raw(format!(
            "  <meta property=\"{}\"{refines}>{}</meta>\n  ",
            esc(&meta.property),
            esc(&meta.value)
        )));
    }
    let mut out = String::new();
    root.write(&mut out);
    Ok(out)
}

/// Adds `name: iri` to the package's `prefix` attribute, keeping the book's own prefixes.
fn declare_prefix(package: &mut Element, (name, iri): &(String, String)) {
    let declared = package.attr("prefix").unwrap_or_default();
    if declared.split_whitespace().any(|t| t == format!("{name}:")) {
        return;
    }
    let value = format!("{declared} {name}: {iri}").trim().to_string();
    package.set_attr("prefix", &value);
}

/// The package's child element of this local name.
fn child_mut<'e>(package: &'e mut Element, name: &str) -> Result<&'e mut Element, String> {
    package
        .children
        .iter_mut()
        .find_map(|c| match c {
            Node::Element(e) if e.local_name() == name => Some(e),
            _ => None,
        })
        .ok_or_else(|| format!("the package has no <{name}>"))
}

fn esc(value: &str) -> String {
    quick_xml::escape::escape(value).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    const OPF: &str = r#"<?xml version="1.0"?>
<package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="id">
  <metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>T</dc:title></metadata>
  <manifest>
    <item id="c1" href="text/c%201.xhtml" media-type="application/xhtml+xml"/>
  </manifest>
  <spine><itemref idref="c1"/></spine>
</package>"#;

    fn edit() -> PackageEdit {
        PackageEdit {
            overlays: vec![("OEBPS/text/c 1.xhtml".into(), "mo1".into())],
            items: vec![NewItem {
                id: "mo1".into(),
                href: "lectern/c1.smil".into(),
                media_type: "application/smil+xml".into(),
            }],
            metas: vec![NewMeta {
                property: "media:duration".into(),
                refines: Some("mo1".into()),
                value: "0:00:01.000".into(),
            }],
            prefix: ("lectern".into(), "https://example.org/v#".into()),
        }
    }

    #[test]
    fn the_package_gains_overlays_items_and_metas() {
        let out = rewrite(OPF, "OEBPS/content.opf", &edit()).unwrap();
        assert!(
            out.contains(
                r#"version="3.0" unique-identifier="id" prefix="lectern: https://example.org/v#">"#
            ),
            "{out}"
        );
        assert!(
            out.contains(r#"media-type="application/xhtml+xml" media-overlay="mo1"/>"#),
            "{out}"
        );
        assert!(
            out.contains(
                r#"<item id="mo1" href="lectern/c1.smil" media-type="application/smil+xml"/>"#
            ),
            "{out}"
        );
        assert!(
            out.contains(r##"<meta property="media:duration" refines="#mo1">0:00:01.000</meta>"##),
            "{out}"
        );
    }

    #[test]
    fn an_epub_2_package_is_refused() {
        let err = rewrite(&OPF.replace("3.0", "2.0"), "OEBPS/content.opf", &edit()).unwrap_err();
        assert!(err.contains("EPUB 2.0 package"), "{err}");
    }
}
