//! The manuscript panel (one row per segment: state, review, takes, seed, who speaks it when
//! not the book's voice plain, text; only those needing work in the pickups view) and the
//! selected segment's text, take, casting and note.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

use super::{clock, panel, state_label, waveform};
use crate::review::Review;
use crate::tui::app::{App, Row, RowStatus};
use crate::tui::theme::Theme;

/// The review column: a mark per state (`·` unheard, `h` heard, `✓` approved, `!` pickup,
/// `e` edited since approval).
fn review_mark(row: &Row, theme: &Theme) -> Span<'static> {
    if row.edited_since_approval {
        return Span::styled(EDITED_MARK, theme.notice);
    }
    match row.review {
        Review::Unheard => Span::styled("·", theme.dim),
        Review::Heard => Span::styled("h", theme.text),
        Review::Approved => Span::styled("✓", theme.state_ready),
        Review::Pickup => Span::styled("!", theme.value_bad),
    }
}

/// The review column's mark of a segment edited since its approval.
pub const EDITED_MARK: &str = "e";

/// What the segment panel says of a segment edited since its approval.
pub const EDITED_LABEL: &str = "edited since approval";

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

/// Below this inner width a list row shows its text first and its tags after it.
pub const NARROW_LIST_WIDTH: u16 = 60;

/// What a list row shows beside its text.
struct RowMarks {
    /// Icon, word and style of its state.
    status: (&'static str, &'static str, Style),
    text_style: Style,
    /// `◆ quiet -5.0 dB ` or nothing.
    outliers: String,
    /// Who speaks it where not the book's voice plain, or nothing.
    who: String,
}

/// A row with every column: number, state, review, takes, seed, flags, who, then the text.
fn wide_row<'a>(i: usize, row: &'a Row, m: RowMarks, theme: &Theme) -> Line<'a> {
    let (icon, word, style) = m.status;
    let flag = if row.flag().is_some() { "⚠ " } else { "" };
    Line::from(vec![
        Span::styled(format!("{:>3} ", i + 1), theme.dim),
        Span::styled(format!("{icon} {word:<7} "), style),
        review_mark(row, theme),
        Span::styled(format!("{} ", takes_label(row)), theme.text),
        Span::styled(format!("#{:<6} ", row.shown_seed()), theme.dim),
        Span::styled(flag, theme.value_bad),
        Span::styled(m.outliers, theme.notice),
        Span::styled(m.who, theme.panel_title),
        Span::styled(row.shown_source().replace('\n', " "), m.text_style),
    ])
}

/// A row for a narrow list: number, state icon, review, the text (cut to leave its tags some
/// room), its tags — the ⚠ and ◆ marks, who speaks it — right after it, and its takes at the row's end
/// (the seed is in the segment panel).
fn narrow_row<'a>(i: usize, row: &Row, m: &RowMarks, theme: &Theme, width: usize) -> Line<'a> {
    let (icon, _, style) = m.status;
    let number = format!("{:>3} ", i + 1);
    let takes = format!(" {}", takes_label(row));
    // Marks only: what they mean is in the segment panel.
    let flag = if row.flag().is_some() { "⚠" } else { "" };
    let outlier = if m.outliers.is_empty() { "" } else { "◆" };
    let tags = format!("{flag}{outlier} {}", m.who);
    let tags = tags.trim();
    // Room after the number, icon, review mark and a space, before the takes column.
    let room = width.saturating_sub(number.width() + 3 + takes.width());
    let wanted = if tags.is_empty() { room } else { room.saturating_sub(tags.width() + 1) };
    // The text keeps most of the row; tags that do not fit after it are cut.
    let text = fit_end(&row.shown_source().replace('\n', " "), wanted.max(room * 4 / 5));
    let tags_room = room.saturating_sub(text.width() + 1);
    let tags =
        if tags.is_empty() || tags_room == 0 { String::new() } else { fit_end(tags, tags_room) };
    let gap = if tags.is_empty() { 0 } else { 1 };
    let pad = room.saturating_sub(text.width() + gap + tags.width());
    Line::from(vec![
        Span::styled(number, theme.dim),
        Span::styled(icon, style),
        review_mark(row, theme),
        Span::raw(" "),
        Span::styled(text, m.text_style),
        Span::raw(" ".repeat(gap)),
        Span::styled(tags, theme.notice),
        Span::raw(" ".repeat(pad)),
        Span::styled(takes, theme.text),
    ])
}

