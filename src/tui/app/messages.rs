//! What goes in and out of the App: the configuration it opens with, the messages
//! [`super::App::update`] takes and the commands it gives the session.

use std::sync::Arc;

use crossterm::event::{KeyEvent, MouseEvent};

use super::row::{RowInit, TakeEntry};
use crate::audio::player::PlayerStatus;
use crate::review::{CastingOverride, Review};
use crate::tui::action::Action;
pub use crate::tui::popups::audition::AuditionChoice;
use lectern_engine::protocol::{EngineEvent, RenderParams, Request, SegmentId, TakeId};

/// What the workstation was opened with.
#[derive(Debug, Clone, PartialEq)]
pub struct AppConfig {
    /// Manuscript name for the title bar.
    pub manuscript: String,
    pub voice: String,
    pub model: String,
    /// The bundled tiny random-weight model is loaded: say so in the title bar.
    pub tiny_model: bool,
    /// e.g. "cpu", "cuda:0"; replaced by the backend of the latest take.
    pub backend: String,
    /// The project directory, or `None` for a scratch session (`--no-project`).
    pub project: Option<String>,
    /// Play segments in order as soon as they are ready, from the first, on load.
    pub autoplay: bool,
    pub theme: String,
    /// Themes the theme key cycles through.
    pub themes: Vec<String>,
    pub params: RenderParams,
    /// Silence before the manuscript's first segment, 24 kHz samples.
    pub lead_in_samples: usize,
    /// Problems with the configuration files: a banner in the title bar, each line in the log.
    pub banner: Vec<String>,
    /// Lines for the log when the workstation opens.
    pub log: Vec<String>,
}

impl Default for AppConfig {
    fn default() -> Self {
        Self {
            manuscript: "untitled".into(),
            voice: "default".into(),
            model: "CosyVoice3-0.5B".into(),
            tiny_model: false,
            backend: "cpu".into(),
            project: None,
            autoplay: true,
            theme: "dark".into(),
            themes: vec!["dark".into(), "light".into()],
            params: RenderParams::default(),
            lead_in_samples: 0,
            banner: Vec::new(),
            log: Vec::new(),
        }
    }
}

/// One input to [`super::App::update`].
#[derive(Debug, Clone)]
pub enum Msg {
    Key(KeyEvent),
    Mouse(MouseEvent),
    Resize(u16, u16),
    Action(Action),
    Engine(EngineEvent),
    /// A take the session has saved in the project (or restored from its record).
    Saved {
        segment: SegmentId,
        take: Box<TakeEntry>,
        restored: bool,
    },
    /// A stored take's samples, read for playback.
    Loaded {
        segment: SegmentId,
        take: TakeId,
        samples: Arc<Vec<f32>>,
    },
    /// A chapter's ACX status changed (None: not all its takes are chosen).
    ChapterStatus {
        /// 0-based, in reading order.
        chapter: usize,
        status: Option<ChapterAcx>,
    },
    /// The session could not do what a command asked.
    Refused {
        segment: SegmentId,
        why: String,
    },
    /// The seed the session gave a new take of a segment.
    Seeded {
        segment: SegmentId,
        seed: u64,
    },
    Player(PlayerStatus),
    /// What the selected segment offers to audition (answer to [`Command::AuditionChoices`]).
    AuditionChoices {
        segment: SegmentId,
        choices: Vec<AuditionChoice>,
    },
    /// An audition's audio (not a take: never stored).
    Auditioned(Arc<Vec<f32>>),
    /// The session planned the manuscript again (after a segment was recast): its rows, and
    /// the segments it asked the engine to render.
    Replanned {
        rows: Vec<RowInit>,
        queued: Vec<SegmentId>,
    },
    /// The engine's event channel closed.
    EngineGone,
    Log(String),
}

/// The voice picker's first choice: the voice the manuscript and the cast give.
pub const AS_WRITTEN: &str = "as written";

/// The segment id of auditions: no store key is this large, so they never meet a segment.
pub const AUDITION_ID: SegmentId = SegmentId::MAX;

/// What the App asks of the session (and, through it, the engine).
#[derive(Debug, Clone)]
pub enum Command {
    /// The words and matching pronunciation entries of a segment (answered by
    /// [`Msg::AuditionChoices`]).
    AuditionChoices(SegmentId),
    /// Speak a line in the current voice as [`AUDITION_ID`] (answered by
    /// [`Msg::Auditioned`] once the engine has it).
    Audition {
        segment: SegmentId,
        text: String,
    },
    /// Straight to the engine.
    Engine(Request),
    /// A new take with the segment's next seed.
    Reseed(SegmentId),
    /// A new take with the chosen take's seed and the current settings.
    Rerender(SegmentId),
    /// Make a take the segment's chosen take.
    Choose {
        segment: SegmentId,
        take: TakeId,
    },
    SetReview {
        segment: SegmentId,
        review: Review,
    },
    SetNote {
        segment: SegmentId,
        note: String,
    },
    /// The narrator's casting of a segment (its voice and style; empty: as written), kept in
    /// the project; the session makes a new take with it (answered by [`Msg::Replanned`]).
    Recast {
        segment: SegmentId,
        over: CastingOverride,
    },
    /// Read a stored take's samples (answered by [`Msg::Loaded`] or [`Msg::Refused`]).
    Load {
        segment: SegmentId,
        take: TakeId,
    },
}

/// A chapter's ACX check, once all its takes are chosen ([`crate::tui::checks`]).
#[derive(Debug, Clone, PartialEq)]
pub enum ChapterAcx {
    Checking,
    Checked(Box<crate::deliver::check::FileCheck>),
    /// The check itself could not run (a take file unreadable, say).
    Failed(String),
}

impl ChapterAcx {
    /// One line for the segment panel: `ACX ✓ RMS -20.0 dB · peak -4.0 dB · floor -70.0 dB ·
    /// 1:02`, or `ACX ✗` with the failing figures.
    #[must_use]
    pub fn label(&self) -> String {
        match self {
            Self::Checking => "ACX: checking…".into(),
            Self::Failed(why) => format!("ACX: not checked ({why})"),
            Self::Checked(c) if c.passes() => {
                let s = c.duration_s.round() as u64;
                format!(
                    "ACX ✓ RMS {:.1} dB · peak {:.1} dB · floor {:.1} dB · {}:{:02}",
                    c.levels.rms_db,
                    c.levels.peak_db,
                    c.levels.noise_floor_db,
                    s / 60,
                    s % 60
                )
            }
            Self::Checked(c) => {
                let failing: Vec<&str> = c.failures.iter().map(|f| f.detail.as_str()).collect();
                format!("ACX ✗ {}", failing.join(" · "))
            }
        }
    }

    #[must_use]
    pub fn passes(&self) -> Option<bool> {
        match self {
            Self::Checked(c) => Some(c.passes()),
            _ => None,
        }
    }
}
