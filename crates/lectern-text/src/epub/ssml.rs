//! SSML pronunciation attributes in content documents (EPUB 3 Text-to-Speech: `ssml:ph` and
//! `ssml:alphabet`, namespace `http://www.w3.org/2001/10/synthesis`): an element with
//! `ssml:ph="…"` is read as those phones instead of its text.
//!
//! The phones are converted by [`crate::ipa`] in the alphabet in force (the element's
//! `ssml:alphabet`, else its nearest ancestor's, else IPA) for the language in force (the
//! nearest `xml:lang`/`lang`, else English), and replace the element's text in the block as
//! CosyVoice3 unit tokens (`[N][AO1][R][TH]`), which normalisation passes untouched and the
//! tokenizer turns into phone ids. A transcription that cannot be converted leaves the printed
//! text and is a warning naming the file and the transcription.
//!
//! Printed abbreviations often end a sentence with their own full stop (`… 38″ W. It is
//! bounded`): when the replaced text ended with `.` and the next text starts with a capital
//! (after any closing quotes), the stop is kept after the phones.

use quick_xml::events::BytesStart;

use super::package::attr;
use crate::ipa::{self, Alphabet};

/// The SSML namespace.
const NAMESPACE: &str = "http://www.w3.org/2001/10/synthesis";
/// Closing marks a sentence's stop goes before.
const CLOSERS: &[char] = &['"', '”', '’', '\'', ')', ']', '»'];

/// What an open element set.
#[derive(Debug, Default)]
struct Frame {
    alphabet: Option<String>,
    language: Option<String>,
    /// Its `ssml:ph` converted, and where its text starts in the block buffer with the buffer
    /// up to there (to check, at its end, that the block is still the one it started in).
    phones: Option<(String, String)>,
}

/// The state of one content document's walk.
#[derive(Debug, Default)]
pub(super) struct Phonemes {
    /// Prefixes bound to the SSML namespace (`ssml` is assumed even when undeclared).
    prefixes: Vec<String>,
    frames: Vec<Frame>,
    /// Phones just put in whose printed text ended with a full stop.
    pending_stop: Option<String>,
    /// Transcriptions that could not be used.
    pub warnings: Vec<String>,
}

impl Phonemes {
    /// An element opens; `buf` is the block's text so far when its text is read (None when it
    /// is skipped). `file` names the document in warnings.
    pub fn start(&mut self, e: &BytesStart<'_>, buf: Option<&str>, file: &str) {
        self.learn_prefixes(e);
        let alphabet = self.ssml_attr(e, "alphabet");
        let language = attr(e, "xml:lang").or_else(|| attr(e, "lang"));
        let mut frame = Frame { alphabet, language, phones: None };
        if let (Some(ph), Some(buf)) = (self.ssml_attr(e, "ph"), buf) {
            match self.convert(&ph, frame.alphabet.as_deref(), frame.language.as_deref()) {
                Ok(units) => frame.phones = Some((units, buf.to_string())),
                Err(reason) => self.warnings.push(format!(
                    "{file}: ssml:ph=\"{ph}\" not applied (read as printed): {reason}"
                )),
            }
        }
        self.frames.push(frame);
    }

    /// An element closes: its text in `buf` becomes its phones (spaces around it kept).
    pub fn end(&mut self, buf: &mut String) {
        let Some(Frame { phones: Some((units, before)), .. }) = self.frames.pop() else { return };
        if !buf.starts_with(before.as_str()) {
            return;
        }
        let text = &buf[before.len()..];
        let printed = text.trim();
        if printed.is_empty() {
            return;
        }
        let lead = &text[..text.len() - text.trim_start().len()];
        let trail = &text[text.trim_end().len()..];
        let stop = printed.ends_with('.');
        let replaced = format!("{before}{lead}{units}{trail}");
        *buf = replaced;
        self.pending_stop = stop.then_some(units);
    }

    /// Text `s` is about to be added to `buf`: a printed stop the phones replaced goes back
    /// when `s` starts a new sentence.
    pub fn before_text(&mut self, buf: &mut String, s: &str) {
        if s.trim().is_empty() {
            return;
        }
        let Some(units) = self.pending_stop.take() else { return };
        let next = s.trim_start().trim_start_matches(CLOSERS).trim_start();
        let capital = next.chars().next().is_some_and(char::is_uppercase);
        let at = buf.trim_end().len();
        if capital && buf[..at].ends_with(units.as_str()) {
            buf.insert(at, '.');
        }
    }

    fn convert(
        &self,
        ph: &str,
        own: Option<&str>,
        own_lang: Option<&str>,
    ) -> Result<String, String> {
        let name = own
            .or_else(|| self.frames.iter().rev().find_map(|f| f.alphabet.as_deref()))
            .unwrap_or("ipa");
        let alphabet = Alphabet::from_name(name)
            .ok_or_else(|| format!("ssml:alphabet `{name}` is not supported (ipa or x-sampa)"))?;
        let language =
            own_lang.or_else(|| self.frames.iter().rev().find_map(|f| f.language.as_deref()));
        ipa::to_units(ph, alphabet, language).map_err(|e| e.to_string())
    }

    /// `xmlns:X="…synthesis"` declarations.
    fn learn_prefixes(&mut self, e: &BytesStart<'_>) {
        for a in e.attributes().flatten() {
            let key: &str = a.key.as_ref();
            if let Some(prefix) = key.strip_prefix("xmlns:") {
                if AsRef::<str>::as_ref(&a.value) == NAMESPACE
                    && !self.prefixes.iter().any(|p| p == prefix)
                {
                    self.prefixes.push(prefix.to_string());
                }
            }
        }
    }

    /// An SSML attribute by local name, under `ssml:` or any prefix bound to the namespace.
    fn ssml_attr(&self, e: &BytesStart<'_>, name: &str) -> Option<String> {
        std::iter::once("ssml")
            .chain(self.prefixes.iter().map(String::as_str))
            .find_map(|p| attr(e, &format!("{p}:{name}")))
            .filter(|v| !v.trim().is_empty())
    }
}
