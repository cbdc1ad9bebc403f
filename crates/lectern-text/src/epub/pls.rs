//! Pronunciation lexicons a book carries: manifest items of type `application/pls+xml` (W3C
//! Pronunciation Lexicon Specification 1.0), read into a [`Pronunciations`] list.
//!
//! A `<lexeme>`'s `<grapheme>`s are its words; its pronunciation is the first `<phoneme>` or
//! `<alias>` marked `prefer="true"`, else the first one. A phoneme is converted by
//! [`crate::ipa`] in the lexicon's `alphabet` (`ipa`, `x-sampa`; a phoneme's own `alphabet`
//! wins) for the lexicon's `xml:lang`; an alias is text read instead of the word. Lexicons are
//! applied in the order of their paths, and the first entry for a word wins. Whatever cannot be
//! used (a symbol with no CosyVoice3 unit, another language, an unreadable file, a word that
//! does not start with a letter or digit) is a warning naming the lexicon and the word: the
//! book is still read, with that word as printed.

use quick_xml::events::{BytesStart, Event};

use super::Container;
use super::package::{Package, attr, local, reader, resolve_ref, xml_error};
use crate::Pronunciations;
use crate::ipa::{self, Alphabet};

/// The PLS media type.
pub(super) const MEDIA_TYPE: &str = "application/pls+xml";

/// How many words a warning about a whole lexicon names before it says how many more.
const NAMED_WORDS: usize = 5;

/// Every lexicon of the manifest, merged, with the warnings about what could not be used.
pub(super) fn book_lexicon(
    container: &mut Container,
    pkg: &Package,
) -> (Pronunciations, Vec<String>) {
    let mut files: Vec<&str> = pkg
        .manifest
        .values()
        .filter(|i| i.media_type.eq_ignore_ascii_case(MEDIA_TYPE))
        .map(|i| i.href.as_str())
        .collect();
    files.sort_unstable();
    let mut prons = Pronunciations::default();
    let mut warnings = Vec::new();
    for file in files {
        match container.text(file, "the manifest lists it as a pronunciation lexicon") {
            Ok(xml) => read_lexicon(&xml, file, &mut prons, &mut warnings),
            Err(e) => warnings.push(format!("{file}: pronunciation lexicon not read: {e}")),
        }
    }
    (prons, warnings)
}

/// One pronunciation as written: a phoneme (with its alphabet) or an alias.
#[derive(Debug, Clone)]
enum Said {
    Phoneme { text: String, alphabet: Option<String> },
    Alias(String),
}

/// A `<lexeme>` being read.
#[derive(Debug, Default)]
struct Lexeme {
    graphemes: Vec<String>,
    said: Vec<Said>,
    preferred: Option<usize>,
}

/// The lexicon's own settings.
#[derive(Debug, Default)]
struct Header {
    alphabet: Option<String>,
    language: Option<String>,
}

/// Reads one lexicon into `prons` (words it already has keep their entry).
fn read_lexicon(xml: &str, file: &str, prons: &mut Pronunciations, warnings: &mut Vec<String>) {
    match lexemes(xml) {
        Ok((header, lexemes)) => {
            let mut failed: Vec<(String, String)> = Vec::new();
            for lexeme in lexemes {
                apply(&lexeme, &header, prons, &mut failed);
            }
            warnings.extend(summarise(file, failed));
        }
        Err(reason) => warnings.push(format!("{file}: pronunciation lexicon not read: {reason}")),
    }
}

/// A lexeme's pronunciation for each of its words; failures as (word, reason).
fn apply(
    lexeme: &Lexeme,
    header: &Header,
    prons: &mut Pronunciations,
    failed: &mut Vec<(String, String)>,
) {
    let Some(said) =
        lexeme.preferred.or((!lexeme.said.is_empty()).then_some(0)).map(|k| &lexeme.said[k])
    else {
        for g in &lexeme.graphemes {
            failed.push((g.clone(), "the lexeme has no <phoneme> or <alias>".into()));
        }
        return;
    };
    let spoken = match said {
        Said::Alias(text) => Ok(text.clone()),
        Said::Phoneme { text, alphabet } => {
            convert(text, alphabet.as_ref().or(header.alphabet.as_ref()), header)
        }
    };
    for g in &lexeme.graphemes {
        match &spoken {
            _ if !g.starts_with(char::is_alphanumeric) => failed.push((
                g.clone(),
                "a word must start with a letter, digit or ideograph to be matched".into(),
            )),
            Ok(s) if !s.trim().is_empty() => {
                if !prons.contains(g) {
                    prons.insert(g, s);
                }
            }
            Ok(_) => failed.push((g.clone(), "the alias is empty".into())),
            Err(reason) => failed.push((g.clone(), reason.clone())),
        }
    }
}

