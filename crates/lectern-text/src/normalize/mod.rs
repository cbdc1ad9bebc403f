//! Text normalisation (TN): written forms → spoken forms, keeping a map back to the source.
//!
//! Upstream (spec §5.2) runs the wetext FSTs when installed, then `spell_out_number` for English
//! or a list of Chinese clean-ups. We cannot ship the FSTs, so this is our own rule-based TN:
//!
//! * English: cardinals (`1,234` → "one thousand two hundred and thirty-four"), ordinals
//!   (`21st`), years (`1984` → "nineteen eighty-four"; any bare 4-digit number from 1100 to 2099
//!   reads as a year), decades (`1980s`), decimals, currency (`$3.50`, `£20`, `€5 million`),
//!   percentages, times (`3:30 pm`), simple fractions (`3/4`), negatives and common
//!   abbreviations (Mr., Dr., St., e.g., …). Line breaks become spaces, runs of blanks collapse.
//! * Chinese (the text holds a CJK ideograph, as upstream decides): Chinese numerals (`123` →
//!   一百二十三, `2024年` → 二零二四年, `3.5` → 三点五, `50%` → 百分之五十, `10:30` → 十点三十分),
//!   then upstream's clean-ups: delete line breaks, `replace_blank`, `²`/`³`, `.` → `。`,
//!   ` - ` → `，`, drop `（）【】` and backticks, `——` → space, trailing commas → `。`.
//! * CosyVoice3 special tokens (`<|…|>`, `[breath]`, `<strong>`, phones, pinyin; spec §5.3) are
//!   copied untouched wherever they occur.

mod chinese;
mod english;

pub(crate) use english::{MONTHS, roman_value};

pub use chinese::cardinal_zh;
pub use english::numbers::{cardinal_en, ordinal_en, year_en};

use super::cjk::is_cjk;
use super::mapped::Mapped;
use super::pronounce::{Pronunciations, first_word};
use super::tokenizer::is_special_token_at;

/// The language branch, decided per paragraph as upstream does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Lang {
    En,
    Zh,
}

impl Lang {
    /// `Zh` when the text holds a char in U+4E00..=U+9FFF (upstream `contains_chinese`).
    pub fn detect(text: &str) -> Self {
        if text.chars().any(is_cjk) { Self::Zh } else { Self::En }
    }
}

/// Symbols and units read aloud: (sign, English, Chinese). Longer signs first (`°C` before
/// `°`). Currency signs before a number are read with it by the number rules; these are the
/// signs on their own (`5 €`).
const SYMBOLS: &[(&str, &str, &str)] = &[
    ("°C", "degrees Celsius", "摄氏度"),
    ("℃", "degrees Celsius", "摄氏度"),
    ("°F", "degrees Fahrenheit", "华氏度"),
    ("℉", "degrees Fahrenheit", "华氏度"),
    ("°", "degrees", "度"),
    ("±", "plus or minus", "正负"),
    ("×", "times", "乘"),
    ("÷", "divided by", "除以"),
    ("→", "to", "到"),
    ("≈", "approximately", "约等于"),
    ("€", "euros", "欧元"),
    ("£", "pounds", "英镑"),
    ("$", "dollars", "美元"),
    ("¥", "yen", "日元"),
    ("₹", "rupees", "卢比"),
    ("%", "percent", "百分之"),
];

/// Pictographs, emoticons, dingbats, flags and skin tones (all within U+1F000–U+1FAFF):
/// nothing to say.
fn is_emoji(c: char) -> bool {
    matches!(c,
        '\u{1f000}'..='\u{1faff}' | '\u{2600}'..='\u{27bf}'
        | '\u{2b50}' | '\u{2b55}' | '\u{2300}'..='\u{23ff}')
}

/// Full-width and CJK punctuation (U+3000–U+303F, U+FF00–U+FFEF): Chinese wherever it stands.
fn is_cjk_punct(c: char) -> bool {
    ('\u{3000}'..='\u{303f}').contains(&c) || ('\u{ff00}'..='\u{ffef}').contains(&c)
}

