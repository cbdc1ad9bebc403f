//! Dates and years: "14 March 2023" → "the fourteenth of March, twenty twenty-three" (day
//! first, read the British way), "March 14, 2023" → "March fourteenth, twenty twenty-three"
//! (month first, the American way), ISO `2023-03-14`, old ordinals (`3d`, `22d`) and year
//! ranges (`1788–89` → "seventeen eighty-eight to eighty-nine").

use super::numbers::{leading_digits, ordinal_en, year_en, year_plain_en, year_tail_en};
use super::{At, Reading, said};

/// The months, in order (also what the reading report knows a date by).
pub(crate) const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// Abbreviated months, read in full ("Sept. 3" → "September third").
const MONTH_ABBREVIATIONS: &[(&str, usize)] = &[
    ("Jan.", 0),
    ("Feb.", 1),
    ("Mar.", 2),
    ("Apr.", 3),
    ("Jun.", 5),
    ("Jul.", 6),
    ("Aug.", 7),
    ("Sept.", 8),
    ("Sep.", 8),
    ("Oct.", 9),
    ("Nov.", 10),
    ("Dec.", 11),
];

/// The month name at the start of `s` (title case or all capitals, or an abbreviation): its
/// length and how it is said (as written, or the full name for an abbreviation).
fn month_at(s: &str) -> Option<(usize, String)> {
    let word = &s[..s.bytes().take_while(u8::is_ascii_alphabetic).count()];
    let upper = word.to_uppercase();
    if MONTHS.iter().any(|m| *m == word || m.to_uppercase() == word && upper == word) {
        return Some((word.len(), word.to_string()));
    }
    MONTH_ABBREVIATIONS
        .iter()
        .find(|(a, _)| s.starts_with(a))
        .map(|&(a, m)| (a.len(), MONTHS[m].to_string()))
}

/// A day of the month at the start of `s`: 1–31, with an optional ordinal suffix (`st`, `nd`,
/// `rd`, `th`, or the old `d` of `3d`, `22d`); its length and value.
fn day_at(s: &str) -> Option<(usize, u64)> {
    let d = leading_digits(s);
    if d.is_empty() || d.len() > 2 {
        return None;
    }
    let v: u64 = d.parse().ok()?;
    if !(1..=31).contains(&v) {
        return None;
    }
    let tail = &s[d.len()..];
    let suffix =
        ["st", "nd", "rd", "th", "d"].into_iter().find(|x| tail.starts_with(x)).unwrap_or("");
    let n = d.len() + suffix.len();
    let next = s[n..].chars().next();
    let glued = next.is_some_and(|c| c.is_alphanumeric() || c == ':');
    let decimal = next == Some('.') && s[n + 1..].starts_with(|c: char| c.is_ascii_digit());
    let clear = !glued && !decimal;
    clear.then_some((n, v))
}

/// A year after a date: `, 2023` or ` 2023` (a 4-digit year from 1000 to 2099 that ends
/// there): its length (with the separator) and value.
fn year_after(s: &str) -> Option<(usize, u64)> {
    let sep = if s.starts_with(", ") {
        2
    } else if s.starts_with(' ') {
        1
    } else {
        return None;
    };
    let d = leading_digits(&s[sep..]);
    let v: u64 = d.parse().ok()?;
    let next = s[sep + d.len()..].chars().next();
    (d.len() == 4 && (1000..2100).contains(&v) && !next.is_some_and(char::is_alphanumeric))
        .then_some((sep + d.len(), v))
}

/// Day first: "14 March 2023" → "the fourteenth of March, twenty twenty-three"; "3 May" →
/// "the third of May". The year keeps the British "two thousand and nine".
pub(super) fn day_month(at: At<'_>) -> Option<Reading> {
    let (dn, day) = day_at(at.rest)?;
    let rest = at.rest[dn..].strip_prefix(' ')?;
    let (mn, month) = month_at(rest)?;
    if rest[mn..].starts_with(char::is_alphanumeric) {
        return None;
    }
    let mut reading =
        vec![(dn, format!("the {} of", ordinal_en(day))), (1 + mn, format!(" {month}"))];
    if let Some((yn, y)) = year_after(&rest[mn..]) {
        reading.push((yn, format!(", {}", year_en(y))));
    }
    Some(reading)
}

