//! The manuscript panel (one row per segment: state, review, takes, seed, who speaks it when
//! not the book's voice plain, text; only those needing work in the pickups view) and the
//! selected segment's text, take, casting and note.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use super::{clock, panel, state_label};
use crate::review::Review;
use crate::tui::app::{App, Row, RowStatus};
use crate::tui::theme::Theme;

/// The review column: a mark per state (`·` unheard, `h` heard, `✓` approved, `!` pickup).
fn review_mark(row: &Row, theme: &Theme) -> Span<'static> {
    match row.review {
        Review::Unheard => Span::styled("·", theme.dim),
        Review::Heard => Span::styled("h", theme.text),
        Review::Approved => Span::styled("✓", theme.state_ready),
        Review::Pickup => Span::styled("!", theme.value_bad),
    }
}

/// `2/3` (auditioned / count), with `*` when the auditioned take is the chosen one.
fn takes_label(row: &Row) -> String {
    if row.takes.is_empty() {
        return "  –  ".to_string();
    }
    let chosen = if row.chosen == Some(row.current_take) { "*" } else { " " };
    format!("{:>4}{chosen}", format!("{}/{}", row.current_take + 1, row.takes.len()))
}

/// The auditioned take's outlier flags against the book, with their figures
/// (`◆ quiet -5.0 dB `), or nothing.
fn quality_mark(row: &Row, norms: &crate::quality::BookNorms) -> String {
    let labels = row.quality(norms).map(|q| q.flag_labels()).unwrap_or_default();
    if labels.is_empty() { String::new() } else { format!("◆ {} ", labels.join(", ")) }
}

/// The segment list.
pub fn draw_list(app: &App, theme: &Theme, frame: &mut Frame, area: Rect) {
    let shown = app.visible_rows();
    let title = if app.pickups_only {
        format!("pickups · {} of {} segments need work", shown.len(), app.rows.len())
    } else {
        format!("manuscript · {} segments", app.rows.len())
    };
    let block = panel(&title, theme);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let matches = app.search_matches();
    let norms = app.quality_norms();
    let lines: Vec<Line> = shown
        .iter()
        .skip(app.list_offset)
        .take(usize::from(inner.height))
        .map(|&i| {
            let row = &app.rows[i];
            let (icon, word, style) = match app.row_status(row) {
                RowStatus::Playing => ("▶", "playing", theme.state_playing),
                RowStatus::Engine(s) => state_label(&s, theme),
            };
            let text_style = if matches.contains(&i) { theme.search } else { theme.text };
            let flag = if row.flag().is_some() { "⚠ " } else { "" };
            let outliers = quality_mark(row, &norms);
            let who = row.cast.tag(app.book_voice()).map(|t| format!("{t} ")).unwrap_or_default();
            let mut line = Line::from(vec![
                Span::styled(format!("{:>3} ", i + 1), theme.dim),
                Span::styled(format!("{icon} {word:<7} "), style),
                review_mark(row, theme),
                Span::styled(format!("{} ", takes_label(row)), theme.text),
                Span::styled(format!("#{:<6} ", row.shown_seed()), theme.dim),
                Span::styled(flag, theme.value_bad),
                Span::styled(outliers, theme.notice),
                Span::styled(who, theme.panel_title),
                Span::styled(row.shown_source().replace('\n', " "), text_style),
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
        Some(t) => {
            let chosen = if row.chosen == Some(row.current_take) { " (chosen)" } else { "" };
            let stale = if t.stale { " · stale" } else { "" };
            format!(
                "take {}/{}{chosen}{stale} · seed {} · {} · NFE {} · {} tokens · {}",
                row.current_take + 1,
                row.takes.len(),
                t.record.seed,
                clock(t.len_samples()),
                t.record.nfe,
                t.record.tokens.len(),
                row.review.as_str()
            )
        }
        None => format!("no take yet · seed {}", row.seed),
    };
    lines.push(Line::from(Span::styled(info, theme.dim)));
    // Who speaks it, first: the panel is short and this is what `v` and `i` change.
    if row.cast.tag(app.book_voice()).is_some() {
        lines.push(Line::from(Span::styled(row.cast.detail(app.book_voice()), theme.panel_title)));
    }
    if let Some(acx) = app.chapter_acx.get(&row.chapter) {
        let style = match acx.passes() {
            Some(true) => theme.value_good,
            Some(false) => theme.value_bad,
            None => theme.dim,
        };
        let text = format!("chapter {} · {}", row.chapter + 1, acx.label());
        lines.push(Line::from(Span::styled(text, style)));
    }
    if let Some(why) = row.flag() {
        lines.push(Line::from(Span::styled(format!("⚠ {why}"), theme.value_bad)));
    }
    if let Some(q) = row.quality(&app.quality_norms()) {
        lines.push(Line::from(Span::styled(q.summary(), theme.dim)));
        let labels = q.flag_labels();
        if !labels.is_empty() {
            let text = format!("◆ outlier in this book: {}", labels.join(", "));
            lines.push(Line::from(Span::styled(text, theme.notice)));
        }
    }
    if !row.note.is_empty() {
        lines.push(Line::from(Span::styled(format!("note: {}", row.note), theme.notice)));
    }
    lines.push(Line::from(Span::styled(
        row.shown_source().to_string(),
        Style::default().patch(theme.text),
    )));
    // What the model reads, where normalisation changed it (numbers, symbols, markup).
    if row.text != row.shown_source() {
        lines.push(Line::from(vec![
            Span::styled("spoken: ", theme.dim),
            Span::styled(row.text.clone(), theme.dim),
        ]));
    }
    frame.render_widget(Paragraph::new(lines).block(block).wrap(Wrap { trim: true }), area);
}