/// The text's runs of one language: Chinese from a CJK ideograph or CJK punctuation, English
/// from a letter of any other script. A number written right against an ideograph (`2024年`,
/// `3个`) is Chinese. Other digits, spaces and signs go with the English text they lead into
/// (`« À demain`), else with the run before them (`pens (4)。`), so Chinese rules never touch
/// the spacing or numbers of English text.
pub fn script_runs(text: &str) -> Vec<(std::ops::Range<usize>, Lang)> {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let strong: Vec<Option<Lang>> = chars
        .iter()
        .map(|&(i, c)| {
            if is_cjk(c) || is_cjk_punct(c) {
                Some(Lang::Zh)
            } else if c.is_alphabetic() && !text[..i].ends_with('°') {
                // (`°C`'s letter is part of the unit, which has no language of its own.)
                Some(Lang::En)
            } else if c.is_ascii_digit() && number_touches_ideograph(&text[i..]) {
                Some(Lang::Zh)
            } else {
                None
            }
        })
        .collect();
    let mut runs: Vec<(std::ops::Range<usize>, Lang)> = Vec::new();
    let mut before: Option<Lang> = None;
    for (k, &(i, c)) in chars.iter().enumerate() {
        let lang = strong[k].unwrap_or_else(|| {
            let next = strong[k..].iter().find_map(|l| *l);
            match (before, next) {
                (_, Some(Lang::En)) => Lang::En,
                (Some(b), _) => b,
                (None, n) => n.unwrap_or(Lang::En),
            }
        });
        if strong[k].is_some() {
            before = Some(lang);
        }
        match runs.last_mut() {
            Some((r, l)) if *l == lang => r.end = i + c.len_utf8(),
            _ => runs.push((i..i + c.len_utf8(), lang)),
        }
    }
    runs
}

/// Whether the number starting `s` is followed directly by a CJK ideograph.
fn number_touches_ideograph(s: &str) -> bool {
    let after = s.trim_start_matches(|c: char| c.is_ascii_digit() || matches!(c, '.' | ',' | ':'));
    after.chars().next().is_some_and(is_cjk)
}

/// How the Latin-script (non-CJK) text of a run is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Latin {
    /// English rules: numbers, dates, currency, units, abbreviations, symbols.
    #[default]
    English,
    /// Another language (French, German, …): words, diacritics, numbers and signs pass
    /// through as written; only spacing is tidied and emoji dropped.
    Kept,
}

/// Normalises each run of [`script_runs`] in its own language: Chinese numerals and
/// punctuation only where the text is Chinese, English spacing and numbers elsewhere.
pub fn normalize_runs_at(text: &str, base: usize, prons: &Pronunciations) -> Mapped {
    normalize_runs_latin_at(text, base, Latin::English, prons)
}

/// [`normalize_runs_at`] with the Latin text read as `latin` says.
pub fn normalize_runs_latin_at(
    text: &str,
    base: usize,
    latin: Latin,
    prons: &Pronunciations,
) -> Mapped {
    let mut out = Mapped::default();
    for (range, lang) in script_runs(text) {
        let (piece, at) = (&text[range.clone()], base + range.start);
        out.append(match (lang, latin) {
            (Lang::En, Latin::Kept) => normalize_kept_at(piece, at, prons),
            _ => normalize_at(piece, at, lang, prons),
        });
    }
    out
}

/// Normalises text of a language we have no rules for: pronunciations, special tokens,
/// spacing and emoji only; words, numbers and signs are kept as written.
pub fn normalize_kept_at(text: &str, base: usize, prons: &Pronunciations) -> Mapped {
    let mut n = Normalizer {
        s: text,
        i: 0,
        base,
        out: Mapped::default(),
        lang: Lang::En,
        prons,
        kept: true,
    };
    n.run();
    n.out
}

