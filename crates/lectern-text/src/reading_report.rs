//! The reading report: what the frontend decided for the narrator to check before hours of
//! rendering, and what it left in the spoken text that the model may stumble on.
//!
//! Pure: it reads a parsed [`Manuscript`] and nothing else.
//!
//! * **Decisions** ([`DecisionKind`]): each segment's `source` is compared with its `text`
//!   word by word (a longest common subsequence of words, compared without their ordinary
//!   punctuation and without lectern's markup; two changes with only a month name or a word
//!   the number rules say between them, like `and`, are one), and every changed stretch is
//!   classified by what its source looks like, first match wins: phone tokens (`[N][UW1]`) in the spoken
//!   form or a word of the book's lexicon → `lexicon`; a roman numeral → `roman`; a URL or
//!   e-mail → `url`; a currency sign or `10s.`/`6d.` → `money`; a month name beside digits, an
//!   ISO date or a lone year (1000–2099) → `date`; `HH:MM` or `a.m.`/`p.m.` → `time`; a
//!   vulgar fraction or `a/b` → `fraction`; a number followed by a unit → `unit`; a word with
//!   a dot or letters only (`Mr.`, `p.`, `GA`) → `abbreviation`; a sign (`&`, `#`, `%`) →
//!   `symbol`; digits → `number`. Changes that fit none (case, punctuation) are not listed.
//!   A segment read in a language other than English or Chinese ([`Segment::language`]) is
//!   one `language` item as a whole: its numbers were spelled by [`crate::spell`], or it was
//!   read as written.
//! * **Suspicious leftovers** ([`FlagKind`]) in the spoken text the model sees: digits, signs
//!   outside ordinary punctuation, ALL-CAPS words of [`ALL_CAPS_MIN`]+ letters that are not
//!   roman numerals, Latin letters between CJK characters, IPA between slashes and `[…]` that
//!   is not a CosyVoice3 special token.
//!
//! Order is reading order throughout; each list keeps at most [`MAX_ITEMS`] items beside
//! its full count.

use std::collections::BTreeMap;
use std::ops::Range;

use crate::cjk::is_cjk;
use crate::manuscript::{Manuscript, Segment};
use crate::normalize::Lang;
use crate::tokenizer::is_special_token_at;

/// Items kept per decision kind, and in the suspicious list (the counts are full).
pub const MAX_ITEMS: usize = 500;
/// Characters of spoken text shown on either side of a suspicious leftover.
pub const CONTEXT_CHARS: usize = 30;
/// The shortest ALL-CAPS word flagged (shorter ones are mostly initialisms: `BBC`, `US`).
pub const ALL_CAPS_MIN: usize = 4;
/// The longest source or spoken form a `language` item shows, in characters.
const LANGUAGE_EXCERPT_CHARS: usize = 120;

/// What kind of normalisation decision a changed stretch is.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum DecisionKind {
    Roman,
    Date,
    Time,
    Unit,
    Abbreviation,
    Number,
    Money,
    Fraction,
    Url,
    Symbol,
    Lexicon,
    Language,
}

impl DecisionKind {
    pub fn name(self) -> &'static str {
        match self {
            Self::Roman => "roman",
            Self::Date => "date",
            Self::Time => "time",
            Self::Unit => "unit",
            Self::Abbreviation => "abbreviation",
            Self::Number => "number",
            Self::Money => "money",
            Self::Fraction => "fraction",
            Self::Url => "url",
            Self::Symbol => "symbol",
            Self::Lexicon => "lexicon",
            Self::Language => "language",
        }
    }
}

/// One decision: where it is, what was written and what will be said.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Decision {
    /// 1-based.
    pub chapter: usize,
    /// The source line the stretch starts on.
    pub line: usize,
    pub source: String,
    pub spoken: String,
    /// The language it is read in (`language` items only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
}

/// The decisions of one kind: how many, and the first [`MAX_ITEMS`].
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct DecisionGroup {
    pub count: usize,
    pub items: Vec<Decision>,
}

