//! The `?` overlay: every action with the keys bound to it (from the live keymap).

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};

use super::panel;
use crate::tui::action::Action;
use crate::tui::app::App;
use crate::tui::theme::Theme;

/// Help lines: `keys  description` for every bound action.
#[must_use]
pub fn entries(app: &App) -> Vec<(String, &'static str)> {
    Action::ALL
        .iter()
        .filter_map(|&a| {
            let keys = app.keymap.keys_for(a);
            (!keys.is_empty()).then(|| (keys.join(" "), a.describe()))
        })
        .collect()
}

pub fn draw(app: &App, theme: &Theme, frame: &mut Frame, area: Rect) {
    let items = entries(app);
    let per_col = items.len().div_ceil(2);
    let w = area.width.min(76);
    let h = area.height.min(per_col as u16 + 4);
    let popup = Rect::new(area.x + (area.width - w) / 2, area.y + (area.height - h) / 2, w, h);
    frame.render_widget(Clear, popup);
    let block = panel("keys · any key closes", theme).style(theme.help);
    let inner = block.inner(popup);
    frame.render_widget(block, popup);
    let cols =
        Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)]).split(inner);
    for (c, chunk) in items.chunks(per_col.max(1)).enumerate() {
        let lines: Vec<Line> = chunk
            .iter()
            .map(|(k, d)| {
                Line::from(vec![
                    Span::styled(format!(" {k:<12}"), theme.help_key),
                    Span::styled(*d, theme.help_text),
                ])
            })
            .collect();
        if let Some(col) = cols.get(c) {
            frame.render_widget(Paragraph::new(lines).style(theme.help), *col);
        }
    }
    let mouse = Line::from(Span::styled(
        " mouse: click a segment, wheel scrolls list and log",
        theme.help_text,
    ));
    if inner.height > 0 {
        let last = Rect::new(inner.x, inner.y + inner.height - 1, inner.width, 1);
        frame.render_widget(Paragraph::new(mouse).style(theme.help), last);
    }
}
