//! The inline markup of manuscripts, lexed once: pauses (`[pause]`, `[pause:1.5s]`,
//! `[pause:300ms]`, `[break]`), languages (`[lang:TAG]`, `[/lang]`) and voicing (`[voice:NAME]`,
//! `[voice]`, `[as:NAME]`, `[/as]`, `[style:TEXT]`, `[style]`, `[pace:X]`, `[pace]`).
//!
//! [`lex`] reads a block's text (a paragraph or a heading) and gives its markup, in order,
//! with byte ranges and values; every reader of markup (the pause, language and voicing passes
//! of [`crate::manuscript`], heading titles, the Markdown reader) works from it, so the grammar
//! lives here alone:
//!
//! * A markup starts with one of the openings above and ends with the first `]` on its line.
//!   A `[` that opens none of them is text, and so are the CosyVoice3 special tokens
//!   (`[breath]`, `<|…|>`; [`crate::tokenizer::is_special_token_at`]), which pass untouched.
//! * Values are checked here: durations (at most [`MAX_PAUSE_MS`]), BCP 47 language tags,
//!   voice names, styles (at most [`MAX_STYLE_CHARS`] chars), paces (within [`PACE_RANGE`]).
//!   Whether an `[as:NAME]` names a cast character is the voicing pass's question.
//! * `[as:…]` and `[lang:…]` spans end at their closing markup or with the block, so a closing
//!   markup with no span open is an error.
//!
//! ```
//! use lectern_text::markup::{Markup, lex};
//! let tokens = lex("Hush [pause:1.5s][as:Anna]now[/as].").unwrap();
//! let markup: Vec<_> = tokens.into_iter().map(|t| (t.range, t.markup)).collect();
//! assert_eq!(
//!     markup,
//!     [
//!         (5..17, Markup::Pause { ms: Some(1500) }),
//!         (17..26, Markup::As("Anna".into())),
//!         (29..34, Markup::EndAs),
//!     ]
//! );
//! ```

use std::ops::{Range, RangeInclusive};

use crate::tokenizer::{char_prefix, is_special_token_at};

/// The longest explicit pause accepted (a typo guard).
pub const MAX_PAUSE_MS: u32 = 60_000;

/// The paces `[pace:X]` accepts (1.0: the voice's own pace).
pub const PACE_RANGE: RangeInclusive<f32> = 0.5..=2.0;

/// The longest `[style:…]` instruction, in chars (a typo guard: a forgotten `]`).
pub const MAX_STYLE_CHARS: usize = 200;

/// The longest value `[pause:…]` takes, in bytes (a typo guard: a forgotten `]`).
const MAX_PAUSE_VALUE_BYTES: usize = 16;

/// What a markup says.
#[derive(Debug, Clone, PartialEq)]
pub enum Markup {
    /// `[pause:X]`, or `[pause]` (`None`: the manuscript's default pause).
    Pause { ms: Option<u32> },
    /// `[break]`: a paragraph break inside a line.
    Break,
    /// `[lang:TAG]` (the tag in lower case), or `[/lang]` (`None`: back to the document's
    /// language).
    Lang(Option<String>),
    /// `[voice:NAME]`, or `[voice]` (`None`: the book's voice).
    Voice(Option<String>),
    /// `[as:NAME]`: the name as written, trimmed (the cast decides who it is).
    As(String),
    /// `[/as]`: back to the paragraph's speaker.
    EndAs,
    /// `[style:TEXT]` (trimmed), or `[style]` (`None`: no style).
    Style(Option<String>),
    /// `[pace:X]`, or `[pace]` (`None`: the voice's pace).
    Pace(Option<f32>),
}

/// One markup in block text.
#[derive(Debug, Clone, PartialEq)]
pub struct Token {
    /// Its bytes in the text, `[` to `]`.
    pub range: Range<usize>,
    pub markup: Markup,
}

/// Markup that cannot be read: where it starts (a byte offset in the lexed text) and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("byte {offset}: {reason}")]
pub struct MarkupError {
    pub offset: usize,
    pub reason: String,
}

