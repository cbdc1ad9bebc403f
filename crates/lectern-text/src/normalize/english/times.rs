//! Clock times: `7:30` → "seven thirty", `7:00` → "seven o'clock", `7:30 pm` → "seven thirty
//! PM"; a 24-hour time (hour past 12, or written with a leading zero) is said as the 24-hour
//! clock is in prose: `21:00` → "twenty-one hundred", `21:30` → "twenty-one thirty", `09:05`
//! → "oh nine oh five".

use super::super::time_parts;
use super::numbers::{ONES, cardinal_en, under_100};
use super::{At, Reading, said};

/// A time at the cursor, with an optional `am`/`pm`/`a.m.`/`p.m.` after it.
pub(super) fn clock(at: At<'_>) -> Option<Reading> {
    let (h, m, len) = time_parts(at.rest)?;
    if at.rest[len..].starts_with(|c: char| c == ':' || c.is_alphanumeric())
        && meridiem(&at.rest[len..]).is_none()
    {
        return None;
    }
    let twenty_four = h > 12 || at.rest.starts_with('0');
    if twenty_four {
        return Some(said(len, twenty_four_hour(h, m)));
    }
    let mut spoken = twelve_hour(h, m);
    let Some((n, say, dotted)) = meridiem(&at.rest[len..]) else {
        return Some(said(len, spoken));
    };
    if m == 0 {
        spoken = cardinal_en(h);
    }
    spoken = format!("{spoken} {say}");
    let next = at.rest[len + n..].trim_start().chars().next();
    if dotted && (next.is_none() || next.is_some_and(char::is_uppercase)) {
        spoken.push('.');
    }
    Some(said(len + n, spoken))
}

/// `H:MM` on the 12-hour clock: "seven o'clock", "seven oh five", "seven thirty".
fn twelve_hour(h: u64, m: u64) -> String {
    match m {
        0 => format!("{} o'clock", cardinal_en(h)),
        1..=9 => format!("{} oh {}", cardinal_en(h), ONES[m as usize]),
        _ => format!("{} {}", cardinal_en(h), under_100(m)),
    }
}

/// `HH:MM` on the 24-hour clock: "twenty-one hundred", "oh nine oh five", "zero thirty".
fn twenty_four_hour(h: u64, m: u64) -> String {
    let hour = match h {
        0 => "zero".to_string(),
        1..=9 => format!("oh {}", ONES[h as usize]),
        _ => under_100(h),
    };
    match m {
        0 => format!("{hour} hundred"),
        1..=9 => format!("{hour} oh {}", ONES[m as usize]),
        _ => format!("{hour} {}", under_100(m)),
    }
}

/// An `am`/`pm` marker after a time (one optional space): its length, how it is said, and
/// whether it was written with dots (whose last may also end the sentence).
fn meridiem(after: &str) -> Option<(usize, &'static str, bool)> {
    let sp = usize::from(after.starts_with(' '));
    let tail = &after[sp..];
    [("a.m.", "AM"), ("p.m.", "PM"), ("am", "AM"), ("pm", "PM"), ("AM", "AM"), ("PM", "PM")]
        .into_iter()
        .find(|(w, _)| tail.starts_with(w) && !tail[w.len()..].starts_with(char::is_alphanumeric))
        .map(|(w, say)| (sp + w.len(), say, w.ends_with('.')))
}
