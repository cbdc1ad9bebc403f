//! The voicing pass: `[voice:…]`, `[as:…]`…`[/as]`, `[style:…]` and `[pace:…]` markup (from
//! [`crate::markup::lex`]) and cast `NAME:` paragraphs give every run its [`Voicing`]; a run
//! is cut where the voicing changes. The lexer checks the markup's values; the names of
//! `[as:NAME]` and `NAME:` are checked against the cast here.

use std::ops::Range;

use super::Voicing;
use super::pauses::Run;
use crate::kind::SegmentKind;
use crate::markup::{Markup, MarkupError, Token};

/// What a voicing markup changes.
#[derive(Debug, Clone)]
pub(super) enum Change {
    /// `[voice:NAME]`, or `[voice]` (`None`: the book's voice).
    Voice(Option<String>),
    /// `[as:NAME]`, or `[/as]` (`None`: back to the paragraph's speaker).
    Character(Option<String>),
    /// A paragraph's `NAME:` opening: its speaker.
    Speaker(String),
    Style(Option<String>),
    Pace(Option<f32>),
}

/// Voicing markup (or a `NAME:` opening) in block text.
pub(super) struct VoicingMark {
    pub range: Range<usize>,
    pub change: Change,
}

/// The voicing markup of a block's text (lexed into `tokens`), in order; an `[as:NAME]` that
/// names no cast character is an error. A body block that opens with a cast character's
/// `NAME:` starts with that speaker.
pub(super) fn voicing_marks(
    text: &str,
    tokens: &[Token],
    characters: &[String],
    kind: SegmentKind,
) -> Result<Vec<VoicingMark>, MarkupError> {
    let mut marks = Vec::new();
    if kind == SegmentKind::Body
        && let Some((range, name)) = speaker_prefix(text, characters)
    {
        marks.push(VoicingMark { range, change: Change::Speaker(name) });
    }
    for token in tokens {
        let change = match &token.markup {
            Markup::Voice(voice) => Change::Voice(voice.clone()),
            Markup::As(name) => {
                let markup = &text[token.range.clone()];
                let cast = cast_character(name, characters, markup)
                    .map_err(|reason| MarkupError { offset: token.range.start, reason })?;
                Change::Character(Some(cast))
            }
            Markup::EndAs => Change::Character(None),
            Markup::Style(style) => Change::Style(style.clone()),
            Markup::Pace(pace) => Change::Pace(*pace),
            Markup::Pause { .. } | Markup::Break | Markup::Lang(_) => continue,
        };
        marks.push(VoicingMark { range: token.range.clone(), change });
    }
    Ok(marks)
}

/// The cast's spelling of an `[as:NAME]` character (matched ignoring case).
fn cast_character(name: &str, characters: &[String], markup: &str) -> Result<String, String> {
    if let Some(c) = characters.iter().find(|c| same_name(c, name)) {
        return Ok(c.trim().to_string());
    }
    if characters.is_empty() {
        return Err(format!(
            "`{markup}`: there is no cast to say who `{name}` is (characters are listed in \
             cast.toml beside the manuscript)"
        ));
    }
    let known: Vec<&str> = characters.iter().map(|c| c.trim()).collect();
    Err(format!("`{markup}`: the cast has no character `{name}` (it has {})", known.join(", ")))
}

/// Whether a cast name and a written name are the same, ignoring case. Compared char by
/// char, so a long paragraph opening (`NAME:` candidates) costs no more than the name.
fn same_name(cast: &str, written: &str) -> bool {
    let cast = cast.trim();
    !cast.is_empty()
        && cast
            .chars()
            .flat_map(char::to_lowercase)
            .eq(written.chars().flat_map(char::to_lowercase))
}

/// A paragraph's `NAME:` opening, where NAME is a cast character (ignoring case): the range of
/// the name and colon, and the cast's spelling. Other `Word:` openings are text.
fn speaker_prefix(text: &str, characters: &[String]) -> Option<(Range<usize>, String)> {
    let lead = text.len() - text.trim_start().len();
    let (head, _) = text[lead..].split_once(':')?;
    let cast = characters.iter().find(|c| same_name(c, head))?;
    Some((lead..lead + head.len() + 1, cast.trim().to_string()))
}

/// Splits pause runs where the voicing changes and gives every run its voicing. `voice` is the
/// `[voice:…]` in effect before the block and, on return, after it; the character, style and
/// pace start afresh with each block.
pub(super) fn voicing_runs(
    runs: Vec<Run>,
    marks: &[VoicingMark],
    voice: &mut Option<String>,
) -> Vec<Run> {
    let mut voicing = Voicing { voice: voice.take(), ..Voicing::default() };
    let mut speaker = None;
    let mut marks = marks.iter().peekable();
    let mut out = Vec::new();
    for run in runs {
        let mut start = run.range.start;
        let mut unchanged = Vec::new();
        // Marks lie inside runs: their text holds no `[` after the first, so no pause markup.
        while let Some(m) = marks.next_if(|m| m.range.start < run.range.end) {
            let next = changed(&voicing, &m.change, &mut speaker);
            if next == voicing {
                unchanged.push(m.range.clone());
                continue;
            }
            out.push(Run {
                range: start..m.range.start,
                pause_ms: 0,
                is_break: false,
                voicing: std::mem::replace(&mut voicing, next),
                voicing_ends: true,
                unchanged: std::mem::take(&mut unchanged),
            });
            start = m.range.end;
        }
        out.push(Run { range: start..run.range.end, voicing: voicing.clone(), unchanged, ..run });
    }
    *voice = voicing.voice;
    out
}

/// The voicing after a change; `speaker` is the paragraph's (its `NAME:` opening).
fn changed(voicing: &Voicing, change: &Change, speaker: &mut Option<String>) -> Voicing {
    let mut next = voicing.clone();
    match change {
        Change::Voice(voice) => next.voice.clone_from(voice),
        Change::Character(Some(name)) => next.character = Some(name.clone()),
        Change::Character(None) => next.character.clone_from(speaker),
        Change::Speaker(name) => {
            *speaker = Some(name.clone());
            next.character = Some(name.clone());
        }
        Change::Style(style) => next.style.clone_from(style),
        Change::Pace(pace) => next.pace = *pace,
    }
    next
}
