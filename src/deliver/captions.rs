//! Captions of the delivered audio: one SRT or WebVTT file beside each audio file, timed on
//! that file's own timeline (head room tone, earlier tracks and credits counted), one cue per
//! segment and one per spoken credits.
//!
//! A cue's text is the segment as the book prints it where the manuscript was read for it
//! ([`PrintedTexts`]), else the text the store keeps (what the model was given: numbers and
//! abbreviations spelled out). Every caption file carries the synthetic-speech disclosure: a
//! WebVTT `NOTE` block with its fields and sentence, and, since SRT has no comments, a first
//! SRT cue with the sentence over the head's room tone, before anything is spoken.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use lectern_engine::protocol::SegmentId;

use super::{DeliverError, DeliveredFile, Heard, HeardSpan, Result};
use crate::audio::tags::Disclosure;

/// Each segment's printed text, by id (the manuscript's words before normalisation).
pub type PrintedTexts = HashMap<SegmentId, String>;

/// Caption file format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaptionFormat {
    /// SubRip (`.srt`).
    Srt,
    /// WebVTT (`.vtt`).
    Vtt,
}

impl CaptionFormat {
    #[must_use]
    pub fn extension(self) -> &'static str {
        match self {
            Self::Srt => "srt",
            Self::Vtt => "vtt",
        }
    }
}

/// One caption: from `start_ms` to `end_ms` of its file, its lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cue {
    pub start_ms: u64,
    pub end_ms: u64,
    pub text: String,
}

/// Longest caption line, characters (the broadcast captioning convention).
const LINE_CHARS: usize = 42;

/// The cues of a file's spans (`rate_hz`: the spans' sample rate): every segment, and every
/// credits span whose text is known; times rounded to the millisecond.
#[must_use]
pub fn cues(spans: &[HeardSpan], rate_hz: u32, printed: &PrintedTexts) -> Vec<Cue> {
    let ms = |samples: u64| (samples * 1000 + u64::from(rate_hz) / 2) / u64::from(rate_hz);
    spans
        .iter()
        .filter_map(|span| {
            let text = match &span.what {
                Heard::Segment { id, text, .. } => printed.get(id).unwrap_or(text).clone(),
                Heard::Credits { text, .. } => text.clone()?,
            };
            Some(Cue { start_ms: ms(span.start), end_ms: ms(span.end), text: wrap(&text) })
        })
        .collect()
}

