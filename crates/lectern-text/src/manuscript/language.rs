//! The language pass: `[lang:TAG]` … `[/lang]` spans (from [`crate::markup::lex`]), a
//! document's `xml:lang` stretches and the document's language give each stretch of a run its
//! language tag; the scripts of its text then cut it into [`Stretch`]es, each read one way
//! ([`Reading`]), which also give the segment's [`super::Segment::language`].
//!
//! CosyVoice3 speaks Chinese, English, Japanese, Korean, German, Spanish, French, Italian and
//! Russian. By script: kana make a stretch Japanese (its ideographs too), Hangul Korean,
//! Cyrillic in untagged text Russian; Arabic, Hebrew, Greek, the Indic scripts, Thai and the
//! other scripts the model does not speak are [`Reading::Unspoken`] (a lone letter, `π`, is
//! read as a sign). By tag: a language outside the nine is unspoken, whatever its script.

use std::ops::Range;

use super::pauses::Run;
use crate::cjk::is_cjk;
use crate::markup::{Markup, Token};
use crate::spell;

/// A stretch of a run's text (a range in it): markup (not read), or text under a language tag
/// (`None`: English).
#[derive(Debug, Clone)]
pub(super) struct Piece {
    pub range: Range<usize>,
    pub markup: bool,
    pub tag: Option<String>,
}

/// A block's language markup and stretches, read run by run: a `[lang:…]` span ends at
/// `[/lang]` or with its block, and carries across the pauses and voicing changes inside it.
pub(super) struct Languages {
    /// `[lang:TAG]` (`Some`) and `[/lang]` (`None`: back to the document's tag), in order; a
    /// document's stretch gives an empty range at each of its ends.
    marks: Vec<(Range<usize>, Option<String>)>,
    /// The first mark not read yet.
    next: usize,
    /// The document's tag ([`document_tag`]).
    document: Option<String>,
    /// The tag in effect where the last run read ended.
    current: Option<String>,
}

impl Languages {
    /// `stretches`: a document block's language stretches (byte ranges in the block's text).
    pub(super) fn new(
        tokens: &[Token],
        stretches: &[(Range<usize>, String)],
        document: Option<String>,
    ) -> Self {
        let mut marks: Vec<(Range<usize>, Option<String>)> = tokens
            .iter()
            .filter_map(|t| match &t.markup {
                Markup::Lang(tag) => Some((t.range.clone(), tag.clone())),
                _ => None,
            })
            .collect();
        for (r, tag) in stretches {
            marks.push((r.start..r.start, Some(tag.clone())));
            marks.push((r.end..r.end, None));
        }
        // Stable: a stretch's end sorts before the next one's start at the same offset.
        marks.sort_by_key(|(r, tag)| (r.start, tag.is_some()));
        Self { marks, next: 0, current: document.clone(), document }
    }

    /// The pieces of a run (ranges in the run's text), in order: its language markup and the
    /// voicing markup that changed nothing (`run.unchanged`) are markup, not read; the text
    /// between them is under the tag in effect.
    pub(super) fn pieces(&mut self, run: &Run) -> Vec<Piece> {
        // Marks before the run (between runs) take effect before it.
        while self.marks.get(self.next).is_some_and(|(r, _)| r.start < run.range.start) {
            let tag = self.marks[self.next].1.clone();
            self.current = tag.or_else(|| self.document.clone());
            self.next += 1;
        }
        let mut inside = Vec::new();
        while self.marks.get(self.next).is_some_and(|(r, _)| r.start < run.range.end) {
            let (range, tag) = self.marks[self.next].clone();
            inside.push((range, Some(tag)));
            self.next += 1;
        }
        // `Some`: the tag from there on; `None`: voicing markup, which changes no language.
        let mut skipped: Vec<(Range<usize>, Option<Option<String>>)> =
            inside.into_iter().chain(run.unchanged.iter().map(|r| (r.clone(), None))).collect();
        skipped.sort_by_key(|(r, _)| r.start);
        let mut pieces = Vec::new();
        let mut at = run.range.start;
        for (range, tag) in skipped {
            pieces.push(Piece { range: at..range.start, markup: false, tag: self.current.clone() });
            pieces.push(Piece { range: range.clone(), markup: true, tag: None });
            if let Some(tag) = tag {
                self.current = tag.or_else(|| self.document.clone());
            }
            at = range.end;
        }
        pieces.push(Piece { range: at..run.range.end, markup: false, tag: self.current.clone() });
        for p in &mut pieces {
            p.range = p.range.start - run.range.start..p.range.end - run.range.start;
        }
        pieces.retain(|p| !p.range.is_empty());
        pieces
    }
}

