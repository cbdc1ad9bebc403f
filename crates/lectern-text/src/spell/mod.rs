//! Numbers spelled out in French, German, Spanish, Italian and Russian, in the run's language:
//! cardinals (`1 000 000`, `1.000.000`), ordinals (`1er`, `2e`, `3.`, `1º`, `5-й`), decimals
//! (decimal comma), negatives, dates (`1er mai 1999`, `3. Mai 1999`, `3 мая 1999 года`), times
//! (`9 h 30`, `21:00`), currency (`12 €`, `5,50 $`, `€12`), percentages and common units
//! (`km`, `kg`, `°C`, …). Everything else of the text is read as written
//! ([`crate::normalize::normalize_kept_at`]: pronunciations, special tokens, spacing, emoji).
//!
//! The words of numbers come from `num2words2-core`, a maintained Rust port of Python's
//! num2words (120+ languages, cardinals, ordinals, Russian cases and genders), not from hand
//! tables. Checked against CLDR's spell-out rules on 21, 71, 80, 91, 101, 1000, 1999, 2023,
//! 1 000 000 and the ordinals 1st/2nd/21st (tests below): French, German, Spanish and Russian
//! agree (French writes `cent un` where CLDR's 1990 spelling writes `cent-un`, said alike);
//! Italian drops the accent of compounds in `-tré` (`ventitre`), which `it` puts back. The
//! `n2words` library is npm-only (no crate), and the `num2words` crate knows only English,
//! French and Ukrainian. The grammar around the number (gender before a noun, the German
//! ordinal's ending, the Russian date's case, plural units) is this module's, per language.

mod de;
mod es;
mod fr;
mod it;
mod number;
mod ru;

use num_bigint::BigInt;
use num2words2_core::{KwVal, Kwargs, Lang as Words};

use crate::mapped::Mapped;
use crate::normalize::{Lang, normalize_at, normalize_kept_at, script_runs};
use crate::pronounce::Pronunciations;
use number::{Num, scan};

/// A language whose numbers are spelled here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Language {
    Fr,
    De,
    Es,
    It,
    Ru,
}

impl Language {
    /// The language of a BCP 47 primary subtag (`fr`, `de`, …).
    #[must_use]
    pub fn from_subtag(primary: &str) -> Option<Self> {
        match primary.to_ascii_lowercase().as_str() {
            "fr" => Some(Self::Fr),
            "de" => Some(Self::De),
            "es" => Some(Self::Es),
            "it" => Some(Self::It),
            "ru" => Some(Self::Ru),
            _ => None,
        }
    }

    fn rules(self) -> &'static dyn Rules {
        match self {
            Self::Fr => &fr::Fr,
            Self::De => &de::De,
            Self::Es => &es::Es,
            Self::It => &it::It,
            Self::Ru => &ru::Ru,
        }
    }
}

/// Grammatical gender of what a number counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Gender {
    Masculine,
    Feminine,
    Neuter,
}

/// A unit's forms: after 1 (`one`), after Russian 2–4 (`few`), after the rest (`many`), and its
/// gender (for the number before it).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Unit {
    pub one: &'static str,
    pub few: &'static str,
    pub many: &'static str,
    pub gender: Gender,
}

impl Unit {
    pub(crate) const fn new(one: &'static str, many: &'static str, gender: Gender) -> Self {
        Self { one, few: many, many, gender }
    }

    pub(crate) const fn ru(
        one: &'static str,
        few: &'static str,
        many: &'static str,
        gender: Gender,
    ) -> Self {
        Self { one, few, many, gender }
    }
}

/// A currency: its sign, its unit and its hundredth.
pub(crate) struct Currency {
    pub sign: &'static str,
    pub unit: Unit,
    pub cents: Unit,
}

