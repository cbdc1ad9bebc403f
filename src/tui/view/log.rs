//! The log pane: the newest lines at the bottom, scrollable.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::panel;
use crate::tui::app::App;
use crate::tui::theme::Theme;

pub fn draw(app: &App, theme: &Theme, frame: &mut Frame, area: Rect) {
    let title =
        if app.log_scroll > 0 { format!("log · ↑{}", app.log_scroll) } else { "log".into() };
    let block = panel(&title, theme);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let h = usize::from(inner.height);
    let end = app.log.len().saturating_sub(app.log_scroll);
    let start = end.saturating_sub(h);
    let lines: Vec<Line> = app
        .log
        .iter()
        .skip(start)
        .take(end - start)
        .map(|l| Line::from(Span::styled(l.clone(), theme.log)))
        .collect();
    frame.render_widget(Paragraph::new(lines), inner);
}
