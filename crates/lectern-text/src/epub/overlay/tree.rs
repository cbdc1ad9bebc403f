//! An XML document (a content document, the package document) as a tree that writes back as
//! it was read: tags, entity references, comments and the prolog keep their bytes, so the only
//! changes in a rewritten file are the ones made on purpose.

use quick_xml::Reader;
use quick_xml::events::{BytesStart, Event};

use super::super::package::resolve_ref;

/// A node of the tree.
#[derive(Debug, Clone)]
pub(super) enum Node {
    Element(Element),
    Text(Text),
    /// Markup written back verbatim (a comment, CDATA, the declaration, a processing
    /// instruction, the doctype).
    Raw(String),
}

/// An element: its start tag as written (without `<` and `>`), its qualified name, children.
#[derive(Debug, Clone)]
pub(super) struct Element {
    pub start: String,
    pub name: String,
    pub children: Vec<Node>,
    /// Written as `<x/>`.
    pub empty: bool,
}

/// Text between tags: runs of literal characters and entity or character references, each
/// kept as written, with the text it stands for.
#[derive(Debug, Clone, Default)]
pub(super) struct Text {
    atoms: Vec<Atom>,
}

#[derive(Debug, Clone)]
struct Atom {
    /// As written in the file.
    raw: String,
    /// What it reads as (a reference resolved; a literal run is itself).
    text: String,
}

impl Text {
    /// The text as it reads.
    pub fn content(&self) -> String {
        self.atoms.iter().map(|a| a.text.as_str()).collect()
    }

    /// The text before and after byte `at` of [`Self::content`]; a reference the offset falls
    /// inside of stays whole on the left.
    pub fn split_at(&self, at: usize) -> (Text, Text) {
        let (mut left, mut right) = (Text::default(), Text::default());
        let mut pos = 0;
        for atom in &self.atoms {
            let end = pos + atom.text.len();
            if end <= at {
                left.atoms.push(atom.clone());
            } else if pos >= at {
                right.atoms.push(atom.clone());
            } else if atom.raw == atom.text && atom.text.is_char_boundary(at - pos) {
                let (l, r) = atom.text.split_at(at - pos);
                left.atoms.push(Atom { raw: l.into(), text: l.into() });
                right.atoms.push(Atom { raw: r.into(), text: r.into() });
            } else {
                left.atoms.push(atom.clone());
            }
            pos = end;
        }
        (left, right)
    }

    fn is_empty(&self) -> bool {
        self.atoms.iter().all(|a| a.raw.is_empty())
    }
}

impl Element {
    fn new(start: &BytesStart<'_>, empty: bool) -> Self {
        Self {
            start: start.to_string(),
            name: start.name().as_ref().to_string(),
            children: Vec::new(),
            empty,
        }
    }

    /// The element's local name (`opf:item` → `item`).
    pub fn local_name(&self) -> &str {
        self.name.rsplit(':').next().unwrap_or(&self.name)
    }

