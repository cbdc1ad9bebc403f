//! Source anchors: where each segment's printed text lies in the book's content documents, and
//! a `<span id>` around it there.
//!
//! The reading pipeline lays the XHTML out as plain text (notes dropped, whitespace folded,
//! blocks joined), so segment offsets do not point into the files. Anchors are found again by
//! the text itself: letters and digits only, lower-cased, searched in reading order from the
//! previous segment's end, which is immune to whitespace, quotes and dashes the layout changed.
//! Where the file holds characters the segment lacks (a note reference's number between two
//! words), a second search lets a few of them be skipped.

use std::collections::HashSet;

use super::tree::{Element, Node, split, wrappable};

/// One content document being anchored.
pub(super) struct Doc {
    pub tree: Element,
    /// Each text node of the body: its path of child indices and its text.
    nodes: Vec<(Vec<usize>, String)>,
}

/// A position in a document: text node and byte offset in its text.
type Pos = (usize, usize);

/// A segment's text found in document `doc`, from `start` to `end` (exclusive).
#[derive(Debug, Clone, Copy)]
pub(super) struct Found {
    pub doc: usize,
    pub start: Pos,
    pub end: Pos,
}

/// Elements whose text is never read aloud.
const UNREAD: &[&str] = &["head", "script", "style", "rt", "rp"];

impl Doc {
    pub fn new(tree: Element) -> Self {
        let mut nodes = Vec::new();
        collect_text(&tree, &mut Vec::new(), &mut nodes);
        Self { tree, nodes }
    }
}

fn collect_text(element: &Element, path: &mut Vec<usize>, out: &mut Vec<(Vec<usize>, String)>) {
    for (k, child) in element.children.iter().enumerate() {
        path.push(k);
        match child {
            Node::Element(e) if !UNREAD.contains(&e.local_name()) => collect_text(e, path, out),
            Node::Text(t) => out.push((path.clone(), t.content())),
            _ => {}
        }
        path.pop();
    }
}

/// The searchable letters of all documents: each with where it is.
struct Stream {
    keys: Vec<char>,
    /// Document, text node, byte start and end of each key's character.
    at: Vec<(usize, usize, usize, usize)>,
}

impl Stream {
    fn new(docs: &[Doc]) -> Self {
        let (mut keys, mut at) = (Vec::new(), Vec::new());
        for (d, doc) in docs.iter().enumerate() {
            for (n, (_, text)) in doc.nodes.iter().enumerate() {
                for (b, c) in text.char_indices() {
                    if let Some(k) = key_char(c) {
                        keys.push(k);
                        at.push((d, n, b, b + c.len_utf8()));
                    }
                }
            }
        }
        Self { keys, at }
    }

    /// The first exact occurrence of `key` at or after `from` made of whole words: its first
    /// and last index.
    fn exact(&self, key: &[char], from: usize) -> Option<(usize, usize)> {
        let m = key.len();
        (from..=self.keys.len().checked_sub(m)?)
            .filter(|&i| self.keys[i..i + m] == *key)
            .map(|i| (i, i + m - 1))
            .find(|&(i, j)| self.whole_words(i, j))
    }

    /// Whether keys `first..=last` start and end on word boundaries (a heading `I` is not the
    /// `i` of a word). Only a letter in the same text node counts against it: a drop cap's
    /// letter in an element of its own still starts its word.
    fn whole_words(&self, first: usize, last: usize) -> bool {
        let joined = |a: usize, b: usize| {
            let (da, na, _, end_a) = self.at[a];
            let (db, nb, start_b, _) = self.at[b];
            // Scripts written without spaces (CJK) have no word boundaries to keep.
            let spaced = self.keys[a] < CJK_START && self.keys[b] < CJK_START;
            da == db && na == nb && end_a == start_b && spaced
        };
        let starts = first == 0 || !joined(first - 1, first);
        let ends = last + 1 >= self.keys.len() || !joined(last, last + 1);
        starts && ends
    }

    /// The first occurrence of `key` near `from` whose letters may be interrupted by a few the
    /// key lacks (a note reference's number), within the same document.
    fn gapped(&self, key: &[char], from: usize) -> Option<(usize, usize)> {
        let budget = GAP_BUDGET + key.len() / 10;
        let end = self.keys.len().min(from + GAP_WINDOW);
        (from..end).filter(|&i| self.keys[i] == key[0]).find_map(|i| {
            let (mut j, mut pos, mut skipped) = (1, i + 1, 0);
            while j < key.len() && pos < self.keys.len() && skipped <= budget {
                if self.keys[pos] == key[j] {
                    j += 1;
                } else {
                    skipped += 1;
                }
                pos += 1;
            }
            let same_doc = self.at[i].0 == self.at[pos - 1].0;
            (j == key.len() && same_doc && self.whole_words(i, pos - 1)).then_some((i, pos - 1))
        })
    }
}

/// The first code point of the CJK blocks (radicals, kana, ideographs, Hangul lie above it).
const CJK_START: char = '\u{2e80}';
/// Letters of a segment a file may lack in a gapped match: a few, and one in ten.
const GAP_BUDGET: usize = 4;
/// How far past the previous segment a gapped match is looked for, in letters.
const GAP_WINDOW: usize = 20_000;

