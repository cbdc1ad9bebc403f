//! What the narrator reviews and the project keeps of it: a segment's review state
//! ([`Review`]) and casting override ([`CastingOverride`]), its store key ([`SegmentKey`]) and its
//! stored takes ([`TakeInfo`], [`TakeStatus`]). A leaf of plain values: the store persists them,
//! the session and the workstation read and change them, and this module uses none of those
//! back (only the engine's take record and the take's quality figures), so the TUI takes what it
//! shows from here, never from the store.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::quality::TakeFigures;
use lectern_engine::protocol::{TakeId, TakeRecord};

/// Where the narrator is with a segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Review {
    #[default]
    Unheard,
    Heard,
    /// Approved: the chosen take is locked (never replaced automatically, not re-chosen).
    Approved,
    /// Needs a pickup: listed in the pickups view until it is approved.
    Pickup,
}

impl Review {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Unheard => "unheard",
            Self::Heard => "heard",
            Self::Approved => "approved",
            Self::Pickup => "pickup",
        }
    }

    /// The stored text of an approved segment whose text was edited since (the store's sync
    /// moves its work to the text that replaced it): it reads as [`Self::Pickup`], so it is
    /// listed for listening until approved again, and the session tells it apart
    /// (`Session::edited_since_approval`).
    pub const EDITED_SINCE_APPROVAL: &'static str = "edited";

    /// Unknown text reads as unheard (a newer Lectern's state is never taken for approval).
    pub fn parse(text: &str) -> Self {
        match text {
            "heard" => Self::Heard,
            "approved" => Self::Approved,
            "pickup" | Self::EDITED_SINCE_APPROVAL => Self::Pickup,
            _ => Self::Unheard,
        }
    }
}

/// The store's stable key of a segment: stable while its text (and its occurrence in the
/// manuscript) is unchanged ([`crate::store`]'s docs).
pub type SegmentKey = i64;

/// The narrator's casting of one segment, chosen in the workstation: it wins over the
/// manuscript's markup and the cast. `None`: that part as the manuscript and cast give it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CastingOverride {
    /// A voice of the session, by its manifest name.
    pub voice: Option<String>,
    /// An instruction (instruct mode), e.g. "Whisper.".
    pub style: Option<String>,
}

impl CastingOverride {
    /// Overrides nothing.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.voice.is_none() && self.style.is_none()
    }
}

/// Whether a take's file was found intact at the last check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TakeStatus {
    Ok,
    /// The row is kept (its record can regenerate the audio) but the file is gone or damaged.
    Missing,
}

/// A stored take: its record and where its audio is.
#[derive(Debug, Clone, PartialEq)]
pub struct TakeInfo {
    pub id: TakeId,
    /// The engine's run-local id at save time.
    pub engine_take_id: u64,
    pub record: TakeRecord,
    /// SHA-256 of the samples as little-endian f32 bytes, hex.
    pub audio_hash: String,
    /// Absolute path of the WAV file.
    pub wav_path: PathBuf,
    pub num_samples: u64,
    pub status: TakeStatus,
    /// Content hash of the segment the take was rendered for.
    pub segment_hash: u64,
    /// Key of the take's content (empty for takes saved before keys existed).
    pub content_key: String,
    /// The take's own quality figures (None: not measured yet, e.g. saved by an older Lectern).
    pub figures: Option<TakeFigures>,
}
