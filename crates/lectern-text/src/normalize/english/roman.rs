//! Roman numerals, read only where the context says they are numbers.
//!
//! Many English words are spelt with roman letters ("I", "MIX", "CIVIL", "DID", "mi", "dim",
//! "DC", "CD"), so a numeral is never read on its own: it must be well formed (the canonical
//! spelling of its value) *and* stand where numbers stand: after a monarch's or pope's name
//! ("Louis XVI" → "Louis the Sixteenth"), after a word that numbers divisions ("Chapter XII",
//! "vol. xlviii", "p. xiv"), in "World War I", or as a heading of its own ("IV.").

use super::numbers::{capitalised, cardinal_en, ordinal_en};
use super::{At, Reading, said};

/// The value of a well-formed roman numeral in one case (`XLVIII`, `xlviii`), up to 3999;
/// `None` for anything that is not the canonical spelling of its value ("IIII", "VX", "MIX"
/// is 1009 and is well formed, which is why context is required too).
pub(crate) fn roman_value(s: &str) -> Option<u64> {
    if s.is_empty()
        || !(s.bytes().all(|b| b.is_ascii_uppercase()) || s.bytes().all(|b| b.is_ascii_lowercase()))
    {
        return None;
    }
    let digit = |c: u8| match c.to_ascii_uppercase() {
        b'I' => Some(1),
        b'V' => Some(5),
        b'X' => Some(10),
        b'L' => Some(50),
        b'C' => Some(100),
        b'D' => Some(500),
        b'M' => Some(1000),
        _ => None,
    };
    let vals: Vec<u64> = s.bytes().map(digit).collect::<Option<_>>()?;
    let mut total = 0;
    for (k, &v) in vals.iter().enumerate() {
        if vals.get(k + 1).is_some_and(|&next| next > v) {
            total -= v as i64
        } else {
            total += v as i64
        }
    }
    let total = u64::try_from(total).ok().filter(|t| (1..4000).contains(t))?;
    (to_roman(total).eq_ignore_ascii_case(s)).then_some(total)
}

/// The canonical spelling of `n` (1..4000).
fn to_roman(mut n: u64) -> String {
    const TABLE: [(u64, &str); 13] = [
        (1000, "M"),
        (900, "CM"),
        (500, "D"),
        (400, "CD"),
        (100, "C"),
        (90, "XC"),
        (50, "L"),
        (40, "XL"),
        (10, "X"),
        (9, "IX"),
        (5, "V"),
        (4, "IV"),
        (1, "I"),
    ];
    let mut out = String::new();
    for (v, s) in TABLE {
        while n >= v {
            out.push_str(s);
            n -= v;
        }
    }
    out
}

/// The roman numeral word at the cursor: its length and value. The word must end there (no
/// letter, digit or apostrophe after it: "I'll" is not a numeral).
fn numeral_at(at: At<'_>) -> Option<(usize, u64)> {
    let n = at.rest.bytes().take_while(u8::is_ascii_alphabetic).count();
    if at.word_goes_on(n) || matches!(at.char_after(n), Some('\'' | '’')) {
        return None;
    }
    Some((n, roman_value(&at.rest[..n])?))
}

/// Names that take a regnal number; a numeral after them is an ordinal with "the".
const REGNAL_NAMES: &[&str] = &[
    "Adrian",
    "Alexander",
    "Alfonso",
    "Amenhotep",
    "Anne",
    "Antiochus",
    "Benedict",
    "Boniface",
    "Carlos",
    "Casimir",
    "Catherine",
    "Charles",
    "Christian",
    "Clement",
    "Constantine",
    "Darius",
    "David",
    "Edward",
    "Elizabeth",
    "Eric",
    "Ferdinand",
    "Francis",
    "Frederick",
    "Friedrich",
    "George",
    "Gregory",
    "Gustav",
    "Gustavus",
    "Haakon",
    "Harold",
    "Henri",
    "Henry",
    "Herod",
    "Innocent",
    "Isabella",
    "Ivan",
    "James",
    "John",
    "Joseph",
    "Julius",
    "Leo",
    "Leopold",
    "Louis",
    "Ludwig",
    "Malcolm",
    "Manuel",
    "Mary",
    "Maximilian",
    "Mehmed",
    "Murad",
    "Napoleon",
    "Nicholas",
    "Olaf",
    "Otto",
    "Paul",
    "Pedro",
    "Peter",
    "Philip",
    "Pius",
    "Ptolemy",
    "Ramesses",
    "Richard",
    "Robert",
    "Rudolf",
    "Selim",
    "Sixtus",
    "Stephen",
    "Suleiman",
    "Thutmose",
    "Umberto",
    "Urban",
    "Victor",
    "Wilhelm",
    "William",
    "Xerxes",
];