/// A character's search key: letters and digits, lower-cased; nothing for the rest.
fn key_char(c: char) -> Option<char> {
    c.is_alphanumeric().then(|| c.to_lowercase().next().unwrap_or(c))
}

/// A segment's search key: its letters and digits, leaving out bracketed markup the book does
/// not print (phones from the book's `ssml:ph`, `[TH][ER1]…`; Lectern's `[pause]`).
fn key_of(text: &str) -> Vec<char> {
    let mut key = Vec::new();
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        let token = (c == '[')
            .then(|| rest.find(']'))
            .flatten()
            .filter(|&end| end <= MARKUP_MAX && !rest[..end].contains(char::is_whitespace));
        match token {
            Some(end) => rest = &rest[end + 1..],
            None => {
                key.extend(key_char(c));
                rest = &rest[c.len_utf8()..];
            }
        }
    }
    key
}

/// Longest bracketed token [`key_of`] takes for markup, bytes.
const MARKUP_MAX: usize = 40;

/// Finds each text (in reading order) in the documents, each after the one before; a text not
/// found is `None` and the search goes on from the previous one's end.
pub(super) fn find_all(docs: &[Doc], texts: &[&str]) -> Vec<Option<Found>> {
    let stream = Stream::new(docs);
    let mut from = 0;
    let mut previous_end: Option<(usize, Pos)> = None;
    texts
        .iter()
        .map(|text| {
            let key = key_of(text);
            if key.is_empty() {
                return None;
            }
            let (first, last) = stream.exact(&key, from).or_else(|| stream.gapped(&key, from))?;
            from = last + 1;
            let found = widen(docs, &stream, first, last, previous_end);
            previous_end = Some((found.doc, found.end));
            Some(found)
        })
        .collect()
}

/// The match from key `first` to key `last`, widened within its text nodes over the
/// punctuation that clings to it (an opening quote before, a full stop and closing quote
/// after), never back over the previous segment.
fn widen(
    docs: &[Doc],
    stream: &Stream,
    first: usize,
    last: usize,
    previous_end: Option<(usize, Pos)>,
) -> Found {
    let (doc, n0, mut b0, _) = stream.at[first];
    let (_, n1, _, mut b1) = stream.at[last];
    let floor = match previous_end {
        Some((d, (n, b))) if d == doc && n == n0 => b,
        _ => 0,
    };
    let start_text = &docs[doc].nodes[n0].1;
    while let Some(c) = start_text[floor..b0].chars().next_back() {
        if c.is_whitespace() || c.is_alphanumeric() {
            break;
        }
        b0 -= c.len_utf8();
    }
    let end_text = &docs[doc].nodes[n1].1;
    while let Some(c) = end_text[b1..].chars().next() {
        if c.is_whitespace() || c.is_alphanumeric() {
            break;
        }
        b1 += c.len_utf8();
    }
    Found { doc, start: (n0, b0), end: (n1, b1) }
}

/// Wraps each found range of `doc` in a `<span>` with a fresh id (`lectern-s{N}`, `N` the
/// text's index), or, where a span cannot hold the range (it crosses a block element), gives
/// the smallest element around it an id; returns each index's fragment id. Works from the last
/// range back, so the paths of earlier ones stay true.
pub(super) fn anchor(doc: &mut Doc, found: &[(usize, Found)]) -> Vec<(usize, String)> {
    let mut taken = HashSet::new();
    doc.tree.ids(&mut taken);
    let mut ids = Vec::new();
    for (index, f) in found.iter().rev() {
        let fresh = fresh_id(&mut taken, *index);
        let a = doc.nodes[f.start.0].0.clone();
        let b = doc.nodes[f.end.0].0.clone();
        if let Some(id) = wrap(&mut doc.tree, (&a, f.start.1), (&b, f.end.1), fresh) {
            ids.push((*index, id));
        }
    }
    ids.reverse();
    ids
}

/// An id no element of the document has.
fn fresh_id(taken: &mut HashSet<String>, index: usize) -> String {
    let mut id = format!("lectern-s{index}");
    let mut k = 1;
    while taken.contains(&id) {
        k += 1;
        id = format!("lectern-s{index}-{k}");
    }
    taken.insert(id.clone());
    id
}