/// The markup of a block's text, in order. A bad value, an opening without its `]` on its
/// line, or a closing markup with no span open is an error at the markup's `[`.
pub fn lex(text: &str) -> Result<Vec<Token>, MarkupError> {
    let mut spans = OpenSpans::default();
    let mut tokens = Vec::new();
    let mut i = 0;
    while let Some(k) = text[i..].find('[') {
        let at = i + k;
        let rest = &text[at..];
        if let Some(n) = is_special_token_at(rest) {
            i = at + n;
            continue;
        }
        let Some(opening) = opening_at(rest) else {
            i = at + 1;
            continue;
        };
        let error = |reason| MarkupError { offset: at, reason };
        let (len, markup) = read_markup(rest, opening).map_err(error)?;
        spans.check(&markup).map_err(error)?;
        tokens.push(Token { range: at..at + len, markup });
        i = at + len;
    }
    Ok(tokens)
}

/// The length of the markup that opens `s`, up to its `]`: what a reader copies whole,
/// unread (a Markdown reader must not take `[as:Anna][style:soft]` for a reference link).
/// `None` where `s` opens no markup, or one without its `]` on its line.
pub fn len_at(s: &str) -> Option<usize> {
    let opening = opening_at(s)?;
    if opening.takes_value() { closing_bracket(s).map(|e| e + 1) } else { Some(opening.text.len()) }
}

/// `text` without its markup (heading titles); `None` where the markup cannot be read.
pub fn strip(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for token in lex(text).ok()? {
        out.push_str(&text[at..token.range.start]);
        at = token.range.end;
    }
    out.push_str(&text[at..]);
    Some(out)
}

/// A language tag as BCP 47 writes them: 2–3 letters, then subtags of 1–8 letters or digits.
pub fn is_language_tag(t: &str) -> bool {
    let mut parts = t.split(['-', '_']);
    let primary = parts.next().unwrap_or("");
    (2..=3).contains(&primary.len())
        && primary.chars().all(|c| c.is_ascii_alphabetic())
        && parts.all(|p| (1..=8).contains(&p.len()) && p.chars().all(|c| c.is_ascii_alphanumeric()))
}

/// The kinds of markup, whatever their value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    Pause,
    Break,
    Lang,
    EndLang,
    Voice,
    As,
    EndAs,
    Style,
    Pace,
}

/// How a markup starts: a whole markup (`[break]`), or a form whose value runs to `]`
/// (`[pause:`).
#[derive(Debug, Clone, Copy)]
struct Opening {
    text: &'static str,
    form: Form,
}

impl Opening {
    fn takes_value(self) -> bool {
        self.text.ends_with(':')
    }
}

const OPENINGS: [Opening; 13] = [
    Opening { text: "[pause]", form: Form::Pause },
    Opening { text: "[pause:", form: Form::Pause },
    Opening { text: "[break]", form: Form::Break },
    Opening { text: "[lang:", form: Form::Lang },
    Opening { text: "[/lang]", form: Form::EndLang },
    Opening { text: "[voice]", form: Form::Voice },
    Opening { text: "[voice:", form: Form::Voice },
    Opening { text: "[as:", form: Form::As },
    Opening { text: "[/as]", form: Form::EndAs },
    Opening { text: "[style]", form: Form::Style },
    Opening { text: "[style:", form: Form::Style },
    Opening { text: "[pace]", form: Form::Pace },
    Opening { text: "[pace:", form: Form::Pace },
];

fn opening_at(s: &str) -> Option<Opening> {
    OPENINGS.iter().copied().find(|o| s.starts_with(o.text))
}

/// The offset of the `]` that closes the markup opening `s`: the first on its line.
fn closing_bracket(s: &str) -> Option<usize> {
    s.split('\n').next().unwrap_or(s).find(']')
}

/// The markup at the start of `rest` (which starts with `opening`) and its length, or why it
/// is wrong.
fn read_markup(rest: &str, opening: Opening) -> Result<(usize, Markup), String> {
    if !opening.takes_value() {
        let markup = match opening.form {
            Form::Pause => Markup::Pause { ms: None },
            Form::Break => Markup::Break,
            Form::EndLang => Markup::Lang(None),
            Form::Voice => Markup::Voice(None),
            Form::EndAs => Markup::EndAs,
            Form::Style => Markup::Style(None),
            Form::Pace => Markup::Pace(None),
            Form::Lang | Form::As => unreachable!("`{}` takes a value", opening.text),
        };
        return Ok((opening.text.len(), markup));
    }
    let close = closing_bracket(rest);
    let whole = close.map(|e| &rest[..=e]);
    let value = close.map(|e| &rest[opening.text.len()..e]);
    let markup = match opening.form {
        Form::Pause => pause(value, rest)?,
        Form::Lang => language(value, rest)?,
        _ => {
            let (Some(whole), Some(value)) = (whole, value) else {
                let shown = char_prefix(rest.split('\n').next().unwrap_or(rest), 24);
                return Err(format!("`{shown}` is not closed: end it with `]` on its line"));
            };
            voicing(opening.form, value, whole)?
        }
    };
    Ok((close.expect("a read value is closed") + 1, markup))
}

