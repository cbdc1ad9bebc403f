//! Reading a block: its markup lexed once ([`crate::markup::lex`]), its text split into runs
//! at pauses ([`super::pauses`]) and voicing changes ([`super::voicing`]), each run cut into
//! language pieces ([`super::language`]) and normalised, verse line by line
//! ([`super::verse`]), with the final mark upstream appends.

use std::path::Path;

use super::blocks::Block;
use super::language::{Languages, Piece, Reading, document_latin_tag, reading};
use super::pauses::{Run, pause_runs};
use super::source::Cursor;
use super::verse::{Lines, ends_phrase};
use super::voicing::{voicing_marks, voicing_runs};
use super::{Frontend, ParseOptions};
use crate::mapped::Mapped;
use crate::markup::{self, MarkupError};
use crate::normalize::{Lang, Latin, normalize_at, normalize_runs_latin_at, script_runs};
use crate::segment::{is_closer, is_mark, speakable};
use crate::{Result, TextError};

/// A run's normalised text: its script branch (for segmenting), the text, and the language
/// pieces it was read in (ranges in the run's text).
pub(super) struct RunText {
    pub lang: Lang,
    pub norm: Mapped,
    pub pieces: Vec<Piece>,
}

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
) -> Result<Vec<(Run, Option<RunText>)>> {
    let text = &block.text.text;
    let error = |e| markup_error(src, &block.text, path, e);
    let tokens = markup::lex(text).map_err(error)?;
    let voicing = voicing_marks(text, &tokens, &opts.characters, block.kind).map_err(error)?;
    let runs = pause_runs(&tokens, text.len(), &opts.pauses);
    let mut languages = Languages::new(&tokens, document_latin_tag(language));
    let read = voicing_runs(runs, &voicing, voice).into_iter().map(|run| {
        let pieces = languages.pieces(&run);
        let read = normalize_run(&text[run.range.clone()], pieces, opts, block.verse);
        (run, read)
    });
    Ok(read.collect())
}

/// Normalises one run; `None` when it has nothing to say. Appends the final mark upstream adds.
/// The run's language is Chinese when it holds an ideograph (for segmenting: Chinese marks
/// include the English ones); its text is normalised per [`Frontend`] and, with ours, each
/// piece per its language ([`reading`]); a verse run line by line ([`Lines`]).
fn normalize_run(
    text: &str,
    pieces: Vec<Piece>,
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
    let any_chinese =
        pieces.iter().any(|p| !p.markup && reading(p.tag.as_deref()) == Reading::Chinese);
    let lang = if any_chinese && !upstream { Lang::Zh } else { Lang::detect(trimmed) };
    let prons = &opts.pronunciations;
    let mut norm = Mapped::default();
    let mut lines = Lines::default();
    for p in &pieces {
        let mut r = p.range.start.max(lead)..p.range.end.min(end);
        if p.markup || r.is_empty() {
            continue;
        }
        let read = |piece: &str, at: usize| match (upstream, reading(p.tag.as_deref())) {
            (true, _) => normalize_at(piece, at, lang, prons),
            (false, Reading::English) => normalize_runs_latin_at(piece, at, Latin::English, prons),
            (false, Reading::Kept) => normalize_runs_latin_at(piece, at, Latin::Kept, prons),
            (false, Reading::Chinese) => normalize_at(piece, at, Lang::Zh, prons),
        };
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
    // The final mark follows the language of the text's last run.
    let lang_at_end = if upstream {
        lang
    } else {
        script_runs(norm.text.trim_end()).last().map_or(lang, |(_, l)| *l)
    };
    let t = norm.text.trim_end();
    if !speakable(t) && !t.contains(['[', '<']) {
        return None;
    }
    let last = t.trim_end_matches(is_closer);
    let ends_marked = last.chars().next_back().is_some_and(|c| is_mark(c, lang))
        // A stanza's last line keeps its own mark, a comma too: no full stop after it.
        || (verse && t.chars().next_back().is_some_and(ends_phrase));
    if !ends_marked {
        norm.push_replace(if lang_at_end == Lang::Zh { "。" } else { "." }, end..end);
    }
    let pieces = if upstream { Vec::new() } else { pieces };
    Some(RunText { lang, norm, pieces })
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
