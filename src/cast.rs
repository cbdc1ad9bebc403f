//! The cast: who speaks each segment, and how. `cast.toml` beside the manuscript maps the
//! book's characters to voices (with a default instruction and pace each) and gives voices
//! their defaults; the manuscript's markup (`[voice:…]`, `[as:…]`, `NAME:`, `[style:…]`,
//! `[pace:…]`, read by [`lectern_text`]) chooses per segment. [`Cast::resolve`] turns both into
//! the engine's [`Casting`].
//!
//! ```toml
//! # cast.toml
//! [characters.Anna]
//! voice = "alto"                       # a voice name (or directory)
//! style = "Speak softly, a little out of breath."
//! pace = 1.1
//!
//! [voices.alto]                        # defaults wherever this voice speaks
//! pace = 0.95
//! language = "en"                      # the language of its reference recording
//! cross_lingual = false                # speak every line in cross-lingual mode
//! ```
//!
//! Precedence, first wins (before all of it, the narrator's choice of a segment's voice or
//! instruction in the workstation, kept in the project: [`Cast::resolve_as`]):
//! - voice: the character's (an `[as:NAME]` span or a `NAME:` paragraph), then `[voice:NAME]`,
//!   then the book's voice;
//! - instruction: `[style:…]`, then the character's `style`;
//! - pace: `[pace:…]`, then the character's `pace`, then the voice's, then 1;
//! - mode: instruct when there is an instruction; else cross-lingual when the voice says
//!   `cross_lingual = true`, or names its `language` and the segment's language (from
//!   `[lang:…]` or the book's language) is another; else zero-shot.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use serde::Deserialize;

use crate::review::CastingOverride;
use lectern_engine::protocol::{Casting, Mode};
use lectern_text::manuscript::PACE_RANGE;
use lectern_text::{Segment, Voicing};

/// The cast file's name, beside the manuscript.
pub const CAST_FILE: &str = "cast.toml";

/// A character of the cast.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Character {
    /// The voice that speaks the character (a voice name or directory).
    pub voice: String,
    /// A default instruction (instruct mode), e.g. "Speak softly."
    #[serde(default)]
    pub style: Option<String>,
    #[serde(default)]
    pub pace: Option<f64>,
}

/// A voice's defaults, wherever it speaks.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VoiceDefaults {
    #[serde(default)]
    pub pace: Option<f64>,
    /// The language of the voice's reference recording (BCP 47): a segment in another
    /// language is spoken cross-lingually.
    #[serde(default)]
    pub language: Option<String>,
    /// Every line of this voice in cross-lingual mode.
    #[serde(default)]
    pub cross_lingual: bool,
}

/// `cast.toml` as written.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CastFile {
    #[serde(default)]
    pub characters: BTreeMap<String, Character>,
    #[serde(default)]
    pub voices: BTreeMap<String, VoiceDefaults>,
}

/// The cast of one book: its file (if any) and the book's own voice.
#[derive(Debug, Clone, PartialEq)]
pub struct Cast {
    pub file: CastFile,
    /// Where the file was read from (`None`: no cast file).
    pub path: Option<PathBuf>,
    /// The book's voice, as the narrator named it (`--voice`).
    pub book_voice: String,
    /// Speak the book's voice cross-lingually (`--cross-lingual`).
    pub book_cross_lingual: bool,
}

/// A segment's casting before its voice is loaded: the voice as named in the manuscript or the
/// cast (a name or directory), and the rest of what the engine needs.
#[derive(Debug, Clone, PartialEq)]
pub struct Role {
    pub voice: String,
    pub mode: Mode,
    pub pace: f64,
}

impl Role {
    /// The engine's casting, with the loaded voice's name.
    #[must_use]
    pub fn casting(&self, voice_name: &str) -> Casting {
        Casting { voice: voice_name.to_string(), mode: self.mode.clone(), pace: self.pace }
    }
}

impl Cast {
    /// A cast of the book's voice alone.
    #[must_use]
    pub fn solo(book_voice: &str) -> Self {
        Self {
            file: CastFile::default(),
            path: None,
            book_voice: book_voice.to_string(),
            book_cross_lingual: false,
        }
    }

    /// The cast of the manuscript: its `cast.toml`, where there is one.
    pub fn beside(manuscript: &Path, book_voice: &str) -> anyhow::Result<Self> {
        let path = manuscript.parent().unwrap_or(Path::new(".")).join(CAST_FILE);
        let mut cast = Self::solo(book_voice);
        if path.is_file() {
            cast.file = read_file(&path)?;
            cast.path = Some(path);
        }
        Ok(cast)
    }

    /// The character names that trigger `NAME:` paragraphs and `[as:NAME]` spans.
    #[must_use]
    pub fn character_names(&self) -> Vec<String> {
        self.file.characters.keys().cloned().collect()
    }

    /// Every voice the cast can use, the book's first (names or directories as written).
    #[must_use]
    pub fn voices(&self) -> Vec<String> {
        let mut out = vec![self.book_voice.clone()];
        for c in self.file.characters.values() {
            if !out.contains(&c.voice) {
                out.push(c.voice.clone());
            }
        }
        out
    }

