//! The selected take's waveform in the segment panel: its level envelope as a sparkline (the
//! part already heard in the playhead's style) over a line with the playhead's mark, drawn
//! with ratatui's own `Sparkline` from the envelope the App made once for the take.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Sparkline};

use crate::tui::app::App;
use crate::tui::theme::Theme;

/// Rows the waveform takes: two of sparkline, one for the playhead.
pub const WAVE_ROWS: u16 = 3;
/// Levels of a sparkline two rows high (eight per row).
const LEVELS: u64 = 16;
/// The playhead's mark under the waveform.
pub const PLAYHEAD_MARK: &str = "▲";

/// Whether the selected take has a waveform to draw.
#[must_use]
pub fn shown(app: &App) -> bool {
    app.selected_waveform().is_some()
}

/// Draws the selected take's waveform and playhead into `area` ([`WAVE_ROWS`] high).
pub fn draw(app: &App, theme: &Theme, frame: &mut Frame, area: Rect) {
    let Some((envelope, at)) = app.selected_waveform() else { return };
    let width = usize::from(area.width);
    let [wave, head] =
        Layout::vertical([Constraint::Length(WAVE_ROWS - 1), Constraint::Length(1)]).areas(area);
    let columns = envelope.columns(width, LEVELS);
    // The column of the playhead: the heard part is drawn in the playhead's style.
    let played = at.map_or(0, |r| ((r * width as f64) as usize).min(width.saturating_sub(1)));
    let [heard, ahead] = Layout::horizontal([
        Constraint::Length(u16::try_from(played).unwrap_or(u16::MAX)),
        Constraint::Min(0),
    ])
    .areas(wave);
    frame.render_widget(
        Sparkline::default().data(&columns[..played]).max(LEVELS).style(theme.playhead),
        heard,
    );
    frame.render_widget(
        Sparkline::default().data(&columns[played..]).max(LEVELS).style(theme.text),
        ahead,
    );
    let line = match at {
        Some(_) => Line::from(vec![
            Span::styled("━".repeat(played), theme.playhead),
            Span::styled(PLAYHEAD_MARK, theme.playhead),
            Span::styled("─".repeat(width.saturating_sub(played + 1)), theme.dim),
        ]),
        None => Line::from(Span::styled("─".repeat(width), theme.dim)),
    };
    frame.render_widget(Paragraph::new(line), head);
}