/// What kind of leftover a suspicious item is.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum FlagKind {
    Digits,
    Symbol,
    AllCaps,
    LatinInCjk,
    Phonemes,
}

impl FlagKind {
    pub fn name(self) -> &'static str {
        match self {
            Self::Digits => "digits",
            Self::Symbol => "symbol",
            Self::AllCaps => "all-caps",
            Self::LatinInCjk => "latin-in-cjk",
            Self::Phonemes => "phonemes",
        }
    }
}

/// Something in the spoken text the model may read badly.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Flag {
    pub kind: FlagKind,
    /// 1-based.
    pub chapter: usize,
    /// The source line its segment starts on.
    pub line: usize,
    /// The leftover itself.
    pub text: String,
    /// It with up to [`CONTEXT_CHARS`] characters of spoken text on either side.
    pub context: String,
}

/// The suspicious leftovers: how many (in all and per kind), and the first [`MAX_ITEMS`].
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct Suspicious {
    pub count: usize,
    pub by_kind: BTreeMap<FlagKind, usize>,
    pub items: Vec<Flag>,
}

/// The whole report.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct ReadingReport {
    /// Per kind that occurs, in [`DecisionKind`] order.
    pub decisions: BTreeMap<DecisionKind, DecisionGroup>,
    pub suspicious: Suspicious,
}

impl ReadingReport {
    /// The report of a parsed book.
    pub fn of(book: &Manuscript) -> Self {
        let mut report = Self::default();
        for (c, chapter) in book.chapters.iter().enumerate() {
            for seg in &chapter.segments {
                for (kind, d) in segment_decisions(seg, c + 1, book) {
                    report.add_decision(kind, d);
                }
                for flag in segment_flags(seg, c + 1) {
                    report.add_flag(flag);
                }
            }
        }
        report
    }

    fn add_decision(&mut self, kind: DecisionKind, d: Decision) {
        let group = self.decisions.entry(kind).or_default();
        group.count += 1;
        if group.items.len() < MAX_ITEMS {
            group.items.push(d);
        }
    }

    fn add_flag(&mut self, flag: Flag) {
        let s = &mut self.suspicious;
        s.count += 1;
        *s.by_kind.entry(flag.kind).or_default() += 1;
        if s.items.len() < MAX_ITEMS {
            s.items.push(flag);
        }
    }

    /// A few lines for the screen: the counts per kind and the first `first` suspicious items.
    pub fn summary(&self, first: usize) -> Vec<String> {
        let total: usize = self.decisions.values().map(|g| g.count).sum();
        let kinds: Vec<String> =
            self.decisions.iter().map(|(k, g)| format!("{} {}", k.name(), g.count)).collect();
        let mut out = vec![format!("reading: {total} decisions ({})", or_none(&kinds))];
        let flags: Vec<String> =
            self.suspicious.by_kind.iter().map(|(k, n)| format!("{} {n}", k.name())).collect();
        out.push(format!("reading: {} suspicious ({})", self.suspicious.count, or_none(&flags)));
        for f in self.suspicious.items.iter().take(first) {
            out.push(format!(
                "  chapter {} line {}: {} `{}` in “{}”",
                f.chapter,
                f.line,
                f.kind.name(),
                f.text,
                f.context
            ));
        }
        out
    }
}

fn or_none(parts: &[String]) -> String {
    if parts.is_empty() { "none".to_string() } else { parts.join(", ") }
}

// ---- Decisions ----------------------------------------------------------------------------

/// A word with its bytes in its text and its comparison key.
#[derive(Debug, Clone)]
struct Word<'a> {
    range: Range<usize>,
    key: &'a str,
}

/// A changed stretch: words `src` of the source stand for words `out` of the spoken text.
#[derive(Debug, Clone)]
struct Change {
    src: Range<usize>,
    out: Range<usize>,
}

