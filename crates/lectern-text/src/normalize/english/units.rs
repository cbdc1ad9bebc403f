//! Quantities with units and angles: `5 kg` → "five kilograms", `1 kg` → "one kilogram",
//! `96 ft.` → "ninety-six feet", `60 km/h`, `59,265 sq. m.` → "… square miles"; `30° 31′ 39″
//! N.` → "thirty degrees thirty-one minutes thirty-nine seconds north", `40° F.` → "forty
//! degrees Fahrenheit".
//!
//! A unit is read only right after a number (one space at most between them), so "in", "m" or
//! "g" elsewhere stay words and letters.

use super::dot_ends_sentence;
use super::numbers::{Num, scan_number};
use super::{At, Reading};

/// (written unit, singular, plural). Longer spellings first (`km/h` before `km`, `lbs.`
/// before `lb`). A unit written with a dot keeps it where the dot also ends the sentence.
const UNITS: &[(&str, &str, &str)] = &[
    ("sq. mi.", "square mile", "square miles"),
    // In the older books (encyclopaedias) that write `sq. m.`, `m.` is the mile: square
    // metres are written m².
    ("sq. m.", "square mile", "square miles"),
    ("sq. ft.", "square foot", "square feet"),
    ("sq. km", "square kilometre", "square kilometres"),
    ("km/h", "kilometre per hour", "kilometres per hour"),
    ("mph", "mile per hour", "miles per hour"),
    ("kg", "kilogram", "kilograms"),
    ("mg", "milligram", "milligrams"),
    ("km", "kilometre", "kilometres"),
    ("cm", "centimetre", "centimetres"),
    ("mm", "millimetre", "millimetres"),
    ("ml", "millilitre", "millilitres"),
    ("lbs.", "pound", "pounds"),
    ("lbs", "pound", "pounds"),
    ("lb.", "pound", "pounds"),
    ("lb", "pound", "pounds"),
    ("oz.", "ounce", "ounces"),
    ("oz", "ounce", "ounces"),
    ("ft.", "foot", "feet"),
    ("ft", "foot", "feet"),
    ("in.", "inch", "inches"),
    ("yds.", "yard", "yards"),
    ("yd.", "yard", "yards"),
    ("yds", "yard", "yards"),
    ("yd", "yard", "yards"),
    ("mi.", "mile", "miles"),
    ("mi", "mile", "miles"),
    ("kHz", "kilohertz", "kilohertz"),
    ("MHz", "megahertz", "megahertz"),
    ("GHz", "gigahertz", "gigahertz"),
    ("Hz", "hertz", "hertz"),
    ("kW", "kilowatt", "kilowatts"),
    ("KB", "kilobyte", "kilobytes"),
    ("MB", "megabyte", "megabytes"),
    ("GB", "gigabyte", "gigabytes"),
    ("TB", "terabyte", "terabytes"),
    ("g", "gram", "grams"),
    ("m", "metre", "metres"),
];

/// A number and the unit after it.
pub(super) fn quantity(at: At<'_>, num: &Num) -> Option<Reading> {
    let (n, unit) = unit_after(&at.rest[num.len..], num.is_one())?;
    Some(vec![(num.len, num.words_en()), (n, unit)])
}

/// The unit right after a number (one space at most before it): its length and " unit",
/// singular when the number is exactly one.
pub(super) fn unit_after(after: &str, singular: bool) -> Option<(usize, String)> {
    let sp = usize::from(after.starts_with(' '));
    let tail = &after[sp..];
    let (n, one, many) = unit_at(tail)?;
    let word = if singular { one } else { many };
    let dotted = tail[..n].ends_with('.');
    let dot = if dotted && dot_ends_sentence(&tail[n..]) { "." } else { "" };
    Some((sp + n, format!(" {word}{dot}")))
}

/// The unit at the start of `s` (it must end there): its length and words.
fn unit_at(s: &str) -> Option<(usize, &'static str, &'static str)> {
    if let Some(miles) = old_miles(s) {
        return Some(miles);
    }
    UNITS.iter().find_map(|&(u, one, many)| {
        let tail = s.strip_prefix(u)?;
        let ends = !tail.starts_with(|c: char| c.is_alphanumeric() || c == '/');
        ends.then_some((u.len(), one, many))
    })
}

/// `m.` before a lower-case word is the mile of older books ("45 m. long"); SI metres take no
/// dot, so at a sentence end `5 m.` stays metres and its dot the full stop.
fn old_miles(s: &str) -> Option<(usize, &'static str, &'static str)> {
    let next = s.strip_prefix("m. ")?;
    next.starts_with(char::is_lowercase).then_some((2, "mile", "miles"))
}

/// An angle or temperature: `30°` with optional `31′` and `39″` and a compass letter, or
/// `40° F.`/`100 °C`.
pub(super) fn angle(at: At<'_>, num: &Num) -> Option<Reading> {
    let deg = at.rest[num.len..].strip_prefix('°')?;
    let mut reading = vec![(num.len + '°'.len_utf8(), counted(num, "degree", "degrees"))];
    let mut rest = deg;
    if let Some((n, word)) = scale_letter(rest) {
        reading.push((n, word));
        return Some(reading);
    }
    for (mark, one, many) in [('′', "minute", "minutes"), ('″', "second", "seconds")] {
        let sp = usize::from(rest.starts_with(' '));
        let Some(m) = scan_number(&rest[sp..]) else { break };
        if !rest[sp + m.len..].starts_with(mark) {
            break;
        }
        let n = sp + m.len + mark.len_utf8();
        reading.push((n, format!(" {}", counted(&m, one, many))));
        rest = &rest[n..];
    }
    if let Some((n, word)) = compass_letter(rest) {
        reading.push((n, word));
    }
    Some(reading)
}

/// `n` and its unit, singular for exactly one.
fn counted(num: &Num, one: &str, many: &str) -> String {
    format!("{} {}", num.words_en(), if num.is_one() { one } else { many })
}

/// ` F.`, `F`, ` C` after a degree sign: the temperature scale.
fn scale_letter(s: &str) -> Option<(usize, String)> {
    let sp = usize::from(s.starts_with(' '));
    let word = match s[sp..].chars().next()? {
        'F' => "Fahrenheit",
        'C' => "Celsius",
        _ => return None,
    };
    letter_with_dot(s, sp, word)
}

/// ` N.`, ` W` after an angle: the compass direction of a latitude or longitude.
fn compass_letter(s: &str) -> Option<(usize, String)> {
    let sp = usize::from(s.starts_with(' '));
    let word = match s[sp..].chars().next()? {
        'N' => "north",
        'S' => "south",
        'E' => "east",
        'W' => "west",
        _ => return None,
    };
    letter_with_dot(s, sp, word)
}

/// A one-letter abbreviation after `sp` spaces, optionally dotted, that ends there.
fn letter_with_dot(s: &str, sp: usize, word: &str) -> Option<(usize, String)> {
    let mut n = sp + 1;
    if s[n..].starts_with(char::is_alphanumeric) {
        return None;
    }
    let dotted = s[n..].starts_with('.');
    n += usize::from(dotted);
    let dot = if dotted && dot_ends_sentence(&s[n..]) { "." } else { "" };
    Some((n, format!(" {word}{dot}")))
}