/// A markup as an error message shows it: up to its first `]`, or its first chars.
fn shown(rest: &str) -> &str {
    rest.find(']').map_or(char_prefix(rest, 20), |e| &rest[..=e])
}

/// `[pause:X]`.
fn pause(value: Option<&str>, rest: &str) -> Result<Markup, String> {
    let ms = value.filter(|v| v.len() <= MAX_PAUSE_VALUE_BYTES).and_then(parse_duration_ms);
    match ms {
        Some(ms) => Ok(Markup::Pause { ms: Some(ms) }),
        None => Err(format!(
            "bad pause `{}`: write [pause], [pause:1.5s] or [pause:300ms] (at most {} s)",
            shown(rest),
            MAX_PAUSE_MS / 1000
        )),
    }
}

/// `1.5s`, `1.5`, `300ms` → milliseconds, within [`MAX_PAUSE_MS`].
fn parse_duration_ms(v: &str) -> Option<u32> {
    let v = v.trim();
    let (num, scale) = if let Some(n) = v.strip_suffix("ms") {
        (n, 1.0)
    } else if let Some(n) = v.strip_suffix('s') {
        (n, 1000.0)
    } else {
        (v, 1000.0)
    };
    let x: f64 = num.trim().parse().ok()?;
    let ms = (x * scale).round();
    (x.is_finite() && ms >= 0.0 && ms <= f64::from(MAX_PAUSE_MS)).then_some(ms as u32)
}

/// `[lang:TAG]`.
fn language(value: Option<&str>, rest: &str) -> Result<Markup, String> {
    match value.filter(|t| is_language_tag(t)) {
        Some(tag) => Ok(Markup::Lang(Some(tag.to_ascii_lowercase()))),
        None => Err(format!(
            "bad language `{}`: write a BCP 47 tag, as in [lang:fr], [lang:de-CH]",
            shown(rest)
        )),
    }
}

/// A voicing markup with its value (`whole` is the markup, `[` to `]`).
fn voicing(form: Form, value: &str, whole: &str) -> Result<Markup, String> {
    if value.contains('[') {
        return Err(format!("`{whole}` holds a `[`: end the markup with `]` before it"));
    }
    match form {
        Form::Voice => voice_name(value, whole).map(|v| Markup::Voice(Some(v))),
        Form::As => character_name(value, whole).map(Markup::As),
        Form::Style => style_text(value, whole).map(|s| Markup::Style(Some(s))),
        Form::Pace => pace_value(value, whole).map(|p| Markup::Pace(Some(p))),
        _ => unreachable!("{form:?} is no voicing markup with a value"),
    }
}

/// A `[voice:NAME]` name: letters, digits, `-`, `_`, `.` (a voice's file or folder name).
fn voice_name(value: &str, markup: &str) -> Result<String, String> {
    let name = value.trim();
    let ok = !name.is_empty()
        && name.chars().all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if !ok {
        return Err(format!(
            "bad voice `{markup}`: a voice name has letters, digits, `-`, `_` and `.` only, as \
             in [voice:anna] ([voice] returns to the book's voice)"
        ));
    }
    Ok(name.to_string())
}

/// An `[as:NAME]` name, as written: not empty.
fn character_name(value: &str, markup: &str) -> Result<String, String> {
    let name = value.trim();
    if name.is_empty() {
        return Err(format!("`{markup}` names no character: write [as:NAME]…[/as]"));
    }
    Ok(name.to_string())
}