/// The decisions in one segment, in reading order.
fn segment_decisions(
    seg: &Segment,
    chapter: usize,
    book: &Manuscript,
) -> Vec<(DecisionKind, Decision)> {
    if let Some(language) = foreign_language(seg) {
        let d = Decision {
            chapter,
            line: seg.span.start.line,
            source: excerpt(seg.source.trim(), LANGUAGE_EXCERPT_CHARS),
            spoken: excerpt(seg.text.trim(), LANGUAGE_EXCERPT_CHARS),
            language: Some(language.to_string()),
        };
        return vec![(DecisionKind::Language, d)];
    }
    let source = without_markup(&seg.source);
    let src = words(&source);
    let out = words(&seg.text);
    let changes = join_across_fillers(changes(&src, &out), &src);
    changes
        .into_iter()
        .filter_map(|c| {
            let s = stretch(&source, &src, &c.src);
            let spoken = stretch(&seg.text, &out, &c.out);
            let (before, after) = neighbours(&src, &c.src);
            let kind = classify(s, spoken, before, after, book)?;
            let at = src.get(c.src.start).map_or(source.len(), |w| w.range.start);
            let line = seg.span.start.line + source[..at].matches('\n').count();
            let d = Decision {
                chapter,
                line,
                source: s.trim().to_string(),
                spoken: spoken.trim().to_string(),
                language: None,
            };
            Some((kind, d))
        })
        .collect()
}

/// The segment's language when it is read as something other than English or Chinese.
fn foreign_language(seg: &Segment) -> Option<&str> {
    let tag = seg.language.as_deref()?;
    let english_or_chinese = tag.split('+').all(|t| {
        let primary = t.split(['-', '_']).next().unwrap_or("").to_ascii_lowercase();
        primary == "en" || primary == "zh"
    });
    (!english_or_chinese).then_some(tag)
}

/// The words of `text` (split at whitespace) with their comparison keys; words whose key is
/// empty (a dash, a lone mark) are left out, as punctuation is not a decision.
fn words(text: &str) -> Vec<Word<'_>> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices().chain(std::iter::once((text.len(), ' '))) {
        match (c.is_whitespace(), start) {
            (false, None) => start = Some(i),
            (true, Some(s)) => {
                let key = text[s..i].trim_matches(is_ordinary_punctuation);
                if !key.is_empty() {
                    out.push(Word { range: s..i, key });
                }
                start = None;
            }
            _ => {}
        }
    }
    out
}

/// Marks a reader takes in their stride, and Markdown emphasis (`*`, `_`).
fn is_ordinary_punctuation(c: char) -> bool {
    matches!(
        c,
        '.' | ','
            | ';'
            | ':'
            | '!'
            | '?'
            | '\''
            | '"'
            | '('
            | ')'
            | '['
            | ']'
            | '{'
            | '}'
            | '-'
            | '–'
            | '—'
            | '…'
            | '‘'
            | '’'
            | '“'
            | '”'
            | '«'
            | '»'
            | '„'
            | '*'
            | '_'
            | '、'
            | '。'
            | '，'
            | '；'
            | '：'
            | '！'
            | '？'
            | '「'
            | '」'
            | '（'
            | '）'
    )
}

/// `source` with lectern's markup (`[pause]`, `[voice:…]`, `[/as]`, …) and Markdown link
/// targets (`](…)`) blanked with spaces, so offsets and lines stay those of the source.
fn without_markup(source: &str) -> String {
    let mut out = source.to_string();
    let mut blank = |r: Range<usize>| {
        let spaces = " ".repeat(r.len());
        out.replace_range(r, &spaces);
    };
    let mut i = 0;
    while let Some(k) = source[i..].find('[') {
        let at = i + k;
        let end = source[at..].find(']').map(|e| at + e + 1);
        match end {
            Some(end) if is_markup(&source[at + 1..end - 1]) => blank(at..end),
            _ => {}
        }
        i = at + 1;
    }
    let mut i = 0;
    while let Some(k) = source[i..].find("](") {
        let at = i + k + 1;
        let Some(e) = source[at..].find(')') else { break };
        if !source[at..at + e].contains('\n') {
            blank(at..at + e + 1);
        }
        i = at + 1;
    }
    out
}

