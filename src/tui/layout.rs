//! Where every panel of the workstation goes, for a terminal size and what the panels want
//! ([`Want`]): [`arrange`] (or [`layout`]) and its [`Areas`]. A leaf of the TUI (ratatui
//! geometry only): the view draws into these areas and the app hit-tests the mouse and sizes
//! its pages against them, so neither calls into the other for it.

use ratatui::layout::{Constraint, Layout, Margin, Rect};

/// Below this the full layout is unreadable and the reduced one is drawn.
pub const FULL_MIN_WIDTH: u16 = 100;
pub const FULL_MIN_HEIGHT: u16 = 28;
/// From this size up to the full layout's, the medium one: the segment list beside the
/// profiler, memory and KV panels in compact form, the transport across the bottom. 80×24, the
/// default size of most terminals, gets it.
pub const MEDIUM_MIN_WIDTH: u16 = 70;
pub const MEDIUM_MIN_HEIGHT: u16 = 20;
/// Below this nothing but a notice is drawn.
pub const MIN_WIDTH: u16 = 30;
pub const MIN_HEIGHT: u16 = 8;

/// Rows the segment panel takes at least in the full layout (its take line, a line of text).
pub const TEXT_MIN_HEIGHT: u16 = 5;
/// Rows the log keeps at least in the full layout, however much the segment panel wants.
pub const LOG_MIN_HEIGHT: u16 = 3;

/// Where every panel goes. Panels absent from a layout have an empty rect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Areas {
    /// The reduced layout for small terminals.
    pub compact: bool,
    /// The medium layout (80×24): compact telemetry panels, no parameters or log; the segment
    /// panel in place of the telemetry while it is toggled on.
    pub medium: bool,
    /// Too small even for that.
    pub too_small: bool,
    pub title: Rect,
    pub list: Rect,
    /// The selected segment's panel.
    pub text: Rect,
    pub profiler: Rect,
    pub memory: Rect,
    pub lanes: Rect,
    pub transport: Rect,
    pub params: Rect,
    pub log: Rect,
    /// The segment panel and the log together (the mouse wheel there scrolls the log).
    pub side: Rect,
    pub hints: Rect,
}

impl Areas {
    /// The segment list inside its border.
    #[must_use]
    pub fn list_inner(&self) -> Rect {
        self.list.inner(Margin::new(1, 1))
    }
    /// Segment rows visible at once.
    #[must_use]
    pub fn list_rows(&self) -> u16 {
        self.list_inner().height
    }
}

/// What the panels would like, beyond the terminal's size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Want {
    /// Lanes in the telemetry: sizes the KV-lanes panel.
    pub lanes: usize,
    /// Rows the segment panel's content takes, borders included (0: its least).
    pub text_rows: u16,
    /// The segment panel is toggled on where the layout has no room for it beside the
    /// telemetry (medium: in the telemetry's place; compact: in the list's).
    pub details: bool,
}

/// Splits the terminal; `lanes` sizes the KV-lanes panel; the segment panel at its least.
#[must_use]
pub fn layout(area: Rect, lanes: usize) -> Areas {
    arrange(area, Want { lanes, ..Want::default() })
}

/// Splits the terminal for what the panels want.
#[must_use]
pub fn arrange(area: Rect, want: Want) -> Areas {
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        return Areas { too_small: true, ..Areas::default() };
    }
    let [title, body, hints] =
        Layout::vertical([Constraint::Length(1), Constraint::Min(1), Constraint::Length(1)])
            .areas(area);
    let full = area.width >= FULL_MIN_WIDTH && area.height >= FULL_MIN_HEIGHT;
    if !full && area.width >= MEDIUM_MIN_WIDTH && area.height >= MEDIUM_MIN_HEIGHT {
        return medium(title, body, hints, want);
    }
    if !full {
        let [top, transport] =
            Layout::vertical([Constraint::Min(3), Constraint::Length(3)]).areas(body);
        let (list, text) =
            if want.details { (Rect::default(), top) } else { (top, Rect::default()) };
        return Areas { compact: true, title, list, text, transport, hints, ..Areas::default() };
    }
    let [list, right] =
        Layout::horizontal([Constraint::Percentage(42), Constraint::Percentage(58)]).areas(body);
    let fixed = Telemetry::for_text(right.height, want);
    let [profiler, mid, bottom, side] = Layout::vertical([
        Constraint::Length(fixed.profiler),
        Constraint::Length(fixed.mid),
        Constraint::Length(TRANSPORT_HEIGHT),
        Constraint::Min(0),
    ])
    .areas(right);
    // The segment panel grows into the log: the log keeps only its least.
    let text_h = want
        .text_rows
        .max(TEXT_MIN_HEIGHT)
        .min(side.height.saturating_sub(LOG_MIN_HEIGHT).max(TEXT_MIN_HEIGHT));
    let [text, log] =
        Layout::vertical([Constraint::Length(text_h), Constraint::Min(0)]).areas(side);
    let [memory, lanes] =
        Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(mid);
    let [transport, params] =
        Layout::horizontal([Constraint::Percentage(60), Constraint::Percentage(40)]).areas(bottom);
    Areas {
        compact: false,
        medium: false,
        too_small: false,
        title,
        list,
        text,
        profiler,
        memory,
        lanes,
        transport,
        params,
        log,
        side,
        hints,
    }
}

/// The transport and parameters row of the full layout.
const TRANSPORT_HEIGHT: u16 = 7;
/// The profiler at its full height, and at its least (its four stages, no spare row).
const PROFILER_HEIGHT: u16 = 8;
const PROFILER_MIN_HEIGHT: u16 = 6;

/// Heights of the telemetry above the segment panel in the full layout's right column.
struct Telemetry {
    profiler: u16,
    /// The memory and KV-lanes row (0: left out).
    mid: u16,
}

impl Telemetry {
    /// The telemetry at full size, unless the segment panel needs more than the log can give:
    /// then the profiler gives up its spare rows, then the memory and lanes row goes, then the
    /// profiler.
    fn for_text(height: u16, want: Want) -> Self {
        let lanes_h = (want.lanes.clamp(1, 8) + 2) as u16;
        let mid = lanes_h.max(6);
        let text = want.text_rows.max(TEXT_MIN_HEIGHT);
        let fits =
            |t: &Self| t.profiler + t.mid + TRANSPORT_HEIGHT + text + LOG_MIN_HEIGHT <= height;
        [
            Self { profiler: PROFILER_HEIGHT, mid },
            Self { profiler: PROFILER_MIN_HEIGHT, mid },
            Self { profiler: PROFILER_MIN_HEIGHT, mid: 0 },
        ]
        .into_iter()
        .find(fits)
        .unwrap_or(Self { profiler: 0, mid: 0 })
    }
}

/// The medium layout: the list beside the telemetry (or the segment panel), the transport
/// across the bottom.
fn medium(title: Rect, body: Rect, hints: Rect, want: Want) -> Areas {
    let [top, transport] =
        Layout::vertical([Constraint::Min(10), Constraint::Length(7)]).areas(body);
    let [list, right] =
        Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(top);
    let base = Areas { medium: true, title, list, transport, hints, ..Areas::default() };
    if want.details {
        return Areas { text: right, ..base };
    }
    let [profiler, memory, lanes] =
        Layout::vertical([Constraint::Length(6), Constraint::Length(4), Constraint::Min(3)])
            .areas(right);
    Areas { profiler, memory, lanes, ..base }
}
