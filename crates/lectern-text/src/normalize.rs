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

    fn step_en(&mut self, c: char) -> bool {
        if c.is_ascii_digit() && self.at_word_start() {
            return self.number_en();
        }
        if matches!(c, '$' | '£' | '€' | '¥')
            && self.s[self.i + c.len_utf8()..].starts_with(|d: char| d.is_ascii_digit())
        {
            return self.currency_en(c);
        }
        if c == '-'
            && !self.prev().is_some_and(|p| p.is_alphanumeric())
            && self.s[self.i + 1..].starts_with(|d: char| d.is_ascii_digit())
        {
            self.replace(1, "minus ");
            return self.number_en();
        }
        if c == '–' && self.prev().is_some_and(|p| p.is_ascii_digit()) {
            let n = c.len_utf8();
            if self.s[self.i + n..].starts_with(|d: char| d.is_ascii_digit()) {
                self.replace(n, " to ");
                return self.number_en();
            }
        }
        if c == '%' {
            self.replace(1, " percent");
            return true;
        }
        if c == '&' {
            self.replace(1, "and");
            return true;
        }
        if c.is_alphabetic() && self.at_word_start() {
            return self.word_en();
        }
        false
    }

    /// Abbreviations; any other word is copied whole.
    fn word_en(&mut self) -> bool {
        let rest = self.rest();
        for &(abbr, spoken, can_end) in ABBREVIATIONS {
            if !rest.starts_with(abbr) {
                continue;
            }
            let after = &rest[abbr.len()..];
            if !after.starts_with(|c: char| c.is_alphanumeric())
                && (abbr != "No." || after.trim_start().starts_with(|c: char| c.is_ascii_digit()))
            {
                let spoken = self.abbreviation(abbr, spoken, can_end);
                self.replace(abbr.len(), &spoken);
                return true;
            }
        }
        let n = first_word(rest).len().max(1);
        self.copy(n);
        true
    }

    /// The spoken form of an abbreviation, keeping a sentence end that its dot also marked.
    fn abbreviation(&self, abbr: &str, spoken: &str, can_end: bool) -> String {
        let after = &self.s[self.i + abbr.len()..];
        let next = after.trim_start().chars().next();
        let mut spoken = spoken.to_string();
        if abbr == "St." {
            // "St. Paul" is a saint, "Baker St." a street.
            spoken = if next.is_some_and(char::is_uppercase) && after.starts_with(' ') {
                "Saint".into()
            } else {
                "Street".into()
            };
        }
        let ends = next.is_none()
            || (after.starts_with(char::is_whitespace) && next.is_some_and(char::is_uppercase));
        if can_end && abbr.ends_with('.') && ends && spoken != "Saint" {
            spoken.push('.');
        }
        spoken
    }

    fn currency_en(&mut self, sym: char) -> bool {
        let start = self.i;
        let sym_len = sym.len_utf8();
        let Some(num) = scan_number(&self.s[start + sym_len..]) else { return false };
        let (unit, units, sub, subs) = match sym {
            '$' => ("dollar", "dollars", "cent", "cents"),
            '£' => ("pound", "pounds", "penny", "pence"),
            '€' => ("euro", "euros", "cent", "cents"),
            _ => ("yen", "yen", "sen", "sen"),
        };
        let mut len = sym_len + num.len;
        let after = &self.s[start + len..];
        let scale = ["thousand", "million", "billion", "trillion"].into_iter().find(|w| {
            after.starts_with(' ')
                && after[1..].starts_with(w)
                && !after[1 + w.len()..].starts_with(|c: char| c.is_alphanumeric())
        });
        let spoken = if let Some(w) = scale {
            len += 1 + w.len();
            format!("{} {w} {units}", num.words_en())
        } else {
            let whole = num.int_value();
            let cents = num.frac.as_deref().and_then(|f| match f.len() {
                1 => f.parse::<u64>().ok().map(|v| v * 10),
                2 => f.parse::<u64>().ok(),
                _ => None,
            });
            match (whole, cents) {
                (Some(w), Some(c)) if num.frac.is_some() => {
                    let main = format!("{} {}", cardinal_en(w), if w == 1 { unit } else { units });
                    let cent = format!("{} {}", cardinal_en(c), if c == 1 { sub } else { subs });
                    match (w, c) {
                        (0, 0) => format!("zero {units}"),
                        (0, _) => cent,
                        (_, 0) => main,
                        _ => format!("{main} and {cent}"),
                    }
                }
                (Some(w), _) if num.frac.is_none() => {
                    format!("{} {}", cardinal_en(w), if w == 1 { unit } else { units })
                }
                _ => format!("{} {units}", num.words_en()),
            }
        };
        self.replace(len, &spoken);
        true
    }

    fn number_en(&mut self) -> bool {
        let rest = self.rest();
        // Times: H:MM with an optional am/pm.
        if let Some((len, spoken)) = time_en(rest) {
            self.replace(len, &spoken);
            return true;
        }
        let Some(num) = scan_number(rest) else { return false };
        let after = &rest[num.len..];
        let alnum_after = |n: usize| after[n..].starts_with(|c: char| c.is_alphanumeric());
        // Ordinals: 1st, 22nd, 103rd, 4th.
        if num.frac.is_none() && !num.grouped {
            for suf in ["st", "nd", "rd", "th", "ST", "ND", "RD", "TH"] {
                if after.starts_with(suf) && !alnum_after(2) {
                    if let Some(v) = num.int_value() {
                        self.replace(num.len + 2, &ordinal_en(v));
                        return true;
                    }
                }
            }
        }
        // Decades: 1980s, 1800s.
        if num.is_year_like() && after.starts_with('s') && !alnum_after(1) {
            let y = num.int_value().unwrap_or(0);
            let w = year_en(y);
            let spoken = if let Some(stem) = w.strip_suffix('y') {
                format!("{stem}ies")
            } else {
                format!("{w}s")
            };
            self.replace(num.len + 1, &spoken);
            return true;
        }
        // Fractions: 3/4 (denominator 2..=10, not a date).
        if num.frac.is_none()
            && !num.grouped
            && let Some(rest2) = after.strip_prefix('/')
            && let Some(den) = scan_number(rest2)
            && den.frac.is_none()
            && !rest2[den.len..].starts_with(|c: char| c == '/' || c.is_alphanumeric())
            && let (Some(a), Some(b)) = (num.int_value(), den.int_value())
            && (2..=10).contains(&b)
        {
            let spoken = fraction_en(a, b);
            self.replace(num.len + 1 + den.len, &spoken);
            return true;
        }
        let spoken = if after.starts_with('%') {
            let s = format!("{} percent", num.words_en());
            self.replace(num.len + 1, &s);
            return true;
        } else if num.is_year_like() && !after.starts_with(|c: char| c.is_alphanumeric()) {
            year_en(num.int_value().unwrap_or(0))
        } else {
            num.words_en()
        };
        self.replace(num.len, &spoken);
        true
    }

    fn step_zh(&mut self, c: char) -> bool {
        let rest = self.rest();
        if c.is_ascii_digit() && !self.prev().is_some_and(|p| p.is_ascii_digit()) {
            return self.number_zh();
        }
        if (c == '$' || c == '¥' || c == '￥')
            && self.s[self.i + c.len_utf8()..].starts_with(|d: char| d.is_ascii_digit())
        {
            let n = c.len_utf8();
            let Some(num) = scan_number(&self.s[self.i + n..]) else { return false };
            let unit = if c == '$' { "美元" } else { "元" };
            let spoken = format!("{}{unit}", num.words_zh());
            self.replace(n + num.len, &spoken);
            return true;
        }
        if c == '-'
            && !self.prev().is_some_and(|p| p.is_ascii_alphanumeric())
            && self.s[self.i + 1..].starts_with(|d: char| d.is_ascii_digit())
        {
            self.replace(1, "负");
            return self.number_zh();
        }
        let simple: Option<&str> = match c {
            '²' => Some("平方"),
            '³' => Some("立方"),
            '.' => Some("。"),
            '（' | '）' | '【' | '】' | '`' => Some(""),
            '%' => Some("百分之"),
            _ => None,
        };
        if let Some(with) = simple {
            self.replace(c.len_utf8(), with);
            return true;
        }
        if rest.starts_with("——") {
            self.replace("——".len(), " ");
            return true;
        }
        if c == '-' && self.prev() == Some(' ') && rest[1..].starts_with(' ') {
            self.replace(1, "，");
            return true;
        }
        if matches!(c, '，' | ',' | '、')
            && rest
                .trim_end_matches(|c: char| matches!(c, '，' | ',' | '、') || c.is_whitespace())
                .is_empty()
        {
            // A trailing run of commas becomes one full stop.
            let n = rest.len();
            self.replace(n, "。");
            return true;
        }
        false
    }

    fn number_zh(&mut self) -> bool {
        let rest = self.rest();
        let Some(num) = scan_number(rest) else { return false };
        let after = &rest[num.len..];
        if let Some((len, spoken)) = time_zh(rest) {
            self.replace(len, &spoken);
            return true;
        }
        let spoken = if after.starts_with('年') && num.frac.is_none() && !num.grouped {
            digits_zh(&num.int)
        } else if after.starts_with('%') || after.starts_with('％') {
            let pct = after.chars().next().map_or(1, char::len_utf8);
            let s = format!("百分之{}", num.words_zh());
            self.replace(num.len + pct, &s);
            return true;
        } else {
            num.words_zh()
        };
        self.replace(num.len, &spoken);
        true
    }
}

