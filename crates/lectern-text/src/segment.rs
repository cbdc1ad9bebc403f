//! Sentence splitting: a port of upstream `split_paragraph` (spec §5.2) plus a hard size bound.
//!
//! Upstream rules kept: sentence marks (zh `。？！；：、.?!;`, en `.?!;:`), a closing quote right
//! after a mark stays with its sentence, greedy merging (flush when `len(cur + piece) > 80` and
//! `len(cur) > 60`; a last piece shorter than 20 joins the previous segment), length = Qwen
//! token count (en) or characters (zh). The caller appends the final mark upstream adds.
//!
//! Deliberate differences, so no text is lost and no segment is too long:
//! * a mark right after a mark (`?!`, `...`) stays in the piece instead of being dropped, and a
//!   run of closers (`"”’')」』»`) stays with it;
//! * a piece with no letters or digits (a stray `—`) joins its neighbour instead of vanishing;
//! * a piece longer than `token_max_n` is split at commas, then at spaces, then between
//!   characters, so every piece is ≤ `token_max_n` and every segment ≤
//!   [`SegmentLimits::hard_max`] (`token_max_n + token_min_n + merge_len` = 160);
//! * lengths add up per piece (piece boundaries are pre-tokenizer boundaries, so this equals
//!   tokenising the concatenation except in rare BPE corner cases) — linear time on any input.

use std::collections::HashMap;
use std::ops::Range;

use super::normalize::Lang;

/// Why a segment ends where it does, as a narrator would say it. The splitter gives the
/// within-paragraph reasons ([`Boundary::Sentence`] … [`Boundary::Character`]); the manuscript
/// reader adds the structural ones (markup, paragraph, heading, chapter, end).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Boundary {
    /// A sentence ends (`.`, `?`, `!`, `。`…) and the next one would not fit the segment.
    Sentence,
    /// A clause mark (`;`, `:`, `；`, `：`, `、`): upstream splits there as at a sentence end.
    Clause,
    /// A sentence too long for one segment, split after a comma.
    Comma,
    /// A sentence too long for one segment and without a usable comma, split between words.
    Word,
    /// Text without spaces too long for one segment, split between characters.
    Character,
    /// The manuscript's first sentence, alone so the first audio comes sooner.
    FirstSentence,
    /// `[pause]` / `[pause:…]` markup.
    Pause,
    /// `[break]` markup.
    Break,
    /// Voicing markup changed the voice, character, style or pace (`[voice:…]`, `[as:…]`,
    /// `[style:…]`, `[pace:…]`): a segment has one voicing.
    Voice,
    Paragraph,
    Heading,
    Chapter,
    /// The manuscript's last segment.
    End,
}

impl Boundary {
    /// The reason in a few words, for listings.
    #[must_use]
    pub fn describe(self) -> &'static str {
        match self {
            Self::Sentence => "end of sentence",
            Self::Clause => "clause mark (; :)",
            Self::Comma => "long sentence, split at a comma",
            Self::Word => "long sentence, split between words",
            Self::Character => "long run without spaces, split between characters",
            Self::FirstSentence => "first sentence alone (fast start)",
            Self::Pause => "[pause] markup",
            Self::Break => "[break] markup",
            Self::Voice => "voice or style change",
            Self::Paragraph => "end of paragraph",
            Self::Heading => "end of heading",
            Self::Chapter => "end of chapter",
            Self::End => "end of manuscript",
        }
    }

    /// Whether the segment was cut inside a sentence (the sentence did not fit the limit).
    #[must_use]
    pub fn splits_sentence(self) -> bool {
        matches!(self, Self::Comma | Self::Word | Self::Character)
    }
}

impl std::fmt::Display for Boundary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.describe())
    }
}

/// A stretch of text with its length and why it ends.
type Sized = (Range<usize>, usize, Boundary);

/// `split_paragraph` sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentLimits {
    pub token_max_n: usize,
    pub token_min_n: usize,
    pub merge_len: usize,
}

impl Default for SegmentLimits {
    fn default() -> Self {
        Self { token_max_n: 80, token_min_n: 60, merge_len: 20 }
    }
}

impl SegmentLimits {
    /// The largest segment the rules can produce (in the language's length unit).
    pub fn hard_max(&self) -> usize {
        self.token_max_n + self.token_min_n + self.merge_len
    }
}

/// Whether `c` ends a sentence in `lang` (upstream's mark lists).
pub fn is_mark(c: char, lang: Lang) -> bool {
    match lang {
        Lang::En => matches!(c, '.' | '?' | '!' | ';' | ':'),
        Lang::Zh => matches!(c, '。' | '？' | '！' | '；' | '：' | '、' | '.' | '?' | '!' | ';'),
    }
}

