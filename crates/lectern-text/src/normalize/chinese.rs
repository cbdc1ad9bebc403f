//! Chinese numerals and upstream's Chinese clean-ups (`replace_blank`, `²`/`³`, `.` → `。`,
//! ` - ` → `，`, brackets and backticks dropped, `——` → space, trailing commas → `。`).
//!
//! This is the branch the upstream frontend also takes, so it is kept exactly as upstream
//! reads Chinese.

use super::Normalizer;
use super::english::numbers::{Num, scan_number};
use super::time_parts;

impl Normalizer<'_> {
    pub(super) fn step_zh(&mut self, c: char) -> bool {
        let rest = self.rest();
        if c.is_ascii_digit() && !self.prev().is_some_and(|p| p.is_ascii_digit()) {
            return self.number_zh();
        }
        if (c == '$' || c == '¥' || c == '￥')
            && self.s[self.i + c.len_utf8()..].starts_with(|d: char| d.is_ascii_digit())
        {
            let n = c.len_utf8();
            let Some(num) = scan_number(&self.s[self.i + n..]) else { return false };
            let unit = if c == '$' { "美元" } else { "元" };
            let spoken = format!("{}{unit}", words_zh(&num));
            self.replace(n + num.len, &spoken);
            return true;
        }
        if c == '-'
            && !self.prev().is_some_and(|p| p.is_ascii_alphanumeric())
            && self.s[self.i + 1..].starts_with(|d: char| d.is_ascii_digit())
        {
            self.replace(1, "负");
            return self.number_zh();
        }
        let simple: Option<&str> = match c {
            '²' => Some("平方"),
            '³' => Some("立方"),
            '.' => Some("。"),
            '（' | '）' | '【' | '】' | '`' => Some(""),
            '%' => Some("百分之"),
            _ => None,
        };
        if let Some(with) = simple {
            self.replace(c.len_utf8(), with);
            return true;
        }
        if rest.starts_with("——") {
            self.replace("——".len(), " ");
            return true;
        }
        if c == '-' && self.prev() == Some(' ') && rest[1..].starts_with(' ') {
            self.replace(1, "，");
            return true;
        }
        if matches!(c, '，' | ',' | '、')
            && rest
                .trim_end_matches(|c: char| matches!(c, '，' | ',' | '、') || c.is_whitespace())
                .is_empty()
        {
            // A trailing run of commas becomes one full stop.
            let n = rest.len();
            self.replace(n, "。");
            return true;
        }
        false
    }

    fn number_zh(&mut self) -> bool {
        let rest = self.rest();
        let Some(num) = scan_number(rest) else { return false };
        let after = &rest[num.len..];
        if let Some((len, spoken)) = time_zh(rest) {
            self.replace(len, &spoken);
            return true;
        }
        let spoken = if after.starts_with('年') && num.frac.is_none() && !num.grouped {
            digits_zh(&num.int)
        } else if after.starts_with('%') || after.starts_with('％') {
            let pct = after.chars().next().map_or(1, char::len_utf8);
            let s = format!("百分之{}", words_zh(&num));
            self.replace(num.len + pct, &s);
            return true;
        } else {
            words_zh(&num)
        };
        self.replace(num.len, &spoken);
        true
    }
}

/// A scanned numeral in Chinese: 123 → 一百二十三, 3.5 → 三点五, 007 → 零零七.
fn words_zh(num: &Num) -> String {
    let int = match num.int_value() {
        Some(v) if num.int.len() <= 12 && !(num.int.len() > 1 && num.int.starts_with('0')) => {
            cardinal_zh(v)
        }
        _ => digits_zh(&num.int),
    };
    match &num.frac {
        Some(f) => format!("{int}点{}", digits_zh(f)),
        None => int,
    }
}

fn time_zh(s: &str) -> Option<(usize, String)> {
    let (h, m, len) = time_parts(s)?;
    let spoken = if m == 0 {
        format!("{}点", cardinal_zh(h))
    } else if m < 10 {
        format!("{}点零{}分", cardinal_zh(h), cardinal_zh(m))
    } else {
        format!("{}点{}分", cardinal_zh(h), cardinal_zh(m))
    };
    Some((len, spoken))
}

const ZH_DIGITS: [char; 10] = ['零', '一', '二', '三', '四', '五', '六', '七', '八', '九'];

fn digits_zh(d: &str) -> String {
    d.chars().filter_map(|c| c.to_digit(10)).map(|v| ZH_DIGITS[v as usize]).collect()
}

/// A 4-digit section (0..10000) with 千百十; `zero_lead` writes 零 for a missing 千.
fn section_zh(n: u64, zero_lead: bool) -> String {
    let mut s = String::new();
    let mut pending_zero = zero_lead;
    for (div, unit) in [(1000, "千"), (100, "百"), (10, "十"), (1, "")] {
        let d = (n / div) % 10;
        if d == 0 {
            if !s.is_empty() || zero_lead {
                pending_zero = true;
            }
            continue;
        }
        if pending_zero && (!s.is_empty() || zero_lead) {
            s.push('零');
        }
        pending_zero = false;
        s.push(ZH_DIGITS[d as usize]);
        s.push_str(unit);
    }
    s
}

/// Chinese cardinal: 123 → 一百二十三, 10 → 十, 1005 → 一千零五, 20300 → 二万零三百.
pub fn cardinal_zh(n: u64) -> String {
    if n == 0 {
        return "零".into();
    }
    const UNITS: [&str; 4] = ["", "万", "亿", "万亿"];
    let mut sections = Vec::new();
    let mut m = n;
    while m > 0 {
        sections.push(m % 10_000);
        m /= 10_000;
    }
    let mut out = String::new();
    let mut need_zero = false;
    for (k, &sec) in sections.iter().enumerate().rev() {
        if sec == 0 {
            need_zero = !out.is_empty();
            continue;
        }
        let lead = !out.is_empty() && (sec < 1000 || need_zero);
        out.push_str(&section_zh(sec, lead));
        out.push_str(UNITS[k.min(3)]);
        need_zero = false;
    }
    // 一十… at the very start reads 十…
    if let Some(rest) = out.strip_prefix("一十") { format!("十{rest}") } else { out }
}