    /// The start tag parsed, for its attributes.
    fn parsed(&self) -> BytesStart<'_> {
        BytesStart::from_content(self.start.as_str(), self.name.len())
    }

    /// An attribute's value (references resolved), by qualified name.
    pub fn attr(&self, name: &str) -> Option<String> {
        super::super::package::attr(&self.parsed(), name)
    }

    /// Adds an attribute (the value escaped for a double-quoted attribute).
    pub fn push_attr(&mut self, name: &str, value: &str) {
        let value = quick_xml::escape::escape(value);
        self.start.push_str(&format!(" {name}=\"{value}\""));
    }

    /// The start tag without the attributes named `leave_out`, the others as written.
    fn start_without(&self, leave_out: &[&str]) -> String {
        let parsed = self.parsed();
        let mut start = self.name.clone();
        for attribute in parsed.attributes().with_checks(false).flatten() {
            let key = attribute.key.as_ref().to_string();
            if leave_out.contains(&key.as_str()) {
                continue;
            }
            let value = attribute.value.to_string();
            let quote = if value.contains('"') { '\'' } else { '"' };
            start.push_str(&format!(" {key}={quote}{value}{quote}"));
        }
        start
    }

    /// Sets an attribute, replacing its value where it has one.
    pub fn set_attr(&mut self, name: &str, value: &str) {
        self.start = self.start_without(&[name]);
        self.push_attr(name, value);
    }

    /// The same element with no children and without its `id` (the second half of an element
    /// split in two: an id names one element only).
    fn shallow_clone_without_id(&self) -> Element {
        let start = self.start_without(&["id", "xml:id"]);
        Element { start, name: self.name.clone(), children: Vec::new(), empty: self.empty }
    }

    /// A child element by path of child indices.
    pub fn at_mut(&mut self, path: &[usize]) -> Option<&mut Element> {
        let Some((first, rest)) = path.split_first() else { return Some(self) };
        match self.children.get_mut(*first)? {
            Node::Element(e) => e.at_mut(rest),
            _ => None,
        }
    }

    /// Whether the element at `path`, or one on the way to it, has one of these local names.
    pub fn has_ancestor(&self, path: &[usize], names: &[&str]) -> bool {
        let mut at = self;
        for &k in path {
            match at.children.get(k) {
                Some(Node::Element(e)) => at = e,
                _ => return false,
            }
            if names.contains(&at.local_name()) {
                return true;
            }
        }
        false
    }

    /// The first descendant element (or itself) of this local name, by path.
    pub fn find_path(&self, local_name: &str) -> Option<Vec<usize>> {
        if self.local_name() == local_name {
            return Some(Vec::new());
        }
        self.children.iter().enumerate().find_map(|(k, child)| match child {
            Node::Element(e) => e.find_path(local_name).map(|mut p| {
                p.insert(0, k);
                p
            }),
            _ => None,
        })
    }

    /// Every element's `id`, for fresh ids that clash with none.
    pub fn ids(&self, out: &mut std::collections::HashSet<String>) {
        if let Some(id) = self.attr("id") {
            out.insert(id);
        }
        for child in &self.children {
            if let Node::Element(e) = child {
                e.ids(out);
            }
        }
    }

    /// Writes the element (the document root, nameless, writes its children only).
    pub fn write(&self, out: &mut String) {
        if self.name.is_empty() {
            self.write_children(out);
        } else if self.empty && self.children.is_empty() {
            out.push_str(&format!("<{}/>", self.start));
        } else {
            out.push_str(&format!("<{}>", self.start));
            self.write_children(out);
            out.push_str(&format!("</{}>", self.name));
        }
    }

    fn write_children(&self, out: &mut String) {
        for child in &self.children {
            match child {
                Node::Element(e) => e.write(out),
                Node::Text(t) => t.atoms.iter().for_each(|a| out.push_str(&a.raw)),
                Node::Raw(r) => out.push_str(r),
            }
        }
    }
}

/// Parses a document into a nameless root element holding its top-level nodes.
pub(super) fn parse(xml: &str) -> Result<Element, String> {
    let mut reader = Reader::from_reader(xml.as_bytes());
    let root =
        Element { start: String::new(), name: String::new(), children: Vec::new(), empty: false };
    let mut stack = vec![root];
    loop {
        let event = reader
            .read_event()
            .map_err(|e| format!("malformed XML at byte {}: {e}", reader.error_position()))?;
        let top = stack.last_mut().ok_or("unbalanced tags")?;
        match event {
            Event::Start(e) => stack.push(Element::new(&e, false)),
            Event::End(_) => {
                let done = stack.pop().ok_or("unbalanced tags")?;
                let parent = stack.last_mut().ok_or("an end tag closes nothing")?;
                parent.children.push(Node::Element(done));
            }
            Event::Empty(e) => top.children.push(Node::Element(Element::new(&e, true))),
            Event::Text(t) => push_atom(top, Atom { raw: t.to_string(), text: t.to_string() }),
            Event::GeneralRef(r) => {
                let text = resolve_ref(&r)
                    .or_else(|e| {
                        quick_xml::escape::resolve_html5_entity(&r).map(str::to_string).ok_or(e)
                    })
                    .unwrap_or_default();
                push_atom(top, Atom { raw: format!("&{};", &*r), text });
            }
            Event::CData(c) => top.children.push(Node::Raw(format!("<![CDATA[{}]]>", &*c))),
            Event::Comment(c) => top.children.push(Node::Raw(format!("<!--{}-->", &*c))),
            Event::Decl(d) => top.children.push(Node::Raw(format!("<?{}?>", &*d))),
            Event::PI(p) => top.children.push(Node::Raw(format!("<?{}?>", &*p))),
            Event::DocType(d) => top.children.push(Node::Raw(format!("<!DOCTYPE {}>", d.trim()))),
            Event::Eof => break,
        }
    }
    match (stack.pop(), stack.is_empty()) {
        (Some(root), true) => Ok(root),
        _ => Err("the document ends inside an element".into()),
    }
}

