//! What a delivery is asked for: the format, the book's metadata and where each value comes
//! from, the room tone, the retail sample, the mastering targets and the store's rules.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::DEFAULT_ROOM_TONE_DB;
use super::check::{self, acx};
use super::mastering::MasteringTargets;
pub use crate::audio::tags::Publication;

/// Container of the delivery files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DeliveryFormat {
    #[default]
    Mp3,
    M4b,
}

/// The book's metadata for tags and credits.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct BookMeta {
    pub title: String,
    pub author: String,
    pub narrator: String,
    /// Cover image (JPEG or PNG): the M4B's cover art and each MP3's front cover (ID3 APIC).
    pub cover: Option<PathBuf>,
    /// Publisher, rights, ISBN, description, date and language.
    pub publication: Publication,
    /// That the speech is synthetic, by which voices: every format's tags carry it. Its voices
    /// are filled from the takes by [`super::export`] when the caller leaves them empty.
    pub disclosure: crate::audio::tags::Disclosure,
}

/// Book metadata given on the command line (each one wins over every other source).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MetaFlags {
    pub title: Option<String>,
    pub author: Option<String>,
    pub narrator: Option<String>,
    pub cover: Option<PathBuf>,
    pub publisher: Option<String>,
    pub rights: Option<String>,
    pub isbn: Option<String>,
    pub description: Option<String>,
    pub date: Option<String>,
}

impl BookMeta {
    /// Each field from the first source that gives it: the flags, then the manuscript as the
    /// project recorded it (EPUB metadata, Markdown front matter; its cover copied into the
    /// project directory `dir`), then the configuration's `[book]`; the title falls back to
    /// `fallback_title` (the manuscript's name), author and narrator to nothing.
    #[must_use]
    pub fn resolve(
        flags: &MetaFlags,
        book: &crate::store::BookRecord,
        dir: &Path,
        config: &crate::config::BookDefaults,
        fallback_title: &str,
    ) -> Self {
        let first = |sources: [Option<&String>; 3]| {
            sources.into_iter().flatten().find(|s| !s.trim().is_empty()).cloned()
        };
        let info = &book.info;
        Self {
            title: first([flags.title.as_ref(), info.title.as_ref(), None])
                .unwrap_or_else(|| fallback_title.to_string()),
            author: first([flags.author.as_ref(), info.author.as_ref(), config.author.as_ref()])
                .unwrap_or_default(),
            narrator: first([
                flags.narrator.as_ref(),
                info.narrator.as_ref(),
                config.narrator.as_ref(),
            ])
            .unwrap_or_default(),
            cover: flags.cover.clone().or_else(|| book.cover_file.as_ref().map(|f| dir.join(f))),
            publication: Publication::resolve(flags, info, config),
            disclosure: crate::audio::tags::Disclosure::default(),
        }
    }
}

impl BookMeta {
    /// The text every format's tags carry (the master's too).
    #[must_use]
    pub fn fields(&self) -> crate::audio::tags::BookFields {
        crate::audio::tags::BookFields {
            title: self.title.clone(),
            author: self.author.clone(),
            narrator: self.narrator.clone(),
            publication: self.publication.clone(),
        }
    }
}

impl Publication {
    /// Each field from the flags, else from the manuscript (EPUB metadata, front matter), else
    /// (publisher, rights) from the configuration's `[book]`.
    #[must_use]
    pub fn resolve(
        flags: &MetaFlags,
        info: &lectern_text::BookInfo,
        config: &crate::config::BookDefaults,
    ) -> Self {
        let first = |flag: &Option<String>, book: &Option<String>, config: &Option<String>| {
            [flag, book, config]
                .into_iter()
                .flatten()
                .map(|s| s.trim())
                .find(|s| !s.is_empty())
                .unwrap_or_default()
                .to_string()
        };
        Self {
            publisher: first(&flags.publisher, &info.publisher, &config.publisher),
            rights: first(&flags.rights, &info.rights, &config.rights),
            isbn: first(&flags.isbn, &info.isbn, &None),
            description: first(&flags.description, &info.description, &None),
            date: first(&flags.date, &info.date, &None),
            language: first(&None, &info.language, &None),
        }
    }
}

/// Where the room tone comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum RoomToneSource {
    /// Seeded noise at this RMS level, dBFS (−90 to −60 exclusive).
    Noise { level_db: f64 },
    /// The narrator's room-tone recording (WAV, any rate, mono or stereo).
    Recording(PathBuf),
}

impl Default for RoomToneSource {
    fn default() -> Self {
        Self::Noise { level_db: DEFAULT_ROOM_TONE_DB }
    }
}

#[derive(Debug, Clone)]
pub struct DeliveryOptions {
    /// Output directory.
    pub out_dir: PathBuf,
    pub format: DeliveryFormat,
    /// One file per chapter (always for ACX).
    pub split_chapters: bool,
    pub meta: BookMeta,
    pub room_tone: RoomToneSource,
    /// Recordings (WAV) of the opening and closing credits, each delivered as its own file.
    pub opening_credits: Option<PathBuf>,
    pub closing_credits: Option<PathBuf>,
    /// The credits' text when Lectern spoke them (for [`super::Heard::Credits`]); `None` for a
    /// narrator's recording.
    pub opening_credits_text: Option<String>,
    pub closing_credits_text: Option<String>,
    /// What mastering aims at and what the files must meet (ACX's by default).
    pub targets: MasteringTargets,
    /// Write `sample.mp3`: whole segments from a chosen start, at most 5 minutes.
    pub sample: Option<SampleSpan>,
    /// Longest file, seconds, head and tail included (ACX: 120 minutes).
    pub max_file_s: f64,
    /// Fail when a file breaks one of [`Self::rules`] after mastering (a preset's export).
    pub enforce_acx: bool,
    /// What the written files are checked against (ACX's by default; a preset's).
    pub rules: check::Rules,
    pub allow_stale: bool,
}

impl Default for DeliveryOptions {
    fn default() -> Self {
        Self {
            out_dir: PathBuf::from("."),
            format: DeliveryFormat::Mp3,
            split_chapters: true,
            meta: BookMeta::default(),
            room_tone: RoomToneSource::default(),
            opening_credits: None,
            closing_credits: None,
            opening_credits_text: None,
            closing_credits_text: None,
            targets: MasteringTargets::acx(),
            sample: None,
            max_file_s: acx::MAX_DURATION_S,
            enforce_acx: true,
            rules: check::Rules::acx(),
            allow_stale: false,
        }
    }
}

/// Where a retail sample starts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SampleStart {
    /// Segment `segment` of chapter `chapter`, both 1-based in reading order (credits not
    /// counted).
    Segment { chapter: u32, segment: u32 },
    /// The segment playing at this time of the 24 kHz master (the next one in a pause).
    Time { seconds: f64 },
}

/// A retail sample: whole segments from `start`, in a file of at most `length_s` seconds
/// (head and tail room tone included; ACX: 5 minutes at most).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SampleSpan {
    pub start: SampleStart,
    pub length_s: f64,
}

impl SampleSpan {
    /// The start of chapter `chapter` (1-based), as long as ACX allows.
    #[must_use]
    pub fn chapter(chapter: u32) -> Self {
        Self { start: SampleStart::Segment { chapter, segment: 1 }, length_s: acx::SAMPLE_MAX_S }
    }
}
