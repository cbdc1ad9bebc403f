//! A Markdown manuscript's YAML front matter: the book's metadata, never read aloud.

use super::source::lines;
use crate::markup::is_language_tag;

/// A Markdown front matter: its end (byte offset) and its language.
pub(super) struct FrontMatter {
    pub end: usize,
    pub language: Option<String>,
    pub title: Option<String>,
    pub author: Option<String>,
    pub narrator: Option<String>,
    /// As written (a path relative to the manuscript).
    pub cover: Option<String>,
    pub publisher: Option<String>,
    pub rights: Option<String>,
    pub isbn: Option<String>,
    pub description: Option<String>,
    pub date: Option<String>,
}

/// A YAML front matter block: `---` on the first line, closed by `---` or `...`. Its simple
/// `key: value` lines `lang:` (or `language:`), `title:`, `author:`, `narrator:`, `cover:`,
/// `publisher:`, `rights:` (or `copyright:`), `isbn:`, `description:` and `date:` are read (other keys are left alone); the block is never read aloud.
pub(super) fn front_matter(src: &str) -> Option<FrontMatter> {
    let all = lines(src);
    let (first, ..) = all.first()?;
    if first.trim_end() != "---" {
        return None;
    }
    let close = all[1..].iter().position(|(l, ..)| matches!(l.trim_end(), "---" | "..."))? + 1;
    let fields: Vec<(String, &str)> = all[1..close]
        .iter()
        .filter_map(|(l, ..)| {
            let (key, value) = l.split_once(':')?;
            let value = value.trim().trim_matches(['"', '\'']).trim();
            Some((key.trim().to_ascii_lowercase(), value))
        })
        .filter(|(_, value)| !value.is_empty())
        .collect();
    let field = |names: &[&str]| {
        fields.iter().find(|(k, _)| names.contains(&k.as_str())).map(|(_, v)| (*v).to_string())
    };
    let language =
        field(&["lang", "language"]).filter(|v| is_language_tag(v)).map(|v| v.to_ascii_lowercase());
    Some(FrontMatter {
        end: all[close].2,
        language,
        title: field(&["title"]),
        author: field(&["author"]),
        narrator: field(&["narrator"]),
        cover: field(&["cover"]),
        publisher: field(&["publisher"]),
        rights: field(&["rights", "copyright"]),
        isbn: field(&["isbn"]),
        description: field(&["description"]),
        date: field(&["date"]),
    })
}