/// Month first: "March 14, 2023" → "March fourteenth, twenty twenty-three", "January 3, 2009"
/// → "January third, two thousand nine", "AUGUST 3d" → "AUGUST third".
pub(super) fn month_day(at: At<'_>) -> Option<Reading> {
    let (mn, month) = month_at(at.rest)?;
    let rest = at.rest[mn..].strip_prefix(' ')?;
    let (dn, day) = day_at(rest)?;
    let mut reading = vec![(mn, month), (1 + dn, format!(" {}", ordinal_en(day)))];
    if let Some((yn, y)) = year_after(&rest[dn..]) {
        reading.push((yn, format!(", {}", year_plain_en(y))));
    }
    Some(reading)
}

/// ISO `2023-03-14` → "March fourteenth, twenty twenty-three".
pub(super) fn iso_date(at: At<'_>) -> Option<Reading> {
    let s = at.rest;
    let b = s.as_bytes();
    let digits =
        |r: std::ops::Range<usize>| s.get(r).filter(|t| t.bytes().all(|c| c.is_ascii_digit()));
    let (y, m, d) = (digits(0..4)?, digits(5..7)?, digits(8..10)?);
    if b[4] != b'-' || b[7] != b'-' || at.word_goes_on(10) || b.get(10) == Some(&b'-') {
        return None;
    }
    let (y, m, d): (u64, usize, u64) = (y.parse().ok()?, m.parse().ok()?, d.parse().ok()?);
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return None;
    }
    let spoken = format!("{} {}, {}", MONTHS[m - 1], ordinal_en(d), year_plain_en(y));
    Some(said(10, spoken))
}

/// Old ordinals: `2d` → "second", `3d` → "third", `22d` → "twenty-second" (19th-century
/// books write them so). Only numbers ending in 2 or 3 (not 12, 13) take `d`; `6d.` is pence.
pub(super) fn old_ordinal(at: At<'_>) -> Option<Reading> {
    let d = leading_digits(at.rest);
    if !at.rest[d.len()..].starts_with('d') || at.word_goes_on(d.len() + 1) {
        return None;
    }
    let v: u64 = d.parse().ok()?;
    let ordinal = matches!(v % 10, 2 | 3) && !matches!(v % 100, 12 | 13);
    let pence = at.rest[d.len() + 1..].starts_with('.') && !at.before.ends_with("the ");
    (ordinal && !pence).then(|| said(d.len() + 1, ordinal_en(v)))
}

/// A range of years: `1788-1789`, `1788–1789` → "seventeen eighty-eight to seventeen
/// eighty-nine"; `1788–89` → "… to eighty-nine". The second year must be later, so an
/// identifier like `2023-1999` is not a range.
pub(super) fn year_range(at: At<'_>) -> Option<Reading> {
    let y1 = leading_digits(at.rest);
    if y1.len() != 4 {
        return None;
    }
    let v1: u64 = y1.parse().ok()?;
    let dash = ["-", "–"].into_iter().find(|d| at.rest[4..].starts_with(d))?;
    let tail = &at.rest[4 + dash.len()..];
    let y2 = leading_digits(tail);
    let end = 4 + dash.len() + y2.len();
    if !(1000..2100).contains(&v1) || at.word_goes_on(end) || at.char_after(end) == Some('-') {
        return None;
    }
    let v2: u64 = y2.parse().ok()?;
    let second = match y2.len() {
        4 if v2 > v1 && v2 < 2100 => year_en(v2),
        2 if v1 / 100 * 100 + v2 > v1 => year_tail_en(v2),
        _ => return None,
    };
    Some(vec![(4, year_en(v1)), (dash.len(), " to ".into()), (y2.len(), second)])
}
