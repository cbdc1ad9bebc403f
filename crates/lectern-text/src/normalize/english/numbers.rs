//! English number words: cardinals, ordinals, years, digit strings, and the scanner that finds
//! a numeral in the text.

/// A scanned numeral: integer digits (commas removed), optional fraction digits.
#[derive(Debug)]
pub(crate) struct Num {
    pub int: String,
    pub frac: Option<String>,
    /// Bytes consumed.
    pub len: usize,
    /// Written with thousands separators.
    pub grouped: bool,
}

impl Num {
    pub fn int_value(&self) -> Option<u64> {
        if self.int.len() > 15 { None } else { self.int.parse().ok() }
    }

    /// A plain whole number (no fraction, no separators).
    pub fn is_plain_int(&self) -> bool {
        self.frac.is_none() && !self.grouped
    }

    pub fn is_year_like(&self) -> bool {
        self.is_plain_int()
            && self.int.len() == 4
            && self.int_value().is_some_and(|v| (1100..=2099).contains(&v))
    }

    /// Exactly one, so a unit after it is singular ("1 kg" → "one kilogram").
    pub fn is_one(&self) -> bool {
        self.frac.is_none() && self.int == "1"
    }

    pub fn words_en(&self) -> String {
        let int = match self.int_value() {
            Some(v) if !(self.int.len() > 1 && self.int.starts_with('0')) => cardinal_en(v),
            _ => digits_en(&self.int),
        };
        match &self.frac {
            Some(f) => format!("{int} point {}", digits_en(f)),
            None => int,
        }
    }
}

/// Scans `12`, `1,234,567`, `3.14` at the start of `s`.
pub(crate) fn scan_number(s: &str) -> Option<Num> {
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
        while i + 4 <= b.len() && b[i] == b',' && digits(i + 1) == 3 {
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

/// The run of ASCII digits at the start of `s`.
pub(crate) fn leading_digits(s: &str) -> &str {
    let n = s.bytes().take_while(u8::is_ascii_digit).count();
    &s[..n]
}

pub(crate) const ONES: [&str; 20] = [
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

pub(crate) fn under_100(n: u64) -> String {
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

/// A year in an American month-first date, where 2009 is "two thousand nine" (no "and"),
/// as "January 3, 2009" is said.
pub(crate) fn year_plain_en(y: u64) -> String {
    year_en(y).replace(" and ", " ")
}

/// The last two digits of a year as said after "to" in a range: 89 → "eighty-nine",
/// 05 → "oh five".
pub(crate) fn year_tail_en(yy: u64) -> String {
    if yy < 10 { format!("oh {}", ONES[yy as usize]) } else { under_100(yy) }
}

/// Each digit by its name: "007" → "zero zero seven".
pub(crate) fn digits_en(d: &str) -> String {
    d.chars().filter_map(|c| c.to_digit(10)).map(|v| ONES[v as usize]).collect::<Vec<_>>().join(" ")
}

/// Each digit by its name with zero said "oh", as codes, ZIPs and phone numbers are read:
/// "30303" → "three oh three oh three".
pub(crate) fn digits_oh_en(d: &str) -> String {
    d.chars()
        .filter_map(|c| c.to_digit(10))
        .map(|v| if v == 0 { "oh" } else { ONES[v as usize] })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A number read in pairs, as house numbers and model numbers are: 221 → "two twenty-one",
/// 205 → "two oh five", 300 → "three hundred", 1600 → "sixteen hundred", 1234 → "twelve
/// thirty-four"; up to two digits it is the cardinal, past four digit by digit.
pub(crate) fn paired_en(d: &str) -> String {
    let Ok(v) = d.parse::<u64>() else { return digits_en(d) };
    if d.len() > 1 && d.starts_with('0') {
        return digits_oh_en(d);
    }
    match d.len() {
        0..=2 => cardinal_en(v),
        3 => match v % 100 {
            0 => format!("{} hundred", ONES[(v / 100) as usize]),
            r => format!("{} {}", ONES[(v / 100) as usize], year_tail_en(r)),
        },
        4 if v % 1000 == 0 => cardinal_en(v),
        4 if v % 1000 < 100 => year_plain_en(v),
        4 => match v % 100 {
            0 => format!("{} hundred", under_100(v / 100)),
            r => format!("{} {}", under_100(v / 100), year_tail_en(r)),
        },
        _ => digits_oh_en(d),
    }
}

/// `a/b` read as a fraction: 3/4 → "three quarters", 1/2 → "one half", 2/3 → "two thirds".
pub(crate) fn fraction_en(a: u64, b: u64) -> String {
    format!("{} {}", cardinal_en(a), denominator_en(a, b))
}

/// The denominator's word, plural unless the numerator is one: "half", "thirds", "quarters".
pub(crate) fn denominator_en(a: u64, b: u64) -> String {
    let den = match b {
        2 => "half".to_string(),
        4 => "quarter".to_string(),
        b => ordinal_en(b),
    };
    if a == 1 {
        den
    } else if den == "half" {
        "halves".into()
    } else {
        format!("{den}s")
    }
}

/// A whole number and a fraction: (1, 1, 2) → "one and a half", (22, 2, 3) → "twenty-two and
/// two thirds".
pub(crate) fn mixed_en(whole: u64, a: u64, b: u64) -> String {
    let frac = if a == 1 { format!("a {}", denominator_en(1, b)) } else { fraction_en(a, b) };
    format!("{} and {frac}", cardinal_en(whole))
}

/// Capitalises the first letter: "sixteenth" → "Sixteenth".
pub(crate) fn capitalised(w: &str) -> String {
    let mut c = w.chars();
    c.next().map(|f| f.to_uppercase().chain(c).collect()).unwrap_or_default()
}
