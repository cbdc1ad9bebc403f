//! French: `1er`/`1re`/`2e`/`2ème` ordinals, `heure` feminine (`vingt-et-une heures`), plural
//! units from 2 (`1,5 kilomètre`), `virgule`.

use num2words2_core::{Lang as Words, LangFr};

use super::number::Num;
use super::{Currency, Gender, Rules, Unit, plain_cardinal, plain_ordinal};
use Gender::{Feminine as F, Masculine as M};

pub(crate) struct Fr;

static WORDS: std::sync::LazyLock<LangFr> = std::sync::LazyLock::new(LangFr::new);

const UNITS: &[(&str, Unit)] = &[
    ("km/h", Unit::new("kilomètre heure", "kilomètres heure", M)),
    ("km²", Unit::new("kilomètre carré", "kilomètres carrés", M)),
    ("m²", Unit::new("mètre carré", "mètres carrés", M)),
    ("°C", Unit::new("degré Celsius", "degrés Celsius", M)),
    ("km", Unit::new("kilomètre", "kilomètres", M)),
    ("cm", Unit::new("centimètre", "centimètres", M)),
    ("mm", Unit::new("millimètre", "millimètres", M)),
    ("kg", Unit::new("kilogramme", "kilogrammes", M)),
    ("mg", Unit::new("milligramme", "milligrammes", M)),
    ("ml", Unit::new("millilitre", "millilitres", M)),
    ("g", Unit::new("gramme", "grammes", M)),
    ("m", Unit::new("mètre", "mètres", M)),
    ("l", Unit::new("litre", "litres", M)),
    ("°", Unit::new("degré", "degrés", M)),
];

const CURRENCIES: &[Currency] = &[
    Currency {
        sign: "€",
        unit: Unit::new("euro", "euros", M),
        cents: Unit::new("centime", "centimes", M),
    },
    Currency {
        sign: "$",
        unit: Unit::new("dollar", "dollars", M),
        cents: Unit::new("cent", "cents", M),
    },
    Currency {
        sign: "£",
        unit: Unit::new("livre", "livres", F),
        cents: Unit::new("penny", "pence", M),
    },
    Currency { sign: "¥", unit: Unit::new("yen", "yens", M), cents: Unit::new("sen", "sens", M) },
];

const MONTHS: &[&str] = &[
    "janvier",
    "février",
    "mars",
    "avril",
    "mai",
    "juin",
    "juillet",
    "août",
    "septembre",
    "octobre",
    "novembre",
    "décembre",
];

impl Rules for Fr {
    fn numbering_words(&self) -> &'static [(&'static str, Gender)] {
        &[
            ("chapitre", M),
            ("livre", M),
            ("tome", M),
            ("acte", M),
            ("chant", M),
            ("volume", M),
            ("partie", F),
            ("scène", F),
            ("section", F),
        ]
    }

    fn numbered(&self, n: u64, gender: Gender) -> String {
        match (n, gender) {
            (1, Gender::Feminine) => "première".into(),
            (1, _) => "premier".into(),
            _ => self.cardinal(n, None),
        }
    }

    fn words(&self) -> &dyn Words {
        &*WORDS
    }
    fn group_dot(&self) -> bool {
        false
    }
    fn minus(&self) -> &'static str {
        "moins"
    }
    fn point(&self) -> &'static str {
        "virgule"
    }
    fn percent(&self) -> Unit {
        Unit::new("pour cent", "pour cent", M)
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
            // `un` → `une` where it ends the number (`vingt-et-une heures`, not `une mille`).
            Some(Gender::Feminine) if words == "un" || words.ends_with("-un") => words + "e",
            _ => words,
        }
    }

    /// From 2 on a French noun is plural; below 2 (`1,5 kilomètre`) singular.
    fn form(&self, unit: &Unit, n: u64, _frac: bool) -> &'static str {
        if n < 2 { unit.one } else { unit.many }
    }

    fn ordinal_suffix(&self, n: u64, rest: &str, _before: &str) -> Option<(usize, String)> {
        let suffix = ["ère", "ème", "re", "er", "e", "è"]
            .into_iter()
            .find(|s| rest.starts_with(s) && !rest[s.len()..].starts_with(char::is_alphanumeric))?;
        let words = match (n, suffix) {
            (1, "er") => "premier".to_string(),
            (1, "re" | "ère") => "première".to_string(),
            (1, _) => return None,
            (_, "er" | "re") => return None,
            _ => plain_ordinal(self.words(), n),
        };
        Some((suffix.len(), words))
    }

    /// `1 mai` is `premier mai`.
    fn in_context(&self, num: &Num, rest: &str, _before: &str) -> Option<(usize, String)> {
        let next = rest.trim_start().split(|c: char| !c.is_alphabetic()).next()?;
        (num.int == 1 && MONTHS.contains(&next.to_lowercase().as_str()))
            .then(|| (0, "premier".to_string()))
    }

    fn time(&self, h: u64, m: u64) -> String {
        let hours = self.cardinal(h, Some(F));
        let unit = if h < 2 { "heure" } else { "heures" };
        match (h, m) {
            (0, 0) => "minuit".to_string(),
            (_, 0) => format!("{hours} {unit}"),
            _ => format!("{hours} {unit} {}", self.cardinal(m, None)),
        }
    }
}