/// The inside of `[…]` is lectern markup.
fn is_markup(inner: &str) -> bool {
    const NAMES: [&str; 7] = ["pause", "break", "lang", "voice", "as", "style", "pace"];
    let name = inner.strip_prefix('/').unwrap_or(inner);
    let name = name.split(':').next().unwrap_or("").trim();
    NAMES.contains(&name)
}

/// The changed stretches between two word lists: a longest common subsequence of keys, and
/// the runs of words outside it (a stretch may hold words on one side only).
fn changes(src: &[Word<'_>], out: &[Word<'_>]) -> Vec<Change> {
    let (n, m) = (src.len(), out.len());
    // lcs[i][j]: the longest common subsequence of src[i..] and out[j..].
    let mut lcs = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if src[i].key == out[j].key {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let mut found = Vec::new();
    let (mut i, mut j) = (0, 0);
    let (mut ci, mut cj) = (0, 0);
    while i < n || j < m {
        if i < n && j < m && src[i].key == out[j].key {
            push_change(&mut found, ci..i, cj..j);
            i += 1;
            j += 1;
            (ci, cj) = (i, j);
        } else if j == m || (i < n && lcs[i + 1][j] >= lcs[i][j + 1]) {
            i += 1;
        } else {
            j += 1;
        }
    }
    push_change(&mut found, ci..n, cj..m);
    found
}

fn push_change(found: &mut Vec<Change>, src: Range<usize>, out: Range<usize>) {
    if !src.is_empty() || !out.is_empty() {
        found.push(Change { src, out });
    }
}

/// Joins two changes with at most [`MAX_JOINED_GAP`] unchanged words between them when those
/// are month names or words the number rules say (`14 March 2023` is read "the fourteenth of
/// March, twenty twenty-three": one date, not two numbers; in `188% and 92%` the "and" of
/// "one hundred and eighty-eight" may be matched with the written one, which would cut the
/// reading in the wrong place).
fn join_across_fillers(changes: Vec<Change>, src: &[Word<'_>]) -> Vec<Change> {
    let mut out: Vec<Change> = Vec::new();
    for c in changes {
        if let Some(last) = out.last_mut() {
            let gap = last.src.end..c.src.start;
            let fillers = src[gap.clone()].iter().all(|w| is_month(w.key) || is_filler(w.key));
            if gap.len() <= MAX_JOINED_GAP && fillers && !last.src.is_empty() {
                last.src.end = c.src.end;
                last.out.end = c.out.end;
                continue;
            }
        }
        out.push(c);
    }
    out
}

/// The most unchanged words [`join_across_fillers`] joins across.
const MAX_JOINED_GAP: usize = 2;

/// Words the English number, date and money rules put between the words they say.
fn is_filler(word: &str) -> bool {
    const FILLERS: [&str; 7] = ["and", "point", "oh", "hundred", "thousand", "million", "percent"];
    FILLERS.contains(&word)
}

/// The text from the first to the last of some words (empty for none).
fn stretch<'a>(text: &'a str, words: &[Word<'_>], r: &Range<usize>) -> &'a str {
    match (words.get(r.start), r.end.checked_sub(1).and_then(|e| words.get(e))) {
        (Some(a), Some(b)) if !r.is_empty() => &text[a.range.start..b.range.end],
        _ => "",
    }
}

/// The keys of the unchanged words just before and after a stretch of source words.
fn neighbours<'a>(src: &[Word<'a>], r: &Range<usize>) -> (&'a str, &'a str) {
    let before = r.start.checked_sub(1).and_then(|i| src.get(i)).map_or("", |w| w.key);
    let after = src.get(r.end).map_or("", |w| w.key);
    (before, after)
}

/// The kind of a change, by what its source looks like; `None`: not worth a look.
fn classify(
    source: &str,
    spoken: &str,
    before: &str,
    after: &str,
    book: &Manuscript,
) -> Option<DecisionKind> {
    use DecisionKind as K;
    let keys: Vec<&str> =
        source.split_whitespace().map(|w| w.trim_matches(is_ordinary_punctuation)).collect();
    let has_digit = source.chars().any(|c| c.is_ascii_digit());
    let kind = if has_phones(spoken) || keys.iter().any(|k| book.info.lexicon.contains(k)) {
        K::Lexicon
    } else if keys.iter().any(|k| is_roman(k)) && !has_digit {
        K::Roman
    } else if source.contains("://") || source.contains("www.") || is_email(source) {
        K::Url
    } else if is_money(source, &keys) {
        K::Money
    } else if is_date(source, &keys, before, after) {
        K::Date
    } else if is_time(source, &keys) {
        K::Time
    } else if is_fraction(source) {
        K::Fraction
    } else if has_digit && keys.last().is_some_and(|k| is_unit(k)) || is_unit_after(&keys, after) {
        K::Unit
    } else if keys.iter().any(|k| is_abbreviation(k)) {
        K::Abbreviation
    } else if source.chars().any(is_sign) {
        K::Symbol
    } else if has_digit {
        K::Number
    } else {
        return None;
    };
    Some(kind)
}

/// A CosyVoice3 unit (`[N]`, `[UW1]`, pinyin) in the spoken form: a lexicon's phones.
fn has_phones(spoken: &str) -> bool {
    spoken.char_indices().any(|(i, c)| c == '[' && is_special_token_at(&spoken[i..]).is_some())
}

/// A roman numeral of capitals or small letters (not `I`, the pronoun, which is never read
/// as one).
fn is_roman(word: &str) -> bool {
    let upper = word.chars().all(|c| "IVXLCDM".contains(c));
    let lower = word.chars().all(|c| "ivxlcdm".contains(c));
    !word.is_empty() && word != "I" && (upper || lower)
}

fn is_email(s: &str) -> bool {
    s.split('@').nth(1).is_some_and(|domain| domain.contains('.') && !s.starts_with('@'))
}

/// A currency sign, or old money written `10s.` / `6d.`.
fn is_money(source: &str, keys: &[&str]) -> bool {
    let old = |k: &&str| {
        let digits = k.trim_end_matches(['s', 'd', 'l']);
        !digits.is_empty() && digits.len() < k.len() && digits.chars().all(|c| c.is_ascii_digit())
    };
    source.contains(['£', '$', '€', '¥', '¢']) || keys.iter().any(old)
}

/// A month name, or its three-letter abbreviation (`Jan`, `Sept`).
fn is_month(word: &str) -> bool {
    let w = word.trim_end_matches('.');
    crate::normalize::MONTHS.iter().any(|m| {
        m.eq_ignore_ascii_case(w) || (w.len() >= 3 && m.starts_with(w) && w.len() <= 4 && w != "Ma")
    })
}

/// Digits beside a month name, an ISO date (`2023-03-14`) or a lone year (1000–2099).
fn is_date(source: &str, keys: &[&str], before: &str, after: &str) -> bool {
    let digits = source.chars().any(|c| c.is_ascii_digit());
    let month = keys.iter().any(|k| is_month(k)) || is_month(before) || is_month(after);
    let iso = keys.iter().any(|k| {
        let p: Vec<&str> = k.split('-').collect();
        p.len() == 3 && p[0].len() == 4 && p.iter().all(|x| is_digits(x))
    });
    let year = keys.len() == 1 && keys[0].len() == 4 && {
        let y: u32 = keys[0].parse().unwrap_or(0);
        (1000..2100).contains(&y)
    };
    (digits && month) || iso || year
}

/// `HH:MM`, or digits with `a.m.` / `p.m.`.
fn is_time(source: &str, keys: &[&str]) -> bool {
    let clock = keys.iter().any(|k| {
        k.split_once(':')
            .is_some_and(|(h, m)| is_digits(h) && h.len() <= 2 && is_digits(m) && m.len() == 2)
    });
    let lower = source.to_ascii_lowercase();
    clock || (source.contains(|c: char| c.is_ascii_digit()) && lower.contains(".m."))
}

/// A vulgar fraction (`⅔`) or `a/b` in digits.
fn is_fraction(source: &str) -> bool {
    let vulgar = source.chars().any(|c| matches!(c, '¼'..='¾' | '⅐'..='⅞'));
    let slash = source.split_whitespace().any(|w| {
        let w = w.trim_matches(is_ordinary_punctuation);
        w.split_once('/').is_some_and(|(a, b)| is_digits(a) && is_digits(b))
    });
    vulgar || slash
}

fn is_digits(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_digit())
}

