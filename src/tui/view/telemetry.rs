//! Instrument panels: the stage profiler (per-stage RTF sparklines and figures), process and
//! device memory over time, and one gauge per KV-cache lane.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{LineGauge, Paragraph, Sparkline};

use super::{bytes, panel};
use crate::tui::app::App;
use crate::tui::theme::Theme;
use lectern_engine::protocol::{MemorySample, TelemetrySample};

/// Sparkline values: figure × 1000, so small RTFs still have height.
fn scaled(v: &[f64]) -> Vec<u64> {
    v.iter().map(|x| (x.max(0.0) * 1000.0).round() as u64).collect()
}

fn rtf_style(rtf: f64, theme: &Theme) -> Style {
    if rtf < 1.0 { theme.value_good } else { theme.value_bad }
}

/// Per-stage RTF as sparklines plus the latest figures.
pub fn draw_profiler(app: &App, theme: &Theme, frame: &mut Frame, area: Rect) {
    // Narrow (the medium layout): a shorter title and no figures column.
    let narrow = area.width < 50;
    let title = if narrow {
        "profiler · stage RTF"
    } else {
        "stage profiler · RTF = stage time / audio time"
    };
    let block = panel(title, theme);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let h = app.shown_telemetry();
    let Some(last) = h.latest() else {
        frame.render_widget(Paragraph::new(Span::styled("no telemetry yet", theme.dim)), inner);
        return;
    };
    let stats_w = if narrow { 0 } else { 24 };
    let [left, right] =
        Layout::horizontal([Constraint::Min(16), Constraint::Length(stats_w)]).areas(inner);
    type Pick = fn(&TelemetrySample) -> f64;
    let stages: [(&str, Pick, Style); 4] = [
        ("LM", |s| s.lm_rtf, theme.rtf_lm),
        ("flow", |s| s.flow_rtf, theme.rtf_flow),
        ("vocoder", |s| s.vocoder_rtf, theme.rtf_vocoder),
        ("total", |s| s.total_rtf, theme.rtf_total),
    ];
    let rows = Layout::vertical([Constraint::Length(1); 4]).split(left);
    for ((name, pick, style), row) in stages.iter().zip(rows.iter()) {
        let [label, spark, value] =
            Layout::horizontal([Constraint::Length(8), Constraint::Min(4), Constraint::Length(7)])
                .areas(*row);
        frame.render_widget(Paragraph::new(Span::styled(*name, *style)), label);
        let data = scaled(&h.series(usize::from(spark.width), pick));
        frame.render_widget(Sparkline::default().data(&data).style(*style), spark);
        let v = pick(last);
        frame.render_widget(
            Paragraph::new(Span::styled(format!("{v:>6.3}"), rtf_style(v, theme))),
            value,
        );
    }
    let ttfa = last.time_to_first_audio_ms.map_or("—".to_string(), |ms| format!("{ms} ms"));
    let stats = vec![
        stat("tokens/s", format!("{:.1}", last.lm_tokens_per_s), theme),
        stat("frames/s", format!("{:.1}", last.flow_frames_per_s), theme),
        stat("first audio", ttfa, theme),
        stat("audio", format!("{:.1} s", last.audio_s_total), theme),
    ];
    frame.render_widget(Paragraph::new(stats), right);
}

fn stat<'a>(name: &'a str, value: String, theme: &Theme) -> Line<'a> {
    Line::from(vec![
        Span::styled(format!(" {name:<12}"), theme.dim),
        Span::styled(format!("{value:>10}"), theme.text),
    ])
}

/// The footprint metric to chart and its name: phys_footprint on macOS, else RSS.
#[must_use]
pub fn footprint(m: &MemorySample) -> Option<(&'static str, u64)> {
    m.phys_footprint.map(|b| ("phys_footprint", b)).or(m.rss.map(|b| ("RSS", b)))
}