/// How a stretch of text is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Reading {
    /// Per script run: CJK as Chinese, the rest as English.
    English,
    /// All of it as Chinese (`[lang:zh]`: digits and signs between Latin words too).
    Chinese,
    /// Japanese or Korean: punctuation kept as written (no Chinese clean-ups), digits left to
    /// the model (upstream's frontend has no rules for them, spec §5.2), sized in characters.
    Japanese,
    Korean,
    /// French, German, Spanish, Italian or Russian: numbers spelled in the language
    /// ([`crate::spell`]), CJK runs as Chinese.
    Spelled(spell::Language),
    /// A language the model does not speak: listed, and read as written or skipped
    /// ([`super::UnspokenPolicy`]).
    Unspoken,
}

impl Reading {
    /// Whether it is sized in characters (CJK) rather than tokens.
    pub(super) fn is_cjk(self) -> bool {
        matches!(self, Self::Chinese | Self::Japanese | Self::Korean)
    }
}

/// How text under a tag is read: `None` and `en…` as English, `zh…`/`yue` as Chinese, `ja`,
/// `ko`, the spelled languages, and any other language as unspoken.
pub(super) fn reading(tag: Option<&str>) -> Reading {
    let Some(tag) = tag else { return Reading::English };
    match primary_subtag(tag) {
        "en" => Reading::English,
        "zh" | "yue" | "cmn" => Reading::Chinese,
        "ja" => Reading::Japanese,
        "ko" => Reading::Korean,
        p => spell::Language::from_subtag(p).map_or(Reading::Unspoken, Reading::Spelled),
    }
}

pub(super) fn primary_subtag(tag: &str) -> &str {
    tag.split(['-', '_']).next().unwrap_or(tag)
}

/// The tag a document's language gives its text: `None` for English and Chinese (whose
/// Latin text is mostly English names and quotations, read as English, as before); the tag
/// itself for any other language (a Japanese book's ideographs are Japanese).
pub(super) fn document_tag(language: Option<&str>) -> Option<String> {
    let tag = language?.trim().to_ascii_lowercase();
    let plain = matches!(primary_subtag(&tag), "en" | "zh" | "");
    (!plain).then_some(tag)
}

/// A piece's text read one way: a range of the run's text, how it is read, and the tag it
/// gives its segment (`None`: English, or Chinese the book did not tag).
#[derive(Debug, Clone)]
pub(super) struct Stretch {
    pub range: Range<usize>,
    pub reading: Reading,
    pub tag: Option<String>,
}

/// What a char says about the language of the text around it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Script {
    Han,
    Kana,
    Hangul,
    CjkPunct,
    Cyrillic,
    /// A script the model does not speak, with the tag of its main language.
    Unspoken(&'static str),
    /// Any other letter (Latin): read as the piece's tag says.
    Letter,
    /// Digits, spaces, punctuation, signs: they go with a neighbour.
    Neutral,
}

/// Scripts the model does not speak: (first, last, tag of their main language).
const UNSPOKEN_SCRIPTS: &[(char, char, &str)] = &[
    ('\u{0370}', '\u{03ff}', "el"),
    ('\u{1f00}', '\u{1fff}', "el"),
    ('\u{0530}', '\u{058f}', "hy"),
    ('\u{0590}', '\u{05ff}', "he"),
    ('\u{fb1d}', '\u{fb4f}', "he"),
    ('\u{0600}', '\u{06ff}', "ar"),
    ('\u{0750}', '\u{077f}', "ar"),
    ('\u{08a0}', '\u{08ff}', "ar"),
    ('\u{fb50}', '\u{fdff}', "ar"),
    ('\u{fe70}', '\u{feff}', "ar"),
    ('\u{0700}', '\u{074f}', "syr"),
    ('\u{0780}', '\u{07bf}', "dv"),
    ('\u{0900}', '\u{097f}', "hi"),
    ('\u{0980}', '\u{09ff}', "bn"),
    ('\u{0a00}', '\u{0a7f}', "pa"),
    ('\u{0a80}', '\u{0aff}', "gu"),
    ('\u{0b00}', '\u{0b7f}', "or"),
    ('\u{0b80}', '\u{0bff}', "ta"),
    ('\u{0c00}', '\u{0c7f}', "te"),
    ('\u{0c80}', '\u{0cff}', "kn"),
    ('\u{0d00}', '\u{0d7f}', "ml"),
    ('\u{0d80}', '\u{0dff}', "si"),
    ('\u{0e00}', '\u{0e7f}', "th"),
    ('\u{0e80}', '\u{0eff}', "lo"),
    ('\u{0f00}', '\u{0fff}', "bo"),
    ('\u{1000}', '\u{109f}', "my"),
    ('\u{10a0}', '\u{10ff}', "ka"),
    ('\u{1200}', '\u{139f}', "am"),
    ('\u{1780}', '\u{17ff}', "km"),
    ('\u{1800}', '\u{18af}', "mn"),
];

