//! Reading a block: its markup lexed once ([`crate::markup::lex`]), its text split into runs
//! at pauses ([`super::pauses`]) and voicing changes ([`super::voicing`]), each run cut into
//! language pieces ([`super::language`]) and normalised, verse line by line
//! ([`super::verse`]), with the final mark upstream appends.

use std::path::Path;

use super::blocks::Block;
use super::language::{Languages, Piece, Reading, Stretch, document_tag, stretches};
use super::pauses::{Run, pause_runs};
use super::source::Cursor;
use super::verse::{Lines, ends_phrase};
use super::voicing::{voicing_marks, voicing_runs};
use super::{Frontend, ParseOptions, UnspokenPolicy};
use crate::mapped::Mapped;
use crate::markup::{self, MarkupError};
use crate::normalize::{Lang, Latin, normalize_at, normalize_kept_at, normalize_runs_latin_at};
use crate::pronounce::Pronunciations;
use crate::segment::{is_closer, is_mark, speakable};
use crate::{Result, TextError};

/// A run's normalised text: its script branch (for segmenting), the text, and the language
/// stretches it was read in (ranges in the run's text), those in a language the model does
/// not speak among them.
pub(super) struct RunText {
    pub lang: Lang,
    pub norm: Mapped,
    pub stretches: Vec<Stretch>,
}

/// A run's stretches in a language the model does not speak (ranges in the run's text, with
/// their tags), whether or not the run has anything else to say.
pub(super) type UnspokenRuns = Vec<(std::ops::Range<usize>, String)>;

/// A block split at its pause markup and where its voicing changes, each run normalised
/// (`None`: nothing to say). The language markup state carries across pauses and voicing
/// changes and ends with the block; `voice` is the `[voice:…]` in effect before the block and,
/// on return, after it.
pub(super) fn read_block(
    block: &Block,
    src: &str,
    path: &Path,
    opts: &ParseOptions<'_>,
    language: Option<&str>,
    voice: &mut Option<String>,
) -> Result<Vec<(Run, Option<RunText>, UnspokenRuns)>> {
    let text = &block.text.text;
    let error = |e| markup_error(src, &block.text, path, e);
    let tokens = markup::lex(text).map_err(error)?;
    let voicing = voicing_marks(text, &tokens, &opts.characters, block.kind).map_err(error)?;
    let runs = pause_runs(&tokens, text.len(), &opts.pauses);
    let mut languages = Languages::new(&tokens, &block.languages, document_tag(language));
    let read = voicing_runs(runs, &voicing, voice).into_iter().map(|run| {
        let run_text = &text[run.range.clone()];
        let pieces = languages.pieces(&run);
        let stretches: Vec<Stretch> =
            pieces.iter().filter(|p| !p.markup).flat_map(|p| stretches(run_text, p)).collect();
        let unspoken = unspoken_runs(run_text, &stretches);
        let read = normalize_run(run_text, &pieces, stretches, opts, block.verse);
        (run, read, unspoken)
    });
    Ok(read.collect())
}

/// The stretches of a run in a language the model does not speak that have words.
fn unspoken_runs(text: &str, stretches: &[Stretch]) -> UnspokenRuns {
    stretches
        .iter()
        .filter(|s| s.reading == Reading::Unspoken)
        .filter(|s| text[s.range.clone()].chars().any(char::is_alphabetic))
        .map(|s| (s.range.clone(), s.tag.clone().unwrap_or_default()))
        .collect()
}

