//! What a key can do. Flat and serde-named (snake_case) so keymap files can name actions.

use serde::{Deserialize, Serialize};

/// A user intent, independent of the key that triggered it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Pause or resume; from idle, play from the selected segment.
    TogglePlay,
    MoveUp,
    MoveDown,
    PageUp,
    PageDown,
    Top,
    Bottom,
    /// Play from the selected segment on, in order, as segments become ready.
    PlayFromSegment,
    /// Play the selected segment's current take again.
    Replay,
    /// Render a new take of the selected segment with a fresh seed.
    Reseed,
    /// Show (and play) the selected segment's next take.
    CycleTake,
    /// Render the selected segment again with its chosen take's seed and the current settings.
    Rerender,
    /// Make the auditioned take the chosen one (what render and export use).
    ChooseTake,
    /// Approve the selected segment (locks its chosen take); again to un-approve.
    ToggleApproved,
    /// Mark the selected segment as needing a pickup; again to clear.
    TogglePickup,
    /// Write a note on the selected segment.
    EditNote,
    /// List only the segments that need work (pickups, flagged, failed, without a take).
    TogglePickups,
    NfeDown,
    NfeUp,
    GroupDown,
    GroupUp,
    LanesDown,
    LanesUp,
    /// Stop updating the telemetry panels (to read them); again to resume.
    ToggleFreeze,
    /// Pick a word of the selected segment (or its pronunciations.txt entry) and hear it
    /// in the current voice; not kept as a take.
    Audition,
    /// Pick the voice of the selected segment from the session's voices (a new take).
    PickVoice,
    /// Type the instruction (style) of the selected segment (a new take).
    EditStyle,
    /// Show the cast: the book's voice, the characters, each voice's defaults and segments.
    ToggleVoices,
    /// Show the selected segment's panel where the terminal is too small to show it beside
    /// the charts (in their place, or the list's); again to hide it.
    ToggleDetails,
    /// Start typing a search over segment texts.
    Search,
    /// Jump to the next search match.
    SearchNext,
    VolumeDown,
    VolumeUp,
    CycleTheme,
    ToggleHelp,
    ScrollLogUp,
    ScrollLogDown,
    Quit,
}

impl Action {
    /// Every action, in help order.
    pub const ALL: [Action; 38] = [
        Action::TogglePlay,
        Action::PlayFromSegment,
        Action::Replay,
        Action::MoveDown,
        Action::MoveUp,
        Action::PageDown,
        Action::PageUp,
        Action::Top,
        Action::Bottom,
        Action::Reseed,
        Action::CycleTake,
        Action::ChooseTake,
        Action::ToggleApproved,
        Action::TogglePickup,
        Action::EditNote,
        Action::Audition,
        Action::PickVoice,
        Action::EditStyle,
        Action::ToggleVoices,
        Action::ToggleDetails,
        Action::TogglePickups,
        Action::Rerender,
        Action::NfeDown,
        Action::NfeUp,
        Action::GroupDown,
        Action::GroupUp,
        Action::LanesDown,
        Action::LanesUp,
        Action::VolumeDown,
        Action::VolumeUp,
        Action::ToggleFreeze,
        Action::Search,
        Action::SearchNext,
        Action::ScrollLogUp,
        Action::ScrollLogDown,
        Action::CycleTheme,
        Action::ToggleHelp,
        Action::Quit,
    ];

    /// One-line description for the help overlay.
    #[must_use]
    pub fn describe(self) -> &'static str {
        match self {
            Action::TogglePlay => "play / pause",
            Action::MoveUp => "previous segment",
            Action::MoveDown => "next segment",
            Action::PageUp => "page up",
            Action::PageDown => "page down",
            Action::Top => "first segment",
            Action::Bottom => "last segment",
            Action::PlayFromSegment => "play from segment",
            Action::Replay => "replay segment",
            Action::Reseed => "re-seed (new take)",
            Action::CycleTake => "audition next take",
            Action::Rerender => "re-render (current settings)",
            Action::ChooseTake => "choose this take",
            Action::ToggleApproved => "approve / un-approve",
            Action::TogglePickup => "needs pickup / clear",
            Action::EditNote => "note",
            Action::Audition => "hear a word / entry",
            Action::PickVoice => "pick voice; 1st resets",
            Action::EditStyle => "style; empty resets",
            Action::ToggleVoices => "voices and cast",
            Action::ToggleDetails => "segment panel (small)",
            Action::TogglePickups => "pickups view",
            Action::NfeDown => "NFE -1",
            Action::NfeUp => "NFE +1",
            Action::GroupDown => "group target -",
            Action::GroupUp => "group target +",
            Action::LanesDown => "lanes -1",
            Action::LanesUp => "lanes +1",
            Action::ToggleFreeze => "freeze panels",
            Action::Search => "search text",
            Action::SearchNext => "next match",
            Action::VolumeDown => "volume -",
            Action::VolumeUp => "volume +",
            Action::CycleTheme => "next theme",
            Action::ToggleHelp => "this help",
            Action::ScrollLogUp => "scroll log up",
            Action::ScrollLogDown => "scroll log down",
            Action::Quit => "quit",
        }
    }
}