    fn character(&self, name: &str) -> Option<&Character> {
        self.file.characters.get(name).or_else(|| {
            self.file.characters.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, c)| c)
        })
    }

    /// Who speaks `segment` and how; an error names the manuscript line.
    pub fn resolve(&self, segment: &Segment, manuscript: &Path) -> anyhow::Result<Role> {
        self.resolve_as(segment, manuscript, &CastingOverride::default())
    }

    /// [`Self::resolve`] with the narrator's override of the segment, which wins over the
    /// markup and the cast: its voice over the character's, its style over every other.
    pub fn resolve_as(
        &self,
        segment: &Segment,
        manuscript: &Path,
        over: &CastingOverride,
    ) -> anyhow::Result<Role> {
        let at = || format!("{}:{}", manuscript.display(), segment.span.start.line);
        self.resolve_voicing_as(&segment.voicing, segment.language.as_deref(), over)
            .with_context(at)
    }

    /// [`Self::resolve`] of markup and a language.
    pub fn resolve_voicing(&self, v: &Voicing, language: Option<&str>) -> anyhow::Result<Role> {
        self.resolve_voicing_as(v, language, &CastingOverride::default())
    }

    /// [`Self::resolve_as`] of markup and a language.
    pub fn resolve_voicing_as(
        &self,
        v: &Voicing,
        language: Option<&str>,
        over: &CastingOverride,
    ) -> anyhow::Result<Role> {
        let character = match &v.character {
            Some(name) => Some(self.character(name).with_context(|| {
                format!("`{name}` is not a character of the cast ({})", self.file_name())
            })?),
            None => None,
        };
        let voice = over
            .voice
            .clone()
            .or_else(|| character.map(|c| c.voice.clone()))
            .or_else(|| v.voice.clone())
            .unwrap_or_else(|| self.book_voice.clone());
        let defaults = self.file.voices.get(&voice).cloned().unwrap_or_default();
        let instruction = over
            .style
            .clone()
            .or_else(|| v.style.clone())
            .or_else(|| character.and_then(|c| c.style.clone()))
            .filter(|s| !s.trim().is_empty());
        let pace = v
            .pace
            .map(f64::from)
            .or_else(|| character.and_then(|c| c.pace))
            .or(defaults.pace)
            .unwrap_or(1.0);
        check_pace(pace)?;
        let cross_lingual = defaults.cross_lingual
            || (voice == self.book_voice && self.book_cross_lingual)
            || defaults.language.as_deref().is_some_and(|l| other_language(l, language));
        let mode = match instruction {
            Some(i) => Mode::Instruct(i.trim().to_string()),
            None if cross_lingual => Mode::CrossLingual,
            None => Mode::ZeroShot,
        };
        Ok(Role { voice, mode, pace })
    }

    fn file_name(&self) -> String {
        match &self.path {
            Some(p) => p.display().to_string(),
            None => format!("no {CAST_FILE} beside the manuscript"),
        }
    }
}

/// Reads and checks a cast file: every pace in range, no empty voice name.
pub fn read_file(path: &Path) -> anyhow::Result<CastFile> {
    let src =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let file: CastFile =
        toml::from_str(&src).with_context(|| format!("{}: not a cast file", path.display()))?;
    for (name, c) in &file.characters {
        if c.voice.trim().is_empty() {
            bail!("{}: character `{name}` has no voice", path.display());
        }
        if let Some(p) = c.pace {
            check_pace(p).with_context(|| format!("{}: character `{name}`", path.display()))?;
        }
    }
    for (name, v) in &file.voices {
        if let Some(p) = v.pace {
            check_pace(p).with_context(|| format!("{}: voice `{name}`", path.display()))?;
        }
    }
    Ok(file)
}

