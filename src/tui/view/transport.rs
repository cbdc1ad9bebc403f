//! Transport (state, playhead, volume, underruns, sink) and the render parameters.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{LineGauge, Paragraph, Wrap};
use unicode_width::UnicodeWidthStr;

use super::{clock, panel};
use crate::audio::player::PlayState;
use crate::tui::app::App;
use crate::tui::theme::Theme;

fn state_line<'a>(app: &App, theme: &Theme) -> Line<'a> {
    let (icon, word) = match app.player.state {
        PlayState::Playing => ("▶", "playing"),
        PlayState::Paused => ("‖", "paused"),
        PlayState::Idle => ("■", "stopped"),
    };
    let mut spans = vec![Span::styled(format!("{icon} {word}"), theme.state_playing)];
    if let Some(np) = app.player.now_playing {
        let seg = app.rows.iter().position(|r| r.id == np.segment_id);
        let take = seg.and_then(|i| {
            let r = &app.rows[i];
            r.takes.iter().position(|t| t.id == np.take_id).map(|k| (k + 1, r.takes.len()))
        });
        let mut s = String::new();
        if let Some(i) = seg {
            s.push_str(&format!("  seg {}", i + 1));
        }
        if let Some((k, n)) = take {
            s.push_str(&format!(" · take {k}/{n}"));
        }
        spans.push(Span::styled(s, theme.text));
    }
    Line::from(spans)
}

fn playhead(app: &App) -> (String, f64) {
    match app.player.now_playing {
        Some(np) => {
            let ratio = if np.len_samples == 0 {
                0.0
            } else {
                np.pos_samples as f64 / np.len_samples as f64
            };
            (
                format!("{} / {}", clock(np.pos_samples), clock(np.len_samples)),
                ratio.clamp(0.0, 1.0),
            )
        }
        None => (format!("{} / {}", clock(0), clock(0)), 0.0),
    }
}

/// Volume, underruns and the player's buffer; the words shortened where `width` is narrow.
fn levels<'a>(app: &App, theme: &Theme, width: u16) -> Line<'a> {
    let p = &app.player;
    let under = if p.underruns > 0 { theme.value_bad } else { theme.text };
    let narrow = width < 36;
    let (vol, xruns, buffer) =
        if narrow { ("", " xrun ", " buf ") } else { ("vol ", "  underruns ", "  buffer ") };
    Line::from(vec![
        Span::styled(vol, theme.dim),
        Span::styled(format!("{:>3.0}%", app.volume * 100.0), theme.text),
        Span::styled(xruns, theme.dim),
        Span::styled(format!("{}", p.underruns), under),
        Span::styled(buffer, theme.dim),
        Span::styled(format!("{} ms", p.buffered_ms), theme.text),
    ])
}

/// A notice too long for `cells` columns without its parenthesised asides (the device error
/// after the playback file's path), so that the path is what stays.
fn shorter(text: &str, cells: usize) -> String {
    if text.width() <= cells {
        return text.to_string();
    }
    let mut out = String::new();
    let mut depth = 0usize;
    for c in text.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out.trim_end().to_string()
}

/// `text` in at most `cells` columns: where longer, its middle gives way to `…` (a path keeps
/// its start and its file name).
#[must_use]
pub fn fit_middle(text: &str, cells: usize) -> String {
    let chars: Vec<char> = text.chars().collect();
    if text.width() <= cells || cells < 3 {
        return text.to_string();
    }
    let keep = cells - 1;
    let head = keep / 3;
    let tail = keep - head;
    let start: String = chars.iter().take(head).collect();
    let end: String = chars[chars.len().saturating_sub(tail)..].iter().collect();
    format!("{start}…{end}")
}

/// The transport panel.
pub fn draw_transport(app: &App, theme: &Theme, frame: &mut Frame, area: Rect) {
    let block = panel("transport", theme);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let [state, bar, lv, sink] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(1),
        Constraint::Length(1),
        Constraint::Min(1),
    ])
    .areas(inner);
    frame.render_widget(Paragraph::new(state_line(app, theme)), state);
    let (label, ratio) = playhead(app);
    frame.render_widget(
        LineGauge::default()
            .ratio(ratio)
            .label(Span::styled(label, theme.text))
            .filled_style(theme.playhead)
            .unfilled_style(theme.gauge_unfilled),
        bar,
    );
    frame.render_widget(Paragraph::new(levels(app, theme, lv.width)), lv);
    // A long notice (the playback file's path) wraps onto the rows left, its middle elided
    // where even they are too few (wrapping may waste a row's end: one row is kept spare).
    let cells = usize::from(sink.width) * usize::from(sink.height.saturating_sub(1).max(1));
    let sink_line = match &app.player.notice {
        Some(n) => Span::styled(fit_middle(&shorter(n, cells), cells), theme.notice),
        None => Span::styled(fit_middle(&format!("out {}", app.player.sink), cells), theme.dim),
    };
    frame.render_widget(Paragraph::new(sink_line).wrap(Wrap { trim: false }), sink);
}

/// The live render parameters.
pub fn draw_params(app: &App, theme: &Theme, frame: &mut Frame, area: Rect) {
    let p = &app.params;
    let group = if p.group_target_frames == 0 {
        "per segment".to_string()
    } else {
        format!("{} frames", p.group_target_frames)
    };
    let row = |k: &'static str, v: String, key: &'static str| {
        Line::from(vec![
            Span::styled(format!("{k:<10}"), theme.dim),
            Span::styled(format!("{v:<12}"), theme.text),
            Span::styled(key, theme.dim),
        ])
    };
    let lines = vec![
        row("NFE", p.nfe.to_string(), "[ ]"),
        row("group", group, "{ }"),
        row("lanes", p.lanes.to_string(), "l L"),
        row("precision", p.precision.name().to_string(), ""),
        row("backend", app.backend.clone(), ""),
    ];
    frame.render_widget(Paragraph::new(lines).block(panel("parameters", theme)), area);
}

/// The reduced layout's transport: state, playhead, one line of figures.
pub fn draw_compact(app: &App, theme: &Theme, frame: &mut Frame, area: Rect) {
    let [state, bar, figs] = Layout::vertical([Constraint::Length(1); 3]).areas(area);
    frame.render_widget(Paragraph::new(state_line(app, theme)), state);
    let (label, ratio) = playhead(app);
    frame.render_widget(
        LineGauge::default()
            .ratio(ratio)
            .label(Span::styled(label, theme.text))
            .filled_style(theme.playhead)
            .unfilled_style(theme.gauge_unfilled),
        bar,
    );
    let p = &app.params;
    let rtf = app
        .shown_telemetry()
        .latest()
        .map_or("RTF —".to_string(), |t| format!("RTF {:.2}", t.total_rtf));
    let line = Line::from(vec![
        Span::styled(rtf, theme.text),
        Span::styled(format!("  NFE {}  lanes {}  ", p.nfe, p.lanes), theme.dim),
        Span::styled(format!("underruns {}", app.player.underruns), theme.dim),
    ]);
    frame.render_widget(Paragraph::new(line), figs);
}
