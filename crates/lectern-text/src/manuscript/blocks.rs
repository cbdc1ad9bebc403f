//! A manuscript's blocks (paragraphs and headings) as cleaned text over its source bytes:
//! plain text by blank lines, Markdown by pulldown-cmark's block structure.

use std::ops::Range;

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

use super::Format;
use super::front_matter::front_matter;
use super::source::lines;
use crate::kind::SegmentKind;
use crate::mapped::Mapped;
use crate::markup;
use crate::tokenizer::is_special_token_at;

/// A block of cleaned text (over source bytes).
pub(super) struct Block {
    pub kind: SegmentKind,
    /// A stanza: its lines are phrases ([`crate::document::DocBlock::verse`]).
    pub verse: bool,
    pub text: Mapped,
    /// Stretches of `text` in another language (a document's `xml:lang`): byte ranges in
    /// `text.text`, read as `[lang:TAG]` markup is.
    pub languages: Vec<(std::ops::Range<usize>, String)>,
}

/// The blocks of a manuscript, each with the chapter title it starts (headings only).
pub(super) fn blocks(src: &str, format: Format) -> Vec<(Option<String>, Block)> {
    match format {
        Format::Plain => plain_blocks(src),
        Format::Markdown => markdown_blocks(src),
    }
}

fn plain_blocks(src: &str) -> Vec<(Option<String>, Block)> {
    let mut out = Vec::new();
    let mut para: Option<Mapped> = None;
    for (content, off, _) in lines(src) {
        if content.trim().is_empty() {
            if let Some(p) = para.take() {
                out.push((
                    None,
                    Block { kind: SegmentKind::Body, verse: false, text: p, languages: Vec::new() },
                ));
            }
            continue;
        }
        let p = para.get_or_insert_with(Mapped::default);
        if !p.text.is_empty() {
            p.push_replace("\n", off..off);
        }
        p.push_copy(content, off);
    }
    if let Some(p) = para {
        out.push((
            None,
            Block { kind: SegmentKind::Body, verse: false, text: p, languages: Vec::new() },
        ));
    }
    out
}

/// Markdown blocks: pulldown-cmark gives the block structure; each readable block's text is
/// read from its source lines by [`inline_markdown`], so spans, pause and language markup
/// stay exact. Code blocks and HTML comments are skipped; other HTML blocks are read with
/// their tags dropped.
fn markdown_blocks(src: &str) -> Vec<(Option<String>, Block)> {
    let bom = if src.starts_with('\u{feff}') { 3 } else { 0 };
    let body = front_matter(src).map_or(bom, |f| f.end);
    let mut out = Vec::new();
    let mut leaf = Leaf::default();
    let mut skipping = false;
    for (event, range) in Parser::new_ext(&src[body..], Options::empty()).into_offset_iter() {
        let range = range.start + body..range.end + body;
        match event {
            Event::Start(Tag::CodeBlock(_)) => {
                leaf.flush_body(src, &mut out);
                skipping = true;
            }
            Event::Start(Tag::HtmlBlock) if src[range.clone()].trim_start().starts_with("<!--") => {
                skipping = true
            }
            Event::End(TagEnd::CodeBlock | TagEnd::HtmlBlock) => {
                leaf.flush_body(src, &mut out);
                skipping = false;
            }
            Event::End(TagEnd::Heading(_)) => leaf.flush_heading(src, &mut out),
            Event::SoftBreak | Event::HardBreak => {}
            _ if !is_inline(&event) => leaf.flush_body(src, &mut out),
            _ if !skipping => leaf.add(src, range),
            _ => {}
        }
    }
    leaf.flush_body(src, &mut out);
    out
}

/// Events inside a block's text (as opposed to those that open, close or separate blocks).
fn is_inline(event: &Event<'_>) -> bool {
    match event {
        Event::Start(tag) => matches!(
            tag,
            Tag::Emphasis
                | Tag::Strong
                | Tag::Strikethrough
                | Tag::Superscript
                | Tag::Subscript
                | Tag::Link { .. }
                | Tag::Image { .. }
        ),
        Event::End(tag) => matches!(
            tag,
            TagEnd::Emphasis
                | TagEnd::Strong
                | TagEnd::Strikethrough
                | TagEnd::Superscript
                | TagEnd::Subscript
                | TagEnd::Link
                | TagEnd::Image
        ),
        Event::Rule => false,
        _ => true,
    }
}

/// The source extent of the block being read: where its first inline event starts and where
/// its last one ends.
#[derive(Default)]
struct Leaf {
    extent: Option<Range<usize>>,
}

impl Leaf {
    fn add(&mut self, src: &str, range: Range<usize>) {
        match &mut self.extent {
            Some(e) => e.end = e.end.max(range.end),
            None => {
                // An escaped character's text starts after its backslash; the backslash is
                // part of the source `inline_markdown` reads.
                let start = range.start - usize::from(src[..range.start].ends_with('\\'));
                self.extent = Some(start..range.end);
            }
        }
    }

    fn flush_body(&mut self, src: &str, out: &mut Vec<(Option<String>, Block)>) {
        if let Some(extent) = self.extent.take() {
            let text = read_lines(src, extent, false);
            out.push((
                None,
                Block { kind: SegmentKind::Body, verse: false, text, languages: Vec::new() },
            ));
        }
    }