/// A phoneme → CosyVoice3 units (PLS says IPA when the lexicon names no alphabet).
fn convert(text: &str, alphabet: Option<&String>, header: &Header) -> Result<String, String> {
    let name = alphabet.map_or("ipa", String::as_str);
    let alphabet = Alphabet::from_name(name)
        .ok_or_else(|| format!("alphabet `{name}` is not supported (ipa or x-sampa)"))?;
    ipa::to_units(text, alphabet, header.language.as_deref()).map_err(|e| e.to_string())
}

/// Warnings for the words that could not be used: one per word, except that a reason shared
/// by many (a lexicon in a language with no phone set) is said once with the words it hit.
fn summarise(file: &str, failed: Vec<(String, String)>) -> Vec<String> {
    let mut by_reason: Vec<(String, Vec<String>)> = Vec::new();
    for (word, reason) in failed {
        match by_reason.iter_mut().find(|(r, _)| *r == reason) {
            Some((_, words)) => words.push(word),
            None => by_reason.push((reason, vec![word])),
        }
    }
    by_reason
        .into_iter()
        .map(|(reason, words)| {
            let named: Vec<String> =
                words.iter().take(NAMED_WORDS).map(|w| format!("`{w}`")).collect();
            let more = words.len().saturating_sub(NAMED_WORDS);
            let more = if more > 0 { format!(" and {more} more") } else { String::new() };
            format!("{file}: {}{more} not applied (read as printed): {reason}", named.join(", "))
        })
        .collect()
}

/// Which element's text is being read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reading {
    Grapheme,
    Phoneme,
    Alias,
}

/// The lexicon's header and its lexemes.
fn lexemes(xml: &str) -> Result<(Header, Vec<Lexeme>), String> {
    let mut r = reader(xml);
    let mut header = Header::default();
    let mut out = Vec::new();
    let mut lexeme: Option<Lexeme> = None;
    let mut reading: Option<(Reading, Option<String>, bool)> = None;
    let mut text = String::new();
    loop {
        match r.read_event().map_err(|e| xml_error(&r, &e))? {
            Event::Start(e) => {
                let name = local(&e);
                match name.as_str() {
                    "lexicon" => header = lexicon_header(&e),
                    "lexeme" => lexeme = Some(Lexeme::default()),
                    _ => {
                        reading =
                            element_reading(&name).map(|k| (k, attr(&e, "alphabet"), prefers(&e)));
                        text.clear();
                    }
                }
            }
            Event::Empty(e) if local(&e) == "lexicon" => header = lexicon_header(&e),
            Event::Text(t) if reading.is_some() => text.push_str(&t.xml10_content()),
            Event::CData(t) if reading.is_some() => text.push_str(&t.into_inner()),
            Event::GeneralRef(g) if reading.is_some() => text.push_str(&resolve_ref(&g)?),
            Event::End(e) => match e.local_name().as_ref() {
                "lexeme" => out.extend(lexeme.take()),
                _ => {
                    if let (Some((kind, alphabet, prefer)), Some(lx)) =
                        (reading.take(), lexeme.as_mut())
                    {
                        take_text(lx, kind, alphabet, prefer, &text);
                    }
                }
            },
            Event::Eof => break,
            _ => {}
        }
    }
    Ok((header, out))
}

fn lexicon_header(e: &BytesStart<'_>) -> Header {
    Header { alphabet: attr(e, "alphabet"), language: attr(e, "xml:lang") }
}

fn element_reading(name: &str) -> Option<Reading> {
    match name {
        "grapheme" => Some(Reading::Grapheme),
        "phoneme" => Some(Reading::Phoneme),
        "alias" => Some(Reading::Alias),
        _ => None,
    }
}

fn prefers(e: &BytesStart<'_>) -> bool {
    attr(e, "prefer").is_some_and(|p| p.trim() == "true")
}

