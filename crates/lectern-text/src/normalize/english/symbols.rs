//! Signs the model would otherwise see as bare symbols: minus, ranges, `%`, `&`, `+`, `=`,
//! `§`, `¶`, and the dagger note marks, which are not read at all.

use super::{At, Reading, said};

/// A sign that leads into the number after it: `-5` → "minus five", `+5` → "plus five",
/// `10–12` → "ten to twelve" (an en dash between numbers is a range).
pub(super) fn sign_before_number(at: At<'_>) -> Option<Reading> {
    let c = at.rest.chars().next()?;
    let n = c.len_utf8();
    if !at.rest[n..].starts_with(|d: char| d.is_ascii_digit()) {
        return None;
    }
    let prev = at.before.chars().next_back();
    let after_word = prev.is_some_and(char::is_alphanumeric);
    match c {
        '-' if !after_word => Some(said(n, "minus ")),
        '+' if !after_word => Some(said(n, "plus ")),
        '–' if prev.is_some_and(|p| p.is_ascii_digit()) => Some(said(n, " to ")),
        _ => None,
    }
}

/// A sign read as a word, spaced from the words it touches: `&` → "and", `+` between words →
/// "plus", `=` → "equals", `§` → "section" (`§§` "sections"), `¶` → "paragraph"; `%` after
/// a space → "percent"; `†` and `‡` mark notes and are dropped.
pub(super) fn sign(at: At<'_>) -> Option<Reading> {
    let c = at.rest.chars().next()?;
    if matches!(c, '†' | '‡') {
        return Some(said(c.len_utf8(), ""));
    }
    if at.rest.starts_with("§§") {
        return Some(spaced(at, "§§".len(), "sections"));
    }
    let word = match c {
        '&' => "and",
        '+' => "plus",
        '=' => "equals",
        '§' => "section",
        '¶' => "paragraph",
        '%' => return Some(said(1, " percent")),
        _ => return None,
    };
    Some(spaced(at, c.len_utf8(), word))
}

/// `word` for the `n`-byte sign at the cursor, with a space on each side that touches a
/// letter or digit ("AT&T" → "AT and T", "2+2" stays joined only by the spoken word).
fn spaced(at: At<'_>, n: usize, word: &str) -> Reading {
    let pre = if at.before.ends_with(char::is_alphanumeric) { " " } else { "" };
    let post = if at.rest[n..].starts_with(char::is_alphanumeric) { " " } else { "" };
    said(n, format!("{pre}{word}{post}"))
}