pub fn is_closer(c: char) -> bool {
    matches!(c, '"' | '”' | '’' | '\'' | ')' | '）' | '」' | '』' | '»')
}

fn is_comma(c: char) -> bool {
    matches!(c, ',' | '，' | '、')
}

/// Beyond this many bytes an English piece counts as over-long without tokenising it.
pub const LONG_PIECE_BYTES: usize = 16 * 1024;

/// A length measure with a cache for short strings (words, single chars), so measuring stays
/// cheap on megabytes of text.
pub struct Measure<'a> {
    lang: Lang,
    /// Chinese text measured per run: CJK chars one each, the Latin text between in tokens.
    mixed: bool,
    tokens: &'a dyn Fn(&str) -> usize,
    cache: HashMap<String, usize>,
}

impl<'a> Measure<'a> {
    pub fn new(lang: Lang, tokens: &'a dyn Fn(&str) -> usize) -> Self {
        Self { lang, mixed: false, tokens, cache: HashMap::new() }
    }

    /// The measure of text that mixes CJK and Latin runs: every CJK char (ideograph, kana,
    /// Hangul, CJK punctuation) counts one, as upstream counts Chinese, and each run of other
    /// text its tokens, as upstream counts English; so an English sentence in a Chinese
    /// paragraph is cut where an English paragraph's would be, not at its commas.
    pub fn mixed(tokens: &'a dyn Fn(&str) -> usize) -> Self {
        Self { lang: Lang::Zh, mixed: true, tokens, cache: HashMap::new() }
    }

    pub fn len(&mut self, s: &str) -> usize {
        match self.lang {
            Lang::Zh if self.mixed => self.mixed_len(s),
            Lang::Zh => s.chars().count(),
            Lang::En => self.token_len(s),
        }
    }

    /// CJK chars one each, the runs between them in tokens.
    fn mixed_len(&mut self, s: &str) -> usize {
        let mut n: usize = 0;
        let mut latin = 0..0;
        for (i, c) in s.char_indices() {
            if is_cjk_char(c) {
                if !s[latin.clone()].trim().is_empty() {
                    n = n.saturating_add(self.token_len(&s[latin.clone()]));
                }
                n += 1;
                latin = i + c.len_utf8()..i + c.len_utf8();
            } else {
                latin.end = i + c.len_utf8();
            }
        }
        if !s[latin.clone()].trim().is_empty() {
            n = n.saturating_add(self.token_len(&s[latin]));
        }
        n
    }

    fn token_len(&mut self, s: &str) -> usize {
        match s.len() {
            0..=24 => {
                if let Some(&n) = self.cache.get(s) {
                    return n;
                }
                let n = (self.tokens)(s);
                self.cache.insert(s.to_string(), n);
                n
            }
            // Qwen tokens hold at most a few dozen bytes, so a piece this long is over any
            // limit; not tokenising megabytes keeps huge inputs fast.
            n if n > LONG_PIECE_BYTES => usize::MAX / 4,
            _ => (self.tokens)(s),
        }
    }
}

/// Chars sized one each in a mixed measure: ideographs, kana, Hangul, CJK punctuation and
/// full-width forms.
fn is_cjk_char(c: char) -> bool {
    matches!(c,
        '\u{1100}'..='\u{11ff}' | '\u{3000}'..='\u{30ff}' | '\u{3130}'..='\u{318f}'
        | '\u{31f0}'..='\u{31ff}' | '\u{3400}'..='\u{4dbf}' | '\u{4e00}'..='\u{9fff}'
        | '\u{ac00}'..='\u{d7af}' | '\u{ff00}'..='\u{ffef}')
}

/// A rough English token count for when no tokenizer is at hand: a word of n letters counts
/// 1 + (n - 1) / 6, every digit, symbol run and non-Latin char counts 1. It errs long.
pub fn estimate_tokens(s: &str) -> usize {
    let mut n = 0;
    let mut letters = 0usize;
    let flush = |letters: &mut usize, n: &mut usize| {
        if *letters > 0 {
            *n += 1 + (*letters - 1) / 6;
            *letters = 0;
        }
    };
    let mut in_sym = false;
    for c in s.chars() {
        if c.is_ascii_alphabetic() {
            letters += 1;
            in_sym = false;
        } else {
            flush(&mut letters, &mut n);
            if c.is_whitespace() {
                in_sym = false;
            } else if c.is_ascii_punctuation() {
                if !in_sym {
                    n += 1;
                }
                in_sym = true;
            } else {
                n += 1;
                in_sym = false;
            }
        }
    }
    flush(&mut letters, &mut n);
    n
}