fn script(c: char) -> Script {
    match c {
        '\u{3040}'..='\u{30ff}' | '\u{31f0}'..='\u{31ff}' | '\u{ff66}'..='\u{ff9f}' => Script::Kana,
        '\u{1100}'..='\u{11ff}' | '\u{3130}'..='\u{318f}' | '\u{ac00}'..='\u{d7af}' => {
            Script::Hangul
        }
        '\u{3400}'..='\u{4dbf}' => Script::Han,
        c if is_cjk(c) => Script::Han,
        '\u{3000}'..='\u{303f}' | '\u{ff00}'..='\u{ffef}' => Script::CjkPunct,
        '\u{0400}'..='\u{052f}' => Script::Cyrillic,
        c => match UNSPOKEN_SCRIPTS.iter().find(|(a, b, _)| (*a..=*b).contains(&c)) {
            // Its letters and marks; its digits and signs are neutral.
            Some((_, _, tag)) if !c.is_numeric() && !c.is_whitespace() => Script::Unspoken(tag),
            _ if c.is_alphabetic() => Script::Letter,
            _ => Script::Neutral,
        },
    }
}

/// What a char of a piece is read as, before neutrals join a neighbour.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Label {
    Cjk(Reading),
    Russian,
    Unspoken(String),
    /// Read as the piece's tag says.
    Rest,
}

/// Cuts a piece (its text `text[piece.range]`) into stretches by script.
pub(super) fn stretches(text: &str, piece: &Piece) -> Vec<Stretch> {
    let base = reading(piece.tag.as_deref());
    let body = &text[piece.range.clone()];
    if base == Reading::Unspoken {
        let tag = piece.tag.clone();
        return vec![Stretch { range: piece.range.clone(), reading: Reading::Unspoken, tag }];
    }
    let scripts: Vec<(usize, Script)> = body.char_indices().map(|(i, c)| (i, script(c))).collect();
    let has = |s: Script| scripts.iter().any(|(_, x)| *x == s);
    // Kana make the piece's ideographs Japanese; a Japanese or Korean tag does too.
    let cjk = if base == Reading::Japanese || has(Script::Kana) {
        Some(Reading::Japanese)
    } else if base == Reading::Korean {
        Some(Reading::Korean)
    } else {
        None
    };
    let korean_only = cjk.is_none() && has(Script::Hangul) && !has(Script::Han);
    let mut labels: Vec<Option<Label>> = scripts
        .iter()
        .map(|(_, s)| match s {
            Script::Kana => Some(Label::Cjk(Reading::Japanese)),
            Script::Hangul => Some(Label::Cjk(Reading::Korean)),
            Script::Han | Script::CjkPunct if cjk.is_some() => cjk.map(Label::Cjk),
            Script::CjkPunct if korean_only => None,
            Script::Cyrillic if base == Reading::English => Some(Label::Russian),
            Script::Unspoken(tag) => Some(Label::Unspoken((*tag).to_string())),
            Script::Neutral => None,
            _ => Some(Label::Rest),
        })
        .collect();
    lone_letters_are_signs(&scripts, &mut labels);
    let labels = join_neutrals(labels);
    let mut out: Vec<Stretch> = Vec::new();
    for (k, (i, _)) in scripts.iter().enumerate() {
        let at = piece.range.start + i;
        let end = piece.range.start + scripts.get(k + 1).map_or(body.len(), |(j, _)| *j);
        let (reading, tag) = stretch_reading(&labels[k], base, piece.tag.as_deref());
        match out.last_mut() {
            Some(s) if s.reading == reading && s.tag == tag => s.range.end = end,
            _ => out.push(Stretch { range: at..end, reading, tag }),
        }
    }
    out
}

/// A letter of an unspoken script standing alone (`π`, `α-particles`) is read as a sign.
fn lone_letters_are_signs(scripts: &[(usize, Script)], labels: &mut [Option<Label>]) {
    let mut k = 0;
    while k < scripts.len() {
        let Script::Unspoken(tag) = scripts[k].1 else {
            k += 1;
            continue;
        };
        let n = scripts[k..].iter().take_while(|(_, s)| *s == Script::Unspoken(tag)).count();
        if n == 1 {
            labels[k] = Some(Label::Rest);
        }
        k += n;
    }
}