/// A pace as people write it: at most two decimals, no trailing zeros (`1.2`, not the
/// `1.2000000476837158` a pace read as `f32` becomes in `f64`).
#[must_use]
pub fn pace_label(pace: f64) -> String {
    let s = format!("{pace:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn check_pace(pace: f64) -> anyhow::Result<()> {
    let (slowest, fastest) = (f64::from(*PACE_RANGE.start()), f64::from(*PACE_RANGE.end()));
    if !(slowest..=fastest).contains(&pace) {
        bail!("pace {pace} is out of range: {} to {}", slowest, fastest);
    }
    Ok(())
}

/// Whether a segment in `segment` (a language tag or tags joined by `+`; `None`: English)
/// is in another language than a voice recorded in `voice`.
fn other_language(voice: &str, segment: Option<&str>) -> bool {
    let primary = |t: &str| t.split(['-', '_']).next().unwrap_or(t).to_ascii_lowercase();
    let voice = primary(voice);
    match segment {
        None => voice != "en",
        Some(tags) => tags.split('+').any(|t| primary(t) != voice),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cast(toml_src: &str) -> Cast {
        let mut c = Cast::solo("narrator");
        c.file = toml::from_str(toml_src).unwrap();
        c
    }

    const CAST: &str = r#"
        [characters.Anna]
        voice = "alto"
        style = "Speak softly."
        pace = 1.1

        [characters.Tom]
        voice = "bass"

        [voices.bass]
        pace = 0.9
        language = "en"

        [voices.alto]
        cross_lingual = true
    "#;

    fn voicing(voice: Option<&str>, character: Option<&str>) -> Voicing {
        Voicing {
            voice: voice.map(str::to_string),
            character: character.map(str::to_string),
            ..Voicing::default()
        }
    }

    #[test]
    fn the_book_voice_speaks_unmarked_text() {
        let c = cast(CAST);
        let r = c.resolve_voicing(&Voicing::default(), None).unwrap();
        assert_eq!(r, Role { voice: "narrator".into(), mode: Mode::ZeroShot, pace: 1.0 });
    }

    /// Character over `[voice:]` over the book; markup style/pace over the character's over
    /// the voice's.
    #[test]
    fn precedence_is_markup_then_character_then_voice() {
        let c = cast(CAST);
        let anna = c.resolve_voicing(&voicing(Some("bass"), Some("anna")), None).unwrap();
        assert_eq!(anna.voice, "alto");
        assert_eq!(anna.mode, Mode::Instruct("Speak softly.".into()));
        assert_eq!(anna.pace, 1.1);
        let mut marked = voicing(None, Some("Anna"));
        marked.style = Some("Shout.".into());
        marked.pace = Some(0.8);
        let r = c.resolve_voicing(&marked, None).unwrap();
        assert_eq!((r.mode, r.pace), (Mode::Instruct("Shout.".into()), f64::from(0.8f32)));
        let tom = c.resolve_voicing(&voicing(None, Some("Tom")), None).unwrap();
        assert_eq!((tom.voice.as_str(), tom.mode, tom.pace), ("bass", Mode::ZeroShot, 0.9));
        let switched = c.resolve_voicing(&voicing(Some("bass"), None), None).unwrap();
        assert_eq!((switched.voice.as_str(), switched.pace), ("bass", 0.9));
    }

    #[test]
    fn cross_lingual_by_voice_flag_or_by_language() {
        let c = cast(CAST);
        // alto: always; but an instruction makes it instruct mode.
        let alto = c.resolve_voicing(&voicing(Some("alto"), None), None).unwrap();
        assert_eq!(alto.mode, Mode::CrossLingual);
        // bass records English: a French segment is cross-lingual, an English one is not.
        let bass = voicing(Some("bass"), None);
        assert_eq!(c.resolve_voicing(&bass, Some("fr")).unwrap().mode, Mode::CrossLingual);
        assert_eq!(c.resolve_voicing(&bass, Some("en-GB")).unwrap().mode, Mode::ZeroShot);
        assert_eq!(c.resolve_voicing(&bass, None).unwrap().mode, Mode::ZeroShot);
        let mut book = c.clone();
        book.book_cross_lingual = true;
        let r = book.resolve_voicing(&Voicing::default(), None).unwrap();
        assert_eq!(r.mode, Mode::CrossLingual);
    }

    #[test]
    fn unknown_characters_and_bad_paces_are_errors() {
        let c = cast(CAST);
        let e = c.resolve_voicing(&voicing(None, Some("Zed")), None).unwrap_err();
        assert!(format!("{e:#}").contains("`Zed` is not a character of the cast"), "{e:#}");
        let fast = Voicing { pace: Some(3.0), ..Voicing::default() };
        let e = c.resolve_voicing(&fast, None).unwrap_err();
        assert!(format!("{e:#}").contains("pace 3 is out of range: 0.5 to 2"), "{e:#}");
        assert!(toml::from_str::<CastFile>("[characters.A]\nvoice = \"x\"\ncolour = 1").is_err());
    }

    /// The narrator's override wins: its voice over the character's (the character's style
    /// and pace stay), its style over the markup's.
    #[test]
    fn the_narrators_override_wins() {
        let c = cast(CAST);
        let over = CastingOverride { voice: Some("bass".into()), style: None };
        let r = c.resolve_voicing_as(&voicing(None, Some("Anna")), None, &over).unwrap();
        assert_eq!(r.voice, "bass");
        assert_eq!((r.mode, r.pace), (Mode::Instruct("Speak softly.".into()), 1.1));
        let mut marked = voicing(None, None);
        marked.style = Some("Shout.".into());
        let over = CastingOverride { voice: None, style: Some("Whisper.".into()) };
        let r = c.resolve_voicing_as(&marked, None, &over).unwrap();
        assert_eq!((r.voice.as_str(), r.mode), ("narrator", Mode::Instruct("Whisper.".into())));
    }

    #[test]
    fn the_cast_lists_its_voices_book_first() {
        assert_eq!(cast(CAST).voices(), vec!["narrator", "alto", "bass"]);
        assert_eq!(cast(CAST).character_names(), vec!["Anna", "Tom"]);
    }
}