/// "Louis XVI" → "Louis the Sixteenth", "Henry VIII", "George III": an upper-case numeral
/// after a regnal name. "I" only where no lower-case word follows it, so "Henry I went" stays
/// a pronoun while "Henry I of England" and "Henry I." are the king.
pub(super) fn regnal(at: At<'_>) -> Option<Reading> {
    let name = at.prev_word();
    if !REGNAL_NAMES
        .iter()
        .any(|n| n.eq_ignore_ascii_case(name) && name.starts_with(char::is_uppercase))
    {
        return None;
    }
    let (n, v) = numeral_at(at)?;
    if !at.rest.starts_with(|c: char| c.is_ascii_uppercase()) {
        return None;
    }
    // No monarch or pope has passed XXX; a larger "numeral" is an initial ("Joseph M.
    // Terrell").
    if v > 30 || v == 1 && pronoun_follows(&at.rest[n..]) {
        return None;
    }
    Some(said(n, format!("the {}", capitalised(&ordinal_en(v)))))
}

/// Whether a lower-case word other than "of" follows (then "I" is the pronoun).
fn pronoun_follows(after: &str) -> bool {
    let Some(next) = after.strip_prefix(' ') else { return false };
    next.starts_with(|c: char| c.is_lowercase()) && !next.starts_with("of ")
}

/// Words that number the divisions of a book or a reference; a numeral after them is a
/// cardinal ("Chapter XII" → "Chapter twelve", "vol. xlviii" → "volume forty-eight").
const NUMBERING_WORDS: &[&str] = &[
    "act", "appendix", "article", "book", "canto", "chapter", "chap.", "ch.", "part", "plate",
    "psalm", "scene", "section", "stave", "vol.", "volume", "p.", "pp.", "page", "pages", "no.",
    "lecture", "figure", "fig.", "table", "vols.", "sect.", "sec.",
];

/// A numeral in either case after a numbering word ([`NUMBERING_WORDS`]) → the cardinal; the
/// word itself keeps the case it was written in ("SECTION IV" → "SECTION four"). Prose uses
/// some of these words too ("for my part I think", "the book I read"), so "I" needs a
/// capitalised word and no lower-case word after it, and a lower-case numeral needs an
/// abbreviation, "page", or a capitalised word before it.
pub(super) fn numbered(at: At<'_>) -> Option<Reading> {
    let written = at.prev_word();
    let word = written.to_lowercase();
    if !NUMBERING_WORDS.contains(&word.as_str()) {
        return None;
    }
    let (n, v) = numeral_at(at)?;
    let titled = written.starts_with(char::is_uppercase);
    let lower = at.rest.starts_with(|c: char| c.is_ascii_lowercase());
    if lower && !(titled || word.ends_with('.') || word.starts_with("page")) {
        return None;
    }
    if at.rest.starts_with('I') && v == 1 && (!titled || pronoun_follows(&at.rest[n..])) {
        return None;
    }
    Some(said(n, cardinal_en(v)))
}

/// "World War I", "War II": the wars are numbered with cardinals ("World War one").
pub(super) fn war(at: At<'_>) -> Option<Reading> {
    if !matches!(at.prev_word(), "War" | "WAR") {
        return None;
    }
    let (n, v) = numeral_at(at)?;
    (at.rest.starts_with(|c: char| c.is_ascii_uppercase()) && v <= 3)
        .then(|| said(n, cardinal_en(v)))
}

/// A heading that is only an upper-case numeral, or starts with one and a full stop, at the
/// start of the text: "IV." → "four.", "XXIV" → "twenty-four", "I. The Rabbi" → "one. The
/// Rabbi". Only the letters of chapter numbers (I, V, X: up to 39) count, so a lone "CD" or
/// "MIX" stays a word; "I" needs its full stop and must not be an initial ("I. M. Pei"),
/// since a bare "I" may be an emphasised pronoun.
pub(super) fn heading(at: At<'_>) -> Option<Reading> {
    if !at.before.trim().is_empty() || !at.rest.starts_with(|c: char| c.is_ascii_uppercase()) {
        return None;
    }
    let (n, v) = numeral_at(at)?;
    if !at.rest[..n].bytes().all(|b| matches!(b, b'I' | b'V' | b'X')) {
        return None;
    }
    let after = &at.rest[n..];
    let alone = after.trim().is_empty();
    let dotted = after.strip_prefix('.').is_some_and(|t| t.is_empty() || t.starts_with(' '));
    let initial = after.strip_prefix(". ").is_some_and(|t| {
        let b = t.as_bytes();
        b.first().is_some_and(u8::is_ascii_uppercase) && b.get(1) == Some(&b'.')
    });
    let ok = if v == 1 { dotted && !initial } else { (alone || dotted) && !initial };
    ok.then(|| said(n, cardinal_en(v)))
}
