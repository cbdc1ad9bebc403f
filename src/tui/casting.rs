//! Who speaks each segment, as the workstation shows it: the compact tag of the segment list,
//! the detail panel's casting line, and the cast the voices panel lists.

use crate::review::CastingOverride;
use crate::session::{PlannedSegment, Session};
use lectern_engine::protocol::{Casting, Mode};

/// A segment's casting, as the session planned it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RowCasting {
    /// Voice (manifest name), mode and pace.
    pub casting: Casting,
    /// The cast character speaking it, if any.
    pub character: Option<String>,
    /// The narrator's choice made in the workstation (empty: as the manuscript and cast give
    /// it).
    pub recast: CastingOverride,
}

impl RowCasting {
    #[must_use]
    pub fn of(planned: &PlannedSegment) -> Self {
        Self {
            casting: planned.casting.clone(),
            character: planned.character.clone(),
            recast: planned.recast.clone(),
        }
    }

    /// The list's tag: who speaks, when it is not `book_voice` plain (zero-shot at pace 1):
    /// the character (else the voice; the voice when the narrator chose one here), `style` in
    /// instruct mode, `xl` cross-lingual, `×0.9` at another pace, and `✎` when the narrator
    /// chose it here. `None` for the book's voice.
    #[must_use]
    pub fn tag(&self, book_voice: &str) -> Option<String> {
        let c = &self.casting;
        let mut parts: Vec<String> = Vec::new();
        match &self.character {
            Some(ch) if self.recast.voice.is_none() => parts.push(ch.to_lowercase()),
            _ if !c.voice.is_empty() && (c.voice != book_voice || self.character.is_some()) => {
                parts.push(c.voice.clone());
            }
            _ => {}
        }
        match c.mode {
            Mode::Instruct(_) => parts.push("style".into()),
            Mode::CrossLingual => parts.push("xl".into()),
            Mode::ZeroShot => {}
        }
        let mut tag = parts.join("·");
        if (c.pace - 1.0).abs() > 1e-6 {
            tag.push_str(&format!("×{}", pace_label(c.pace)));
        }
        if !self.recast.is_empty() {
            tag.push('✎');
        }
        (!tag.is_empty()).then_some(tag)
    }

    /// The detail panel's line: `voice alto · character Anna · instruct “Speak softly.” ·
    /// pace 1.1`, and whether the narrator chose it here.
    #[must_use]
    pub fn detail(&self, book_voice: &str) -> String {
        let c = &self.casting;
        let voice = if c.voice.is_empty() { book_voice } else { c.voice.as_str() };
        let mut parts = vec![format!("voice {voice}")];
        if let Some(ch) = &self.character {
            parts.push(format!("character {ch}"));
        }
        parts.push(match &c.mode {
            Mode::ZeroShot => "zero-shot".into(),
            Mode::CrossLingual => "cross-lingual".into(),
            Mode::Instruct(i) => format!("instruct “{i}”"),
        });
        parts.push(format!("pace {}", pace_label(c.pace)));
        let mut chosen = Vec::new();
        if self.recast.voice.is_some() {
            chosen.push("voice");
        }
        if self.recast.style.is_some() {
            chosen.push("style");
        }
        if !chosen.is_empty() {
            parts.push(format!("✎ {} chosen here", chosen.join(" and ")));
        }
        parts.join(" · ")
    }

    /// The voice that speaks it (`book_voice` when the casting names none).
    #[must_use]
    pub fn voice<'a>(&'a self, book_voice: &'a str) -> &'a str {
        if self.casting.voice.is_empty() { book_voice } else { &self.casting.voice }
    }
}