/// A `[style:TEXT]` instruction: trimmed, not empty, at most [`MAX_STYLE_CHARS`] chars.
fn style_text(value: &str, markup: &str) -> Result<String, String> {
    let style = value.trim();
    if style.is_empty() {
        return Err(format!(
            "empty style `{markup}`: write an instruction, as in [style:whispering] ([style] \
             clears it)"
        ));
    }
    let n = style.chars().count();
    if n > MAX_STYLE_CHARS {
        return Err(format!(
            "style `{}…` is too long ({n} chars, at most {MAX_STYLE_CHARS})",
            char_prefix(markup, 24)
        ));
    }
    Ok(style.to_string())
}

/// A `[pace:X]` value within [`PACE_RANGE`].
fn pace_value(value: &str, markup: &str) -> Result<f32, String> {
    match value.trim().parse::<f32>() {
        Ok(pace) if PACE_RANGE.contains(&pace) => Ok(pace),
        _ => Err(format!(
            "bad pace `{markup}`: write a number from {} to {}, as in [pace:0.9] ([pace] \
             returns to the voice's pace)",
            PACE_RANGE.start(),
            PACE_RANGE.end()
        )),
    }
}

/// The `[as:…]` and `[lang:…]` spans open so far in a block: a closing markup needs one.
#[derive(Default)]
struct OpenSpans {
    character: bool,
    language: bool,
}

impl OpenSpans {
    fn check(&mut self, markup: &Markup) -> Result<(), String> {
        match markup {
            Markup::As(_) => self.character = true,
            Markup::EndAs if !self.character => {
                return Err("`[/as]` closes no `[as:…]` in this paragraph".to_string());
            }
            Markup::EndAs => self.character = false,
            Markup::Lang(Some(_)) => self.language = true,
            Markup::Lang(None) if !self.language => {
                return Err("`[/lang]` closes no `[lang:…]` in this paragraph".to_string());
            }
            Markup::Lang(None) => self.language = false,
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn markup(text: &str) -> Vec<Markup> {
        lex(text).unwrap().into_iter().map(|t| t.markup).collect()
    }

    fn error(text: &str) -> (usize, String) {
        let e = lex(text).unwrap_err();
        (e.offset, e.reason)
    }

    #[test]
    fn every_form_and_its_value() {
        let text = "[pause][pause:300ms][break][lang:de-CH]x[/lang][voice:anna][voice][as: Mrs \
                    Hale ][/as][style: soft ][style][pace:0.8][pace]";
        assert_eq!(
            markup(text),
            [
                Markup::Pause { ms: None },
                Markup::Pause { ms: Some(300) },
                Markup::Break,
                Markup::Lang(Some("de-ch".into())),
                Markup::Lang(None),
                Markup::Voice(Some("anna".into())),
                Markup::Voice(None),
                Markup::As("Mrs Hale".into()),
                Markup::EndAs,
                Markup::Style(Some("soft".into())),
                Markup::Style(None),
                Markup::Pace(Some(0.8)),
                Markup::Pace(None),
            ]
        );
    }

    #[test]
    fn special_tokens_and_other_brackets_are_text() {
        assert_eq!(markup("[breath] a [laughter] <|endofprompt|> [note] [pauses] [as]"), []);
        let tokens = lex("a [sic] [pause] b").unwrap();
        assert_eq!(tokens[0].range, 8..15);
    }

    #[test]
    fn errors_point_at_the_markups_bracket() {
        assert_eq!(error("ok [pause:soon]").0, 3);
        assert!(error("[pause:1s\n]").1.starts_with("bad pause"));
        assert_eq!(
            error("x [lang:fr").1,
            "bad language `[lang:fr`: write a BCP 47 tag, as in \
                                           [lang:fr], [lang:de-CH]"
        );
        assert_eq!(
            error("a [/lang]"),
            (2, "`[/lang]` closes no `[lang:…]` in this paragraph".into())
        );
        assert_eq!(error("[as:A][/as][/as]").0, 11);
        assert!(error("[style:soft\n]").1.contains("is not closed"));
    }

    #[test]
    fn markup_is_stripped_and_measured() {
        assert_eq!(strip("The End [voice:tom][pause]").as_deref(), Some("The End "));
        assert_eq!(strip("[as:]"), None);
        assert_eq!(len_at("[as:Anna][style:soft]"), Some(9));
        assert_eq!(len_at("[voice:anna"), None);
        assert_eq!(len_at("[link](x)"), None);
    }
}
