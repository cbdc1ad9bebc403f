//! English rules: what a narrator says for numbers, dates, roman numerals, units, money,
//! abbreviations, addresses, web addresses and signs.
//!
//! Every rule is a small function from the text around the cursor ([`At`]) to a [`Reading`],
//! or `None` when it does not apply. The rules are tried in order, most specific first (a
//! phone number before a cardinal, a date before a year); the first that applies wins. A rule
//! reads its match piece by piece so the parts it says as written stay copies of the source.

pub(crate) mod numbers;

mod abbreviations;
mod codes;
mod dates;
mod fractions;
mod money;
mod roman;

pub(crate) use dates::MONTHS;
pub(crate) use roman::roman_value;
mod symbols;
mod times;
mod units;
mod web;

use super::Normalizer;
use numbers::scan_number;

/// The text around the cursor: the source before it (within this piece) and from it on.
#[derive(Clone, Copy, Debug)]
pub(crate) struct At<'a> {
    pub before: &'a str,
    pub rest: &'a str,
}

impl<'a> At<'a> {
    /// The word just before the cursor, past one space, with its trailing dot ("vol." in
    /// "vol. xlviii"); empty when the cursor does not follow a word and a space.
    pub fn prev_word(&self) -> &'a str {
        let Some(b) = self.before.strip_suffix(' ') else { return "" };
        let start = b
            .char_indices()
            .rev()
            .find(|&(_, c)| !(c.is_alphanumeric() || c == '.'))
            .map_or(0, |(i, c)| i + c.len_utf8());
        &b[start..]
    }

    /// The char right after the first `n` bytes.
    pub fn char_after(&self, n: usize) -> Option<char> {
        self.rest.get(n..).and_then(|s| s.chars().next())
    }

    /// Whether a word continues after the first `n` bytes (a letter or digit follows).
    pub fn word_goes_on(&self, n: usize) -> bool {
        self.char_after(n).is_some_and(char::is_alphanumeric)
    }
}

/// A reading of the source at the cursor: consecutive pieces of (source bytes, spoken text).
/// A piece spoken exactly as written is copied, so spans inside it stay byte-exact.
pub(crate) type Reading = Vec<(usize, String)>;

/// A reading of one piece.
pub(crate) fn said(n: usize, spoken: impl Into<String>) -> Reading {
    vec![(n, spoken.into())]
}

type Rule = fn(At<'_>) -> Option<Reading>;

/// Rules for a numeral at a word start, most specific first; [`plain_number`] is the last.
const NUMBER_RULES: &[Rule] = &[
    codes::phone,
    dates::iso_date,
    times::clock,
    dates::year_range,
    dates::day_month,
    codes::house_number,
    codes::version,
    codes::digit_code,
    money::shillings_and_pence,
    dates::old_ordinal,
    money::pence,
    plain_number,
];

/// Rules for a word (a letter at a word start); a word none of them reads is copied.
const WORD_RULES: &[Rule] = &[
    web::url,
    web::email,
    web::domain,
    roman::regnal,
    roman::numbered,
    roman::war,
    roman::heading,
    dates::month_day,
    abbreviations::state,
    abbreviations::compass,
    money::pounds_l,
    codes::letter_code,
    abbreviations::abbreviation,
];

/// Rules for any other char (signs, marks, vulgar fractions).
const SIGN_RULES: &[Rule] = &[
    codes::phone,
    money::currency,
    fractions::vulgar,
    codes::hash_number,
    codes::leading_point,
    symbols::sign_before_number,
    symbols::sign,
];

impl Normalizer<'_> {
    pub(super) fn step_en(&mut self, c: char) -> bool {
        let at = At { before: &self.s[..self.i], rest: self.rest() };
        let rules = if c.is_ascii_digit() {
            if !self.at_word_start() {
                return false;
            }
            NUMBER_RULES
        } else if c.is_alphabetic() {
            if !self.at_word_start() {
                return false;
            }
            WORD_RULES
        } else {
            SIGN_RULES
        };
        if let Some(reading) = rules.iter().find_map(|rule| rule(at)) {
            self.say(reading);
            return true;
        }
        if c.is_alphabetic() {
            // Word by word, so a rule or a pronunciation matches only at a word's start.
            let n = crate::pronounce::first_word(self.rest()).len().max(1);
            self.copy(n);
            return true;
        }
        false
    }

    /// Writes a reading: pieces said as written are copied, the others replaced.
    fn say(&mut self, reading: Reading) {
        for (n, spoken) in reading {
            if self.s[self.i..self.i + n] == spoken {
                self.copy(n);
            } else {
                self.replace(n, &spoken);
            }
        }
    }
}

/// A numeral no more specific rule read: an ordinal (`21st`), a decade (`1980s`), a fraction
/// (`3/4`, `1½`, `22⁄3`), an angle or temperature (`30° 31′`, `40° F.`), a percentage, a
/// quantity with its unit (`5 kg`), a year (`1984`, any bare 4-digit number from 1100 to 2099)
/// or a cardinal.
fn plain_number(at: At<'_>) -> Option<Reading> {
    let num = scan_number(at.rest)?;
    let after = &at.rest[num.len..];
    if let Some(r) = ordinal_suffix(at, &num) {
        return Some(r);
    }
    if let Some(r) = decade(at, &num) {
        return Some(r);
    }
    if let Some(r) = fractions::after_number(at, &num) {
        return Some(r);
    }
    if let Some(r) = units::angle(at, &num) {
        return Some(r);
    }
    if after.starts_with('%') {
        return Some(said(num.len + 1, format!("{} percent", num.words_en())));
    }
    if let Some(r) = units::quantity(at, &num) {
        return Some(r);
    }
    let spoken = if num.is_year_like() && !at.word_goes_on(num.len) {
        numbers::year_en(num.int_value().unwrap_or(0))
    } else {
        num.words_en()
    };
    Some(said(num.len, spoken))
}

/// `1st`, `22nd`, `103rd`, `4th` (either case) → the ordinal.
fn ordinal_suffix(at: At<'_>, num: &numbers::Num) -> Option<Reading> {
    if !num.is_plain_int() {
        return None;
    }
    let after = &at.rest[num.len..];
    let suf = ["st", "nd", "rd", "th", "ST", "ND", "RD", "TH"]
        .into_iter()
        .find(|s| after.starts_with(s) && !at.word_goes_on(num.len + 2))?;
    Some(said(num.len + suf.len(), numbers::ordinal_en(num.int_value()?)))
}

/// `1980s` → "nineteen eighties", `1800s` → "eighteen hundreds".
fn decade(at: At<'_>, num: &numbers::Num) -> Option<Reading> {
    let after = &at.rest[num.len..];
    if !(num.is_year_like() && after.starts_with('s') && !at.word_goes_on(num.len + 1)) {
        return None;
    }
    let w = numbers::year_en(num.int_value()?);
    let spoken = match w.strip_suffix('y') {
        Some(stem) => format!("{stem}ies"),
        None => format!("{w}s"),
    };
    Some(said(num.len + 1, spoken))
}

/// Whether an abbreviation's dot, followed by `after`, also ends the sentence: at the end of
/// the text, before a closing quote, or before a space and a capital letter.
pub(crate) fn dot_ends_sentence(after: &str) -> bool {
    let next = after.trim_start().chars().next();
    match next {
        None => true,
        Some('"' | '”' | '’' | '»') => !after.starts_with(char::is_whitespace),
        Some(c) => after.starts_with(char::is_whitespace) && c.is_uppercase(),
    }
}
