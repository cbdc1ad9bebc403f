//! Web and e-mail addresses, read as people read them aloud: the scheme (`http://`) and a
//! query string are dropped, `.` is "dot", `/` "slash", `@` "at", `-` "dash", `_`
//! "underscore", "www" is "w w w", words are said as words and digits one by one.
//! `http://example.com/path` → "example dot com slash path", `ann@example.org` → "ann at
//! example dot org".

use super::numbers::digits_en;
use super::{At, Reading, said};

/// Top-level domains that mark a bare `name.tld` as a web address.
const TLDS: &[&str] = &[
    "com", "org", "net", "edu", "gov", "io", "uk", "co", "info", "biz", "de", "fr", "us", "ca",
    "au", "cn", "jp", "eu", "ai", "dev", "app",
];

/// The address at the start of `s`: up to a space, trailing punctuation left out.
fn address_len(s: &str) -> usize {
    let n = s.find(char::is_whitespace).unwrap_or(s.len());
    s[..n].trim_end_matches(['.', ',', ';', ':', ')', '!', '?', '"', '\'', '”', '’', ']']).len()
}

/// An address's characters read aloud.
fn spell_address(addr: &str) -> String {
    let mut words = Vec::new();
    let mut word = String::new();
    let flush = |word: &mut String, words: &mut Vec<String>| {
        if word.is_empty() {
            return;
        }
        let w = std::mem::take(word);
        words.push(if w == "www" {
            "w w w".into()
        } else if w.bytes().all(|b| b.is_ascii_digit()) {
            digits_en(&w)
        } else {
            w
        });
    };
    for c in addr.chars() {
        let sign = match c {
            '.' => "dot",
            '/' => "slash",
            '@' => "at",
            '-' => "dash",
            '_' => "underscore",
            ':' => "colon",
            '~' => "tilde",
            '+' => "plus",
            _ if c.is_ascii_digit() != word.bytes().all(|b| b.is_ascii_digit())
                && !word.is_empty() =>
            {
                flush(&mut word, &mut words);
                word.push(c);
                continue;
            }
            _ => {
                word.push(c);
                continue;
            }
        };
        flush(&mut word, &mut words);
        words.push(sign.into());
    }
    flush(&mut word, &mut words);
    words.join(" ")
}

/// `http://…`, `https://…` or `www.…`: the scheme, a trailing slash and the query dropped.
pub(super) fn url(at: At<'_>) -> Option<Reading> {
    let scheme =
        ["https://", "http://"].into_iter().find(|p| at.rest.starts_with(p)).map_or(0, str::len);
    if scheme == 0 && !at.rest.starts_with("www.") {
        return None;
    }
    let n = address_len(at.rest);
    let body = &at.rest[scheme..n];
    let body = body.split(['?', '#']).next().unwrap_or(body).trim_end_matches('/');
    (!body.is_empty()).then(|| said(n, spell_address(body)))
}

/// `name@domain.tld` → "name at domain dot tld".
pub(super) fn email(at: At<'_>) -> Option<Reading> {
    let n = address_len(at.rest);
    let addr = &at.rest[..n];
    let (local, domain) = addr.split_once('@')?;
    let ok = !local.is_empty()
        && local.chars().all(|c| c.is_alphanumeric() || matches!(c, '.' | '_' | '-' | '+'))
        && domain.contains('.')
        && domain.chars().all(|c| c.is_alphanumeric() || matches!(c, '.' | '-'));
    ok.then(|| said(n, spell_address(addr)))
}

/// A bare domain with a known top-level domain: `oreilly.com` → "oreilly dot com",
/// `Amazon.co.uk/books` → "Amazon dot co dot uk slash books".
pub(super) fn domain(at: At<'_>) -> Option<Reading> {
    let n = address_len(at.rest);
    let addr = &at.rest[..n];
    let host = addr.split('/').next().unwrap_or(addr);
    let labels: Vec<&str> = host.split('.').collect();
    let tld = labels.last()?;
    let ok = labels.len() >= 2
        && labels
            .iter()
            .all(|l| !l.is_empty() && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'))
        && TLDS.contains(tld)
        && labels[0].len() > 1;
    ok.then(|| said(n, spell_address(addr.trim_end_matches('/'))))
}
