//! Numbers as the spelled languages write them: thousands grouped by spaces (`1 000 000`, also
//! no-break and narrow no-break spaces) or, in German, Spanish and Italian, by dots
//! (`1.000.000`); a decimal comma (`3,5`), or a decimal point where it cannot be a group
//! (`3.14`); times `21:00`, `9 h 30`, `9h30`.

/// A number at the start of a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Num {
    pub int: u64,
    /// The decimal digits, as written.
    pub frac: Option<String>,
    /// Its length in bytes.
    pub len: usize,
}

impl Num {
    /// The hundredths of an amount of money (`5,5` → 50, `5,50` → 50); `None` when the
    /// decimals are not cents.
    pub(crate) fn cents(&self) -> Option<u64> {
        let d = self.frac.as_deref()?;
        match d.len() {
            1 => d.parse::<u64>().ok().map(|n| n * 10),
            2 => d.parse().ok(),
            _ => None,
        }
    }
}

const SPACES: [char; 4] = [' ', '\u{a0}', '\u{202f}', '\u{2009}'];

fn digits(s: &str) -> usize {
    s.len() - s.trim_start_matches(|c: char| c.is_ascii_digit()).len()
}

/// The number at the start of `s` (which starts with a digit); `None` beyond `u64`.
pub(crate) fn scan(s: &str, group_dot: bool) -> Option<Num> {
    let first = digits(s);
    if first == 0 {
        return None;
    }
    let mut int: String = s[..first].to_string();
    let mut i = first;
    if first <= 3 {
        i = groups(s, i, &mut int, group_dot);
    }
    let mut frac = None;
    let rest = &s[i..];
    let sep = rest.chars().next();
    if matches!(sep, Some(',' | '.')) {
        let n = digits(&rest[1..]);
        // `1,5`; `3.14` (a dot before three digits was a group, or is not a decimal).
        let dot_group = sep == Some('.') && n == 3 && group_dot;
        if n > 0 && !dot_group && !rest[1 + n..].starts_with(|c: char| c.is_ascii_digit()) {
            frac = Some(rest[1..=n].to_string());
            i += 1 + n;
        }
    }
    Some(Num { int: int.parse().ok()?, frac, len: i })
}

/// Thousands groups after the first digits: a separator and exactly three digits, each.
fn groups(s: &str, mut i: usize, int: &mut String, group_dot: bool) -> usize {
    let mut sep_used: Option<char> = None;
    loop {
        let rest = &s[i..];
        let Some(sep) = rest.chars().next() else { return i };
        let is_sep = SPACES.contains(&sep) || (group_dot && sep == '.');
        if !is_sep || sep_used.is_some_and(|u| u != sep) {
            return i;
        }
        let after = &rest[sep.len_utf8()..];
        if digits(after) != 3 {
            return i;
        }
        int.push_str(&after[..3]);
        sep_used = Some(sep);
        i += sep.len_utf8() + 3;
    }
}

/// A time at the start of `s`: `21:00`, `9:30`, `9 h 30`, `9h30`, `9 h`: its length, hours
/// and minutes.
pub(crate) fn time(s: &str) -> Option<(usize, u64, u64)> {
    let h_len = digits(s);
    if !(1..=2).contains(&h_len) {
        return None;
    }
    let h: u64 = s[..h_len].parse().ok()?;
    let rest = &s[h_len..];
    let (sep_len, colon) = if rest.starts_with(':') {
        (1, true)
    } else if rest.starts_with('h') {
        (1, false)
    } else if rest.starts_with(" h") {
        (2, false)
    } else {
        return None;
    };
    let after = &rest[sep_len..];
    let after_trim = if colon { after } else { after.trim_start_matches(' ') };
    let two = digits(after_trim) == 2;
    let (m, next) =
        if two { (after_trim[..2].parse().ok()?, &after_trim[2..]) } else { (0, after) };
    // `9:5` is no time, nor `9 hommes`; `9 h.`, `9 h du matin` and `9 h 30` are.
    if h > 24 || m > 59 || (colon && !two) || next.starts_with(char::is_alphanumeric) {
        return None;
    }
    let len = s.len() - next.len();
    Some((len, h, m))
}