/// Units the English rules read after a number (the common ones; `°` too).
fn is_unit(word: &str) -> bool {
    const UNITS: &[&str] = &[
        "kg", "g", "mg", "km", "m", "cm", "mm", "ml", "l", "lb", "lbs", "oz", "ft", "in", "yd",
        "mi", "mph", "km/h", "sq", "t", "ha", "kWh", "kW", "W", "V", "Hz", "kHz", "MHz", "GB",
        "MB", "KB", "TB",
    ];
    UNITS.contains(&word) || word.contains('°')
}

/// A change ending with a number whose unit stayed as it was written (`in` before `5 in`).
fn is_unit_after(keys: &[&str], after: &str) -> bool {
    keys.last().is_some_and(|k| k.chars().any(|c| c.is_ascii_digit())) && after.contains('°')
}

/// A word with a dot inside or after letters (`Mr.`, `p.`, `N.E.`), or letters only (`GA`).
fn is_abbreviation(word: &str) -> bool {
    let letters = word.trim_end_matches('.');
    !letters.is_empty() && letters.chars().all(|c| c.is_alphabetic() || c == '.')
}

/// A sign outside ordinary punctuation: the ASCII ones, currency, degrees, math, arrows,
/// dingbats and emoji.
fn is_sign(c: char) -> bool {
    matches!(
        c,
        '#' | '%'
            | '&'
            | '/'
            | '@'
            | '*'
            | '|'
            | '~'
            | '^'
            | '<'
            | '>'
            | '='
            | '+'
            | '\\'
            | '$'
            | '€'
            | '£'
            | '¥'
            | '¢'
            | '°'
            | '§'
            | '¶'
            | '©'
            | '®'
            | '™'
            | '†'
            | '‡'
            | '•'
            | '‰'
            | '←'..='⇿'
            | '∀'..='⋿'
            | '☀'..='➿'
            | '\u{1F300}'..='\u{1FAFF}'
    )
}