/// What a language says around its numbers.
pub(crate) trait Rules: Sync {
    fn words(&self) -> &dyn Words;
    /// Thousands separators besides spaces (`.` in German, Spanish and Italian).
    fn group_dot(&self) -> bool;
    fn minus(&self) -> &'static str;
    /// The word for the decimal comma.
    fn point(&self) -> &'static str;
    fn percent(&self) -> Unit;
    fn units(&self) -> &'static [(&'static str, Unit)];
    fn currencies(&self) -> &'static [Currency];

    /// A cardinal before a noun of this gender (`None`: said alone, `eins`, `uno`).
    fn cardinal(&self, n: u64, _gender: Option<Gender>) -> String {
        plain_cardinal(self.words(), n)
    }

    /// Which unit form follows `n` (`frac`: it has a decimal part).
    fn form(&self, unit: &Unit, n: u64, frac: bool) -> &'static str {
        if n == 1 && !frac { unit.one } else { unit.many }
    }

    /// An ordinal written with a suffix right after the digits (`1er`, `2e`, `1º`, `5-й`):
    /// its length and words, given the word before the number.
    fn ordinal_suffix(&self, n: u64, rest: &str, before: &str) -> Option<(usize, String)>;

    /// A bare number that is an ordinal or a year by what surrounds it (German `3. Mai`,
    /// Italian `1 maggio`, Russian `3 мая`, `1999 года`): the length it takes after the digits
    /// and its words.
    fn in_context(&self, num: &Num, rest: &str, before: &str) -> Option<(usize, String)>;

    /// A time of day (`21:00`, `9 h 30`).
    fn time(&self, h: u64, m: u64) -> String;

    /// The words that number what follows them in roman numerals (`Chapitre IV`, `Kapitel II`),
    /// lower-case, each with the gender of the number after it.
    fn numbering_words(&self) -> &'static [(&'static str, Gender)] {
        &[]
    }

    /// A roman numeral after a numbering word of this gender: the number said alone, as after
    /// a noun ("Kapitel zwei"; French says "chapitre premier" for one).
    fn numbered(&self, n: u64, _gender: Gender) -> String {
        self.cardinal(n, None)
    }

    /// How a decimal's fraction digits are read after the point word.
    fn fraction(&self, digits: &str) -> String {
        leading_zeros_then_cardinal(self, digits)
    }

    /// A decimal number (`3,14`): the integer, the point word, the fraction.
    fn decimal(&self, int: u64, digits: &str) -> String {
        format!("{} {} {}", self.cardinal(int, None), self.point(), self.fraction(digits))
    }

    /// An amount of money: `int` units and `cents`.
    fn money(&self, int: u64, cents: Option<u64>, c: &Currency) -> String {
        let unit = self.form(&c.unit, int, false);
        let whole = format!("{} {unit}", self.cardinal(int, Some(c.unit.gender)));
        match cents {
            Some(k) if k > 0 => format!("{whole} {}", self.cardinal(k, None)),
            _ => whole,
        }
    }
}

/// The cardinal the words give (the digits themselves should they fail).
pub(crate) fn plain_cardinal(words: &dyn Words, n: u64) -> String {
    words.to_cardinal(&BigInt::from(n)).unwrap_or_else(|_| n.to_string())
}

/// The ordinal the words give.
pub(crate) fn plain_ordinal(words: &dyn Words, n: u64) -> String {
    words.to_ordinal(&BigInt::from(n)).unwrap_or_else(|_| n.to_string())
}

/// Ordinals and cardinals with grammatical options (Russian case, gender, number).
pub(crate) fn with_kwargs(words: &dyn Words, n: u64, ordinal: bool, kw: &[(&str, &str)]) -> String {
    let kw =
        Kwargs(kw.iter().map(|(k, v)| ((*k).to_string(), KwVal::Str((*v).to_string()))).collect());
    let n = BigInt::from(n);
    let out = if ordinal { words.to_ordinal_kw(&n, &kw) } else { words.to_cardinal_kw(&n, &kw) };
    out.unwrap_or_else(|_| n.to_string())
}

/// Fraction digits as most languages read them: each leading zero, then the rest as a number
/// (`05` → "zéro cinq").
fn leading_zeros_then_cardinal<R: Rules + ?Sized>(rules: &R, digits: &str) -> String {
    let zeros = digits.len() - digits.trim_start_matches('0').len();
    let mut words: Vec<String> = vec![rules.cardinal(0, None); zeros];
    let rest = &digits[zeros..];
    if let Ok(n) = rest.parse::<u64>() {
        words.push(rules.cardinal(n, None));
    }
    words.join(" ")
}