/// (abbreviation, spoken form, whether its dot may also end a sentence).
const ABBREVIATIONS: &[(&str, &str, bool)] = &[
    ("Mr.", "Mister", false),
    ("Mrs.", "Missus", false),
    ("Ms.", "Miz", false),
    ("Dr.", "Doctor", false),
    ("St.", "Street", true),
    ("Prof.", "Professor", false),
    ("Capt.", "Captain", false),
    ("Gen.", "General", false),
    ("Lt.", "Lieutenant", false),
    ("Col.", "Colonel", false),
    ("Sgt.", "Sergeant", false),
    ("Rev.", "Reverend", false),
    ("Mt.", "Mount", false),
    ("Jr.", "Junior", true),
    ("Sr.", "Senior", true),
    ("Ave.", "Avenue", true),
    ("Inc.", "Incorporated", true),
    ("Ltd.", "Limited", true),
    ("Co.", "Company", true),
    ("vs.", "versus", false),
    ("etc.", "et cetera", true),
    ("e.g.", "for example", false),
    ("i.e.", "that is", false),
    ("approx.", "approximately", false),
    ("a.m.", "AM", true),
    ("p.m.", "PM", true),
    ("No.", "number", false),
];

/// A scanned numeral: integer digits (commas removed), optional fraction digits.
#[derive(Debug)]
struct Num {
    int: String,
    frac: Option<String>,
    /// Bytes consumed.
    len: usize,
    /// Written with thousands separators.
    grouped: bool,
}