/// `text` in at most `width` columns, its end replaced by `…` when cut.
#[must_use]
pub fn fit_end(text: &str, width: usize) -> String {
    if text.width() <= width {
        return text.to_string();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = c.width().unwrap_or(0);
        if used + w + 1 > width {
            break;
        }
        out.push(c);
        used += w;
    }
    out.push('…');
    out
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
    let narrow = inner.width < NARROW_LIST_WIDTH;
    let lines: Vec<Line> = shown
        .iter()
        .skip(app.list_offset)
        .take(usize::from(inner.height))
        .map(|&i| {
            let row = &app.rows[i];
            let marks = RowMarks {
                status: match app.row_status(row) {
                    RowStatus::Playing => ("▶", "playing", theme.state_playing),
                    RowStatus::Engine(s) => state_label(&s, theme),
                },
                text_style: if matches.contains(&i) { theme.search } else { theme.text },
                outliers: quality_mark(row, &norms),
                who: row.cast.tag(app.book_voice()).map(|t| format!("{t} ")).unwrap_or_default(),
            };
            let line = if narrow {
                narrow_row(i, row, &marks, theme, usize::from(inner.width))
            } else {
                wide_row(i, row, marks, theme)
            };
            if i == app.selected { line.patch_style(theme.selection) } else { line }
        })
        .collect();
    frame.render_widget(Paragraph::new(lines), inner);
}

/// The selected segment's panel: its take, then its wrapped source and spoken form, who speaks
/// it, its note and its flags; the take's waveform and playhead at its foot.
pub fn draw_text(app: &App, theme: &Theme, frame: &mut Frame, area: Rect) {
    let block = panel_block(app, theme);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    // The waveform where the panel has room for it beside all its text: the text comes first.
    let text_height = text_panel(app, theme).line_count(inner.width);
    let room = usize::from(inner.height.saturating_sub(waveform::WAVE_ROWS));
    let wave = if waveform::shown(app) && text_height <= room { waveform::WAVE_ROWS } else { 0 };
    let [text, wave_area] =
        Layout::vertical([Constraint::Min(1), Constraint::Length(wave)]).areas(inner);
    frame.render_widget(text_panel(app, theme), text);
    if wave > 0 {
        waveform::draw(app, theme, frame, wave_area);
    }
}

/// Rows the segment panel needs at `width` columns (borders included) to show all it has.
#[must_use]
pub fn text_rows(app: &App, theme: &Theme, width: u16) -> u16 {
    let rows = text_panel(app, theme).line_count(width.saturating_sub(2)) + 2;
    let wave = if waveform::shown(app) { usize::from(waveform::WAVE_ROWS) } else { 0 };
    u16::try_from(rows + wave).unwrap_or(u16::MAX)
}

fn panel_block<'a>(app: &App, theme: &Theme) -> ratatui::widgets::Block<'a> {
    match app.rows.get(app.selected) {
        Some(_) => panel(&format!("segment {}", app.selected + 1), theme),
        None => panel("segment", theme),
    }
}

/// The panel's text, wrapped (no border: [`draw_text`] draws it around).
fn text_panel<'a>(app: &'a App, theme: &Theme) -> Paragraph<'a> {
    let Some(row) = app.rows.get(app.selected) else { return Paragraph::new("") };
    Paragraph::new(detail_lines(app, row, theme)).wrap(Wrap { trim: true })
}

/// The segment's review state in words.
fn review_label(row: &Row) -> &'static str {
    if row.edited_since_approval { EDITED_LABEL } else { row.review.as_str() }
}

/// The take line: `take 2/3 (chosen) · seed 7 · 00:03.2 · NFE 10 · 80 tokens · heard`.
fn take_line(row: &Row) -> String {
    match row.current() {
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
                review_label(row)
            )
        }
        None => format!("no take yet · seed {}", row.seed),
    }
}

/// The panel's lines, most needed first (a short panel cuts the last): the take; what was
/// written; the note; what looks wrong; who speaks it; what is spoken; the take's figures; the
/// chapter's ACX check.
fn detail_lines<'a>(app: &App, row: &'a Row, theme: &Theme) -> Vec<Line<'a>> {
    let mut lines = vec![Line::from(Span::styled(take_line(row), theme.dim))];
    lines.push(Line::from(Span::styled(row.shown_source(), theme.text)));
    if !row.note.is_empty() {
        lines.push(Line::from(Span::styled(format!("note: {}", row.note), theme.notice)));
    }
    if let Some(why) = row.flag() {
        lines.push(Line::from(Span::styled(format!("⚠ {why}"), theme.value_bad)));
    }
    let quality = row.quality(&app.quality_norms());
    if let Some(q) = &quality {
        let labels = q.flag_labels();
        if !labels.is_empty() {
            let text = format!("◆ outlier in this book: {}", labels.join(", "));
            lines.push(Line::from(Span::styled(text, theme.notice)));
        }
    }
    if row.cast.tag(app.book_voice()).is_some() {
        lines.push(Line::from(Span::styled(row.cast.detail(app.book_voice()), theme.panel_title)));
    }
    // What the model reads, where normalisation changed it (numbers, symbols, markup).
    if row.text != row.shown_source() {
        lines.push(Line::from(vec![
            Span::styled("spoken: ", theme.dim),
            Span::styled(row.text.as_str(), theme.dim),
        ]));
    }
    if let Some(q) = &quality {
        lines.push(Line::from(Span::styled(q.summary(), theme.dim)));
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
    lines
}
