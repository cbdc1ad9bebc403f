//! Per-project pronunciation overrides: a text file of `word = spoken form` lines.
//!
//! Keys match whole words (a key may hold several words, e.g. `Ph.D. = P H D`); an exact-case
//! match wins over a case-insensitive one. A key in Chinese characters (`重庆`) matches
//! wherever it stands in Chinese text, which has no spaces between words. Blank lines and `#`
//! comments are ignored.
//!
//! The spoken form is what the model reads instead of the word, as it is (it is not normalised
//! again): a respelling (`Nguyen = Win`), or CosyVoice3's own units — CMU phones
//! (`Nguyen = [N][W][IY1][N]`) or pinyin initials and finals with tone marks
//! (`重庆 = [ch][óng][q][ìng]`) — which the tokenizer turns into their special ids. A
//! bracketed unit the tokenizer does not know is an error naming the file and line.
//!
//! A spoken form between slashes is IPA (`Nguyen = /ŋwiən/`), converted here by [`crate::ipa`]
//! to CMU phones (or, for a key in Chinese characters, pinyin units); a symbol it cannot
//! convert is an error naming the file, the line and the symbol. Slashes, not IPA's square
//! brackets, because `[…]` already means a CosyVoice3 unit.
//!
//! A book's own lexicon (EPUB PLS) is a list too; [`Pronunciations::over`] lays the project's
//! list over it, so the project's entry wins where both have a word.

use std::collections::HashMap;
use std::path::Path;

use super::cjk::is_cjk;
use super::ipa::{Alphabet, to_units};
use super::tokenizer::is_special_token_at;
use super::{Result, TextError};

/// The per-project override file, looked for next to the manuscript.
pub const PROJECT_FILE: &str = "pronunciations.txt";

