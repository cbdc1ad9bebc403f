//! Spanish: `1º`/`1.º`/`1ª`/`1er` ordinals (`primero`, `primera`, `primer`), `un`/`una` and
//! `-ientas` before nouns (`veintiún euros`, `doscientas libras`), `coma`, money `con` cents,
//! `1 de mayo` as `primero de mayo`.

use num2words2_core::{Lang as Words, LangEs};

use super::number::Num;
use super::{Currency, Gender, Rules, Unit, plain_cardinal, plain_ordinal};
use Gender::{Feminine as F, Masculine as M};

pub(crate) struct Es;

static WORDS: std::sync::LazyLock<LangEs> = std::sync::LazyLock::new(LangEs::new);

const UNITS: &[(&str, Unit)] = &[
    ("km/h", Unit::new("kilómetro por hora", "kilómetros por hora", M)),
    ("km²", Unit::new("kilómetro cuadrado", "kilómetros cuadrados", M)),
    ("m²", Unit::new("metro cuadrado", "metros cuadrados", M)),
    ("°C", Unit::new("grado Celsius", "grados Celsius", M)),
    ("km", Unit::new("kilómetro", "kilómetros", M)),
    ("cm", Unit::new("centímetro", "centímetros", M)),
    ("mm", Unit::new("milímetro", "milímetros", M)),
    ("kg", Unit::new("kilogramo", "kilogramos", M)),
    ("mg", Unit::new("miligramo", "miligramos", M)),
    ("ml", Unit::new("mililitro", "mililitros", M)),
    ("g", Unit::new("gramo", "gramos", M)),
    ("m", Unit::new("metro", "metros", M)),
    ("l", Unit::new("litro", "litros", M)),
    ("°", Unit::new("grado", "grados", M)),
];

const CURRENCIES: &[Currency] = &[
    Currency {
        sign: "€",
        unit: Unit::new("euro", "euros", M),
        cents: Unit::new("céntimo", "céntimos", M),
    },
    Currency {
        sign: "$",
        unit: Unit::new("dólar", "dólares", M),
        cents: Unit::new("centavo", "centavos", M),
    },
    Currency {
        sign: "£",
        unit: Unit::new("libra", "libras", F),
        cents: Unit::new("penique", "peniques", M),
    },
    Currency { sign: "¥", unit: Unit::new("yen", "yenes", M), cents: Unit::new("sen", "sen", M) },
];

const MONTHS: &[&str] = &[
    "enero",
    "febrero",
    "marzo",
    "abril",
    "mayo",
    "junio",
    "julio",
    "agosto",
    "septiembre",
    "setiembre",
    "octubre",
    "noviembre",
    "diciembre",
];

impl Rules for Es {
    fn numbering_words(&self) -> &'static [(&'static str, Gender)] {
        &[
            ("capítulo", Gender::Masculine),
            ("libro", Gender::Masculine),
            ("tomo", Gender::Masculine),
            ("acto", Gender::Masculine),
            ("parte", Gender::Feminine),
            ("escena", Gender::Feminine),
        ]
    }

    fn words(&self) -> &dyn Words {
        &*WORDS
    }
    fn group_dot(&self) -> bool {
        true
    }
    fn minus(&self) -> &'static str {
        "menos"
    }
    fn point(&self) -> &'static str {
        "coma"
    }
    fn percent(&self) -> Unit {
        Unit::new("por ciento", "por ciento", M)
    }
    fn units(&self) -> &'static [(&'static str, Unit)] {
        UNITS
    }
    fn currencies(&self) -> &'static [Currency] {
        CURRENCIES
    }

    fn cardinal(&self, n: u64, gender: Option<Gender>) -> String {
        let words = plain_cardinal(self.words(), n);
        match gender {
            None => words,
            Some(F) => feminine(&words),
            // Before a masculine noun: `un euro`, `veintiún euros`, `treinta y un euros`.
            Some(_) => words
                .strip_suffix("veintiuno")
                .map(|s| format!("{s}veintiún"))
                .or_else(|| words.strip_suffix("uno").map(|s| format!("{s}un")))
                .unwrap_or(words),
        }
    }

    fn ordinal_suffix(&self, n: u64, rest: &str, _before: &str) -> Option<(usize, String)> {
        let (len, gender, short) = ordinal_mark(rest)?;
        let words = plain_ordinal(self.words(), n);
        let words = match (gender, short) {
            (F, _) => feminine_ordinal(&words),
            (_, true) => words.replace("primero", "primer").replace("tercero", "tercer"),
            _ => words,
        };
        Some((len, words))
    }

    /// `1 de mayo` is `primero de mayo`.
    fn in_context(&self, num: &Num, rest: &str, _before: &str) -> Option<(usize, String)> {
        let next = rest.trim_start().strip_prefix("de ")?.trim_start();
        let month = MONTHS.iter().any(|m| next.to_lowercase().starts_with(m));
        (num.int == 1 && month).then(|| (0, "primero".to_string()))
    }

    fn time(&self, h: u64, m: u64) -> String {
        let hours = self.cardinal(h, Some(F));
        match m {
            0 if h == 1 => "una hora".to_string(),
            0 => format!("{hours} horas"),
            _ => format!("{hours} y {}", plain_cardinal(self.words(), m)),
        }
    }

    fn money(&self, int: u64, cents: Option<u64>, c: &Currency) -> String {
        let unit = self.form(&c.unit, int, false);
        let whole = format!("{} {unit}", self.cardinal(int, Some(c.unit.gender)));
        match cents {
            Some(k) if k > 0 => format!("{whole} con {}", plain_cardinal(self.words(), k)),
            _ => whole,
        }
    }
}

/// The ordinal marks after digits: `º`, `.º`, `°`, `ª`, `.ª`, `er` (`1er`, `3er`): length,
/// gender, and whether it is the short form.
fn ordinal_mark(rest: &str) -> Option<(usize, Gender, bool)> {
    let marks: [(&str, Gender, bool); 7] = [
        (".º", M, false),
        (".ª", F, false),
        ("º", M, false),
        ("ª", F, false),
        ("°", M, false),
        ("er", M, true),
        ("ro", M, false),
    ];
    let (mark, gender, short) = marks.into_iter().find(|(m, _, _)| rest.starts_with(m))?;
    // `1°C` is a temperature, `3ero` a word.
    if rest[mark.len()..].starts_with(char::is_alphanumeric) {
        return None;
    }
    Some((mark.len(), gender, short))
}

/// A cardinal before a feminine noun: `una`, `veintiuna`, `doscientas`.
fn feminine(words: &str) -> String {
    let w = words.replace("ientos", "ientas");
    match w.strip_suffix("uno") {
        Some(s) => format!("{s}una"),
        None => w,
    }
}

/// An ordinal's feminine: every `-o` word ends in `-a` (`vigésima primera`).
fn feminine_ordinal(words: &str) -> String {
    words
        .split(' ')
        .map(|w| w.strip_suffix('o').map_or_else(|| w.to_string(), |s| format!("{s}a")))
        .collect::<Vec<_>>()
        .join(" ")
}