    /// Every heading (ATX or setext, any level) opens a chapter, an empty one too.
    fn flush_heading(&mut self, src: &str, out: &mut Vec<(Option<String>, Block)>) {
        let text = self.extent.take().map(|e| read_lines(src, e, true)).unwrap_or_default();
        let title = heading_title(&text.text);
        out.push((
            Some(title),
            Block { kind: SegmentKind::Heading, verse: false, text, languages: Vec::new() },
        ));
    }
}

/// A block's text from its source lines, joined by `\n`. The first line starts at `extent`;
/// later lines after their container prefix (indentation, `>` markers), the only prefix a
/// continuation line can have. Body lines run to the line end (trailing spaces and a hard
/// break's backslash included, as written); a heading's last line ends with its text,
/// before an ATX closing sequence.
fn read_lines(src: &str, extent: Range<usize>, heading: bool) -> Mapped {
    let mut out = Mapped::default();
    let mut start = extent.start;
    while start < extent.end {
        let line_end = src[start..].find('\n').map_or(src.len(), |k| start + k);
        let mut end = src[..line_end].strip_suffix('\r').map_or(line_end, str::len);
        if heading && line_end >= extent.end {
            end = end.min(extent.end);
        }
        let line = &src[start..end];
        if !line.trim().is_empty() {
            if !out.text.is_empty() {
                out.push_replace("\n", start..start);
            }
            inline_markdown(line, start, &mut out);
        }
        start = line_end + 1;
        start += container_prefix_len(src.get(start..).unwrap_or_default());
    }
    out
}

/// The length of a continuation line's container prefix: indentation and `>` markers.
fn container_prefix_len(line: &str) -> usize {
    let mut rest = line.trim_start_matches([' ', '\t']);
    while let Some(quoted) = rest.strip_prefix('>') {
        rest = quoted.trim_start_matches([' ', '\t']);
    }
    line.len() - rest.len()
}

/// Inline Markdown → text: emphasis markers, backticks and HTML tags dropped, links read as
/// their text, images skipped; CosyVoice3 tokens and pause markup kept.
fn inline_markdown(s: &str, base: usize, out: &mut Mapped) {
    let mut i = 0;
    while i < s.len() {
        let rest = &s[i..];
        let c = rest.chars().next().expect("in bounds");
        let n = c.len_utf8();
        match c {
            '\\' if rest[1..].starts_with(|d: char| d.is_ascii_punctuation()) => {
                out.push_copy(&rest[1..2], base + i + 1);
                i += 2;
            }
            '<' | '[' if is_special_token_at(rest).is_some() => {
                let k = is_special_token_at(rest).expect("checked");
                out.push_copy(&rest[..k], base + i);
                i += k;
            }
            // Markup is copied whole: `[as:Anna][style:soft]` is no reference link, and a
            // name's `_` or `*` is no emphasis.
            '[' if markup::len_at(rest).is_some() => {
                let k = markup::len_at(rest).expect("checked");
                out.push_copy(&rest[..k], base + i);
                i += k;
            }
            '!' if rest.starts_with("![") => match link_parts(&rest[1..]) {
                Some((_, total)) => i += 1 + total,
                None => {
                    out.push_copy("!", base + i);
                    i += 1;
                }
            },
            '[' => match link_parts(rest) {
                Some((text_end, total)) => {
                    inline_markdown(&rest[1..text_end], base + i + 1, out);
                    i += total;
                }
                None => {
                    out.push_copy("[", base + i);
                    i += 1;
                }
            },
            '`' | '*' => i += 1,
            '~' if rest.starts_with("~~") => i += 2,
            '_' => {
                let prev = s[..i].chars().next_back();
                let next = rest[1..].chars().next();
                let inner = prev.is_some_and(char::is_alphanumeric)
                    && next.is_some_and(char::is_alphanumeric);
                if inner {
                    out.push_copy("_", base + i);
                }
                i += 1;
            }
            '<' if html_tag_len(rest).is_some() => i += html_tag_len(rest).expect("checked"),
            _ => {
                out.push_copy(&rest[..n], base + i);
                i += n;
            }
        }
    }
}

/// `[text](url)` or `[text][ref]` at the start of `s` → (end of text, total length).
fn link_parts(s: &str) -> Option<(usize, usize)> {
    let close = s.find(']')?;
    if s[1..close].contains('[') {
        return None;
    }
    let after = &s[close + 1..];
    let shut = match after.chars().next()? {
        '(' => ')',
        '[' => ']',
        _ => return None,
    };
    let end = after.find(shut)?;
    Some((close, close + 1 + end + 1))
}

/// An HTML tag or autolink (`<em>`, `</p>`, `<https://…>`) at the start of `s`.
fn html_tag_len(s: &str) -> Option<usize> {
    let body = s.strip_prefix('<')?;
    let body = body.strip_prefix('/').unwrap_or(body);
    if !body.starts_with(|c: char| c.is_ascii_alphabetic()) {
        return None;
    }
    let end = s.find('>')?;
    (!s[1..end].contains('<')).then_some(end + 1)
}

/// A heading's title: its text without markup, on one line. Markup that cannot be read is left
/// in; reading the heading reports it.
fn heading_title(text: &str) -> String {
    let text = text.trim();
    markup::strip(text).unwrap_or_else(|| text.to_string()).trim().replace('\n', " ")
}