impl Num {
    fn int_value(&self) -> Option<u64> {
        if self.int.len() > 15 { None } else { self.int.parse().ok() }
    }

    fn is_year_like(&self) -> bool {
        self.frac.is_none()
            && !self.grouped
            && self.int.len() == 4
            && self.int_value().is_some_and(|v| (1100..=2099).contains(&v))
    }

    fn words_en(&self) -> String {
        let int = match self.int_value() {
            Some(v) if !(self.int.len() > 1 && self.int.starts_with('0')) => cardinal_en(v),
            _ => digits_en(&self.int),
        };
        match &self.frac {
            Some(f) => format!("{int} point {}", digits_en(f)),
            None => int,
        }
    }

    fn words_zh(&self) -> String {
        let int = match self.int_value() {
            Some(v)
                if self.int.len() <= 12 && !(self.int.len() > 1 && self.int.starts_with('0')) =>
            {
                cardinal_zh(v)
            }
            _ => digits_zh(&self.int),
        };
        match &self.frac {
            Some(f) => format!("{int}点{}", digits_zh(f)),
            None => int,
        }
    }
}

/// Scans `12`, `1,234,567`, `3.14` at the start of `s`.
fn scan_number(s: &str) -> Option<Num> {
    let b = s.as_bytes();
    let digits = |from: usize| b[from..].iter().take_while(|c| c.is_ascii_digit()).count();
    let n0 = digits(0);
    if n0 == 0 {
        return None;
    }
    let mut int = s[..n0].to_string();
    let mut i = n0;
    let mut grouped = false;
    if n0 <= 3 {
        while i + 4 <= b.len() && b[i] == b',' && digits(i + 1) == 3 && digits(i + 1) == 3 {
            if b.get(i + 4).is_some_and(u8::is_ascii_digit) {
                break;
            }
            int.push_str(&s[i + 1..i + 4]);
            i += 4;
            grouped = true;
        }
    }
    let mut frac = None;
    if b.get(i) == Some(&b'.') {
        let nf = digits(i + 1);
        if nf > 0 {
            frac = Some(s[i + 1..i + 1 + nf].to_string());
            i += 1 + nf;
        }
    }
    Some(Num { int, frac, len: i, grouped })
}