/// Splits `text` (already normalised, ending with a mark) into segment byte ranges.
pub fn split_paragraph(
    text: &str,
    lang: Lang,
    limits: &SegmentLimits,
    measure: &mut Measure<'_>,
) -> Vec<Range<usize>> {
    split_paragraph_cuts(text, lang, limits, measure).into_iter().map(|(r, _)| r).collect()
}

/// [`split_paragraph`] with the reason each segment ends: a sentence fitting the limit is never
/// cut, an over-long one is cut at commas, then between words, then between characters.
pub fn split_paragraph_cuts(
    text: &str,
    lang: Lang,
    limits: &SegmentLimits,
    measure: &mut Measure<'_>,
) -> Vec<(Range<usize>, Boundary)> {
    let pieces = sentence_pieces(text, lang);
    let mut sized = Vec::new();
    for p in pieces {
        let n = measure.len(&text[p.clone()]);
        let end = piece_end(&text[p.clone()], lang);
        if n > limits.token_max_n {
            split_long(text, p, end, limits.token_max_n, measure, &mut sized);
        } else {
            sized.push((p, n, end));
        }
    }
    trimmed(text, merge(sized, limits))
}

/// Why a sentence piece ends: its last mark (closers after it skipped).
fn piece_end(piece: &str, lang: Lang) -> Boundary {
    let last = piece.trim_end().trim_end_matches(is_closer).chars().next_back();
    match last {
        Some(';' | ':' | '；' | '：' | '、') if last.is_some_and(|c| is_mark(c, lang)) => {
            Boundary::Clause
        }
        _ => Boundary::Sentence,
    }
}

/// Upstream's greedy merge over (range, length, end) pieces; a segment ends as its last piece.
fn merge(pieces: Vec<Sized>, limits: &SegmentLimits) -> Vec<(Range<usize>, Boundary)> {
    let mut out: Vec<Sized> = Vec::new();
    let mut cur: Option<Sized> = None;
    for (r, n, end) in pieces {
        if let Some((cr, cn, ce)) = &cur
            && cn + n > limits.token_max_n
            && *cn > limits.token_min_n
        {
            out.push((cr.clone(), *cn, *ce));
            cur = None;
        }
        cur = Some(match cur {
            Some((cr, cn, _)) => (cr.start..r.end, cn + n, end),
            None => (r, n, end),
        });
    }
    if let Some((cr, cn, ce)) = cur {
        match out.last_mut() {
            Some(last) if cn < limits.merge_len => {
                *last = (last.0.start..cr.end, last.1 + cn, ce);
            }
            _ => out.push((cr, cn, ce)),
        }
    }
    out.into_iter().map(|(r, _, end)| (r, end)).collect()
}

/// `split_paragraph`'s ranges, trimmed of outer whitespace (parts of a split sentence start
/// with the space before their first word).
fn trimmed(text: &str, ranges: Vec<(Range<usize>, Boundary)>) -> Vec<(Range<usize>, Boundary)> {
    ranges.into_iter().map(|(r, end)| (trim(text, r), end)).filter(|(r, _)| !r.is_empty()).collect()
}

/// Sentence pieces: each ends after a run of marks and closers; trimmed of outer whitespace.
pub fn sentence_pieces(text: &str, lang: Lang) -> Vec<Range<usize>> {
    let mut pieces: Vec<Range<usize>> = Vec::new();
    let mut st = 0;
    let mut it = text.char_indices().peekable();
    while let Some((i, c)) = it.next() {
        if !is_mark(c, lang) {
            continue;
        }
        let mut end = i + c.len_utf8();
        while let Some(&(j, d)) = it.peek() {
            if is_mark(d, lang) || is_closer(d) {
                end = j + d.len_utf8();
                it.next();
            } else {
                break;
            }
        }
        push_piece(text, st..end, &mut pieces);
        st = end;
    }
    if st < text.len() {
        push_piece(text, st..text.len(), &mut pieces);
    }
    // A piece that only opened with a mark-less symbol run is glued to its successor.
    if pieces.len() > 1 && !speakable(&text[pieces[0].clone()]) {
        let first = pieces.remove(0);
        pieces[0].start = first.start;
    }
    pieces
}

fn push_piece(text: &str, r: Range<usize>, pieces: &mut Vec<Range<usize>>) {
    let r = trim(text, r);
    if r.is_empty() {
        return;
    }
    match pieces.last_mut() {
        Some(last) if !speakable(&text[r.clone()]) => last.end = r.end,
        _ => pieces.push(r),
    }
}

/// Whether a piece has anything to say: a letter, a digit or a special token.
pub fn speakable(s: &str) -> bool {
    s.chars().any(char::is_alphanumeric)
}