// ---- Suspicious leftovers -----------------------------------------------------------------

/// The leftovers in one segment's spoken text, in order.
fn segment_flags(seg: &Segment, chapter: usize) -> Vec<Flag> {
    let text = seg.text.as_str();
    let mut flags = Vec::new();
    let mut i = 0;
    while i < text.len() {
        let (kind, n) = leftover_at(text, i, seg.lang);
        if let Some(kind) = kind {
            flags.push(flag(kind, seg, chapter, i..i + n));
        }
        i += n;
    }
    flags
}

/// What stands at byte `i` of the spoken text: a leftover's kind (`None`: nothing suspicious)
/// and the bytes to step over (a whole word, number or special token at once).
fn leftover_at(text: &str, i: usize, lang: Lang) -> (Option<FlagKind>, usize) {
    let rest = &text[i..];
    let c = rest.chars().next().expect("inside the text");
    if let Some(n) = is_special_token_at(rest) {
        // A CosyVoice3 unit or tag: the model's own.
        return (None, n);
    }
    if let Some(n) = ipa_at(rest).or_else(|| bracket_at(rest)) {
        return (Some(FlagKind::Phonemes), n);
    }
    if c.is_numeric() {
        return (Some(FlagKind::Digits), run_len(rest, char::is_numeric));
    }
    if is_cjk(c) {
        return (None, run_len(rest, is_cjk));
    }
    if c.is_alphabetic() {
        // A word ends where CJK text starts: no spaces stand between them.
        let n = run_len(rest, |c| c.is_alphabetic() && !is_cjk(c));
        return (word_flag(text, i..i + n, lang), n);
    }
    (is_sign(c).then_some(FlagKind::Symbol), c.len_utf8())
}

