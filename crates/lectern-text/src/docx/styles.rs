//! `word/styles.xml`: which paragraph styles are headings (by their `w:name`, as style ids are
//! localised: "Überschrift1" is named "heading 1"), which character or paragraph styles hide
//! their text, and the document's default language.

use std::collections::HashMap;

use quick_xml::events::Event;

use super::xml::{attr, is_on, local, reader, xml_error};

/// How deep a `w:basedOn` chain is followed (it guards against a cycle).
const MAX_CHAIN: usize = 32;

/// What a paragraph is, by its style and outline level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Role {
    /// The book's title (the `Title` style).
    Title,
    /// A heading, 1 the top level.
    Heading(u8),
    Body,
}

/// One `w:style`, what of it matters here.
#[derive(Debug, Default)]
struct StyleDef {
    name: String,
    based_on: Option<String>,
    /// `w:pPr/w:outlineLvl` (0 the top level, 9 body text).
    outline: Option<u8>,
    /// `w:rPr/w:vanish`.
    hidden: Option<bool>,
}

#[derive(Debug, Default)]
pub(super) struct Styles {
    styles: HashMap<String, StyleDef>,
    /// `w:lang` of the default run properties.
    pub language: Option<String>,
}

impl Styles {
    pub fn parse(xml: &str) -> Result<Self, String> {
        let mut out = Self::default();
        let mut r = reader(xml);
        let mut path: Vec<String> = Vec::new();
        // The style being read: its id and definition.
        let mut current: Option<(String, StyleDef)> = None;
        loop {
            let event = r.read_event().map_err(|e| xml_error(&r, &e))?;
            match &event {
                Event::Start(e) | Event::Empty(e) => {
                    let name = local(e);
                    let parent = path.last().map(String::as_str);
                    match (name.as_str(), parent) {
                        ("style", _) => {
                            let id = attr(e, "styleId").unwrap_or_default();
                            current = Some((id, StyleDef::default()));
                        }
                        ("lang", Some("rPr")) if path.iter().any(|p| p == "rPrDefault") => {
                            out.language = attr(e, "val").filter(|v| !v.is_empty());
                        }
                        _ => {
                            if let Some((_, def)) = current.as_mut() {
                                read_style_property(def, &name, parent, e);
                            }
                        }
                    }
                    if matches!(event, Event::Start(_)) {
                        path.push(name);
                    } else if name == "style" {
                        out.finish_style(current.take());
                    }
                }
                Event::End(e) => {
                    path.pop();
                    if AsRef::<str>::as_ref(&e.local_name()) == "style" {
                        out.finish_style(current.take());
                    }
                }
                Event::Eof => break,
                _ => {}
            }
        }
        Ok(out)
    }

    fn finish_style(&mut self, style: Option<(String, StyleDef)>) {
        if let Some((id, def)) = style.filter(|(id, _)| !id.is_empty()) {
            self.styles.insert(id, def);
        }
    }

    /// A paragraph's role from its style id and its own outline level: the paragraph's level
    /// first, then, up the `w:basedOn` chain, a style named `Title` or `heading N`, or a
    /// style's outline level.
    pub fn role(&self, style: Option<&str>, outline: Option<u8>) -> Role {
        if let Some(level) = outline {
            return outline_role(level);
        }
        for def in self.chain(style) {
            let name = def.name.to_lowercase();
            if name == "title" {
                return Role::Title;
            }
            let level = name.strip_prefix("heading ").and_then(|n| n.trim().parse::<u8>().ok());
            if let Some(n) = level.filter(|n| (1..=9).contains(n)) {
                return Role::Heading(n);
            }
            if let Some(level) = def.outline {
                return outline_role(level);
            }
        }
        Role::Body
    }

    /// Whether a style (character or paragraph) hides its text, `None` when it says nothing.
    pub fn hides(&self, style: Option<&str>) -> Option<bool> {
        self.chain(style).find_map(|def| def.hidden)
    }

    /// A style and the ones it is based on, nearest first.
    fn chain<'s>(&'s self, style: Option<&str>) -> impl Iterator<Item = &'s StyleDef> + 's {
        let first = style.and_then(|s| self.styles.get(s));
        std::iter::successors(first, |def| def.based_on.as_deref().and_then(|b| self.styles.get(b)))
            .take(MAX_CHAIN)
    }
}

/// A style's child that matters: its name, its base, its outline level, its hiding.
fn read_style_property(
    def: &mut StyleDef,
    name: &str,
    parent: Option<&str>,
    e: &quick_xml::events::BytesStart<'_>,
) {
    match (name, parent) {
        ("name", Some("style")) => def.name = attr(e, "val").unwrap_or_default(),
        ("basedOn", Some("style")) => def.based_on = attr(e, "val"),
        ("outlineLvl", Some("pPr")) => {
            def.outline = attr(e, "val").and_then(|v| v.parse().ok());
        }
        ("vanish", Some("rPr")) => def.hidden = Some(is_on(e)),
        _ => {}
    }
}

/// Outline levels 0–8 are headings 1–9; 9 (and beyond) is body text.
fn outline_role(level: u8) -> Role {
    if level < 9 { Role::Heading(level + 1) } else { Role::Body }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STYLES: &str = r#"<w:styles xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">
<w:docDefaults><w:rPrDefault><w:rPr><w:lang w:val="de-DE"/></w:rPr></w:rPrDefault></w:docDefaults>
<w:style w:type="paragraph" w:styleId="berschrift1"><w:name w:val="heading 1"/></w:style>
<w:style w:type="paragraph" w:styleId="Kapitel"><w:name w:val="Kapitel"/><w:basedOn w:val="berschrift1"/></w:style>
<w:style w:type="paragraph" w:styleId="Teil"><w:name w:val="Teil"/><w:pPr><w:outlineLvl w:val="2"/></w:pPr></w:style>
<w:style w:type="paragraph" w:styleId="Titel"><w:name w:val="Title"/></w:style>
<w:style w:type="character" w:styleId="Geheim"><w:name w:val="Geheim"/><w:rPr><w:vanish/></w:rPr></w:style>
<w:style w:type="character" w:styleId="Loop"><w:name w:val="Loop"/><w:basedOn w:val="Loop"/></w:style>
</w:styles>"#;

    #[test]
    fn headings_are_found_by_name_outline_level_and_base() {
        let s = Styles::parse(STYLES).unwrap();
        assert_eq!(s.language.as_deref(), Some("de-DE"));
        assert_eq!(s.role(Some("berschrift1"), None), Role::Heading(1));
        assert_eq!(s.role(Some("Kapitel"), None), Role::Heading(1));
        assert_eq!(s.role(Some("Teil"), None), Role::Heading(3));
        assert_eq!(s.role(Some("Titel"), None), Role::Title);
        assert_eq!(s.role(Some("Kapitel"), Some(9)), Role::Body);
        assert_eq!(s.role(None, Some(1)), Role::Heading(2));
        assert_eq!(s.role(Some("Unknown"), None), Role::Body);
        assert_eq!(s.hides(Some("Geheim")), Some(true));
        assert_eq!(s.hides(Some("Loop")), None);
    }
}
