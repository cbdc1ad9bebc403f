//! Per-project pronunciation overrides: a text file of `word = spoken form` lines.
//!
//! Keys match whole words (a key may hold several words, e.g. `Ph.D. = P H D`); an exact-case
//! match wins over a case-insensitive one. Blank lines and `#` comments are ignored. Overrides
//! apply before normalisation, so a spoken form may itself contain numbers, CMU phones
//! (`[AA1]`) or pinyin units.

use std::collections::HashMap;
use std::path::Path;

use super::{Result, TextError};

/// The per-project override file, looked for next to the manuscript.
pub const PROJECT_FILE: &str = "pronunciations.txt";

/// The override list. Cheap to clone; empty by default.
#[derive(Debug, Clone, Default)]
pub struct Pronunciations {
    /// Lower-cased first word → entries starting with it, longest key first.
    by_first_word: HashMap<String, Vec<(String, String)>>,
}

impl Pronunciations {
    /// Parses `word = spoken form` lines; `path` names the file in errors.
    pub fn parse(src: &str, path: &Path) -> Result<Self> {
        let mut p = Self::default();
        for (i, line) in src.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let err = |reason: &str| TextError::Pronunciation {
                path: path.to_path_buf(),
                line: i + 1,
                reason: reason.to_string(),
            };
            let (k, v) =
                line.split_once('=').ok_or_else(|| err("expected `word = spoken form`"))?;
            let (k, v) = (k.trim(), v.trim());
            if k.is_empty() || v.is_empty() {
                return Err(err("empty word or spoken form"));
            }
            p.insert(k, v);
        }
        Ok(p)
    }

    /// Reads an override file.
    pub fn load(path: &Path) -> Result<Self> {
        let src = std::fs::read_to_string(path)
            .map_err(|cause| TextError::Io { path: path.to_path_buf(), cause })?;
        Self::parse(&src, path)
    }

    /// The project's list: `pronunciations.txt` next to the manuscript, empty when absent.
    pub fn beside(manuscript: &Path) -> Result<Self> {
        let dir = manuscript.parent().unwrap_or(Path::new("."));
        let path = dir.join(PROJECT_FILE);
        if path.is_file() { Self::load(&path) } else { Ok(Self::default()) }
    }

    /// Adds (or replaces) one override.
    pub fn insert(&mut self, word: &str, spoken: &str) {
        let first = first_word(word).to_lowercase();
        let list = self.by_first_word.entry(first).or_default();
        list.retain(|(k, _)| k != word);
        list.push((word.to_string(), spoken.to_string()));
        list.sort_by_key(|(k, _)| std::cmp::Reverse(k.len()));
    }

    pub fn is_empty(&self) -> bool {
        self.by_first_word.is_empty()
    }

    /// The override matching at the start of `text` (whose first word is `word`), as
    /// (matched byte length, spoken form). The match must end at a word boundary.
    pub fn lookup<'a>(&'a self, text: &str, word: &str) -> Option<(usize, &'a str)> {
        let list = self.by_first_word.get(&word.to_lowercase())?;
        let boundary = |n: usize| !text[n..].chars().next().is_some_and(char::is_alphanumeric);
        let exact = list.iter().find(|(k, _)| text.starts_with(k.as_str()) && boundary(k.len()));
        let found = exact.or_else(|| {
            list.iter().find(|(k, _)| {
                text.get(..k.len()).is_some_and(|t| t.eq_ignore_ascii_case(k)) && boundary(k.len())
            })
        });
        found.map(|(k, v)| (k.len(), v.as_str()))
    }
}

/// The leading run of alphanumerics (and apostrophes) of `s`.
pub fn first_word(s: &str) -> &str {
    let end = s
        .char_indices()
        .find(|&(_, c)| !(c.is_alphanumeric() || c == '\'' || c == '’'))
        .map_or(s.len(), |(i, _)| i);
    &s[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_matches_whole_words() {
        let src = "# names\nNguyen = Win\nPh.D. = P H D\nSQL = sequel\n";
        let p = Pronunciations::parse(src, Path::new("p.txt")).unwrap();
        assert_eq!(p.lookup("Nguyen said", "Nguyen"), Some((6, "Win")));
        assert_eq!(p.lookup("Nguyens", "Nguyens"), None);
        assert_eq!(p.lookup("sql is", "sql"), Some((3, "sequel")));
        assert_eq!(p.lookup("Ph.D. thesis", "Ph"), Some((5, "P H D")));
        let e = Pronunciations::parse("a\nbad line", Path::new("p.txt")).unwrap_err();
        assert!(Pronunciations::beside(Path::new("/nonexistent/book.md")).unwrap().is_empty());
        assert!(e.to_string().contains("p.txt:1"), "{e}");
    }
}
