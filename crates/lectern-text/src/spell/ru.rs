//! Russian: three plural forms (`1 рубль`, `2 рубля`, `5 рублей`), genders before nouns
//! (`одна книга`... `две тысячи`), ordinals by their written ending (`5-й`, `3-го`, `2-я`),
//! dates (`3 мая` → `третьего мая`) and years (`в 1999 году` → `в тысяча девятьсот девяносто
//! девятом году`, `1999 г.` → `… девятого года`), decimals (`3,5` → `три целых пять десятых`).

use num2words2_core::{Lang as Words, LangRu};

use super::number::Num;
use super::{Currency, Gender, Rules, Unit, with_kwargs};
use Gender::{Feminine as F, Masculine as M, Neuter as N};

pub(crate) struct Ru;

static WORDS: std::sync::LazyLock<LangRu> = std::sync::LazyLock::new(LangRu::new);

const UNITS: &[(&str, Unit)] = &[
    ("км/ч", Unit::ru("километр в час", "километра в час", "километров в час", M)),
    ("км", Unit::ru("километр", "километра", "километров", M)),
    ("см", Unit::ru("сантиметр", "сантиметра", "сантиметров", M)),
    ("мм", Unit::ru("миллиметр", "миллиметра", "миллиметров", M)),
    ("кг", Unit::ru("килограмм", "килограмма", "килограммов", M)),
    ("°C", Unit::ru("градус Цельсия", "градуса Цельсия", "градусов Цельсия", M)),
    ("°", Unit::ru("градус", "градуса", "градусов", M)),
    ("м", Unit::ru("метр", "метра", "метров", M)),
    ("л", Unit::ru("литр", "литра", "литров", M)),
    ("г", Unit::ru("грамм", "грамма", "граммов", M)),
];

const CURRENCIES: &[Currency] = &[
    Currency {
        sign: "₽",
        unit: Unit::ru("рубль", "рубля", "рублей", M),
        cents: Unit::ru("копейка", "копейки", "копеек", F),
    },
    Currency {
        sign: "€",
        unit: Unit::ru("евро", "евро", "евро", M),
        cents: Unit::ru("цент", "цента", "центов", M),
    },
    Currency {
        sign: "$",
        unit: Unit::ru("доллар", "доллара", "долларов", M),
        cents: Unit::ru("цент", "цента", "центов", M),
    },
    Currency {
        sign: "£",
        unit: Unit::ru("фунт", "фунта", "фунтов", M),
        cents: Unit::ru("пенни", "пенни", "пенни", N),
    },
];

/// Months in the genitive, as dates write them.
const MONTHS: &[&str] = &[
    "января",
    "февраля",
    "марта",
    "апреля",
    "мая",
    "июня",
    "июля",
    "августа",
    "сентября",
    "октября",
    "ноября",
    "декабря",
];

/// The forms of `год` after a year, with the ordinal's case (and the abbreviation `г.`, read
/// `года`).
const YEAR_WORDS: &[(&str, &str)] =
    &[("годом", "i"), ("году", "p"), ("года", "g"), ("год", "n"), ("г.", "g")];

/// Written ordinal endings (`5-й`, `5-го`): (ending, case, gender, plural).
const ENDINGS: &[(&str, &str, &str, bool)] = &[
    ("ого", "g", "m", false),
    ("ому", "d", "m", false),
    ("ый", "n", "m", false),
    ("ий", "n", "m", false),
    ("ой", "n", "m", false),
    ("ая", "n", "f", false),
    ("ое", "n", "n", false),
    ("ым", "i", "m", false),
    ("ом", "p", "m", false),
    ("ых", "g", "m", true),
    ("го", "g", "m", false),
    ("му", "d", "m", false),
    ("й", "n", "m", false),
    ("я", "n", "f", false),
    ("е", "n", "n", false),
    ("ю", "a", "f", false),
    ("м", "p", "m", false),
    ("х", "g", "m", true),
];

fn gender_code(g: Gender) -> &'static str {
    match g {
        M => "m",
        F => "f",
        N => "n",
    }
}

/// CLDR's Russian plural category of an integer: one, few or many.
fn category(n: u64) -> usize {
    let (last, tens) = (n % 10, n % 100);
    if last == 1 && tens != 11 {
        0
    } else if (2..=4).contains(&last) && !(12..=14).contains(&tens) {
        1
    } else {
        2
    }
}