/// The text on lines of at most [`LINE_CHARS`] characters (a longer word on its own line),
/// whitespace folded: a blank line would end an SRT cue.
fn wrap(text: &str) -> String {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        match lines.last_mut() {
            Some(line) if line.chars().count() + 1 + word.chars().count() <= LINE_CHARS => {
                line.push(' ');
                line.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    lines.join("\n")
}

/// A caption file of `cues` in `format`, with the disclosure.
#[must_use]
pub fn render(format: CaptionFormat, cues: &[Cue], disclosure: &Disclosure) -> String {
    match format {
        CaptionFormat::Srt => srt(cues, disclosure),
        CaptionFormat::Vtt => vtt(cues, disclosure),
    }
}

fn srt(cues: &[Cue], disclosure: &Disclosure) -> String {
    let mut all = Vec::with_capacity(cues.len() + 1);
    let first = cues.first().map_or(0, |c| c.start_ms);
    if first > 0 {
        all.push(Cue { start_ms: 0, end_ms: first, text: wrap(&disclosure.sentence()) });
    }
    all.extend_from_slice(cues);
    let mut out = String::new();
    for (k, cue) in all.iter().enumerate() {
        out.push_str(&format!(
            "{}\n{} --> {}\n{}\n\n",
            k + 1,
            clock(cue.start_ms, ','),
            clock(cue.end_ms, ','),
            cue.text
        ));
    }
    out
}

fn vtt(cues: &[Cue], disclosure: &Disclosure) -> String {
    // A NOTE may not hold `-->`; the disclosure's fields never do.
    let mut out = format!("WEBVTT\n\nNOTE\n{}\n\n", disclosure.comment_line().replace("-->", "->"));
    for cue in cues {
        let text = cue.text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;");
        out.push_str(&format!(
            "{} --> {}\n{text}\n\n",
            clock(cue.start_ms, '.'),
            clock(cue.end_ms, '.')
        ));
    }
    out
}

/// `HH:MM:SS,mmm` (SRT) or `HH:MM:SS.mmm` (WebVTT).
fn clock(ms: u64, separator: char) -> String {
    let s = ms / 1000;
    format!("{:02}:{:02}:{:02}{separator}{:03}", s / 3600, s / 60 % 60, s % 60, ms % 1000)
}

/// The caption file of a delivered file: its path with the format's extension.
#[must_use]
pub fn path_beside(audio: &Path, format: CaptionFormat) -> PathBuf {
    audio.with_extension(format.extension())
}

/// Writes the caption file beside each delivered file that has something to caption (a
/// recorded credits file has none); returns the files written.
pub fn write_beside(
    files: &[DeliveredFile],
    format: CaptionFormat,
    rate_hz: u32,
    printed: &PrintedTexts,
    disclosure: &Disclosure,
) -> Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    for file in files {
        let list = cues(&file.spans, rate_hz, printed);
        if list.is_empty() {
            continue;
        }
        let path = path_beside(&file.path, format);
        let text = render(format, &list, disclosure);
        crate::output::write_atomically(&path, |tmp| std::fs::write(tmp, &text)).map_err(|e| {
            DeliverError::File { path: path.clone(), detail: format!("writing the captions: {e}") }
        })?;
        written.push(path);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spans() -> Vec<HeardSpan> {
        vec![
            HeardSpan {
                start: 33_075,
                end: 77_175,
                what: Heard::Segment { id: 7, chapter: 1, text: "Doctor Who.".into() },
            },
            HeardSpan {
                start: 88_200,
                end: 132_300,
                what: Heard::Credits { title: "Closing Credits".into(), text: None },
            },
        ]
    }

    #[test]
    fn cues_are_the_spans_in_milliseconds_with_the_printed_text() {
        let printed = PrintedTexts::from([(7, "Dr. Who.".to_string())]);
        let list = cues(&spans(), 44_100, &printed);
        // A credits recording whose words Lectern does not know has no cue.
        assert_eq!(list, [Cue { start_ms: 750, end_ms: 1750, text: "Dr. Who.".into() }]);
        assert_eq!(cues(&spans(), 44_100, &PrintedTexts::new())[0].text, "Doctor Who.");
    }

    #[test]
    fn srt_and_vtt_carry_the_cues_and_the_disclosure() {
        let list = [Cue { start_ms: 750, end_ms: 3_723_045, text: "A <b> & c".into() }];
        let d = Disclosure::lectern(vec!["Ava".into()]);
        let srt = render(CaptionFormat::Srt, &list, &d);
        assert!(srt.starts_with("1\n00:00:00,000 --> 00:00:00,750\nThis audiobook"), "{srt}");
        assert!(srt.ends_with("2\n00:00:00,750 --> 01:02:03,045\nA <b> & c\n\n"), "{srt}");
        let vtt = render(CaptionFormat::Vtt, &list, &d);
        assert!(vtt.starts_with("WEBVTT\n\nNOTE\nSYNTHETIC_SPEECH=yes; "), "{vtt}");
        assert!(
            vtt.ends_with("\n\n00:00:00.750 --> 01:02:03.045\nA &lt;b&gt; &amp; c\n\n"),
            "{vtt}"
        );
    }

    #[test]
    fn long_text_wraps_at_word_boundaries() {
        let text = wrap("one two three four five six seven eight nine ten eleven twelve");
        assert!(text.lines().all(|l| l.chars().count() <= LINE_CHARS), "{text}");
        assert_eq!(
            text.replace('\n', " "),
            "one two three four five six seven eight nine ten eleven twelve"
        );
    }
}
