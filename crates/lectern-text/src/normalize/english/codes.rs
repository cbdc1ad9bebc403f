//! Digits that are not quantities, read as a narrator reads codes: phone numbers and ZIP
//! codes digit by digit with zero as "oh" (`(800) 998-9938`, `30303`), house numbers in pairs
//! (`221B Baker St.` → "two twenty-one B Baker Street"), `#2701` → "number two seven oh one",
//! `.373` → "point three seven three", versions (`0.5.3` → "zero point five point three"),
//! and letter–digit codes spelt out (`3D` → "three D", `A4` → "A four", `2H2O` → "two H two
//! O").

use super::numbers::{cardinal_en, digits_oh_en, leading_digits, paired_en};
use super::units;
use super::{At, Reading, said};

/// A phone number: `(800) 998-9938`, `800-998-9938`, `998-9938`; each group digit by digit,
/// the groups apart as a comma's pause ("eight oh oh, nine nine eight, nine nine three
/// eight").
pub(super) fn phone(at: At<'_>) -> Option<Reading> {
    if at.before.ends_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    let s = at.rest;
    let (area, n) = if let Some(inner) = s.strip_prefix('(') {
        let d = leading_digits(inner);
        inner[d.len()..].strip_prefix(") ")?;
        (Some(d), 1 + d.len() + 2)
    } else {
        let d = leading_digits(s);
        match s[d.len()..].strip_prefix('-') {
            Some(t) if d.len() == 3 && leading_digits(t).len() == 3 && t[3..].starts_with('-') => {
                (Some(d), 4)
            }
            _ => (None, 0),
        }
    };
    if area.is_some_and(|a| a.len() != 3) {
        return None;
    }
    let local = &s[n..];
    let (a, b) = (leading_digits(local), local.get(4..).map(leading_digits).unwrap_or(""));
    if a.len() != 3 || local.as_bytes().get(3) != Some(&b'-') || b.len() != 4 {
        return None;
    }
    if at.word_goes_on(n + 8) || at.char_after(n + 8) == Some('-') {
        return None;
    }
    let groups: Vec<String> = area.into_iter().chain([a, b]).map(digits_oh_en).collect();
    Some(said(n + 8, groups.join(", ")))
}

/// Words that name a street; a number before a name that ends in one is a house number.
const STREET_WORDS: &[&str] = &[
    "Street",
    "St.",
    "St",
    "Avenue",
    "Ave.",
    "Road",
    "Rd.",
    "Lane",
    "Place",
    "Square",
    "Boulevard",
    "Blvd.",
    "Drive",
    "Terrace",
    "Court",
    "Way",
    "Row",
    "Crescent",
    "Gardens",
    "Close",
    "Walk",
];

/// A house number (with an optional letter) before a street's name: `221B Baker St.` → "two
/// twenty-one B", `1600 Pennsylvania Avenue` → "sixteen hundred".
pub(super) fn house_number(at: At<'_>) -> Option<Reading> {
    let d = leading_digits(at.rest);
    if d.len() > 5 {
        return None;
    }
    let letter = at.rest[d.len()..].starts_with(|c: char| c.is_ascii_uppercase())
        && !at.word_goes_on(d.len() + 1);
    let n = d.len() + usize::from(letter);
    if at.word_goes_on(n) || !street_follows(&at.rest[n..]) {
        return None;
    }
    let mut reading = said(d.len(), paired_en(d));
    if letter {
        reading.push((1, format!(" {}", &at.rest[d.len()..n])));
    }
    Some(reading)
}

/// Whether one to three capitalised words and then a street word follow.
fn street_follows(s: &str) -> bool {
    let mut words = s.split(' ').skip(1);
    let Some(first) = words.next() else { return false };
    if !first.starts_with(char::is_uppercase) || STREET_WORDS.contains(&first) {
        return false;
    }
    words.take(3).any(|w| {
        let w = w.trim_end_matches([',', ';', ':', ')']);
        STREET_WORDS.contains(&w) || STREET_WORDS.contains(&w.trim_end_matches('.'))
    })
}