fn flag(kind: FlagKind, seg: &Segment, chapter: usize, r: Range<usize>) -> Flag {
    let text = &seg.text;
    let before: String = {
        let mut b: Vec<char> = text[..r.start].chars().rev().take(CONTEXT_CHARS).collect();
        b.reverse();
        b.into_iter().collect()
    };
    let after: String = text[r.end..].chars().take(CONTEXT_CHARS).collect();
    Flag {
        kind,
        chapter,
        line: seg.span.start.line,
        text: text[r.clone()].to_string(),
        context: format!("{before}{}{after}", &text[r]),
    }
}

/// The bytes of the run of chars at the start of `s` that `pred` accepts.
fn run_len(s: &str, pred: impl Fn(char) -> bool) -> usize {
    s.char_indices().find(|&(_, c)| !pred(c)).map_or(s.len(), |(i, _)| i)
}

/// An alphabetic word's flag: ALL-CAPS (not a roman numeral), or Latin between CJK chars.
fn word_flag(text: &str, r: Range<usize>, lang: Lang) -> Option<FlagKind> {
    let word = &text[r.clone()];
    let caps = word.chars().count() >= ALL_CAPS_MIN
        && word.chars().all(|c| c.is_uppercase())
        && !is_roman(word);
    if caps {
        return Some(FlagKind::AllCaps);
    }
    let latin = word.chars().all(|c| c.is_ascii_alphabetic());
    let prev = text[..r.start].chars().rev().find(|c| !c.is_whitespace());
    let next = text[r.end..].chars().find(|c| !c.is_whitespace());
    let between_cjk = prev.is_some_and(is_cjk) && next.is_some_and(is_cjk);
    (latin && between_cjk && lang == Lang::Zh).then_some(FlagKind::LatinInCjk)
}

/// IPA left between slashes (`/ˈhɛloʊ/`): the length of the stretch.
fn ipa_at(s: &str) -> Option<usize> {
    let body = s.strip_prefix('/')?;
    let end = body.char_indices().take(40).find(|&(_, c)| c == '/' || c.is_whitespace())?.0;
    let inner = &body[..end];
    let ipa = inner.chars().any(|c| "əɪʊʃʒθðŋɑɔæɛɜʌɒɡˈˌːɹɾʔ".contains(c));
    (body[end..].starts_with('/') && ipa).then_some(end + 2)
}

/// `[…]` that is no special token (those are stepped over before): the length of it.
fn bracket_at(s: &str) -> Option<usize> {
    if !s.starts_with('[') {
        return None;
    }
    let end = s.char_indices().take(40).find(|&(_, c)| c == ']' || c == '\n')?;
    (end.1 == ']').then_some(end.0 + 1)
}