const ONES: [&str; 20] = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
];
const TENS: [&str; 10] =
    ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"];

fn under_100(n: u64) -> String {
    if n < 20 {
        ONES[n as usize].to_string()
    } else if n % 10 == 0 {
        TENS[(n / 10) as usize].to_string()
    } else {
        format!("{}-{}", TENS[(n / 10) as usize], ONES[(n % 10) as usize])
    }
}

fn under_1000(n: u64) -> String {
    match (n / 100, n % 100) {
        (0, r) => under_100(r),
        (h, 0) => format!("{} hundred", ONES[h as usize]),
        (h, r) => format!("{} hundred and {}", ONES[h as usize], under_100(r)),
    }
}

/// English cardinal, inflect style without commas: 1234 → "one thousand two hundred and
/// thirty-four", 1005 → "one thousand and five".
pub fn cardinal_en(n: u64) -> String {
    if n == 0 {
        return "zero".into();
    }
    const SCALES: [&str; 6] =
        ["", " thousand", " million", " billion", " trillion", " quadrillion"];
    let mut groups = Vec::new();
    let mut m = n;
    while m > 0 {
        groups.push(m % 1000);
        m /= 1000;
    }
    let mut parts = Vec::new();
    for (k, &g) in groups.iter().enumerate().rev() {
        if g == 0 {
            continue;
        }
        let words = under_1000(g);
        if k == 0 && groups.len() > 1 && g < 100 {
            parts.push(format!("and {words}"));
        } else {
            parts.push(format!("{words}{}", SCALES[k]));
        }
    }
    parts.join(" ")
}

/// English ordinal: 1 → "first", 22 → "twenty-second", 100 → "one hundredth".
pub fn ordinal_en(n: u64) -> String {
    let card = cardinal_en(n);
    let cut = card.rfind([' ', '-']).map_or(0, |i| i + 1);
    let (head, last) = card.split_at(cut);
    let last = match last {
        "one" => "first".to_string(),
        "two" => "second".to_string(),
        "three" => "third".to_string(),
        "five" => "fifth".to_string(),
        "eight" => "eighth".to_string(),
        "nine" => "ninth".to_string(),
        "twelve" => "twelfth".to_string(),
        w if w.ends_with('y') => format!("{}ieth", &w[..w.len() - 1]),
        w => format!("{w}th"),
    };
    format!("{head}{last}")
}

/// English year reading: 1984 → "nineteen eighty-four", 1900 → "nineteen hundred",
/// 1905 → "nineteen oh five", 2005 → "two thousand and five", 2024 → "twenty twenty-four".
pub fn year_en(y: u64) -> String {
    let (hi, lo) = (y / 100, y % 100);
    if (2000..2010).contains(&y) {
        return cardinal_en(y);
    }
    match lo {
        0 => format!("{} hundred", under_100(hi)),
        1..=9 => format!("{} oh {}", under_100(hi), ONES[lo as usize]),
        _ => format!("{} {}", under_100(hi), under_100(lo)),
    }
}

fn digits_en(d: &str) -> String {
    d.chars().filter_map(|c| c.to_digit(10)).map(|v| ONES[v as usize]).collect::<Vec<_>>().join(" ")
}