/// A version or section number with two dots or more: `0.5.3` → "zero point five point
/// three" (each part at most three digits).
pub(super) fn version(at: At<'_>) -> Option<Reading> {
    let mut parts = Vec::new();
    let mut n = 0;
    loop {
        let d = leading_digits(&at.rest[n..]);
        if d.is_empty() || d.len() > 3 {
            return None;
        }
        parts.push(if d.len() > 1 && d.starts_with('0') {
            digits_oh_en(d)
        } else {
            cardinal_en(d.parse().ok()?)
        });
        n += d.len();
        if at.rest[n..].starts_with('.')
            && at.rest[n + 1..].starts_with(|c: char| c.is_ascii_digit())
        {
            n += 1;
        } else {
            break;
        }
    }
    (parts.len() >= 3 && !at.word_goes_on(n)).then(|| said(n, parts.join(" point ")))
}

/// The letters-and-digits token at the cursor: upper-case letters and digits only, at most 10
/// chars, ending there. Its runs, each letters or digits.
fn code_runs(s: &str) -> Option<(usize, Vec<&str>)> {
    let n = s.bytes().take_while(|b| b.is_ascii_uppercase() || b.is_ascii_digit()).count();
    if n > 10 || s[n..].starts_with(char::is_alphanumeric) {
        return None;
    }
    let token = &s[..n];
    let mut runs = Vec::new();
    let mut start = 0;
    for k in 1..=n {
        let b = token.as_bytes();
        if k == n || b[k].is_ascii_digit() != b[k - 1].is_ascii_digit() {
            runs.push(&token[start..k]);
            start = k;
        }
    }
    let letters_ok =
        runs.iter().all(|r| r.starts_with(|c: char| c.is_ascii_digit()) || r.len() <= 3);
    let mixed = runs.len() >= 2;
    (letters_ok && mixed).then_some((n, runs))
}

/// A code's runs read aloud: digits in pairs (`221` "two twenty-one"), letters one by one.
fn read_code(runs: &[&str]) -> String {
    runs.iter()
        .map(|r| {
            if r.starts_with(|c: char| c.is_ascii_digit()) {
                paired_en(r)
            } else {
                r.chars().map(String::from).collect::<Vec<_>>().join(" ")
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A code that starts with digits: `3D` → "three D", `4K`, `2H2O` → "two H two O". Not an
/// ordinal (`1ST`) or a number with an upper-case unit (`10MB`).
pub(super) fn digit_code(at: At<'_>) -> Option<Reading> {
    let (n, runs) = code_runs(at.rest)?;
    let tail = runs[1];
    if ["ST", "ND", "RD", "TH"].contains(&tail) && runs.len() == 2 {
        return None;
    }
    if units::unit_after(&at.rest[runs[0].len()..], false).is_some() {
        return None;
    }
    Some(said(n, read_code(&runs)))
}

/// A code that starts with letters: `A4` → "A four", `B12`, `H2O` → "H two O", `CO2`.
pub(super) fn letter_code(at: At<'_>) -> Option<Reading> {
    let (n, runs) = code_runs(at.rest)?;
    Some(said(n, read_code(&runs)))
}

/// `#2701` → "number two seven oh one"; `#5` → "number five".
pub(super) fn hash_number(at: At<'_>) -> Option<Reading> {
    let d = leading_digits(at.rest.strip_prefix('#')?);
    if d.is_empty() || at.word_goes_on(1 + d.len()) {
        return None;
    }
    let spoken = if d.len() <= 2 { cardinal_en(d.parse().ok()?) } else { digits_oh_en(d) };
    Some(said(1 + d.len(), format!("number {spoken}")))
}

/// A decimal written without its zero: `.373` → "point three seven three".
pub(super) fn leading_point(at: At<'_>) -> Option<Reading> {
    let d = leading_digits(at.rest.strip_prefix('.')?);
    let starts_word = !at.before.ends_with(|c: char| c.is_alphanumeric() || c == '.');
    (starts_word && !d.is_empty() && !at.word_goes_on(1 + d.len()))
        .then(|| said(1 + d.len(), format!("point {}", super::numbers::digits_en(d))))
}

/// A ZIP code after a state: ` 30303` or ` 30303-1234`, digit by digit.
pub(super) fn zip_after(s: &str) -> Option<(usize, String)> {
    let d = leading_digits(s.strip_prefix(' ')?);
    if d.len() != 5 {
        return None;
    }
    let mut n = 1 + d.len();
    let mut spoken = format!(" {}", digits_oh_en(d));
    if let Some(plus4) = s[n..].strip_prefix('-').map(leading_digits).filter(|p| p.len() == 4) {
        spoken = format!("{spoken}, {}", digits_oh_en(plus4));
        n += 5;
    }
    (!s[n..].starts_with(char::is_alphanumeric)).then_some((n, spoken))
}