impl Rules for Ru {
    fn numbering_words(&self) -> &'static [(&'static str, Gender)] {
        &[
            ("глава", Gender::Feminine),
            ("часть", Gender::Feminine),
            ("книга", Gender::Feminine),
            ("том", Gender::Masculine),
        ]
    }

    fn words(&self) -> &dyn Words {
        &*WORDS
    }
    fn group_dot(&self) -> bool {
        false
    }
    fn minus(&self) -> &'static str {
        "минус"
    }
    fn point(&self) -> &'static str {
        "запятая"
    }
    fn percent(&self) -> Unit {
        Unit::ru("процент", "процента", "процентов", M)
    }
    fn units(&self) -> &'static [(&'static str, Unit)] {
        UNITS
    }
    fn currencies(&self) -> &'static [Currency] {
        CURRENCIES
    }

    fn cardinal(&self, n: u64, gender: Option<Gender>) -> String {
        let g = gender_code(gender.unwrap_or(M));
        with_kwargs(self.words(), n, false, &[("case", "n"), ("gender", g)])
    }

    /// A decimal's unit is in the genitive singular (`3,5 километра`).
    fn form(&self, unit: &Unit, n: u64, frac: bool) -> &'static str {
        if frac {
            return unit.few;
        }
        [unit.one, unit.few, unit.many][category(n)]
    }

    fn ordinal_suffix(&self, n: u64, rest: &str, _before: &str) -> Option<(usize, String)> {
        let after = rest.strip_prefix(['-', '\u{2011}'])?;
        let &(ending, case, gender, plural) = ENDINGS.iter().find(|(e, ..)| {
            after.starts_with(e) && !after[e.len()..].starts_with(char::is_alphanumeric)
        })?;
        let mut kw = vec![("case", case), ("gender", gender)];
        if plural {
            kw = vec![("case", case), ("plural", "true")];
        }
        let words = ordinal(n, &kw);
        Some((rest.len() - after.len() + ending.len(), words))
    }

    fn in_context(&self, num: &Num, rest: &str, _before: &str) -> Option<(usize, String)> {
        let next = rest.trim_start();
        let gap = rest.len() - next.len();
        if gap > 0 && MONTHS.iter().any(|m| next.to_lowercase().starts_with(m)) {
            // `3 мая`: the day is a neuter ordinal in the genitive (`третьего`).
            return Some((0, ordinal(num.int, &[("case", "g"), ("gender", "n")])));
        }
        let &(word, case) = YEAR_WORDS.iter().find(|(w, _)| {
            next.starts_with(w) && !next[w.len()..].starts_with(char::is_alphanumeric)
        })?;
        // `5 г.` is five grams; a year has four digits.
        if word == "г." && num.int < 1000 {
            return None;
        }
        let year = ordinal(num.int, &[("case", case), ("gender", "m")]);
        if word == "г." {
            return Some((gap + word.len(), format!("{year} года")));
        }
        Some((0, year))
    }

    fn time(&self, h: u64, m: u64) -> String {
        let hours = self.cardinal(h, None);
        match m {
            0 => format!("{hours} {}", ["час", "часа", "часов"][category(h)]),
            _ => format!("{hours} {}", self.cardinal(m, Some(F))),
        }
    }

    /// `3,5` → `три целых пять десятых` (up to thousandths), else digit by digit after
    /// `запятая`.
    fn decimal(&self, int: u64, digits: &str) -> String {
        let denominators = [("десятая", "десятых"), ("сотая", "сотых"), ("тысячная", "тысячных")];
        let Some(&(one, many)) = denominators.get(digits.len().wrapping_sub(1)) else {
            return format!(
                "{} запятая {}",
                self.cardinal(int, None),
                super::digit_by_digit(self, digits)
            );
        };
        let frac: u64 = digits.parse().unwrap_or(0);
        let whole = if category(int) == 0 { "целая" } else { "целых" };
        let part = if category(frac) == 0 { one } else { many };
        format!("{} {whole} {} {part}", self.cardinal(int, Some(F)), self.cardinal(frac, Some(F)))
    }

    fn money(&self, int: u64, cents: Option<u64>, c: &Currency) -> String {
        let unit = self.form(&c.unit, int, false);
        let whole = format!("{} {unit}", self.cardinal(int, Some(c.unit.gender)));
        match cents {
            Some(k) if k > 0 => {
                let cent = self.form(&c.cents, k, false);
                format!("{whole} {} {cent}", self.cardinal(k, Some(c.cents.gender)))
            }
            _ => whole,
        }
    }
}

fn ordinal(n: u64, kw: &[(&str, &str)]) -> String {
    with_kwargs(&*WORDS, n, true, kw)
}
