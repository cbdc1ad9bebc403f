//! An XHTML content document → headings and paragraphs of plain text.
//!
//! Block elements (`p`, `div`, `h1`–`h6`, `li`, `blockquote`, table cells, ...) close a block;
//! emphasis and other inline markup are read as their text; `<br/>` keeps a line break (verse);
//! whitespace is collapsed as a browser would. Not read: the head (its `<title>` is kept as
//! the document's title), scripts and styles, images, MathML and SVG, ruby annotations
//! (`rt`, `rp`), footnote markers (`epub:type="noteref"`, `role="doc-noteref"`, or a link to
//! a fragment whose text is only a marker such as `1`, `[2]`, `*`, `†`) and the notes themselves
//! (`aside`/`section` typed as footnotes, endnotes or notes). Nor, as no narrator reads them:
//! printed page numbers (`pagebreak`, `doc-pagebreak`), navigation (`nav`, and anything typed
//! `toc`, `landmarks`, `page-list` or their DPUB-ARIA roles), what a reader never sees
//! (`hidden`, `aria-hidden="true"`), preformatted listings (`pre`: code, sample output; inline
//! `code` and `kbd` in running text are read, as a narrator says "type ls"), the fallback
//! content of `canvas`, `video` and `audio`, and every `epub:case` of an `epub:switch` (its
//! `epub:default` is read). A `<br/>` inside a heading is a space.

use std::collections::HashSet;

use quick_xml::events::{BytesStart, Event};

use super::package::{attr, attr_tokens, local, reader, resolve_ref, xml_error};
use crate::{DocBlock, SegmentKind};

/// A stretch of a document: from its top, or from the element a table-of-contents entry names.
#[derive(Debug, Default)]
pub(super) struct Part {
    pub starts_at: Option<String>,
    pub blocks: Vec<DocBlock>,
}

#[derive(Debug, Default)]
pub(super) struct XhtmlDoc {
    /// `<title>`, else the first heading.
    pub title: Option<String>,
    /// The body, its first section or a nav in it is typed as front matter.
    pub front_matter: bool,
    pub parts: Vec<Part>,
}

const BLOCKS: &[&str] = &[
    "p",
    "div",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "li",
    "ul",
    "ol",
    "dl",
    "dt",
    "dd",
    "blockquote",
    "pre",
    "table",
    "tr",
    "td",
    "th",
    "caption",
    "figure",
    "figcaption",
    "section",
    "article",
    "header",
    "footer",
    "main",
    "body",
    "hr",
    "address",
    "aside",
    "nav",
    "hgroup",
];
const HEADINGS: &[&str] = &["h1", "h2", "h3", "h4", "h5", "h6"];
/// Elements whose content is never read (`case`: an `epub:switch`'s alternatives, whose
/// `epub:default` fallback is read instead).
const SKIPPED: &[&str] = &[
    "head", "script", "style", "svg", "math", "rt", "rp", "object", "nav", "pre", "canvas",
    "video", "audio", "case",
];
/// `epub:type`s and DPUB-ARIA roles of what is never read: printed page numbers and navigation.
const UNREAD_TYPES: &[&str] = &[
    "pagebreak",
    "doc-pagebreak",
    "toc",
    "doc-toc",
    "landmarks",
    "page-list",
    "doc-pagelist",
    "lot",
    "loi",
];
/// `epub:type` / DPUB-ARIA roles of notes and note references.
const NOTE_TYPES: &[&str] = &[
    "noteref",
    "footnote",
    "footnotes",
    "endnote",
    "endnotes",
    "rearnote",
    "rearnotes",
    "note",
    "doc-noteref",
    "doc-footnote",
    "doc-endnote",
    "doc-endnotes",
];
/// `epub:type`s of a front-matter document.
const FRONT_TYPES: &[&str] = &[
    "frontmatter",
    "cover",
    "titlepage",
    "halftitlepage",
    "copyright-page",
    "toc",
    "dedication",
    "epigraph",
    "imprint",
];

/// The walk's state.
#[derive(Default)]
struct Walk {
    doc: XhtmlDoc,
    /// Open elements, by local name, with whether each started a skipped subtree.
    open: Vec<(String, bool)>,
    skip_depth: usize,
    heading_depth: usize,
    in_title: bool,
    title: String,
    first_heading: Option<String>,
    /// The current block's text, whitespace collapsed as it comes; `\n` for `<br/>`.
    buf: String,
    buf_heading: bool,
    /// Open links to a fragment: where their text starts in `buf`.
    links: Vec<Option<usize>>,
    seen_section: bool,
}

