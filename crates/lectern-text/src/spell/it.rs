//! Italian: `1º`/`1ª` ordinals (`primo`, `prima`), `1 maggio` as `primo maggio`, the accent
//! of compounds in `-tré` (`ventitré`, which the words leave off), `un`/`una` before nouns,
//! `virgola`, money `e` cents.

use num2words2_core::{Lang as Words, LangIt};

use super::number::Num;
use super::{Currency, Gender, Rules, Unit, plain_cardinal, plain_ordinal};
use Gender::{Feminine as F, Masculine as M};

pub(crate) struct It;

static WORDS: std::sync::LazyLock<LangIt> = std::sync::LazyLock::new(LangIt::new);

const UNITS: &[(&str, Unit)] = &[
    ("km/h", Unit::new("chilometro orario", "chilometri orari", M)),
    ("km²", Unit::new("chilometro quadrato", "chilometri quadrati", M)),
    ("m²", Unit::new("metro quadrato", "metri quadrati", M)),
    ("°C", Unit::new("grado Celsius", "gradi Celsius", M)),
    ("km", Unit::new("chilometro", "chilometri", M)),
    ("cm", Unit::new("centimetro", "centimetri", M)),
    ("mm", Unit::new("millimetro", "millimetri", M)),
    ("kg", Unit::new("chilogrammo", "chilogrammi", M)),
    ("mg", Unit::new("milligrammo", "milligrammi", M)),
    ("ml", Unit::new("millilitro", "millilitri", M)),
    ("g", Unit::new("grammo", "grammi", M)),
    ("m", Unit::new("metro", "metri", M)),
    ("l", Unit::new("litro", "litri", M)),
    ("°", Unit::new("grado", "gradi", M)),
];

const CURRENCIES: &[Currency] = &[
    Currency {
        sign: "€",
        unit: Unit::new("euro", "euro", M),
        cents: Unit::new("centesimo", "centesimi", M),
    },
    Currency {
        sign: "$",
        unit: Unit::new("dollaro", "dollari", M),
        cents: Unit::new("centesimo", "centesimi", M),
    },
    Currency {
        sign: "£",
        unit: Unit::new("sterlina", "sterline", F),
        cents: Unit::new("penny", "pence", M),
    },
    Currency { sign: "¥", unit: Unit::new("yen", "yen", M), cents: Unit::new("sen", "sen", M) },
];

const MONTHS: &[&str] = &[
    "gennaio",
    "febbraio",
    "marzo",
    "aprile",
    "maggio",
    "giugno",
    "luglio",
    "agosto",
    "settembre",
    "ottobre",
    "novembre",
    "dicembre",
];

impl Rules for It {
    fn numbering_words(&self) -> &'static [(&'static str, Gender)] {
        &[
            ("capitolo", Gender::Masculine),
            ("libro", Gender::Masculine),
            ("tomo", Gender::Masculine),
            ("atto", Gender::Masculine),
            ("canto", Gender::Masculine),
            ("parte", Gender::Feminine),
            ("scena", Gender::Feminine),
        ]
    }

    fn words(&self) -> &dyn Words {
        &*WORDS
    }
    fn group_dot(&self) -> bool {
        true
    }
    fn minus(&self) -> &'static str {
        "meno"
    }
    fn point(&self) -> &'static str {
        "virgola"
    }
    fn percent(&self) -> Unit {
        Unit::new("per cento", "per cento", M)
    }
    fn units(&self) -> &'static [(&'static str, Unit)] {
        UNITS
    }
    fn currencies(&self) -> &'static [Currency] {
        CURRENCIES
    }

    fn cardinal(&self, n: u64, gender: Option<Gender>) -> String {
        let words = accented(&plain_cardinal(self.words(), n));
        match (gender, words.strip_suffix("uno")) {
            (None, _) | (_, None) => words,
            (Some(F), Some(s)) => format!("{s}una"),
            (Some(_), Some(s)) => format!("{s}un"),
        }
    }

    fn ordinal_suffix(&self, n: u64, rest: &str, _before: &str) -> Option<(usize, String)> {
        let marks = [("º", M), ("ª", F), ("°", M)];
        let (mark, gender) = marks.into_iter().find(|(m, _)| rest.starts_with(m))?;
        if rest[mark.len()..].starts_with(char::is_alphanumeric) {
            return None;
        }
        let words = plain_ordinal(self.words(), n);
        let words = match gender {
            F => words.strip_suffix('o').map_or(words.clone(), |s| format!("{s}a")),
            _ => words,
        };
        Some((mark.len(), words))
    }

    /// `1 maggio` is `primo maggio`.
    fn in_context(&self, num: &Num, rest: &str, _before: &str) -> Option<(usize, String)> {
        let next = rest.trim_start().to_lowercase();
        let month = MONTHS.iter().any(|m| next.starts_with(m));
        (num.int == 1 && month).then(|| (0, "primo".to_string()))
    }

    fn time(&self, h: u64, m: u64) -> String {
        let hours = self.cardinal(h, None);
        match m {
            0 => hours,
            _ => format!("{hours} e {}", self.cardinal(m, None)),
        }
    }

    fn money(&self, int: u64, cents: Option<u64>, c: &Currency) -> String {
        let unit = self.form(&c.unit, int, false);
        let whole = format!("{} {unit}", self.cardinal(int, Some(c.unit.gender)));
        match cents {
            Some(k) if k > 0 => format!("{whole} e {}", self.cardinal(k, None)),
            _ => whole,
        }
    }
}

/// A compound ending in `tre` takes its accent (`ventitré`, `centotré`); `tre` alone does not.
fn accented(words: &str) -> String {
    match words.strip_suffix("tre") {
        Some(stem) if !stem.is_empty() => format!("{stem}tré"),
        _ => words.to_string(),
    }
}
