//! Money: `$3.50` → "three dollars and fifty cents", `€5 million` → "five million euros", and
//! the old British pounds, shillings and pence: `£5 10s. 6d.` → "five pounds ten shillings and
//! sixpence", `3s. 6d.` → "three shillings and sixpence", `6d.` → "sixpence", `L100,000` →
//! "one hundred thousand pounds".

use super::dot_ends_sentence;
use super::numbers::{Num, cardinal_en, leading_digits, scan_number};
use super::{At, Reading, said};

/// A currency sign before a number.
pub(super) fn currency(at: At<'_>) -> Option<Reading> {
    let sym = at.rest.chars().next()?;
    if !matches!(sym, '$' | '£' | '€' | '¥') {
        return None;
    }
    let n = sym.len_utf8();
    let num = scan_number(&at.rest[n..])?;
    let (len, spoken) = amount(sym, &num, &at.rest[n + num.len..]);
    let mut reading = said(n + len, spoken);
    if sym == '£' && num.frac.is_none() {
        reading.extend(shillings_after(&at.rest[n + len..]).unwrap_or_default());
    }
    Some(reading)
}

/// The spoken amount of `num` in the currency of `sym`, with a scale word after it ("5
/// million"); the bytes read after the sign and the words.
fn amount(sym: char, num: &Num, after: &str) -> (usize, String) {
    let (unit, units, sub, subs) = match sym {
        '$' => ("dollar", "dollars", "cent", "cents"),
        '£' => ("pound", "pounds", "penny", "pence"),
        '€' => ("euro", "euros", "cent", "cents"),
        _ => ("yen", "yen", "sen", "sen"),
    };
    let scale = ["thousand", "million", "billion", "trillion"].into_iter().find(|w| {
        after.starts_with(' ')
            && after[1..].starts_with(w)
            && !after[1 + w.len()..].starts_with(char::is_alphanumeric)
    });
    if let Some(w) = scale {
        return (num.len + 1 + w.len(), format!("{} {w} {units}", num.words_en()));
    }
    let cents = num.frac.as_deref().and_then(|f| match f.len() {
        1 => f.parse::<u64>().ok().map(|v| v * 10),
        2 => f.parse::<u64>().ok(),
        _ => None,
    });
    let counted = |v: u64, one: &str, many: &str| {
        format!("{} {}", cardinal_en(v), if v == 1 { one } else { many })
    };
    let spoken = match (num.int_value(), cents) {
        (Some(w), Some(c)) => match (w, c) {
            (0, 0) => format!("zero {units}"),
            (0, _) => counted(c, sub, subs),
            (_, 0) => counted(w, unit, units),
            _ => format!("{} and {}", counted(w, unit, units), counted(c, sub, subs)),
        },
        (Some(w), None) if num.frac.is_none() => counted(w, unit, units),
        _ => format!("{} {units}", num.words_en()),
    };
    (num.len, spoken)
}

/// `Ns.` (shillings) at the start of `s`: its length and count.
fn shillings_at(s: &str) -> Option<(usize, u64)> {
    let d = leading_digits(s);
    if d.is_empty() || !s[d.len()..].starts_with("s.") {
        return None;
    }
    Some((d.len() + 2, d.parse().ok()?))
}

/// `Nd.` (pence) at the start of `s`: its length and count.
fn pence_at(s: &str) -> Option<(usize, u64)> {
    let d = leading_digits(s);
    if d.is_empty() || !s[d.len()..].starts_with("d.") {
        return None;
    }
    Some((d.len() + 2, d.parse().ok()?))
}

/// Pence as said: "a penny"… "one penny", "twopence", "sixpence", "elevenpence", then "twelve
/// pence" and up.
fn pence_en(v: u64) -> String {
    match v {
        1 => "one penny".into(),
        2..=11 => format!("{}pence", cardinal_en(v)),
        _ => format!("{} pence", cardinal_en(v)),
    }
}

/// ` 10s.` and/or ` 6d.` after a pound amount: "ten shillings and sixpence".
fn shillings_after(s: &str) -> Option<Reading> {
    let rest = s.strip_prefix(' ')?;
    if let Some((n, v)) = shillings_at(rest) {
        let unit = if v == 1 { "shilling" } else { "shillings" };
        let mut reading = said(1 + n, format!(" {} {unit}", cardinal_en(v)));
        reading.extend(pence_after(&rest[n..], true).unwrap_or_default());
        return Some(reading);
    }
    pence_after(s, true)
}

/// ` 6d.` after shillings or pounds: " and sixpence" (the dot kept where it ends the
/// sentence).
fn pence_after(s: &str, joined: bool) -> Option<Reading> {
    let rest = s.strip_prefix(' ')?;
    let (n, v) = pence_at(rest)?;
    let and = if joined { " and " } else { " " };
    let dot = if dot_ends_sentence(&rest[n..]) { "." } else { "" };
    Some(said(1 + n, format!("{and}{}{dot}", pence_en(v))))
}

/// Shillings and pence without pounds: `3s. 6d.` → "three shillings and sixpence".
pub(super) fn shillings_and_pence(at: At<'_>) -> Option<Reading> {
    let (n, v) = shillings_at(at.rest)?;
    let tail = pence_after(&at.rest[n..], true)?;
    let unit = if v == 1 { "shilling" } else { "shillings" };
    let mut reading = said(n, format!("{} {unit}", cardinal_en(v)));
    reading.extend(tail);
    Some(reading)
}

/// Pence alone: `6d.` → "sixpence" (old ordinals like `3d` have no dot and are read by
/// [`super::dates::old_ordinal`] first).
pub(super) fn pence(at: At<'_>) -> Option<Reading> {
    let (n, v) = pence_at(at.rest)?;
    let dot = if dot_ends_sentence(&at.rest[n..]) { "." } else { "" };
    Some(said(n, format!("{}{dot}", pence_en(v))))
}

/// `L` for pounds before an amount with thousands separators or of four digits or more, as
/// older books print it: `L100,000` → "one hundred thousand pounds". Smaller `L4` is more
/// likely a code (a vertebra, a paper size) and is left to [`super::codes::letter_code`].
pub(super) fn pounds_l(at: At<'_>) -> Option<Reading> {
    let num = scan_number(at.rest.strip_prefix('L')?)?;
    if !(num.grouped || num.int.len() >= 4) || at.word_goes_on(1 + num.len) {
        return None;
    }
    let (len, spoken) = amount('£', &num, &at.rest[1 + num.len..]);
    Some(said(1 + len, spoken))
}