/// Reads digit by digit (`14` → "eins vier").
pub(crate) fn digit_by_digit<R: Rules + ?Sized>(rules: &R, digits: &str) -> String {
    digits
        .chars()
        .filter_map(|c| c.to_digit(10))
        .map(|d| rules.cardinal(u64::from(d), None))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Normalises text in a spelled language: CJK runs as Chinese, the rest with this module's
/// numbers and the text between them as written.
pub fn normalize_runs_at(
    text: &str,
    base: usize,
    language: Language,
    prons: &Pronunciations,
) -> Mapped {
    let mut out = Mapped::default();
    for (range, lang) in script_runs(text) {
        let (piece, at) = (&text[range.clone()], base + range.start);
        out.append(match lang {
            Lang::Zh => normalize_at(piece, at, Lang::Zh, prons),
            Lang::En => spell_at(piece, at, language, prons),
        });
    }
    out
}

/// Spells the numbers of `text` (offsets from `base`); the rest is read as written.
pub fn spell_at(text: &str, base: usize, language: Language, prons: &Pronunciations) -> Mapped {
    let rules = language.rules();
    let mut out = Mapped::default();
    let mut plain = 0;
    let mut i = 0;
    while i < text.len() {
        let at_word_start = !text[..i].chars().next_back().is_some_and(char::is_alphanumeric);
        let spelled = if at_word_start { expression(rules, text, i) } else { None };
        let Some((len, words)) = spelled else {
            i += text[i..].chars().next().map_or(1, char::len_utf8);
            continue;
        };
        out.append(normalize_kept_at(&text[plain..i], base + plain, prons));
        out.push_replace(&words, base + i..base + i + len);
        i += len;
        plain = i;
    }
    out.append(normalize_kept_at(&text[plain..], base + plain, prons));
    out
}

/// The number expression at `i` (a currency sign, a minus, digits, and what follows them), if
/// any: its length and its words.
fn expression(rules: &dyn Rules, text: &str, i: usize) -> Option<(usize, String)> {
    let rest = &text[i..];
    let before = previous_word(&text[..i]);
    if let Some(c) = rules.currencies().iter().find(|c| rest.starts_with(c.sign)) {
        let after = &rest[c.sign.len()..];
        let num = scan(after, rules.group_dot())?;
        return Some((c.sign.len() + num.len, rules.money(num.int, num.cents(), c)));
    }
    if let Some(sign) = ['-', '\u{2212}'].iter().find(|s| rest.starts_with(**s)) {
        let after = &rest[sign.len_utf8()..];
        if !after.starts_with(|c: char| c.is_ascii_digit()) || before_is_digit(&text[..i]) {
            return None;
        }
        let (n, words) = number_expression(rules, after, "")?;
        return Some((sign.len_utf8() + n, format!("{} {words}", rules.minus())));
    }
    if let Some(numbered) = roman_after_numbering_word(rules, rest, before) {
        return Some(numbered);
    }
    if !rest.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    number_expression(rules, rest, before)
}

/// A capital roman numeral right after a numbering word (`Chapitre IV`, `Kapitel II`): its
/// length and words. Elsewhere a roman numeral is left as written (it may be a word or a name).
fn roman_after_numbering_word(
    rules: &dyn Rules,
    rest: &str,
    before: &str,
) -> Option<(usize, String)> {
    let before = before.to_lowercase();
    let &(_, gender) = rules.numbering_words().iter().find(|(w, _)| *w == before)?;
    let len = rest.bytes().take_while(u8::is_ascii_uppercase).count();
    if rest[len..].starts_with(char::is_alphanumeric) {
        return None;
    }
    let n = crate::normalize::roman_value(&rest[..len])?;
    Some((len, rules.numbered(n, gender)))
}

fn before_is_digit(s: &str) -> bool {
    s.trim_end().chars().next_back().is_some_and(|c| c.is_ascii_digit())
}

/// The word right before a number (`am`, `le`), for the rules that look back.
fn previous_word(s: &str) -> &str {
    let s = s.trim_end();
    let start = s
        .char_indices()
        .rev()
        .find(|(_, c)| !c.is_alphanumeric())
        .map_or(0, |(k, c)| k + c.len_utf8());
    &s[start..]
}

/// Digits at the start of `rest` and what they make with what follows: a time, an ordinal, a
/// unit, a currency, a percentage, a date's parts, or a plain number.
fn number_expression(rules: &dyn Rules, rest: &str, before: &str) -> Option<(usize, String)> {
    if let Some((len, h, m)) = number::time(rest) {
        return Some((len, rules.time(h, m)));
    }
    let num = scan(rest, rules.group_dot())?;
    let after = &rest[num.len..];
    if num.frac.is_none() {
        if let Some((n, words)) = rules.ordinal_suffix(num.int, after, before) {
            return Some((num.len + n, words));
        }
        if let Some((n, words)) = rules.in_context(&num, after, &before.to_lowercase()) {
            return Some((num.len + n, words));
        }
    }
    if let Some((n, words)) = with_unit(rules, &num, after) {
        return Some((num.len + n, words));
    }
    Some((num.len, say(rules, &num, None)))
}

/// A number as said before a noun of `gender` (`None`: alone).
fn say(rules: &dyn Rules, num: &Num, gender: Option<Gender>) -> String {
    match &num.frac {
        Some(digits) => rules.decimal(num.int, digits),
        None => rules.cardinal(num.int, gender),
    }
}

/// Whether a unit, currency or percent sign follows (a space between allowed).
pub(crate) fn unit_follows(rules: &dyn Rules, rest: &str) -> bool {
    let num = Num { int: 2, frac: None, len: 0 };
    with_unit(rules, &num, rest).is_some()
}

/// A unit, currency or percent sign after the number (a space between allowed): the length
/// from the number's end and the words.
fn with_unit(rules: &dyn Rules, num: &Num, after: &str) -> Option<(usize, String)> {
    let gap = after.len() - after.trim_start_matches([' ', '\u{a0}', '\u{202f}']).len();
    let sign_at = &after[gap..];
    let ends = |len: usize| !sign_at[len..].starts_with(char::is_alphanumeric);
    if let Some(c) = rules.currencies().iter().find(|c| sign_at.starts_with(c.sign)) {
        return Some((gap + c.sign.len(), rules.money(num.int, num.cents(), c)));
    }
    let percent = rules.percent();
    if sign_at.starts_with('%') {
        let form = rules.form(&percent, num.int, num.frac.is_some());
        return Some((gap + 1, format!("{} {form}", say(rules, num, Some(percent.gender)))));
    }
    let (sign, unit) =
        rules.units().iter().find(|(s, _)| sign_at.starts_with(s) && ends(s.len()))?;
    let form = rules.form(unit, num.int, num.frac.is_some());
    Some((gap + sign.len(), format!("{} {form}", say(rules, num, Some(unit.gender)))))
}

#[cfg(test)]
mod tests;
