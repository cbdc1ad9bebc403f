//! Fractions: vulgar fraction characters (`⅔` → "two thirds", `½` → "one half", `1½` → "one
//! and a half"), the fraction slash U+2044 (`2⁄3`, and `22⁄3` → "two and two thirds", the way
//! typesetters write a mixed number with it), and `3/4` with a plain slash when it is clearly
//! a fraction (a denominator from 2 to 10, no second slash as in a date `3/4/2020`).

use super::numbers::{Num, fraction_en, leading_digits, mixed_en, scan_number};
use super::units;
use super::{At, Reading, said};

/// The vulgar fraction characters and their (numerator, denominator).
const VULGAR: &[(char, u64, u64)] = &[
    ('½', 1, 2),
    ('⅓', 1, 3),
    ('⅔', 2, 3),
    ('¼', 1, 4),
    ('¾', 3, 4),
    ('⅕', 1, 5),
    ('⅖', 2, 5),
    ('⅗', 3, 5),
    ('⅘', 4, 5),
    ('⅙', 1, 6),
    ('⅚', 5, 6),
    ('⅐', 1, 7),
    ('⅛', 1, 8),
    ('⅜', 3, 8),
    ('⅝', 5, 8),
    ('⅞', 7, 8),
    ('⅑', 1, 9),
    ('⅒', 1, 10),
];

fn vulgar_at(s: &str) -> Option<(usize, u64, u64)> {
    let c = s.chars().next()?;
    VULGAR.iter().find(|v| v.0 == c).map(|&(c, a, b)| (c.len_utf8(), a, b))
}

/// A vulgar fraction on its own: `⅔` → "two thirds", `½ cup` → "one half cup".
pub(super) fn vulgar(at: At<'_>) -> Option<Reading> {
    let (n, a, b) = vulgar_at(at.rest)?;
    let pre = if at.before.ends_with(char::is_alphabetic) { " " } else { "" };
    Some(said(n, format!("{pre}{}", fraction_en(a, b))))
}

/// A fraction that starts with the number `num`: `1½`, `2⁄3`, `22⁄3`, `3/4`; a unit after it
/// is read too (`22⁄3 m. long` → "two and two thirds miles long").
pub(super) fn after_number(at: At<'_>, num: &Num) -> Option<Reading> {
    if !num.is_plain_int() {
        return None;
    }
    let whole = num.int_value()?;
    let after = &at.rest[num.len..];
    let (n, spoken) = if let Some((n, a, b)) = vulgar_at(after) {
        (num.len + n, mixed_en(whole, a, b))
    } else if let Some(den) = after.strip_prefix('⁄') {
        let (n, spoken) = fraction_slash(&num.int, den)?;
        (num.len + '⁄'.len_utf8() + n, spoken)
    } else {
        let (n, b) = slash_denominator(after.strip_prefix('/')?)?;
        (num.len + 1 + n, fraction_en(whole, b))
    };
    let mut reading = said(n, spoken);
    reading.extend(units::unit_after(&at.rest[n..], false));
    Some(reading)
}

/// `a⁄b`: a proper fraction (`2⁄3` → "two thirds"), or, when the numerator's last digit is
/// smaller than the one-digit denominator and more digits lead it, a mixed number set with
/// the fraction slash (`22⁄3` → "two and two thirds", `13⁄4` → "one and three quarters").
fn fraction_slash(num: &str, den: &str) -> Option<(usize, String)> {
    let d = leading_digits(den);
    let b: u64 = d.parse().ok()?;
    let a: u64 = num.parse().ok()?;
    if b < 2 || den[d.len()..].starts_with(char::is_alphanumeric) {
        return None;
    }
    if a < b {
        return Some((d.len(), fraction_en(a, b)));
    }
    let last = a % 10;
    (d.len() == 1 && num.len() > 1 && last > 0 && last < b)
        .then(|| (d.len(), mixed_en(a / 10, last, b)))
}

/// The denominator of `3/4` (2 to 10, a whole number, not followed by another slash or a
/// letter): its length and value.
fn slash_denominator(s: &str) -> Option<(usize, u64)> {
    let den = scan_number(s)?;
    let clear =
        den.frac.is_none() && !s[den.len..].starts_with(|c: char| c == '/' || c.is_alphanumeric());
    let b = den.int_value()?;
    (clear && (2..=10).contains(&b)).then_some((den.len, b))
}