/// `1`, `0.9`, `1.15`: a pace as the narrator writes it (markup paces are `f32`, so two
/// decimals, trailing zeros dropped).
#[must_use]
pub fn pace_label(pace: f64) -> String {
    let s = format!("{pace:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A voice of the session with its defaults from `cast.toml`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct VoiceEntry {
    /// Its manifest name (what the engine keys it by, and what a choice stores).
    pub name: String,
    /// As the cast or the manuscript wrote it, where that differs (a directory).
    pub written: Option<String>,
    pub pace: Option<f64>,
    pub language: Option<String>,
    pub cross_lingual: bool,
}

/// A character of the cast.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CharacterEntry {
    pub name: String,
    /// Its voice as `cast.toml` names it.
    pub voice: String,
    pub style: Option<String>,
    pub pace: Option<f64>,
}

/// The cast as the voices panel lists it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CastView {
    /// The session's voices, the book's first.
    pub voices: Vec<VoiceEntry>,
    pub characters: Vec<CharacterEntry>,
    /// Where `cast.toml` was read from (`None`: there is none).
    pub file: Option<String>,
}

impl CastView {
    /// The cast of a session: its voices (the book's first) and `cast.toml`'s characters.
    #[must_use]
    pub fn of(session: &Session) -> Self {
        let cast = session.cast();
        let voices = session
            .written_voices()
            .into_iter()
            .map(|(written, v)| {
                let name = v.manifest.name.clone();
                // `cast.toml` gives a voice's defaults by the name it writes for it.
                let defaults = cast.file.voices.get(written).cloned().unwrap_or_default();
                let written = (written != name).then(|| written.to_string());
                VoiceEntry {
                    name,
                    written,
                    pace: defaults.pace,
                    language: defaults.language,
                    cross_lingual: defaults.cross_lingual,
                }
            })
            .collect();
        let characters = cast
            .file
            .characters
            .iter()
            .map(|(name, c)| CharacterEntry {
                name: name.clone(),
                voice: c.voice.clone(),
                style: c.style.clone(),
                pace: c.pace,
            })
            .collect();
        Self { voices, characters, file: cast.path.as_ref().map(|p| p.display().to_string()) }
    }

    /// The book's voice (the first), if the view has any.
    #[must_use]
    pub fn book_voice(&self) -> Option<&str> {
        self.voices.first().map(|v| v.name.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(voice: &str, character: Option<&str>, mode: Mode, pace: f64) -> RowCasting {
        RowCasting {
            casting: Casting { voice: voice.into(), mode, pace },
            character: character.map(str::to_string),
            recast: CastingOverride::default(),
        }
    }

    #[test]
    fn the_tag_says_who_speaks_when_it_is_not_the_book_voice_plain() {
        assert_eq!(row("narrator", None, Mode::ZeroShot, 1.0).tag("narrator"), None);
        assert_eq!(row("", None, Mode::ZeroShot, 1.0).tag("narrator"), None);
        let anna = row("alto", Some("Anna"), Mode::Instruct("Soft.".into()), 1.1);
        assert_eq!(anna.tag("narrator").as_deref(), Some("anna·style×1.1"));
        assert_eq!(row("alto", None, Mode::ZeroShot, 1.0).tag("narrator").as_deref(), Some("alto"));
        let slow = row("narrator", None, Mode::ZeroShot, f64::from(0.9f32));
        assert_eq!(slow.tag("narrator").as_deref(), Some("×0.9"));
        let xl = row("narrator", None, Mode::CrossLingual, 1.0);
        assert_eq!(xl.tag("narrator").as_deref(), Some("xl"));
        let mut chosen = row("alto", None, Mode::ZeroShot, 1.0);
        chosen.recast.voice = Some("alto".into());
        assert_eq!(chosen.tag("narrator").as_deref(), Some("alto✎"));
        let mut anna_as_narrator = anna.clone();
        anna_as_narrator.casting.voice = "narrator".into();
        anna_as_narrator.recast.voice = Some("narrator".into());
        assert_eq!(anna_as_narrator.tag("narrator").as_deref(), Some("narrator·style×1.1✎"));
        assert!(
            chosen.detail("narrator").ends_with("✎ voice chosen here"),
            "{}",
            chosen.detail("narrator")
        );
    }
}
