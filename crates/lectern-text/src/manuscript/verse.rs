//! Verse: a stanza's lines are phrases. Its text is normalised line by line; where a line ends
//! without punctuation a comma follows it (a short pause for the model, and a place segmenting
//! may cut a long stanza), where it ends with a mark nothing is added, and no full stop is ever
//! added at a line's end. Lines are joined with a space (none between Chinese lines, as
//! upstream joins them).
//!
//! The comma stands at the end of its line's text (an empty source range, as the full stop
//! upstream appends to a paragraph), and the space for the line break's whitespace, so a
//! segment cut at a comma ends its span with the line's last word.

use std::ops::Range;

use crate::cjk::is_cjk;
use crate::mapped::Mapped;
use crate::segment::is_closer;

/// Whether a line (or a stanza) that ends with `c` ends with punctuation of its own, so that
/// no comma (or full stop) is added after it.
pub(super) fn ends_phrase(c: char) -> bool {
    is_closer(c)
        || matches!(
            c,
            '.' | ','
                | ';'
                | ':'
                | '!'
                | '?'
                | '—'
                | '–'
                | '-'
                | '…'
                | '。'
                | '，'
                | '、'
                | '；'
                | '：'
                | '！'
                | '？'
        )
}

/// Whitespace between two stretches of a verse run's text, not yet read.
struct Gap {
    /// Its bytes in the run's text (markup skipped inside it included).
    range: Range<usize>,
    /// It holds a line break.
    line_break: bool,
}

/// A verse run's text as it is appended to its normalised text, stretch by stretch (the text
/// between markup): whitespace is held back until the next text, so a line break becomes a
/// comma and a space, and whitespace at the run's end is never read.
#[derive(Default)]
pub(super) struct Lines {
    gap: Option<Gap>,
}

impl Lines {
    /// Appends `text[range]` to `norm`, each of its lines read by `read` (the line's text and
    /// its offset in `text`).
    pub(super) fn append(
        &mut self,
        norm: &mut Mapped,
        text: &str,
        range: Range<usize>,
        read: impl Fn(&str, usize) -> Mapped,
    ) {
        let mut at = range.start;
        while at < range.end {
            let rest = &text[at..range.end];
            let blank = rest.len() - rest.trim_start().len();
            if blank > 0 {
                self.hold(at..at + blank, rest[..blank].contains('\n'));
                at += blank;
                continue;
            }
            let line = rest.split('\n').next().unwrap_or(rest).trim_end();
            self.release(norm, line.chars().next());
            norm.append(read(line, at));
            at += line.len();
        }
    }

    /// Holds back whitespace (it joins the gap held already: markup between is not read).
    fn hold(&mut self, blank: Range<usize>, line_break: bool) {
        match &mut self.gap {
            Some(gap) => {
                gap.range.end = blank.end;
                gap.line_break |= line_break;
            }
            None => self.gap = Some(Gap { range: blank, line_break }),
        }
    }

    /// Reads the held whitespace before text starting with `next`: nothing at the run's start;
    /// a line break ends its line's phrase ([`end_line`]); then a space, unless Chinese text
    /// meets there.
    fn release(&mut self, norm: &mut Mapped, next: Option<char>) {
        let Some(gap) = self.gap.take() else { return };
        let Some(last) = norm.text.chars().next_back() else { return };
        if last.is_whitespace() {
            return;
        }
        if gap.line_break {
            end_line(norm, last, gap.range.start);
        }
        let chinese =
            |c: char| is_cjk(c) || matches!(c, '，' | '。' | '、' | '；' | '：' | '！' | '？');
        if !chinese(last) && !next.is_some_and(chinese) {
            norm.push_replace(" ", gap.range);
        }
    }
}

/// Ends a line whose text ends with `last` (at `at` in the run's text): a comma, Chinese after
/// Chinese text, where it has no punctuation of its own.
fn end_line(norm: &mut Mapped, last: char, at: usize) {
    if !ends_phrase(last) {
        norm.push_replace(if is_cjk(last) { "，" } else { "," }, at..at);
    }
}