/// Appends to the text node the element ends with (a reference and the runs around it are one
/// text node), or starts one.
fn push_atom(element: &mut Element, atom: Atom) {
    if let Some(Node::Text(t)) = element.children.last_mut() {
        t.atoms.push(atom);
    } else {
        element.children.push(Node::Text(Text { atoms: vec![atom] }));
    }
}

/// Splits `children` at byte `offset` of the text node at `path` (child indices, the last one
/// a text node), splitting every element on the way in two (the second without its id), and
/// returns the index in `children` of the first node after the point.
pub(super) fn split(children: &mut Vec<Node>, path: &[usize], offset: usize) -> usize {
    let Some((&k, rest)) = path.split_first() else { return 0 };
    match &mut children[k] {
        Node::Text(t) => {
            let (left, right) = t.split_at(offset);
            match (left.is_empty(), right.is_empty()) {
                (true, _) => k,
                (_, true) => k + 1,
                _ => {
                    children.splice(k..=k, [Node::Text(left), Node::Text(right)]);
                    k + 1
                }
            }
        }
        Node::Element(e) => {
            let at = split(&mut e.children, rest, offset);
            if at == 0 {
                return k;
            }
            if at >= e.children.len() {
                return k + 1;
            }
            let mut second = e.shallow_clone_without_id();
            second.children = e.children.split_off(at);
            children.insert(k + 1, Node::Element(second));
            k + 1
        }
        Node::Raw(_) => k + 1,
    }
}

/// Local names of the elements a `<span>` may hold (HTML's phrasing content).
const PHRASING: &[&str] = &[
    "a", "abbr", "b", "bdi", "bdo", "br", "cite", "code", "data", "del", "dfn", "em", "i", "img",
    "ins", "kbd", "mark", "q", "ruby", "rp", "rt", "s", "samp", "small", "span", "strong", "sub",
    "sup", "time", "u", "var", "wbr",
];

/// Local names of elements that hold no text of their own (a `<span>` cannot sit in them).
const NO_TEXT: &[&str] =
    &["", "html", "head", "ul", "ol", "dl", "table", "thead", "tbody", "tfoot", "tr", "colgroup"];

/// Whether the children `from..=to` of `parent` may be wrapped in one `<span>`.
pub(super) fn wrappable(parent: &Element, from: usize, to: usize) -> bool {
    !NO_TEXT.contains(&parent.local_name())
        && parent.children[from..=to].iter().all(|n| match n {
            Node::Element(e) => PHRASING.contains(&e.local_name()),
            _ => true,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_document_writes_back_byte_for_byte() {
        let xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\"><!-- c --><body><p class='a'>Tom &amp; Jerry&#8217;s <em>x</em>&nbsp;y<br/></p></body></html>\n";
        let tree = parse(xml).unwrap();
        let mut out = String::new();
        tree.write(&mut out);
        assert_eq!(out, xml);
    }

    #[test]
    fn splitting_inside_inline_markup_splits_the_element_and_drops_the_second_id() {
        let mut tree = parse("<p>ab<em id=\"e\" class=\"c\">cd</em>ef</p>").unwrap();
        let p = tree.at_mut(&[0]).unwrap();
        let at = split(&mut p.children, &[1, 0], 1);
        assert_eq!(at, 2);
        let mut out = String::new();
        tree.write(&mut out);
        assert_eq!(out, "<p>ab<em id=\"e\" class=\"c\">c</em><em class=\"c\">d</em>ef</p>");
    }

    #[test]
    fn a_text_node_reads_its_references() {
        let tree = parse("<p>Tom &amp; Jerry&#8217;s&nbsp;</p>").unwrap();
        let Node::Element(p) = &tree.children[0] else { panic!() };
        let Node::Text(t) = &p.children[0] else { panic!() };
        assert_eq!(t.content(), "Tom & Jerry\u{2019}s\u{a0}");
    }
}