/// Reads a content document; a part starts at each element whose `id` is in `starts`.
pub(super) fn read(xml: &str, starts: &HashSet<&str>) -> Result<XhtmlDoc, String> {
    let mut r = reader(xml);
    let mut w = Walk::default();
    w.doc.parts.push(Part::default());
    loop {
        let event = r.read_event().map_err(|e| xml_error(&r, &e))?;
        match event {
            Event::Start(e) => w.start(&e, starts, false),
            Event::Empty(e) => w.start(&e, starts, true),
            Event::End(_) => w.end(),
            Event::Text(t) => w.text(&t.xml10_content()),
            Event::CData(t) => w.text(&t.into_inner()),
            Event::GeneralRef(g) => w.text(&resolve_ref(&g)?),
            Event::Eof => break,
            _ => {}
        }
    }
    w.flush();
    let title = w.title.split_whitespace().collect::<Vec<_>>().join(" ");
    w.doc.title = Some(title).filter(|t| !t.is_empty()).or(w.first_heading);
    w.doc.parts.retain(|p| !p.blocks.is_empty() || p.starts_at.is_some());
    Ok(w.doc)
}

impl Walk {
    fn start(&mut self, e: &BytesStart<'_>, starts: &HashSet<&str>, empty: bool) {
        let name = local(e);
        if let Some(id) = attr(e, "id").filter(|id| starts.contains(id.as_str())) {
            self.flush();
            self.doc.parts.push(Part { starts_at: Some(id), blocks: Vec::new() });
        }
        if name == "title" && self.skip_depth == 1 && !empty {
            self.in_title = true;
        }
        let types: Vec<String> =
            attr_tokens(e, "epub:type").into_iter().chain(attr_tokens(e, "role")).collect();
        self.note_front_matter(&name, &types);
        let is_note = types.iter().any(|t| NOTE_TYPES.contains(&t.as_str()));
        let unread = types.iter().any(|t| UNREAD_TYPES.contains(&t.as_str()));
        let skip = SKIPPED.contains(&name.as_str()) || is_note || unread || is_hidden(e);
        if BLOCKS.contains(&name.as_str()) {
            self.flush();
        }
        if empty {
            if name == "br" && self.skip_depth == 0 {
                self.buf.push(if self.heading_depth > 0 { ' ' } else { '\n' });
            }
            return;
        }
        if name == "a" {
            let to_fragment = attr(e, "href").is_some_and(|h| h.contains('#'));
            self.links.push(to_fragment.then_some(self.buf.len()));
        }
        if HEADINGS.contains(&name.as_str()) {
            self.heading_depth += 1;
        }
        if skip {
            self.skip_depth += 1;
        }
        self.open.push((name, skip));
    }

    fn end(&mut self) {
        let Some((name, skipped)) = self.open.pop() else { return };
        if skipped {
            self.skip_depth -= 1;
        }
        if name == "title" {
            self.in_title = false;
        }
        if name == "a" {
            if let Some(Some(from)) = self.links.pop() {
                if from <= self.buf.len() && is_note_marker(&self.buf[from..]) {
                    self.buf.truncate(from);
                }
            }
        }
        if BLOCKS.contains(&name.as_str()) {
            self.flush();
        }
        if HEADINGS.contains(&name.as_str()) {
            self.heading_depth -= 1;
        }
    }

    /// A document typed as front matter on its body, its first section or a contents nav.
    fn note_front_matter(&mut self, name: &str, types: &[String]) {
        let first_section = name == "section" && !std::mem::replace(&mut self.seen_section, true);
        let typed_front = types.iter().any(|t| FRONT_TYPES.contains(&t.as_str()));
        if typed_front && (name == "body" || first_section || name == "nav") {
            self.doc.front_matter = true;
        }
    }

    fn text(&mut self, s: &str) {
        if self.in_title {
            self.title.push_str(s);
            return;
        }
        if self.skip_depth > 0 {
            return;
        }
        for c in s.chars() {
            if c.is_whitespace() {
                if !self.buf.ends_with([' ', '\n']) && !self.buf.is_empty() {
                    self.buf.push(' ');
                }
            } else {
                self.buf.push(c);
            }
        }
        if self.heading_depth > 0 && !s.trim().is_empty() {
            self.buf_heading = true;
        }
    }