fn trim(text: &str, r: Range<usize>) -> Range<usize> {
    let s = &text[r.clone()];
    let lead = s.len() - s.trim_start().len();
    let tail = s.len() - s.trim_end().len();
    if lead == s.len() { r.start..r.start } else { r.start + lead..r.end - tail }
}

/// Splits an over-long piece at commas, then spaces, then characters; each part ≤ `max`. The
/// last part ends as the piece does (`end`).
fn split_long(
    text: &str,
    r: Range<usize>,
    end: Boundary,
    max: usize,
    measure: &mut Measure<'_>,
    out: &mut Vec<Sized>,
) {
    let clauses = split_after(text, r, is_comma);
    let mut units = Vec::new();
    for c in clauses {
        let n = measure.len(&text[c.clone()]);
        if n <= max {
            units.push((c, n, Boundary::Comma));
            continue;
        }
        for w in split_words(text, c) {
            let n = measure.len(&text[w.clone()]);
            if n <= max {
                units.push((w, n, Boundary::Word));
            } else {
                split_chars(text, w, max, measure, &mut units);
            }
        }
        // The clause's last word ends at its comma.
        if let Some(last) = units.last_mut() {
            last.2 = Boundary::Comma;
        }
    }
    let first = out.len();
    pack(units, max, out);
    if let Some(last) = out[first..].last_mut() {
        last.2 = end;
    }
}

/// Greedy packing of consecutive units into parts of at most `max`; a part ends as its last
/// unit.
fn pack(units: Vec<Sized>, max: usize, out: &mut Vec<Sized>) {
    let mut cur: Option<Sized> = None;
    for (r, n, end) in units {
        cur = match cur {
            Some((cr, cn, _)) if cn + n <= max => Some((cr.start..r.end, cn + n, end)),
            Some(c) => {
                out.push(c);
                Some((r, n, end))
            }
            None => Some((r, n, end)),
        };
    }
    out.extend(cur);
}

/// Ranges ending after each char matching `split` (the rest is the last range).
fn split_after(text: &str, r: Range<usize>, split: impl Fn(char) -> bool) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut st = r.start;
    for (i, c) in text[r.clone()].char_indices() {
        if split(c) {
            let end = r.start + i + c.len_utf8();
            out.push(st..end);
            st = end;
        }
    }
    if st < r.end {
        out.push(st..r.end);
    }
    out
}

/// Words with their leading whitespace (as the Qwen2 pre-tokenizer groups them).
fn split_words(text: &str, r: Range<usize>) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut st = r.start;
    let mut prev_space = false;
    for (i, c) in text[r.clone()].char_indices() {
        let at = r.start + i;
        if c.is_whitespace() && !prev_space && at > st {
            out.push(st..at);
            st = at;
        }
        prev_space = c.is_whitespace();
    }
    if st < r.end {
        out.push(st..r.end);
    }
    out
}

/// Splits a run without spaces into parts of at most `max`, measuring per char (which errs
/// long for BPE, exact for zh).
fn split_chars(
    text: &str,
    r: Range<usize>,
    max: usize,
    measure: &mut Measure<'_>,
    out: &mut Vec<Sized>,
) {
    let mut st = r.start;
    let mut n = 0;
    for (i, c) in text[r.clone()].char_indices() {
        let at = r.start + i;
        let w = measure.len(&text[at..at + c.len_utf8()]).max(1);
        if n + w > max && at > st {
            out.push((st..at, n, Boundary::Character));
            st = at;
            n = 0;
        }
        n += w;
    }
    if st < r.end {
        // The run's end is a word's end (or the clause's).
        out.push((st..r.end, n, Boundary::Word));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> usize {
        s.split_whitespace().count()
    }

    #[test]
    fn quotes_stay_with_their_sentence() {
        let t = "He said \"Stop.\" Then he left. Really?! Yes...";
        let p: Vec<_> = sentence_pieces(t, Lang::En).into_iter().map(|r| &t[r]).collect();
        assert_eq!(p, ["He said \"Stop.\"", "Then he left.", "Really?!", "Yes..."]);
    }

    #[test]
    fn merge_follows_upstream_sizes() {
        let f = |s: &str| words(s);
        let mut m = Measure::new(Lang::En, &f);
        let sentence = "a b c d e f g h i j k l m n o p q r s t u v w x y z a b c d.";
        let text = [sentence; 6].join(" ");
        let segs = split_paragraph(&text, Lang::En, &SegmentLimits::default(), &mut m);
        // 30 words a sentence: flushed once cur > 60 and adding one more would pass 80.
        let lens: Vec<_> = segs.iter().map(|r| words(&text[r.clone()])).collect();
        assert_eq!(lens, [90, 90]);
    }
}
