//! German: `3.` before a word is an ordinal (`am 3. Mai` → `am dritten Mai`, `der 3. Band`
//! → `der dritte Band`, `2. Jahrgang` → `zweiter Jahrgang`), unless it is a year; years
//! 1100–1999 as years (`neunzehnhundertneunundneunzig`); `ein`/`eine` before a noun; `Komma`
//! and the decimals digit by digit.

use num2words2_core::{Lang as Words, LangDe};

use super::number::Num;
use super::{Currency, Gender, Rules, Unit, digit_by_digit, plain_cardinal, plain_ordinal};
use Gender::{Feminine as F, Masculine as M, Neuter as N};

pub(crate) struct De;

static WORDS: std::sync::LazyLock<LangDe> = std::sync::LazyLock::new(LangDe::new);

const UNITS: &[(&str, Unit)] = &[
    ("km/h", Unit::new("Kilometer pro Stunde", "Kilometer pro Stunde", M)),
    ("km²", Unit::new("Quadratkilometer", "Quadratkilometer", M)),
    ("m²", Unit::new("Quadratmeter", "Quadratmeter", M)),
    ("°C", Unit::new("Grad Celsius", "Grad Celsius", N)),
    ("km", Unit::new("Kilometer", "Kilometer", M)),
    ("cm", Unit::new("Zentimeter", "Zentimeter", M)),
    ("mm", Unit::new("Millimeter", "Millimeter", M)),
    ("kg", Unit::new("Kilogramm", "Kilogramm", N)),
    ("mg", Unit::new("Milligramm", "Milligramm", N)),
    ("ml", Unit::new("Milliliter", "Milliliter", M)),
    ("g", Unit::new("Gramm", "Gramm", N)),
    ("m", Unit::new("Meter", "Meter", M)),
    ("l", Unit::new("Liter", "Liter", M)),
    ("°", Unit::new("Grad", "Grad", N)),
];

const CURRENCIES: &[Currency] = &[
    Currency {
        sign: "€", unit: Unit::new("Euro", "Euro", M), cents: Unit::new("Cent", "Cent", M)
    },
    Currency {
        sign: "$",
        unit: Unit::new("Dollar", "Dollar", M),
        cents: Unit::new("Cent", "Cent", M),
    },
    Currency {
        sign: "£",
        unit: Unit::new("Pfund", "Pfund", N),
        cents: Unit::new("Penny", "Pence", M),
    },
    Currency { sign: "¥", unit: Unit::new("Yen", "Yen", M), cents: Unit::new("Sen", "Sen", M) },
];

const MONTHS: &[&str] = &[
    "januar",
    "jänner",
    "februar",
    "märz",
    "april",
    "mai",
    "juni",
    "juli",
    "august",
    "september",
    "oktober",
    "november",
    "dezember",
];

/// Words after which `3.` is an ordinal, and the ending it takes there.
const BEFORE_ORDINAL: &[(&str, &str)] = &[
    ("der", "e"),
    ("die", "e"),
    ("das", "e"),
    ("am", "en"),
    ("im", "en"),
    ("vom", "en"),
    ("zum", "en"),
    ("beim", "en"),
    ("dem", "en"),
    ("den", "en"),
    ("des", "en"),
    ("zur", "en"),
    ("ab", "en"),
    ("bis", "en"),
];

impl Rules for De {
    fn numbering_words(&self) -> &'static [(&'static str, Gender)] {
        &[
            ("kapitel", Gender::Neuter),
            ("buch", Gender::Neuter),
            ("teil", Gender::Masculine),
            ("band", Gender::Masculine),
            ("akt", Gender::Masculine),
            ("abschnitt", Gender::Masculine),
            ("szene", Gender::Feminine),
        ]
    }

    fn words(&self) -> &dyn Words {
        &*WORDS
    }
    fn group_dot(&self) -> bool {
        true
    }
    fn minus(&self) -> &'static str {
        "minus"
    }
    fn point(&self) -> &'static str {
        "Komma"
    }
    fn percent(&self) -> Unit {
        Unit::new("Prozent", "Prozent", N)
    }
    fn units(&self) -> &'static [(&'static str, Unit)] {
        UNITS
    }
    fn currencies(&self) -> &'static [Currency] {
        CURRENCIES
    }

    fn cardinal(&self, n: u64, gender: Option<Gender>) -> String {
        let words = plain_cardinal(self.words(), n);
        match (n, gender) {
            (1, Some(F)) => "eine".to_string(),
            (1, Some(_)) => "ein".to_string(),
            // `hunderteins Euro` stays; only a lone `eins` changes before a noun.
            _ => words,
        }
    }

    fn fraction(&self, digits: &str) -> String {
        digit_by_digit(self, digits)
    }

    fn ordinal_suffix(&self, _n: u64, _rest: &str, _before: &str) -> Option<(usize, String)> {
        None
    }

    fn in_context(&self, num: &Num, rest: &str, before: &str) -> Option<(usize, String)> {
        let is_year = (1100..=1999).contains(&num.int) && !super::unit_follows(self, rest);
        let Some(after_dot) = rest.strip_prefix('.') else {
            return is_year.then(|| (0, year(num.int)));
        };
        let next = after_dot.trim_start();
        let next_word: String = next.chars().take_while(|c| c.is_alphabetic()).collect();
        let month = MONTHS.contains(&next_word.to_lowercase().as_str());
        let by_word = BEFORE_ORDINAL.iter().find(|(w, _)| *w == before).map(|(_, e)| *e);
        // `2. Jahrgang`, `3. Mai`; but a year or a count ends its sentence (`1912. Erstdruck`,
        // `Er war 3.`).
        let ordinal = month || (!is_year && (by_word.is_some() || !next_word.is_empty()));
        if !ordinal || next_word.is_empty() {
            return is_year.then(|| (0, year(num.int)));
        }
        // After an article or a preposition its ending; in a date `-en` (`dritten Mai`); else
        // the strong ending (`zweiter Jahrgang`).
        let ending = by_word.unwrap_or(if month { "en" } else { "er" });
        Some((1, inflected(plain_ordinal(self.words(), num.int), ending)))
    }

    fn time(&self, h: u64, m: u64) -> String {
        let hours = plain_cardinal(self.words(), h);
        let hours = if h == 1 { "ein".to_string() } else { hours };
        match m {
            0 => format!("{hours} Uhr"),
            _ => format!("{hours} Uhr {}", plain_cardinal(self.words(), m)),
        }
    }
}

/// The ordinal (`dritte`) with its ending: `e` or `en`.
fn inflected(ordinal: String, ending: &str) -> String {
    let stem = ordinal.strip_suffix('e').unwrap_or(&ordinal);
    format!("{stem}{ending}")
}

/// A year as German says it: 1100–1999 in hundreds (`neunzehnhundertneunundneunzig`).
fn year(y: u64) -> String {
    WORDS.to_year(&num_bigint::BigInt::from(y)).unwrap_or_else(|_| plain_cardinal(&*WORDS, y))
}
