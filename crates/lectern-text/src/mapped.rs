//! Rewritten text that remembers where each part came from.
//!
//! Markdown cleaning and normalisation both rewrite text; segments must still point at their
//! source span. A [`Mapped`] string is built from runs: a *copy* run maps byte for byte onto the
//! source, a *replace* run maps its whole output onto one source range.

use std::ops::Range;

#[derive(Debug, Clone, Copy)]
struct Run {
    out: usize,
    src: usize,
    src_end: usize,
    copy: bool,
}

/// A string plus the source byte range behind every output byte.
#[derive(Debug, Clone, Default)]
pub struct Mapped {
    pub text: String,
    runs: Vec<Run>,
}

impl Mapped {
    /// `s` copied unchanged; its bytes map to `base..base + s.len()`.
    pub fn identity(s: &str, base: usize) -> Self {
        let mut m = Self::default();
        m.push_copy(s, base);
        m
    }

    /// Appends `s`, which is the source text at `src..src + s.len()`.
    pub fn push_copy(&mut self, s: &str, src: usize) {
        if s.is_empty() {
            return;
        }
        let out = self.text.len();
        match self.runs.last_mut() {
            Some(r) if r.copy && r.src_end == src && r.out + (r.src_end - r.src) == out => {
                r.src_end = src + s.len();
            }
            _ => self.runs.push(Run { out, src, src_end: src + s.len(), copy: true }),
        }
        self.text.push_str(s);
    }

    /// Appends `s`, which stands for the source range `src` (possibly empty or of another length).
    pub fn push_replace(&mut self, s: &str, src: Range<usize>) {
        if s.is_empty() {
            return;
        }
        let out = self.text.len();
        self.runs.push(Run { out, src: src.start, src_end: src.end, copy: false });
        self.text.push_str(s);
    }

    /// Appends another mapped string (its source offsets are kept as they are).
    pub fn append(&mut self, other: Mapped) {
        let shift = self.text.len();
        self.runs.extend(other.runs.into_iter().map(|r| Run { out: r.out + shift, ..r }));
        self.text.push_str(&other.text);
    }

    /// The source byte range behind output bytes `out` (which must lie on char boundaries).
    pub fn src_range(&self, out: Range<usize>) -> Range<usize> {
        if self.runs.is_empty() {
            return 0..0;
        }
        if out.start >= out.end {
            let s = self.src_point(out.start.min(self.text.len().saturating_sub(1))).start;
            return s..s;
        }
        let start = self.src_point(out.start).start;
        // The last char of the range (its start may sit a few bytes before `out.end`).
        let last = self.text[..out.end].chars().next_back().map_or(1, char::len_utf8);
        let end = self.src_point(out.end - last).end;
        start..end.max(start)
    }

    /// The source range behind the single output byte at `pos`.
    fn src_point(&self, pos: usize) -> Range<usize> {
        let i = self.runs.partition_point(|r| r.out <= pos).saturating_sub(1);
        let r = self.runs[i];
        if r.copy {
            let s = r.src + (pos - r.out);
            let n = self.text[pos..].chars().next().map_or(1, char::len_utf8);
            s..(s + n).min(r.src_end)
        } else {
            r.src..r.src_end
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_copies_and_replacements() {
        let mut m = Mapped::default();
        m.push_copy("I have ", 10); // src 10..17
        m.push_replace("five", 17..18); // "5"
        m.push_copy(" cats", 18);
        assert_eq!(m.text, "I have five cats");
        assert_eq!(m.src_range(0..1), 10..11);
        assert_eq!(m.src_range(7..11), 17..18);
        assert_eq!(m.src_range(8..9), 17..18);
        assert_eq!(m.src_range(0..16), 10..23);
        assert_eq!(m.src_range(12..16), 19..23);
    }
}