/// The override list. Cheap to clone; empty by default.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pronunciations {
    /// Lower-cased first word → entries starting with it, longest key first.
    by_first_word: HashMap<String, Vec<(String, String)>>,
    /// First ideograph → entries in Chinese characters starting with it, longest key first.
    by_first_ideograph: HashMap<char, Vec<(String, String)>>,
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
            if !k.starts_with(char::is_alphanumeric) {
                return Err(err(&format!("`{k}` must start with a letter, digit or ideograph")));
            }
            let spoken = match ipa_body(v) {
                Some(ipa) => ipa_units(k, ipa).map_err(|reason| err(&reason))?,
                None => v.to_string(),
            };
            check_units(&spoken).map_err(|reason| err(&reason))?;
            p.insert(k, &spoken);
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
        let list = match word.chars().next() {
            Some(c) if is_cjk(c) => self.by_first_ideograph.entry(c).or_default(),
            _ => self.by_first_word.entry(first_word(word).to_lowercase()).or_default(),
        };
        list.retain(|(k, _)| k != word);
        list.push((word.to_string(), spoken.to_string()));
        list.sort_by_key(|(k, _)| std::cmp::Reverse(k.len()));
    }

    /// Whether `word` has an entry (exactly as written).
    pub fn contains(&self, word: &str) -> bool {
        self.entries().any(|(k, _)| k == word)
    }

    /// Every entry, as (word, spoken form).
    pub fn entries(&self) -> impl Iterator<Item = (&str, &str)> {
        self.by_first_word
            .values()
            .chain(self.by_first_ideograph.values())
            .flatten()
            .map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// This list laid over `book`'s (a book's own lexicon): every entry of `book` whose word
    /// this list also has, in any case, gives way to this list's.
    #[must_use]
    pub fn over(&self, book: &Self) -> Self {
        if book.is_empty() {
            return self.clone();
        }
        let mut merged = book.clone();
        for list in merged.by_first_word.values_mut().chain(merged.by_first_ideograph.values_mut())
        {
            list.retain(|(k, _)| !self.entries().any(|(own, _)| own.eq_ignore_ascii_case(k)));
        }
        merged.by_first_word.retain(|_, list| !list.is_empty());
        merged.by_first_ideograph.retain(|_, list| !list.is_empty());
        for (k, v) in self.entries() {
            merged.insert(k, v);
        }
        merged
    }

    pub fn is_empty(&self) -> bool {
        self.by_first_word.is_empty() && self.by_first_ideograph.is_empty()
    }

    /// The override matching at the start of `text`, as (matched byte length, spoken form):
    /// a Chinese key anywhere, any other only at a word's start (`at_word_start`).
    pub fn lookup_at<'a>(&'a self, text: &str, at_word_start: bool) -> Option<(usize, &'a str)> {
        let c = text.chars().next()?;
        if is_cjk(c) {
            let list = self.by_first_ideograph.get(&c)?;
            let (k, v) = list.iter().find(|(k, _)| text.starts_with(k.as_str()))?;
            return Some((k.len(), v.as_str()));
        }
        if !at_word_start || !c.is_alphanumeric() {
            return None;
        }
        self.lookup(text, first_word(text))
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

/// The IPA of a spoken form written `/…/`.
fn ipa_body(spoken: &str) -> Option<&str> {
    spoken.strip_prefix('/')?.strip_suffix('/').filter(|b| !b.trim().is_empty())
}

/// IPA → CosyVoice3 units: pinyin for a key in Chinese characters, else CMU phones.
fn ipa_units(key: &str, ipa: &str) -> std::result::Result<String, String> {
    let language = if key.starts_with(is_cjk) { "zh" } else { "en" };
    to_units(ipa, Alphabet::Ipa, Some(language)).map_err(|e| format!("IPA /{ipa}/: {e}"))
}

/// Checks that every bracketed unit of a spoken form is one the tokenizer knows (a CMU phone,
/// a pinyin unit or another CosyVoice3 special token), so a typo fails loudly instead of being
/// read out letter by letter.
fn check_units(spoken: &str) -> std::result::Result<(), String> {
    let mut rest = spoken;
    while let Some(k) = rest.find('[') {
        if rest[..k].contains(']') {
            return Err("a `]` without its `[`".into());
        }
        rest = &rest[k..];
        let Some(n) = is_special_token_at(rest) else {
            let unit = rest.find(']').map_or(rest, |e| &rest[..=e]);
            return Err(format!(
                "`{unit}` is not a CosyVoice3 unit: write CMU phones as in [N][W][IY1][N] or \
                 pinyin as in [ch][óng][q][ìng] (the units are listed in \
                 crates/lectern-text/src/cosyvoice3_special_tokens.txt)"
            ));
        };
        rest = &rest[n..];
    }
    match rest.find(']') {
        Some(_) => Err("a `]` without its `[`".into()),
        None => Ok(()),
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
        let units = "Nguyen = [N][W][IY1][N]\n重庆 = [ch][óng][q][ìng]\n";
        let p = Pronunciations::parse(units, Path::new("p.txt")).unwrap();
        assert_eq!(p.lookup_at("Nguyen.", true), Some((6, "[N][W][IY1][N]")));
        assert_eq!(p.lookup_at("Nguyen.", false), None);
        assert_eq!(p.lookup_at("重庆的火锅", false), Some((6, "[ch][óng][q][ìng]")));
        assert_eq!(p.lookup_at("重要", false), None);
        assert!(Pronunciations::beside(Path::new("/nonexistent/book.md")).unwrap().is_empty());
        assert!(e.to_string().contains("p.txt:1"), "{e}");
    }

    #[test]
    fn ipa_between_slashes_becomes_units() {
        let src =
            "Nguyen = /ŋwiən/\nSiobhan = /ʃɪˈvɔːn/\n重庆 = /ʈʂʰʊŋ³⁵ tɕʰiŋ⁵¹/\nand/or = and or\n";
        let p = Pronunciations::parse(src, Path::new("p.txt")).unwrap();
        assert_eq!(p.lookup_at("Nguyen.", true), Some((6, "[N][W][IY1][AH0][N]")));
        assert_eq!(p.lookup_at("Siobhan", true), Some((7, "[SH][IH0][V][AO1][N]")));
        assert_eq!(p.lookup_at("重庆的", false), Some((6, "[ch][óng][q][ìng]")));
        let e = Pronunciations::parse("# names\nA = B\nNgaio = /ŋaɪʘ/\n", Path::new("p.txt"));
        let e = e.unwrap_err().to_string();
        assert!(e.starts_with("p.txt:3: ") && e.contains("`ʘ`"), "{e}");
    }

    #[test]
    fn the_project_list_wins_over_the_book() {
        let p = |s: &str| Pronunciations::parse(s, Path::new("p.txt")).unwrap();
        let book = p("Savannah = [S][AH0][V][AE1][N][AH0]\nMacon = [M][EY1][K][AH0][N]\n");
        let project = p("savannah = Suh-van-uh\n");
        let merged = project.over(&book);
        assert_eq!(merged.lookup_at("Savannah", true), Some((8, "Suh-van-uh")));
        assert_eq!(merged.lookup_at("Macon", true), Some((5, "[M][EY1][K][AH0][N]")));
        assert_eq!(merged.entries().count(), 2);
        assert_eq!(project.over(&Pronunciations::default()), project);
    }
}