fn fraction_en(a: u64, b: u64) -> String {
    let den = match b {
        2 => "half".to_string(),
        4 => "quarter".to_string(),
        b => ordinal_en(b),
    };
    let den = if a == 1 {
        den
    } else if den == "half" {
        "halves".into()
    } else {
        format!("{den}s")
    };
    format!("{} {den}", cardinal_en(a))
}

/// `H:MM` (H ≤ 24, MM < 60) with an optional ` am`/`pm`/`a.m.`/`p.m.`.
fn time_parts(s: &str) -> Option<(u64, u64, usize)> {
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

fn time_en(s: &str) -> Option<(usize, String)> {
    let (h, m, mut len) = time_parts(s)?;
    let mut spoken = match m {
        0 => format!("{} o'clock", cardinal_en(h)),
        1..=9 => format!("{} oh {}", cardinal_en(h), ONES[m as usize]),
        _ => format!("{} {}", cardinal_en(h), under_100(m)),
    };
    let after = &s[len..];
    let sp = usize::from(after.starts_with(' '));
    for (w, say) in
        [("a.m.", "AM"), ("p.m.", "PM"), ("am", "AM"), ("pm", "PM"), ("AM", "AM"), ("PM", "PM")]
    {
        let tail = &after[sp..];
        if tail.starts_with(w) && !tail[w.len()..].starts_with(|c: char| c.is_alphanumeric()) {
            if m == 0 {
                spoken = cardinal_en(h);
            }
            spoken = format!("{spoken} {say}");
            len += sp + w.len();
            let next = s[len..].trim_start().chars().next();
            if w.ends_with('.') && (next.is_none() || next.is_some_and(char::is_uppercase)) {
                spoken.push('.');
            }
            break;
        }
    }
    Some((len, spoken))
}

fn time_zh(s: &str) -> Option<(usize, String)> {
    let (h, m, len) = time_parts(s)?;
    let spoken = if m == 0 {
        format!("{}点", cardinal_zh(h))
    } else if m < 10 {
        format!("{}点零{}分", cardinal_zh(h), cardinal_zh(m))
    } else {
        format!("{}点{}分", cardinal_zh(h), cardinal_zh(m))
    };
    Some((len, spoken))
}

const ZH_DIGITS: [char; 10] = ['零', '一', '二', '三', '四', '五', '六', '七', '八', '九'];

fn digits_zh(d: &str) -> String {
    d.chars().filter_map(|c| c.to_digit(10)).map(|v| ZH_DIGITS[v as usize]).collect()
}

/// A 4-digit section (0..10000) with 千百十; `zero_lead` writes 零 for a missing 千.
fn section_zh(n: u64, zero_lead: bool) -> String {
    let mut s = String::new();
    let mut pending_zero = zero_lead;
    for (div, unit) in [(1000, "千"), (100, "百"), (10, "十"), (1, "")] {
        let d = (n / div) % 10;
        if d == 0 {
            if !s.is_empty() || zero_lead {
                pending_zero = true;
            }
            continue;
        }
        if pending_zero && (!s.is_empty() || zero_lead) {
            s.push('零');
        }
        pending_zero = false;
        s.push(ZH_DIGITS[d as usize]);
        s.push_str(unit);
    }
    s
}

/// Chinese cardinal: 123 → 一百二十三, 10 → 十, 1005 → 一千零五, 20300 → 二万零三百.
pub fn cardinal_zh(n: u64) -> String {
    if n == 0 {
        return "零".into();
    }
    const UNITS: [&str; 4] = ["", "万", "亿", "万亿"];
    let mut sections = Vec::new();
    let mut m = n;
    while m > 0 {
        sections.push(m % 10_000);
        m /= 10_000;
    }
    let mut out = String::new();
    let mut need_zero = false;
    for (k, &sec) in sections.iter().enumerate().rev() {
        if sec == 0 {
            need_zero = !out.is_empty();
            continue;
        }
        let lead = !out.is_empty() && (sec < 1000 || need_zero);
        out.push_str(&section_zh(sec, lead));
        out.push_str(UNITS[k.min(3)]);
        need_zero = false;
    }
    // 一十… at the very start reads 十…
    if let Some(rest) = out.strip_prefix("一十") { format!("十{rest}") } else { out }
}
