//! Drawing: pure functions of `(&App, &Theme)` into a ratatui `Frame`, one module per panel.
//! Where each panel goes is [`super::layout`]'s, shared with the app (mouse hit-testing, page
//! size), so both agree on it; the view only reads the app's state.

pub mod help;
pub mod log;
pub mod segments;
pub mod telemetry;
pub mod transport;
pub mod voices;

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

use super::app::{App, Mode, TINY_MODEL_NOTICE};
/// The layout the view draws into (defined in the leaf [`super::layout`]), named here too for
/// callers that draw.
use super::layout::{MIN_HEIGHT, MIN_WIDTH, layout};
use super::theme::Theme;
use lectern_engine::protocol::SegmentState;

/// Draws the whole UI.
pub fn draw(app: &App, theme: &Theme, frame: &mut Frame) {
    let area = frame.area();
    // The theme's text colours under every cell: a theme with a background of its own (light)
    // then never shows the terminal's.
    frame.render_widget(Block::default().style(theme.text), area);
    let a = layout(area, app.lane_count());
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
    draw_title(app, theme, frame, a.title);
    segments::draw_list(app, theme, frame, a.list);
    if a.compact {
        transport::draw_compact(app, theme, frame, a.transport);
    } else if a.medium {
        telemetry::draw_profiler(app, theme, frame, a.profiler);
        telemetry::draw_memory(app, theme, frame, a.memory);
        telemetry::draw_lanes(app, theme, frame, a.lanes);
        transport::draw_transport(app, theme, frame, a.transport);
    } else {
        segments::draw_text(app, theme, frame, a.text);
        telemetry::draw_profiler(app, theme, frame, a.profiler);
        telemetry::draw_memory(app, theme, frame, a.memory);
        telemetry::draw_lanes(app, theme, frame, a.lanes);
        transport::draw_transport(app, theme, frame, a.transport);
        transport::draw_params(app, theme, frame, a.params);
        log::draw(app, theme, frame, a.log);
    }
    draw_hints(app, theme, frame, a.hints);
    if app.mode == Mode::Help {
        help::draw(app, theme, frame, area);
    }
    if app.mode == Mode::Voices {
        voices::draw(app, theme, frame, area);
    }
}

/// A bordered panel with a styled title.
#[must_use]
pub fn panel<'a>(title: &'a str, theme: &Theme) -> Block<'a> {
    Block::default()
        .borders(Borders::ALL)
        .border_style(theme.border)
        .title(Span::styled(format!(" {title} "), theme.panel_title))
}

fn draw_title(app: &App, theme: &Theme, frame: &mut Frame, area: Rect) {
    let c = &app.config;
    let mut spans = vec![Span::styled(
        format!(" Lectern · {} · voice {} · {} ", c.manuscript, c.voice, c.model),
        theme.title,
    )];
    // The tiny-model notice comes first after the names, so a narrow terminal cuts the
    // engine state rather than the warning.
    if !c.banner.is_empty() {
        let n = c.banner.len();
        spans.push(Span::styled(
            format!(" config: {n} problem(s), defaults used — see log "),
            theme.notice,
        ));
    }
    if c.tiny_model {
        spans.push(Span::styled(format!(" {TINY_MODEL_NOTICE} "), theme.title_notice));
    }
    if app.frozen.is_some() {
        spans.push(Span::styled(" FROZEN ", theme.notice));
    }
    spans.push(Span::styled(format!(" {} ", app.progress_line()), theme.title));
    if c.project.is_none() {
        spans.push(Span::styled(" scratch session: nothing is kept ", theme.notice));
    }
    let engine = if app.engine_gone {
        " engine stopped "
    } else if app.engine_idle {
        " idle "
    } else {
        " rendering "
    };
    spans.push(Span::styled(engine, theme.title));
    frame.render_widget(Paragraph::new(Line::from(spans)).style(theme.title), area);
}

/// The audition picker: the choice under the cursor highlighted among its neighbours.
fn audition_line<'a>(app: &'a App, theme: &Theme) -> Line<'a> {
    let mut spans = vec![Span::styled("hear: ", theme.hint_text)];
    // From two before the cursor, so it stays on screen in a long segment.
    let first = app.audition_at.saturating_sub(2);
    if first > 0 {
        spans.push(Span::styled("… ", theme.hint_text));
    }
    for (i, c) in app.audition.iter().enumerate().skip(first) {
        let style = if i == app.audition_at { theme.selection } else { theme.search };
        spans.push(Span::styled(format!(" {} ", c.label), style));
    }
    spans.push(Span::styled("  ←/→ pick · enter hear · esc done", theme.hint_text));
    Line::from(spans)
}

/// The voice picker: the voices in a row, the one under the cursor highlighted.
fn voice_line<'a>(app: &'a App, theme: &Theme) -> Line<'a> {
    let mut spans = vec![Span::styled("voice: ", theme.hint_text)];
    for (i, name) in app.voice_choices().into_iter().enumerate() {
        let style = if i == app.voice_at { theme.selection } else { theme.search };
        spans.push(Span::styled(format!(" {name} "), style));
    }
    spans.push(Span::styled("  ←/→ pick · enter apply (new take) · esc cancel", theme.hint_text));
    Line::from(spans)
}

fn draw_hints(app: &App, theme: &Theme, frame: &mut Frame, area: Rect) {
    let line = if app.mode == Mode::Style {
        Line::from(vec![
            Span::styled(format!("style: {}", app.style_draft), theme.search),
            Span::styled(
                "  enter apply (new take; empty: as written) · esc cancel",
                theme.hint_text,
            ),
        ])
    } else if app.mode == Mode::Voice {
        voice_line(app, theme)
    } else if app.mode == Mode::Note {
        Line::from(vec![
            Span::styled(format!("note: {}", app.note_draft), theme.search),
            Span::styled("  enter save · esc cancel", theme.hint_text),
        ])
    } else if app.mode == Mode::Audition {
        audition_line(app, theme)
    } else if app.mode == Mode::Search {
        let n = app.search_matches().len();
        Line::from(vec![
            Span::styled(format!("/{}", app.search), theme.search),
            Span::styled(format!("  {n} match(es) · enter done · esc cancel"), theme.hint_text),
        ])
    } else {
        let mut spans = Vec::new();
        for (k, d) in [
            ("space", "play/pause"),
            ("enter", "play from"),
            ("s", "re-seed"),
            ("t", "takes"),
            ("c", "choose"),
            ("a", "approve"),
            ("P", "pickups"),
            ("?", "help"),
            ("q", "quit"),
        ] {
            spans.push(Span::styled(format!(" {k} "), theme.hint_key));
            spans.push(Span::styled(format!(" {d} "), theme.hint_text));
        }
        if let Some(n) = &app.player.notice {
            spans.push(Span::styled(format!(" {n}"), theme.notice));
        }
        Line::from(spans)
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