/// An element's text into its lexeme: words with whitespace collapsed, phonemes trimmed.
fn take_text(lx: &mut Lexeme, kind: Reading, alphabet: Option<String>, prefer: bool, text: &str) {
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match kind {
        Reading::Grapheme if !collapsed.is_empty() => lx.graphemes.push(collapsed),
        Reading::Grapheme => {}
        Reading::Phoneme | Reading::Alias => {
            if prefer && lx.preferred.is_none() {
                lx.preferred = Some(lx.said.len());
            }
            lx.said.push(match kind {
                Reading::Phoneme => Said::Phoneme { text: collapsed, alphabet },
                _ => Said::Alias(collapsed),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(xml: &str) -> (Pronunciations, Vec<String>) {
        let mut prons = Pronunciations::default();
        let mut warnings = Vec::new();
        read_lexicon(xml, "EPUB/lexicon/en.pls", &mut prons, &mut warnings);
        (prons, warnings)
    }

    const LEXICON: &str = r#"<?xml version="1.0" encoding="utf-8"?>
<lexicon version="1.0" alphabet="ipa" xml:lang="en" xmlns="http://www.w3.org/2005/01/pronunciation-lexicon">
  <lexeme><grapheme>Savannah</grapheme><phoneme>səˈvænə</phoneme></lexeme>
  <lexeme><grapheme>W3C</grapheme><alias>World Wide Web Consortium</alias></lexeme>
  <lexeme><grapheme>Nguyen</grapheme><grapheme>Nguyễn</grapheme>
    <phoneme>wɪn</phoneme><phoneme prefer="true">ŋwiən</phoneme></lexeme>
  <lexeme><grapheme>tomato</grapheme><phoneme alphabet="x-sampa">t@"meItoU</phoneme></lexeme>
  <lexeme><grapheme>℔</grapheme><phoneme>ˈbʊʃəlz</phoneme></lexeme>
  <lexeme><grapheme>Ngaio</grapheme><phoneme>ˈnaɪʘ</phoneme></lexeme>
  <lexeme><grapheme>Savannah</grapheme><phoneme>ˈsævənə</phoneme></lexeme>
</lexicon>"#;

    #[test]
    fn lexemes_become_entries_and_failures_warnings() {
        let (p, warnings) = read(LEXICON);
        assert_eq!(p.lookup_at("Savannah", true), Some((8, "[S][AH0][V][AE1][N][AH0]")));
        assert_eq!(p.lookup_at("W3C", true), Some((3, "World Wide Web Consortium")));
        assert_eq!(p.lookup_at("Nguyen", true), Some((6, "[N][W][IY1][AH0][N]")));
        assert_eq!(p.lookup_at("Nguyễn", true), Some(("Nguyễn".len(), "[N][W][IY1][AH0][N]")));
        assert_eq!(p.lookup_at("tomato", true), Some((6, "[T][AH0][M][EY1][T][OW0]")));
        assert_eq!(warnings.len(), 2, "{warnings:#?}");
        assert!(warnings[0].starts_with("EPUB/lexicon/en.pls: `℔` not applied"), "{warnings:#?}");
        assert!(warnings[1].contains("`Ngaio`") && warnings[1].contains("`ʘ`"), "{warnings:#?}");
    }

    #[test]
    fn a_lexicon_in_another_language_is_one_warning() {
        let xml = r#"<lexicon version="1.0" alphabet="ipa" xml:lang="fr"><lexeme><grapheme>Paris</grapheme><phoneme>paʁi</phoneme></lexeme><lexeme><grapheme>Lyon</grapheme><phoneme>ljɔ̃</phoneme></lexeme><lexeme><grapheme>SNCF</grapheme><alias>S N C F</alias></lexeme></lexicon>"#;
        let (p, warnings) = read(xml);
        assert_eq!(p.lookup_at("SNCF", true), Some((4, "S N C F")));
        assert_eq!(warnings.len(), 1, "{warnings:#?}");
        assert!(warnings[0].contains("`Paris`, `Lyon` not applied"), "{warnings:#?}");
        assert!(warnings[0].contains("`fr`"), "{warnings:#?}");
        let (_, warnings) = read("<lexicon><lexeme><grapheme>a</lexeme></lexicon>");
        assert!(warnings[0].contains("not read: malformed XML"), "{warnings:#?}");
    }
}
