//! Drawing: pure functions of `(&App, &Theme)` into a ratatui `Frame`, one module per panel.
//! Where each panel goes is [`super::layout`]'s, shared with the app (mouse hit-testing, page
//! size), so both agree on it; the view only reads the app's state.

pub mod help;
pub mod hints;
pub mod log;
pub mod segments;
pub mod telemetry;
pub mod title;
pub mod transport;
pub mod voices;
pub mod waveform;

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::Span;
use ratatui::widgets::{Block, Borders, Paragraph};

use super::app::{App, Mode};
/// The layout the view draws into (defined in the leaf [`super::layout`]), named here too for
/// callers that draw.
use super::layout::{Areas, MIN_HEIGHT, MIN_WIDTH, Want, arrange};
use super::theme::Theme;
use lectern_engine::protocol::SegmentState;

/// Draws the whole UI.
pub fn draw(app: &App, theme: &Theme, frame: &mut Frame) {
    let area = frame.area();
    // The theme's text colours under every cell: a theme with a background of its own (light)
    // then never shows the terminal's.
    frame.render_widget(Block::default().style(theme.text), area);
    let a = areas(app, theme, area);
    if a.too_small {
        let msg = format!(
            "terminal too small ({}x{}); need {MIN_WIDTH}x{MIN_HEIGHT}",
            area.width, area.height
        );
        frame.render_widget(
            Paragraph::new(msg).style(theme.notice).wrap(ratatui::widgets::Wrap { trim: true }),
            area,
        );
        return;
    }
    title::draw(app, theme, frame, a.title);
    if !a.list.is_empty() {
        segments::draw_list(app, theme, frame, a.list);
    }
    if !a.text.is_empty() {
        segments::draw_text(app, theme, frame, a.text);
    }
    if a.compact {
        transport::draw_compact(app, theme, frame, a.transport);
    } else {
        transport::draw_transport(app, theme, frame, a.transport);
    }
    if !a.profiler.is_empty() {
        telemetry::draw_profiler(app, theme, frame, a.profiler);
    }
    // The memory and lanes panels give way first to a tall segment panel.
    if !a.memory.is_empty() {
        telemetry::draw_memory(app, theme, frame, a.memory);
        telemetry::draw_lanes(app, theme, frame, a.lanes);
    }
    if !a.medium && !a.compact {
        transport::draw_params(app, theme, frame, a.params);
        log::draw(app, theme, frame, a.log);
    }
    draw_hints(app, theme, frame, a.hints, a.medium || a.compact);
    match app.mode {
        Mode::Help => help::draw(app, theme, frame, area),
        Mode::Voices => voices::draw(app, theme, frame, area),
        _ => {}
    }
}

/// The layout for this frame: the segment panel as tall as its content at the width the
/// layout gives it.
fn areas(app: &App, theme: &Theme, area: Rect) -> Areas {
    let want = Want { lanes: app.lane_count(), text_rows: 0, details: app.show_details };
    let first = arrange(area, want);
    if first.text.is_empty() || first.medium || first.compact {
        return first;
    }
    let text_rows = segments::text_rows(app, theme, first.text.width);
    arrange(area, Want { text_rows, ..want })
}

/// A bordered panel with a styled title.
#[must_use]
pub fn panel<'a>(title: &str, theme: &Theme) -> Block<'a> {
    Block::default()
        .borders(Borders::ALL)
        .border_style(theme.border)
        .title(Span::styled(format!(" {title} "), theme.panel_title))
}

/// The hint bar: the open prompt or picker, else the keys (`small`: the segment panel's toggle
/// too, where the layout hides the panel).
fn draw_hints(app: &App, theme: &Theme, frame: &mut Frame, area: Rect, small: bool) {
    let width = usize::from(area.width);
    let line = match &app.mode {
        Mode::Style(p) => p.line(theme, width),
        Mode::Voice(p) => p.line(&app.voice_choices(), theme),
        Mode::Note(p) => p.line(theme, width),
        Mode::Audition(p) => p.line(theme),
        Mode::Search(p) => p.line(app.search_matches().len(), theme, width),
        Mode::Normal | Mode::Help | Mode::Voices => {
            hints::line(&app.keymap, app.player.notice.as_deref(), theme, width, small)
        }
    };
    frame.render_widget(Paragraph::new(line), area);
}

/// Short display name and role of a segment state.
#[must_use]
pub fn state_label(state: &SegmentState, theme: &Theme) -> (&'static str, &'static str, Style) {
    match state {
        SegmentState::Queued => ("○", "queued", theme.state_queued),
        SegmentState::Lm => ("◔", "LM", theme.state_lm),
        SegmentState::Flow => ("◑", "flow", theme.state_flow),
        SegmentState::Vocoder => ("◕", "vocoder", theme.state_vocoder),
        SegmentState::Ready => ("●", "ready", theme.state_ready),
        SegmentState::Cancelled => ("–", "cancel", theme.state_cancelled),
        SegmentState::Failed(_) => ("✗", "failed", theme.state_failed),
    }
}

/// `mm:ss.s` of a 24 kHz sample count.
#[must_use]
pub fn clock(samples: u64) -> String {
    let tenths = samples * 10 / u64::from(crate::audio::SAMPLE_RATE_HZ);
    format!("{:02}:{:02}.{}", tenths / 600, (tenths / 10) % 60, tenths % 10)
}

/// Bytes in binary units with three significant figures.
#[must_use]
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else if v >= 100.0 {
        format!("{v:.0} {}", UNITS[u])
    } else if v >= 10.0 {
        format!("{v:.1} {}", UNITS[u])
    } else {
        format!("{v:.2} {}", UNITS[u])
    }
}
