//! The read-along EPUB: the book the project was read from, with the delivered MP3s and EPUB 3
//! Media Overlays pairing each segment's text with its clip (see
//! [`lectern_text::epub::overlay`], which anchors the text and writes the container).
//!
//! The clips are the delivered files' [`super::HeardSpan`]s, so the highlight follows exactly
//! what the listener hears: one MP3 per chapter (or part of one) as `--format mp3` writes it,
//! room tone and mastering included. Credits files and the retail sample hold no text of the
//! book and are left out of the edition.

use std::path::Path;

use lectern_text::epub::overlay::{self, OverlayAudio, OverlayClip, ReadAlong, ReadAlongReport};

use super::captions::PrintedTexts;
use super::{BookMeta, DeliverError, DeliveredFile, Heard, Result};
use crate::store::Project;

/// Each segment's printed text: the manuscript read again as the project read it, each
/// segment's source text kept where the store has the same segment (same id and hash).
pub fn printed_texts(project: &Project, manuscript: &Path) -> Result<PrintedTexts> {
    let invalid = |e: anyhow::Error| DeliverError::Invalid(format!("{e:#}"));
    let sources = project.sources()?.ok_or_else(|| {
        DeliverError::Invalid(format!(
            "the project {} does not record the model it was rendered with: render it once \
             with this Lectern to make its captions and read-along book",
            project.dir().display()
        ))
    })?;
    let tokenizer = lectern_text::Tokenizer::from_model_dir(&sources.model_dir)
        .map_err(|e| invalid(anyhow::anyhow!("loading the tokenizer: {e}")))?;
    let read = project.book()?.read;
    let book = crate::reading::load_for_listing(manuscript, &tokenizer, &read).map_err(invalid)?;
    let markdown = manuscript
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("md") || e.eq_ignore_ascii_case("markdown"));
    let stored: std::collections::HashMap<u64, u64> =
        project.segments()?.into_iter().map(|s| (s.id, s.hash)).collect();
    Ok(book
        .chapters
        .iter()
        .flat_map(|c| &c.segments)
        .filter(|s| stored.get(&(s.id as u64)) == Some(&s.hash))
        .map(|s| (s.id as u64, printed(&s.source, markdown)))
        .collect())
}

/// A segment's source as a reader sees it: Lectern's markup (`[pause]`, `[as:NAME]`) left out,
/// a Markdown book's emphasis and code marks too, whitespace folded.
fn printed(source: &str, markdown: bool) -> String {
    let text = lectern_text::markup::strip(source).unwrap_or_else(|| source.to_string());
    let text: String = text.chars().filter(|&c| !(markdown && matches!(c, '*' | '`'))).collect();
    without_phones(&text).split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `text` without the phones a book's pronunciation put in its source (`[TH][ER1]`: upper-case
/// letters and a stress digit in brackets), which no reader sees.
fn without_phones(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(k) = rest.find('[') {
        out.push_str(&rest[..k]);
        let phone = rest[k + 1..].find(']').filter(|&end| {
            let inner = &rest[k + 1..k + 1 + end];
            !inner.is_empty() && inner.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
        });
        match phone {
            Some(end) => rest = &rest[k + end + 2..],
            None => {
                out.push('[');
                rest = &rest[k + 1..];
            }
        }
    }
    out + rest
}

/// Writes the read-along edition of the EPUB `source` to `out` from the delivered MP3 `files`
/// (whose spans are at `rate_hz`).
pub fn write_epub(
    source: &Path,
    out: &Path,
    files: &[DeliveredFile],
    rate_hz: u32,
    printed: &PrintedTexts,
    meta: &BookMeta,
) -> Result<ReadAlongReport> {
    let mut book = ReadAlong {
        narrator: Some(narrator(meta)),
        disclosure: disclosure_metas(&meta.disclosure),
        ..ReadAlong::default()
    };
    for file in files.iter().filter(|f| has_segments(f)) {
        let bytes = std::fs::read(&file.path).map_err(|e| DeliverError::File {
            path: file.path.clone(),
            detail: format!("reading the delivered audio: {e}"),
        })?;
        let audio = book.audio.len();
        let name = file.path.file_name().map_or_else(String::new, |n| n.to_string_lossy().into());
        book.audio.push(OverlayAudio { name, media_type: "audio/mpeg".into(), bytes });
        book.clips.extend(file.spans.iter().filter_map(|span| match &span.what {
            Heard::Segment { id, text, .. } => Some(OverlayClip {
                text: printed.get(id).unwrap_or(text).clone(),
                audio,
                begin_s: span.start as f64 / f64::from(rate_hz),
                end_s: span.end as f64 / f64::from(rate_hz),
            }),
            Heard::Credits { .. } => None,
        }));
    }
    overlay::write(source, out, &book).map_err(|e| DeliverError::Invalid(e.to_string()))
}

fn has_segments(file: &DeliveredFile) -> bool {
    file.track > 0 && file.spans.iter().any(|s| matches!(s.what, Heard::Segment { .. }))
}

/// `media:narrator`: the narrator the book names, else the synthetic voices.
fn narrator(meta: &BookMeta) -> String {
    if meta.narrator.trim().is_empty() {
        meta.disclosure.voice_list()
    } else {
        meta.narrator.clone()
    }
}

/// The disclosure as the package's `lectern:` metas: its machine-readable fields (lower case,
/// `-` for `_`) and its sentence.
fn disclosure_metas(d: &crate::audio::tags::Disclosure) -> Vec<(String, String)> {
    let mut metas: Vec<(String, String)> = d
        .fields()
        .iter()
        .map(|(key, value)| (key.to_ascii_lowercase().replace('_', "-"), value.clone()))
        .collect();
    metas.push(("disclosure".into(), d.sentence()));
    metas
}

/// Whether the manuscript is an EPUB (the only book a read-along edition is made from).
#[must_use]
pub fn is_epub(manuscript: &Path) -> bool {
    lectern_text::epub::is_epub(manuscript)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_disclosure_becomes_the_packages_lectern_metas() {
        let d = crate::audio::tags::Disclosure::lectern(vec!["Ava".into()]);
        let metas = disclosure_metas(&d);
        let names: Vec<&str> = metas.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            ["synthetic-speech", "synthetic-speech-voice", "synthetic-speech-engine", "disclosure"]
        );
        assert_eq!(metas[0].1, "yes");
        assert_eq!(metas[1].1, "Ava");
        assert_eq!(metas[3].1, d.sentence());
    }

    #[test]
    fn printed_text_leaves_out_markup() {
        assert_eq!(
            printed("[as:Anna] \u{201c}It *was*\n  late.\u{201d}", true),
            "\u{201c}It was late.\u{201d}"
        );
        assert_eq!(printed("2*3 is `six`", false), "2*3 is `six`");
        assert_eq!(printed("between [TH][ER1][T][IY0] and [sic] x", false), "between and [sic] x");
    }

    #[test]
    fn the_narrator_is_the_books_else_the_voices() {
        let mut meta = BookMeta::default();
        meta.disclosure.voices = vec!["Ava".into()];
        assert_eq!(narrator(&meta), "Ava");
        meta.narrator = "Nell Reader".into();
        assert_eq!(narrator(&meta), "Nell Reader");
    }
}
