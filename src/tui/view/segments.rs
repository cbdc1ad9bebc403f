//! The manuscript panel (one row per segment: state, takes, seed, text) and the selected
//! segment's text.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use super::{clock, panel, state_label};
use crate::tui::app::{App, RowStatus};
use crate::tui::theme::Theme;

/// The segment list.
pub fn draw_list(app: &App, theme: &Theme, frame: &mut Frame, area: Rect) {
    let title = format!("manuscript · {} segments", app.rows.len());
    let block = panel(&title, theme);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let matches = app.search_matches();
    let lines: Vec<Line> = app
        .rows
        .iter()
        .enumerate()
        .skip(app.list_offset)
        .take(usize::from(inner.height))
        .map(|(i, row)| {
            let (icon, word, style) = match app.row_status(row) {
                RowStatus::Playing => ("▶", "playing", theme.state_playing),
                RowStatus::Engine(s) => state_label(&s, theme),
            };
            let takes = if row.takes.is_empty() {
                "  – ".to_string()
            } else {
                format!("{:>4}", format!("{}/{}", row.current_take + 1, row.takes.len()))
            };
            let text_style = if matches.contains(&i) { theme.search } else { theme.text };
            let mut line = Line::from(vec![
                Span::styled(format!("{:>3} ", i + 1), theme.dim),
                Span::styled(format!("{icon} {word:<7}"), style),
                Span::styled(format!("{takes} "), theme.text),
                Span::styled(format!("#{:<6} ", row.seed), theme.dim),
                Span::styled(row.text.replace('\n', " "), text_style),
            ]);
            if i == app.selected {
                line = line.patch_style(theme.selection);
            }
            line
        })
        .collect();
    frame.render_widget(Paragraph::new(lines), inner);
}

/// The selected segment's full text and its current take.
pub fn draw_text(app: &App, theme: &Theme, frame: &mut Frame, area: Rect) {
    let Some(row) = app.rows.get(app.selected) else {
        frame.render_widget(panel("segment", theme), area);
        return;
    };
    let title = format!("segment {}", app.selected + 1);
    let block = panel(&title, theme);
    let mut lines = vec![];
    let info = match row.current() {
        Some(t) => format!(
            "take {}/{} · seed {} · {} · NFE {} · {} tokens",
            row.current_take + 1,
            row.takes.len(),
            t.record.seed,
            clock(t.samples.len() as u64),
            t.record.nfe,
            t.record.tokens.len()
        ),
        None => format!("no take yet · seed {}", row.seed),
    };
    lines.push(Line::from(Span::styled(info, theme.dim)));
    lines.push(Line::from(Span::styled(row.text.clone(), Style::default().patch(theme.text))));
    frame.render_widget(Paragraph::new(lines).block(block).wrap(Wrap { trim: true }), area);
}
