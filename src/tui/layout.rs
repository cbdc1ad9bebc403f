//! Where every panel of the workstation goes, for a terminal size: [`layout`] and its
//! [`Areas`]. A leaf of the TUI (ratatui geometry only): the view draws into these areas and
//! the app hit-tests the mouse and sizes its pages against them, so neither calls into the
//! other for it.

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

/// Where every panel goes. Panels absent from a layout have an empty rect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Areas {
    /// The reduced layout for small terminals.
    pub compact: bool,
    /// The medium layout (80×24): compact telemetry panels, no text, parameters or log.
    pub medium: bool,
    /// Too small even for that.
    pub too_small: bool,
    pub title: Rect,
    pub list: Rect,
    pub text: Rect,
    pub profiler: Rect,
    pub memory: Rect,
    pub lanes: Rect,
    pub transport: Rect,
    pub params: Rect,
    pub log: Rect,
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

/// Splits the terminal; `lanes` sizes the KV-lanes panel.
#[must_use]
pub fn layout(area: Rect, lanes: usize) -> Areas {
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        return Areas { too_small: true, ..Areas::default() };
    }
    let [title, body, hints] =
        Layout::vertical([Constraint::Length(1), Constraint::Min(1), Constraint::Length(1)])
            .areas(area);
    let full = area.width >= FULL_MIN_WIDTH && area.height >= FULL_MIN_HEIGHT;
    if !full && area.width >= MEDIUM_MIN_WIDTH && area.height >= MEDIUM_MIN_HEIGHT {
        let [top, transport] =
            Layout::vertical([Constraint::Min(10), Constraint::Length(7)]).areas(body);
        let [list, right] =
            Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(top);
        let [profiler, memory, lanes] =
            Layout::vertical([Constraint::Length(6), Constraint::Length(4), Constraint::Min(3)])
                .areas(right);
        return Areas {
            medium: true,
            title,
            list,
            profiler,
            memory,
            lanes,
            transport,
            hints,
            ..Areas::default()
        };
    }
    if !full {
        let [list, transport] =
            Layout::vertical([Constraint::Min(3), Constraint::Length(3)]).areas(body);
        return Areas { compact: true, title, list, transport, hints, ..Areas::default() };
    }
    let [left, right] =
        Layout::horizontal([Constraint::Percentage(42), Constraint::Percentage(58)]).areas(body);
    let [list, text] = Layout::vertical([Constraint::Min(5), Constraint::Length(7)]).areas(left);
    let lanes_h = (lanes.clamp(1, 8) + 2) as u16;
    let [profiler, mid, bottom, log] = Layout::vertical([
        Constraint::Length(8),
        Constraint::Length(lanes_h.max(6)),
        Constraint::Length(7),
        Constraint::Min(3),
    ])
    .areas(right);
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
        hints,
    }
}