    /// Closes the current block: lines trimmed, empty lines dropped.
    fn flush(&mut self) {
        let lines: Vec<&str> =
            self.buf.split('\n').map(str::trim).filter(|l| !l.is_empty()).collect();
        if !lines.is_empty() {
            let text = lines.join("\n");
            let kind = if self.buf_heading { SegmentKind::Heading } else { SegmentKind::Body };
            if kind == SegmentKind::Heading && self.first_heading.is_none() {
                self.first_heading = Some(text.replace('\n', " "));
            }
            let part = self.doc.parts.last_mut().expect("a part is open");
            part.blocks.push(DocBlock { kind, text, verse: false });
        }
        self.buf.clear();
        self.buf_heading = false;
        // Links still open now span blocks; their text is no marker.
        for l in &mut self.links {
            *l = None;
        }
    }
}

/// Whether the element is hidden from every reader: `hidden`, or `aria-hidden="true"`.
fn is_hidden(e: &BytesStart<'_>) -> bool {
    attr(e, "hidden").is_some() || attr(e, "aria-hidden").is_some_and(|v| v.trim() == "true")
}

/// A footnote marker's text: `1`, `12a`, `[3]`, `(4)`, `*`, `†`, `‡`, `§`, a roman `iv`.
fn is_note_marker(text: &str) -> bool {
    let t = text.trim().trim_start_matches(['[', '(']).trim_end_matches([']', ')']);
    if t.is_empty() || t.chars().count() > 5 {
        return false;
    }
    let digits = t.trim_end_matches(|c: char| c.is_ascii_lowercase());
    (!digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit()))
        || t.chars().all(|c| matches!(c, '*' | '†' | '‡' | '§'))
        || t.chars().all(|c| matches!(c, 'i' | 'v' | 'x'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blocks(xml: &str) -> Vec<(SegmentKind, String)> {
        let doc = read(xml, &HashSet::new()).expect("reads");
        doc.parts.into_iter().flat_map(|p| p.blocks).map(|b| (b.kind, b.text)).collect()
    }

    #[test]
    fn paragraphs_headings_emphasis_and_breaks() {
        let xml = r#"<html xmlns="http://www.w3.org/1999/xhtml"><head><title>T</title>
            <style>p { color: red }</style></head><body>
            <h1>Chapter <em>One</em></h1>
            <p>It was a <b>dark</b>
               and&nbsp;stormy night&mdash;truly.</p>
            <p class="verse">Roses are red,<br/>violets are blue.</p>
            <p><img src="a.png" alt="A map"/></p></body></html>"#;
        assert_eq!(
            blocks(xml),
            vec![
                (SegmentKind::Heading, "Chapter One".into()),
                (SegmentKind::Body, "It was a dark and stormy night\u{2014}truly.".into()),
                (SegmentKind::Body, "Roses are red,\nviolets are blue.".into()),
            ]
        );
    }

    #[test]
    fn footnote_markers_and_notes_are_not_read() {
        let xml = r##"<html xmlns="http://www.w3.org/1999/xhtml"
            xmlns:epub="http://www.idpf.org/2007/ops"><body>
            <p>As Smith said<a epub:type="noteref" href="#n1">1</a>, and Jones<sup><a href="#n2">[2]</a></sup> too;
            E = mc<sup>2</sup>, see <a href="#sec">section 4</a>.</p>
            <aside epub:type="footnote" id="n1"><p>Smith, 1901.</p></aside>
            <p><ruby>漢<rt>kan</rt>字<rt>ji</rt></ruby></p>
            </body></html>"##;
        assert_eq!(
            blocks(xml),
            vec![
                (SegmentKind::Body, "As Smith said, and Jones too; E = mc2, see section 4.".into()),
                (SegmentKind::Body, "漢字".into()),
            ]
        );
    }

    #[test]
    fn parts_start_at_named_elements_and_front_matter_is_typed() {
        let xml = r#"<html xmlns="http://www.w3.org/1999/xhtml"
            xmlns:epub="http://www.idpf.org/2007/ops"><body epub:type="frontmatter">
            <p>Before.</p><h2 id="c2">Two</h2><p>After.</p></body></html>"#;
        let doc = read(xml, &HashSet::from(["c2"])).expect("reads");
        assert!(doc.front_matter);
        assert_eq!(doc.parts.len(), 2);
        assert_eq!(doc.parts[0].starts_at, None);
        assert_eq!(doc.parts[1].starts_at.as_deref(), Some("c2"));
        assert_eq!(doc.parts[1].blocks[1].text, "After.");
    }

    #[test]
    fn malformed_xhtml_says_where() {
        let err = read("<html><body><p>open</body></html>", &HashSet::new()).unwrap_err();
        assert!(err.contains("malformed XML at byte"), "{err}");
    }
}