/// Normalises one run; `None` when it has nothing to say. Appends the final mark upstream adds.
/// The run is Chinese for segmenting (CJK marks, sized in characters) when it holds CJK text
/// (ideographs, kana, Hangul); its text is normalised per [`Frontend`] and, with ours, each
/// stretch per its reading ([`read_stretch`]); a verse run line by line ([`Lines`]). Text in
/// a language the model does not speak is left out under [`UnspokenPolicy::Skip`].
fn normalize_run(
    text: &str,
    pieces: &[Piece],
    stretches: Vec<Stretch>,
    opts: &ParseOptions<'_>,
    verse: bool,
) -> Option<RunText> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return None;
    }
    let lead = text.len() - text.trim_start().len();
    let end = lead + trimmed.len();
    let upstream = opts.frontend == Frontend::Upstream;
    let skip = opts.unspoken == UnspokenPolicy::Skip;
    let any_cjk = pieces.iter().any(|p| !p.markup && p.tag.as_deref().is_some_and(is_zh_tag))
        || stretches.iter().any(|s| {
            s.reading.is_cjk() && text[s.range.clone()].chars().any(char::is_alphanumeric)
        });
    let lang = if any_cjk && !upstream { Lang::Zh } else { Lang::detect(trimmed) };
    let prons = &opts.pronunciations;
    let mut norm = Mapped::default();
    let mut lines = Lines::default();
    let mut last = None;
    for st in &stretches {
        let mut r = st.range.start.max(lead)..st.range.end.min(end);
        if r.is_empty() || (skip && st.reading == Reading::Unspoken) {
            continue;
        }
        let read = |piece: &str, at: usize| {
            if upstream {
                normalize_at(piece, at, lang, prons)
            } else {
                read_stretch(piece, at, st.reading, prons)
            }
        };
        if text[r.clone()].chars().any(char::is_alphanumeric) {
            last = Some(st.reading);
        }
        if verse {
            lines.append(&mut norm, text, r, read);
            continue;
        }
        // Where markup stood between two spaces, one is enough.
        if norm.text.is_empty() || norm.text.ends_with(char::is_whitespace) {
            r.start += text[r.clone()].len() - text[r.clone()].trim_start().len();
        }
        norm.append(read(&text[r.clone()], r.start));
    }
    let t = norm.text.trim_end();
    if !speakable(t) && !t.contains(['[', '<']) {
        return None;
    }
    let closing = final_mark(t, lang, last, upstream);
    let last_char = t.trim_end_matches(is_closer);
    let ends_marked = last_char.chars().next_back().is_some_and(|c| is_mark(c, lang))
        // A stanza's last line keeps its own mark, a comma too: no full stop after it.
        || (verse && t.chars().next_back().is_some_and(ends_phrase));
    if !ends_marked {
        norm.push_replace(closing, end..end);
    }
    let stretches = if upstream { Vec::new() } else { stretches };
    Some(RunText { lang, norm, stretches })
}

fn is_zh_tag(tag: &str) -> bool {
    super::language::reading(Some(tag)) == Reading::Chinese
}

/// The mark upstream appends where a run ends without one: `。` after Chinese and Japanese,
/// `.` after anything else (Korean writes Latin full stops).
fn final_mark(norm: &str, lang: Lang, last: Option<Reading>, upstream: bool) -> &'static str {
    let chinese_end = match last {
        _ if upstream => lang == Lang::Zh,
        Some(Reading::Japanese) => true,
        Some(Reading::Korean) => false,
        _ => crate::normalize::script_runs(norm).last().is_some_and(|(_, l)| *l == Lang::Zh),
    };
    if chinese_end { "。" } else { "." }
}

/// Normalises a stretch of text by its reading: English rules, Chinese rules, a spelled
/// language's numbers, or (Japanese, Korean, unspoken languages) as written.
fn read_stretch(text: &str, at: usize, reading: Reading, prons: &Pronunciations) -> Mapped {
    match reading {
        Reading::English => normalize_runs_latin_at(text, at, Latin::English, prons),
        Reading::Chinese => normalize_at(text, at, Lang::Zh, prons),
        Reading::Spelled(language) => crate::spell::normalize_runs_at(text, at, language, prons),
        Reading::Japanese | Reading::Korean | Reading::Unspoken => {
            normalize_kept_at(text, at, prons)
        }
    }
}

/// A markup error in block text, placed in the source.
fn markup_error(src: &str, map: &Mapped, path: &Path, e: MarkupError) -> TextError {
    let bytes = map.src_range(e.offset..e.offset + 1);
    let pos = Cursor::new(src).position(bytes.start);
    TextError::Markup {
        path: path.to_path_buf(),
        line: pos.line,
        column: pos.column,
        reason: e.reason,
    }
}