/// At most `max` chars of `s`, with `…` where it was cut.
fn excerpt(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manuscript::{Format, ParseOptions};

    fn report(src: &str) -> ReadingReport {
        let opts = ParseOptions::default().with_format(Format::Markdown);
        ReadingReport::of(&Manuscript::parse(src, &opts).expect("parses"))
    }

    /// The (source, spoken) pairs of one kind.
    fn of_kind(r: &ReadingReport, kind: DecisionKind) -> Vec<(String, String)> {
        r.decisions
            .get(&kind)
            .map(|g| g.items.iter().map(|d| (d.source.clone(), d.spoken.clone())).collect())
            .unwrap_or_default()
    }

    fn sources(r: &ReadingReport, kind: DecisionKind) -> Vec<String> {
        of_kind(r, kind).into_iter().map(|(s, _)| s).collect()
    }

    #[test]
    fn classifies_each_english_kind() {
        let r = report(
            "On 14 March 2023 Louis XVI paid £5 10s. 6d. at 21:00 for 3 kg; see \
             http://example.com. Then ⅔ of them met Mr. Smith, and 7 cats & dogs.\n",
        );
        use DecisionKind as K;
        assert_eq!(sources(&r, K::Date), ["14 March 2023"]);
        assert_eq!(sources(&r, K::Roman), ["XVI"]);
        assert_eq!(sources(&r, K::Money), ["£5 10s. 6d."]);
        assert_eq!(sources(&r, K::Time), ["21:00"]);
        assert_eq!(sources(&r, K::Unit), ["3 kg;"]);
        assert_eq!(sources(&r, K::Url), ["http://example.com."]);
        assert_eq!(sources(&r, K::Fraction), ["⅔"]);
        assert_eq!(sources(&r, K::Abbreviation), ["Mr."]);
        assert_eq!(sources(&r, K::Number), ["7"]);
        assert_eq!(sources(&r, K::Symbol), ["&"]);
        assert_eq!(of_kind(&r, K::Roman)[0].1, "the Sixteenth");
        assert!(of_kind(&r, K::Money)[0].1.contains("shillings"));
    }

    #[test]
    fn lexicon_phones_and_language_runs() {
        let mut prons = crate::Pronunciations::default();
        prons.insert("Nguyen", "[N][W][IY1][N]");
        let opts = ParseOptions::default().with_format(Format::Markdown).with_pronunciations(prons);
        let src = "Mr Nguyen came.\n\n[lang:fr]Il a 3 chats.[/lang]\n";
        let r = ReadingReport::of(&Manuscript::parse(src, &opts).expect("parses"));
        assert_eq!(
            of_kind(&r, DecisionKind::Lexicon),
            [("Nguyen".into(), "[N][W][IY1][N]".into())]
        );
        let lang = &r.decisions[&DecisionKind::Language].items[0];
        assert_eq!(lang.language.as_deref(), Some("fr"));
        assert!(lang.spoken.contains("trois"), "{lang:?}");
        // The phones are the model's own units, no leftover.
        assert_eq!(r.suspicious.count, 0, "{:?}", r.suspicious);
    }

    #[test]
    fn lines_count_from_the_segment_start() {
        let r = report("# One\n\nA plain line,\nthen 42 whales.\n");
        let d = &r.decisions[&DecisionKind::Number].items[0];
        assert_eq!((d.chapter, d.line, d.source.as_str()), (1, 4, "42"));
    }

    #[test]
    fn flags_leftovers_in_the_spoken_text() {
        let r = report("Choose this | or that, said NASA, not XVII; say /ˈhɛloʊ/ or [foo].\n");
        let kinds: Vec<(FlagKind, &str)> =
            r.suspicious.items.iter().map(|f| (f.kind, f.text.as_str())).collect();
        assert_eq!(
            kinds,
            [
                (FlagKind::Symbol, "|"),
                (FlagKind::AllCaps, "NASA"),
                (FlagKind::Phonemes, "/ˈhɛloʊ/"),
                (FlagKind::Phonemes, "[foo]"),
            ]
        );
        let f = &r.suspicious.items[0];
        assert!(f.context.starts_with("Choose this | or") && f.context.chars().count() <= 61);
        assert_eq!(r.suspicious.by_kind[&FlagKind::Phonemes], 2);
    }

    #[test]
    fn latin_between_cjk_is_flagged() {
        let r = report("我喜欢iPhone手机。\n");
        let kinds: Vec<FlagKind> = r.suspicious.items.iter().map(|f| f.kind).collect();
        assert_eq!(kinds, [FlagKind::LatinInCjk]);
    }

    #[test]
    fn markup_and_emphasis_are_no_decisions() {
        let r = report("She said *hello* [pause:1s] and [voice:fox]left.\n");
        assert!(r.decisions.is_empty(), "{:?}", r.decisions);
    }

    #[test]
    fn summary_counts_kinds() {
        let r = report("At 21:00, then 22:00 | ok.\n");
        let lines = r.summary(3);
        assert!(lines[0].starts_with("reading: 2 decisions (time 2)"), "{lines:?}");
        assert!(lines[1].contains("symbol 1"), "{lines:?}");
    }
}