/// Normalises `text` (auto-detected language, no overrides) and returns the plain string.
pub fn normalize_str(text: &str) -> String {
    normalize(text, Lang::detect(text), &Pronunciations::default()).text
}

/// Normalises `text`; the result maps back to byte offsets of `text`.
pub fn normalize(text: &str, lang: Lang, prons: &Pronunciations) -> Mapped {
    normalize_at(text, 0, lang, prons)
}

/// Like [`normalize`], with source offsets shifted by `base`.
pub fn normalize_at(text: &str, base: usize, lang: Lang, prons: &Pronunciations) -> Mapped {
    let mut n =
        Normalizer { s: text, i: 0, base, out: Mapped::default(), lang, prons, kept: false };
    n.run();
    n.out
}

struct Normalizer<'a> {
    s: &'a str,
    i: usize,
    base: usize,
    out: Mapped,
    lang: Lang,
    prons: &'a Pronunciations,
    /// [`Latin::Kept`]: no language rules, text copied as written.
    kept: bool,
}

impl Normalizer<'_> {
    fn run(&mut self) {
        while self.i < self.s.len() {
            if !self.step() {
                let c = self.peek().expect("in bounds");
                let n = c.len_utf8();
                self.copy(n);
            }
        }
    }

    fn peek(&self) -> Option<char> {
        self.s[self.i..].chars().next()
    }

    fn prev(&self) -> Option<char> {
        self.s[..self.i].chars().next_back()
    }

    fn rest(&self) -> &str {
        &self.s[self.i..]
    }

    fn copy(&mut self, n: usize) {
        let (s, i) = (self.s, self.i);
        self.out.push_copy(&s[i..i + n], self.base + i);
        self.i += n;
    }

    fn replace(&mut self, n: usize, with: &str) {
        let at = self.base + self.i;
        self.out.push_replace(with, at..at + n);
        self.i += n;
    }

    fn at_word_start(&self) -> bool {
        !self.prev().is_some_and(|c| c.is_alphanumeric() || c == '_')
    }

    /// Tries every rule at the cursor; false when none applied (the char is copied).
    fn step(&mut self) -> bool {
        let c = self.peek().expect("in bounds");
        if (c == '<' || c == '[')
            && let Some(n) = is_special_token_at(self.rest())
        {
            self.copy(n);
            return true;
        }
        if c.is_whitespace() {
            if let Some(n) = self.emoji_before_mark() {
                self.replace(n, "");
                return true;
            }
            return self.whitespace();
        }
        if c.is_alphanumeric() && !self.prons.is_empty() {
            if let Some((n, spoken)) = self.prons.lookup_at(self.rest(), self.at_word_start()) {
                let spoken = spoken.to_string();
                self.replace(n, &spoken);
                return true;
            }
        }
        if is_emoji(c) {
            return self.drop_emoji();
        }
        if self.kept {
            // Word by word, so a pronunciation matches only at a word's start.
            let n = if c.is_alphanumeric() {
                first_word(self.rest()).len().max(1)
            } else {
                c.len_utf8()
            };
            self.copy(n);
            return true;
        }
        let done = match self.lang {
            Lang::En => self.step_en(c),
            Lang::Zh => self.step_zh(c),
        };
        done || self.symbol()
    }

    /// A symbol or unit read aloud in the run's language ([`SYMBOLS`]); English words are
    /// spaced from a letter or digit touching the sign.
    fn symbol(&mut self) -> bool {
        let rest = self.rest();
        let Some(&(sign, en, zh)) = SYMBOLS.iter().find(|(sign, _, _)| rest.starts_with(sign))
        else {
            return false;
        };
        // `°C` is a unit only when no letter follows (`°Cx` is something else).
        if sign.ends_with(|c: char| c.is_ascii_alphabetic())
            && rest[sign.len()..].starts_with(char::is_alphanumeric)
        {
            return false;
        }
        let spoken = match self.lang {
            Lang::Zh => zh.to_string(),
            Lang::En => {
                let word_before = self.prev().is_some_and(char::is_alphanumeric);
                let word_after = rest[sign.len()..].starts_with(char::is_alphanumeric);
                let pre = if word_before { " " } else { "" };
                let post = if word_after { " " } else { "" };
                format!("{pre}{en}{post}")
            }
        };
        self.replace(sign.len(), &spoken);
        true
    }

    /// Blanks then emoji before a mark or the end (`outside 🎉.`): their length, so all of it
    /// goes and no space is left before the mark.
    fn emoji_before_mark(&self) -> Option<usize> {
        let rest = self.rest();
        let blanks = rest.len() - rest.trim_start().len();
        let after = &rest[blanks..];
        let emoji = after
            .chars()
            .take_while(|&c| is_emoji(c) || matches!(c, '\u{200d}' | '\u{fe0f}' | '\u{fe0e}' | ' '))
            .map(char::len_utf8)
            .sum::<usize>();
        let next = after[emoji..].chars().next();
        let starts_with_emoji = after.chars().next().is_some_and(is_emoji);
        (starts_with_emoji && !next.is_some_and(|c| c.is_alphanumeric() || c == '[' || c == '<'))
            .then_some(blanks + emoji)
    }

    /// An emoji (with its modifiers, joiners and variation selectors) is not spoken.
    fn drop_emoji(&mut self) -> bool {
        let emoji_or_space =
            |c: char| is_emoji(c) || matches!(c, '\u{200d}' | '\u{fe0f}' | '\u{fe0e}') || c == ' ';
        let mut n: usize =
            self.rest().chars().take_while(|&c| emoji_or_space(c)).map(char::len_utf8).sum();
        // Keep one space between the words around it (the one before it, if any, stays).
        if !self.prev().is_none_or(char::is_whitespace) {
            n -= self.rest()[..n].len() - self.rest()[..n].trim_end_matches(' ').len();
        }
        self.replace(n, "");
        true
    }

    /// Collapses a blank run to one space (English) or applies `replace_blank` (Chinese).
    fn whitespace(&mut self) -> bool {
        let n = self.rest().find(|c: char| !c.is_whitespace()).unwrap_or(self.rest().len());
        let after = self.s[self.i + n..].chars().next();
        match self.lang {
            Lang::En => {
                if n == 1 && self.peek() == Some(' ') {
                    self.copy(1);
                } else {
                    self.replace(n, " ");
                }
            }
            Lang::Zh if self.rest().starts_with(" - ") => {
                self.replace(3, "，");
            }
            Lang::Zh => {
                // replace_blank: keep a space only between two non-space ASCII chars; digits
                // count as non-ASCII because they become Chinese numerals.
                let ascii = |c: Option<char>| {
                    c.is_some_and(|c| c.is_ascii() && !c.is_ascii_digit() && !c.is_whitespace())
                };
                let blanks = &self.s[self.i..self.i + n];
                if blanks.contains('\n') && !blanks.contains(' ') {
                    self.replace(n, "");
                } else if ascii(self.prev()) && ascii(after) {
                    self.replace(n, " ");
                } else {
                    self.replace(n, "");
                }
            }
        }
        true
    }
}

/// `H:MM` (H ≤ 24, MM < 60) with an optional ` am`/`pm`/`a.m.`/`p.m.`.
pub(crate) fn time_parts(s: &str) -> Option<(u64, u64, usize)> {
    let b = s.as_bytes();
    let nh = b.iter().take_while(|c| c.is_ascii_digit()).count();
    if !(1..=2).contains(&nh) || b.get(nh) != Some(&b':') {
        return None;
    }
    let mm = s.get(nh + 1..nh + 3)?;
    if !mm.bytes().all(|c| c.is_ascii_digit()) || b.get(nh + 3).is_some_and(u8::is_ascii_digit) {
        return None;
    }
    let (h, m): (u64, u64) = (s[..nh].parse().ok()?, mm.parse().ok()?);
    (h <= 24 && m < 60).then_some((h, m, nh + 3))
}