/// Neutral chars (digits, spaces, signs) join a neighbour: the label on both sides, else the
/// text they lead into when that is read by the piece's tag (`« À demain`), else the one
/// before them.
fn join_neutrals(labels: Vec<Option<Label>>) -> Vec<Label> {
    let mut next: Vec<Option<Label>> = vec![None; labels.len()];
    let mut after = None;
    for k in (0..labels.len()).rev() {
        next[k] = after.clone();
        if labels[k].is_some() {
            after.clone_from(&labels[k]);
        }
    }
    let mut before: Option<Label> = None;
    let mut out = Vec::with_capacity(labels.len());
    for (k, label) in labels.into_iter().enumerate() {
        let l = label.clone().unwrap_or_else(|| match (&before, &next[k]) {
            (Some(b), Some(n)) if b == n => b.clone(),
            (_, Some(Label::Rest)) => Label::Rest,
            (Some(b), _) => b.clone(),
            (None, Some(n)) => n.clone(),
            (None, None) => Label::Rest,
        });
        if label.is_some() {
            before = Some(l.clone());
        }
        out.push(l);
    }
    out
}

/// How a labelled char is read, and the tag it gives its segment.
fn stretch_reading(label: &Label, base: Reading, tag: Option<&str>) -> (Reading, Option<String>) {
    // The piece's own tag where it names this language (`ja-JP`), else the bare one.
    let named = |r: Reading, bare: &str| {
        let t = tag.filter(|t| reading(Some(t)) == r).unwrap_or(bare);
        (r, Some(t.to_string()))
    };
    match label {
        Label::Cjk(r @ Reading::Japanese) => named(*r, "ja"),
        Label::Cjk(r @ Reading::Korean) => named(*r, "ko"),
        Label::Cjk(r) => (*r, tag.map(str::to_string)),
        Label::Russian => (Reading::Spelled(spell::Language::Ru), Some("ru".into())),
        Label::Unspoken(t) => (Reading::Unspoken, Some(t.clone())),
        // Latin text in a Japanese or Korean stretch is English.
        Label::Rest if matches!(base, Reading::Japanese | Reading::Korean) => {
            (Reading::English, None)
        }
        Label::Rest if base == Reading::English => (Reading::English, None),
        Label::Rest => (base, tag.map(str::to_string)),
    }
}

/// The non-English language tags of the stretches whose words fall in `src` (a range of the
/// run's text), in order, joined with `+`.
pub(super) fn segment_language(
    text: &str,
    stretches: &[Stretch],
    src: Range<usize>,
) -> Option<String> {
    let mut tags: Vec<&str> = Vec::new();
    for s in stretches {
        let Some(tag) = s.tag.as_deref() else { continue };
        let overlap = s.range.start.max(src.start)..s.range.end.min(src.end);
        let has_words = !overlap.is_empty()
            && text[overlap]
                .chars()
                .any(|c| c.is_alphanumeric() && (s.reading.is_cjk() || !is_cjk(c)));
        if has_words && !tags.contains(&tag) {
            tags.push(tag);
        }
    }
    (!tags.is_empty()).then(|| tags.join("+"))
}

/// A language's name in English, for messages (`ar` → "Arabic"); the tag where it is not
/// one of the common ones.
#[must_use]
pub fn language_name(tag: &str) -> String {
    let name = match primary_subtag(&tag.to_ascii_lowercase()) {
        "ar" => "Arabic",
        "he" | "iw" => "Hebrew",
        "el" => "Greek",
        "grc" => "Ancient Greek",
        "fa" => "Persian",
        "ur" => "Urdu",
        "hi" => "Hindi",
        "bn" => "Bengali",
        "pa" => "Punjabi",
        "gu" => "Gujarati",
        "ta" => "Tamil",
        "te" => "Telugu",
        "th" => "Thai",
        "hy" => "Armenian",
        "ka" => "Georgian",
        "am" => "Amharic",
        "la" => "Latin",
        "pt" => "Portuguese",
        "nl" => "Dutch",
        "sv" => "Swedish",
        "da" => "Danish",
        "no" | "nb" | "nn" => "Norwegian",
        "pl" => "Polish",
        "uk" => "Ukrainian",
        "tr" => "Turkish",
        "vi" => "Vietnamese",
        _ => return tag.to_string(),
    };
    format!("{name} ({tag})")
}