/// Wraps the range from text node path `a` at its byte offset to `b` at its offset in one
/// `<span id>`, splitting the inline elements it starts or ends inside; where a span cannot
/// hold it, the closest element around both ends is anchored instead (its own id, or `id`).
fn wrap(
    root: &mut Element,
    (a, oa): (&[usize], usize),
    (b, ob): (&[usize], usize),
    id: String,
) -> Option<String> {
    let common = if a == b {
        a.len() - 1
    } else {
        a.iter().zip(b).take_while(|(x, y)| x == y).count().min(a.len().min(b.len()) - 1)
    };
    // An HTML `<span>` has no place in SVG or MathML: anchor their element instead.
    let foreign = root.has_ancestor(&a[..common], &["svg", "math"]);
    let parent = root.at_mut(&a[..common])?;
    let (ia, ib) = (a[common], b[common]);
    if foreign || !wrappable(parent, ia, ib) {
        if let Some(own) = parent.attr("id") {
            return Some(own);
        }
        parent.push_attr("id", &id);
        return Some(id);
    }
    let end = split(&mut parent.children, &b[common..], ob);
    let before = parent.children.len();
    let start = split(&mut parent.children, &a[common..], oa);
    let end = end + (parent.children.len() - before);
    if start >= end {
        return None;
    }
    let inner: Vec<Node> = parent.children.drain(start..end).collect();
    let span = Element {
        start: format!("span id=\"{id}\""),
        name: "span".into(),
        children: inner,
        empty: false,
    };
    parent.children.insert(start, Node::Element(span));
    Some(id)
}

#[cfg(test)]
mod tests {
    use super::super::tree::parse;
    use super::*;

    fn anchored(xml: &str, texts: &[&str]) -> (String, Vec<Option<String>>) {
        let mut docs = vec![Doc::new(parse(xml).unwrap())];
        let found = find_all(&docs, texts);
        let list: Vec<(usize, Found)> =
            found.iter().enumerate().filter_map(|(k, f)| f.map(|f| (k, f))).collect();
        let ids = anchor(&mut docs[0], &list);
        let mut out = String::new();
        docs[0].tree.write(&mut out);
        let by_index = (0..texts.len())
            .map(|k| ids.iter().find(|(i, _)| *i == k).map(|(_, id)| id.clone()))
            .collect();
        (out, by_index)
    }

    #[test]
    fn sentences_of_a_paragraph_get_spans_with_their_punctuation() {
        let (out, ids) = anchored(
            "<html><body><p>\u{201c}Hello,\u{201d} she said. It rained.</p></body></html>",
            &["\u{201c}Hello,\u{201d} she said.", "It rained."],
        );
        assert_eq!(
            out,
            "<html><body><p><span id=\"lectern-s0\">\u{201c}Hello,\u{201d} she said.</span> \
             <span id=\"lectern-s1\">It rained.</span></p></body></html>"
        );
        assert_eq!(ids, [Some("lectern-s0".into()), Some("lectern-s1".into())]);
    }

    #[test]
    fn a_segment_ending_inside_emphasis_splits_it_and_nests_correctly() {
        let (out, _) = anchored(
            "<body><p>It was <em>very. Truly</em> late.</p></body>",
            &["It was very.", "Truly late."],
        );
        assert_eq!(
            out,
            "<body><p><span id=\"lectern-s0\">It was <em>very.</em></span><em> </em>\
             <span id=\"lectern-s1\"><em>Truly</em> late.</span></p></body>"
        );
    }

    #[test]
    fn a_note_reference_inside_a_sentence_is_skipped_over() {
        let (out, ids) = anchored(
            "<body><p>The train<a href=\"n.xhtml#n1\">1</a> came in.</p></body>",
            &["The train came in."],
        );
        assert_eq!(ids, [Some("lectern-s0".into())]);
        assert!(out.contains("<span id=\"lectern-s0\">The train<a href"), "{out}");
    }

    #[test]
    fn a_segment_over_two_paragraphs_anchors_their_parent() {
        let (out, ids) =
            anchored("<body><div><p>One two</p><p>three.</p></div></body>", &["One two three."]);
        assert_eq!(ids, [Some("lectern-s0".into())]);
        assert_eq!(out, "<body><div id=\"lectern-s0\"><p>One two</p><p>three.</p></div></body>");
    }

    #[test]
    fn text_in_svg_anchors_its_element() {
        let (out, ids) = anchored(
            "<body><svg><text x=\"1\">Sous le vent.</text></svg></body>",
            &["Sous le vent."],
        );
        assert_eq!(ids, [Some("lectern-s0".into())]);
        assert_eq!(
            out,
            "<body><svg><text x=\"1\" id=\"lectern-s0\">Sous le vent.</text></svg></body>"
        );
    }

    #[test]
    fn bracketed_phones_are_not_searched_for() {
        assert_eq!(key_of("at [TH][ER1][T][IY0] deg [pause] x"), ['a', 't', 'd', 'e', 'g', 'x']);
        assert_eq!(key_of("a [b c]"), ['a', 'b', 'c']);
    }

    #[test]
    fn a_short_heading_is_not_found_inside_a_word() {
        let (out, ids) = anchored("<body><p>Dim light.</p><h2>I</h2></body>", &["I"]);
        assert_eq!(ids, [Some("lectern-s0".into())]);
        assert_eq!(out, "<body><p>Dim light.</p><h2><span id=\"lectern-s0\">I</span></h2></body>");
    }

    #[test]
    fn text_not_in_the_book_is_not_anchored_and_the_next_one_still_is() {
        let (_, ids) = anchored("<body><p>Alpha. Beta.</p></body>", &["Gamma.", "Beta."]);
        assert_eq!(ids, [None, Some("lectern-s1".into())]);
    }
}