/// Process footprint over time, swap/PSS and device memory.
pub fn draw_memory(app: &App, theme: &Theme, frame: &mut Frame, area: Rect) {
    let block = panel("memory", theme);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let h = app.shown_telemetry();
    let Some(last) = h.latest() else {
        frame.render_widget(Paragraph::new(Span::styled("no samples yet", theme.dim)), inner);
        return;
    };
    let m = &last.memory;
    let opt = |v: Option<u64>| v.map_or("—".to_string(), bytes);
    if inner.height < 4 {
        // Compact (the medium layout): the figures without the chart.
        let mut first = match footprint(m) {
            Some((name, b)) => {
                vec![
                    Span::styled(format!("{name} "), theme.dim),
                    Span::styled(bytes(b), theme.memory),
                ]
            }
            None => vec![Span::styled("no process metric", theme.dim)],
        };
        if let Some(pss) = m.pss {
            first.push(Span::styled(" · pss ", theme.dim));
            first.push(Span::styled(bytes(pss), theme.text));
        }
        let second = if m.suspect {
            Line::from(Span::styled("⚠ metric did not change: suspect", theme.notice))
        } else {
            Line::from(vec![
                Span::styled("swap ", theme.dim),
                Span::styled(opt(m.swap), theme.text),
                Span::styled(" · device ", theme.dim),
                Span::styled(opt(m.device_used), theme.text),
            ])
        };
        frame.render_widget(Paragraph::new(vec![Line::from(first), second]), inner);
        return;
    }
    let [head, spark, tail] =
        Layout::vertical([Constraint::Length(1), Constraint::Min(1), Constraint::Length(2)])
            .areas(inner);
    let head_line = match footprint(m) {
        Some((name, b)) => Line::from(vec![
            Span::styled(format!("{name} "), theme.dim),
            Span::styled(bytes(b), theme.memory),
        ]),
        None => Line::from(Span::styled("no process metric", theme.dim)),
    };
    frame.render_widget(Paragraph::new(head_line), head);
    let data: Vec<u64> = h
        .series(usize::from(spark.width), |s| footprint(&s.memory).map_or(0.0, |(_, b)| b as f64))
        .into_iter()
        .map(|b| b as u64)
        .collect();
    frame.render_widget(Sparkline::default().data(&data).style(theme.memory), spark);
    let mut lines = vec![Line::from(vec![
        Span::styled("swap ", theme.dim),
        Span::styled(opt(m.swap), theme.text),
        Span::styled(" · device ", theme.dim),
        Span::styled(opt(m.device_used), theme.text),
    ])];
    if m.suspect {
        lines.push(Line::from(Span::styled("⚠ metric did not change: suspect", theme.notice)));
    } else if let Some(pss) = m.pss {
        lines.push(Line::from(vec![
            Span::styled("pss ", theme.dim),
            Span::styled(bytes(pss), theme.text),
        ]));
    }
    frame.render_widget(Paragraph::new(lines), tail);
}

/// One gauge per active KV-cache lane.
pub fn draw_lanes(app: &App, theme: &Theme, frame: &mut Frame, area: Rect) {
    let h = app.shown_telemetry();
    let lanes = h.latest().map(|t| t.lanes.as_slice()).unwrap_or_default();
    let total: u64 = lanes.iter().map(|l| l.used_bytes).sum();
    let title = format!("KV lanes · {} · {}", lanes.len(), bytes(total));
    let block = panel(&title, theme);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    if lanes.is_empty() {
        frame.render_widget(Paragraph::new(Span::styled("no active lanes", theme.dim)), inner);
        return;
    }
    for (i, lane) in lanes.iter().take(usize::from(inner.height)).enumerate() {
        let row = Rect::new(inner.x, inner.y + i as u16, inner.width, 1);
        let ratio = if lane.capacity_bytes == 0 {
            0.0
        } else {
            (lane.used_bytes as f64 / lane.capacity_bytes as f64).clamp(0.0, 1.0)
        };
        let label = format!(
            "L{:<2} {:>9}/{:<9}",
            lane.lane,
            bytes(lane.used_bytes),
            bytes(lane.capacity_bytes)
        );
        frame.render_widget(
            LineGauge::default()
                .ratio(ratio)
                .label(Span::styled(label, theme.text))
                .filled_style(theme.gauge_filled)
                .unfilled_style(theme.gauge_unfilled),
            row,
        );
    }
}
