//! The title bar: the book, voice and model, the notices (configuration problems, the tiny
//! model, frozen panels, a scratch session), the progress and the engine's state. Where the
//! terminal is narrow, parts are abbreviated in a fixed order — the least needed first — so
//! that the progress and the engine's state stay whole instead of being cut off at the edge.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use unicode_width::UnicodeWidthStr;

use crate::tui::app::{App, TINY_MODEL_NOTICE};
use crate::tui::theme::Theme;

/// One part of the bar: its forms, longest first, and which one is shown.
struct Part {
    kind: Kind,
    forms: Vec<String>,
    at: usize,
    style: Style,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Name,
    Banner,
    Tiny,
    Frozen,
    Progress,
    Scratch,
    Engine,
}

/// Which part gives up a step first, then next, while the bar is too wide.
const SHRINK_ORDER: &[Kind] = &[
    Kind::Scratch,
    Kind::Banner,
    Kind::Tiny,
    Kind::Name,
    Kind::Progress,
    Kind::Name,
    Kind::Tiny,
    Kind::Banner,
    Kind::Name,
];

fn parts(app: &App, theme: &Theme) -> Vec<Part> {
    let c = &app.config;
    let part = |kind, forms: Vec<String>, style| Part { kind, forms, at: 0, style };
    let mut out = vec![part(
        Kind::Name,
        vec![
            format!(" Lectern · {} · voice {} · {} ", c.manuscript, c.voice, c.model),
            format!(" {} · {} · {} ", c.manuscript, c.voice, c.model),
            format!(" {} · {} ", c.manuscript, c.voice),
            format!(" {} ", c.manuscript),
        ],
        theme.title,
    )];
    if !c.banner.is_empty() {
        let n = c.banner.len();
        out.push(part(
            Kind::Banner,
            vec![
                format!(" config: {n} problem(s), defaults used — see log "),
                format!(" config: {n} problem(s) "),
                " config! ".into(),
            ],
            theme.title_notice,
        ));
    }
    if c.tiny_model {
        let short = TINY_MODEL_NOTICE.split(" — ").next().unwrap_or(TINY_MODEL_NOTICE);
        out.push(part(
            Kind::Tiny,
            vec![format!(" {TINY_MODEL_NOTICE} "), format!(" {short} "), " tiny model ".into()],
            theme.title_notice,
        ));
    }
    if app.frozen.is_some() {
        out.push(part(Kind::Frozen, vec![" FROZEN ".into()], theme.title_notice));
    }
    let progress = app.progress_line();
    out.push(part(
        Kind::Progress,
        vec![format!(" {progress} "), format!(" {} ", without_parentheses(&progress))],
        theme.title,
    ));
    if c.project.is_none() {
        out.push(part(
            Kind::Scratch,
            vec![" scratch session: nothing is kept ".into(), " scratch ".into()],
            theme.title_notice,
        ));
    }
    let engine = if app.engine_gone {
        " engine stopped "
    } else if app.engine_idle {
        " idle "
    } else {
        " rendering "
    };
    out.push(part(Kind::Engine, vec![engine.into()], theme.title));
    out
}

/// `3 to render (~2 min at RTF 0.50) · 1/3 approved` → `3 to render · 1/3 approved`.
fn without_parentheses(s: &str) -> String {
    let mut out = String::new();
    let mut depth = 0usize;
    for c in s.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out.replace("  ", " ").trim().to_string()
}

fn width(parts: &[Part]) -> usize {
    parts.iter().map(|p| p.forms[p.at].width()).sum()
}

/// The bar's text at `columns` columns, its parts abbreviated in `SHRINK_ORDER` until it fits.
#[must_use]
pub fn fitted(app: &App, theme: &Theme, columns: usize) -> Line<'static> {
    let mut parts = parts(app, theme);
    for kind in SHRINK_ORDER {
        if width(&parts) <= columns {
            break;
        }
        if let Some(p) = parts.iter_mut().find(|p| p.kind == *kind && p.at + 1 < p.forms.len()) {
            p.at += 1;
        }
    }
    Line::from(
        parts
            .into_iter()
            .map(|mut p| Span::styled(p.forms.swap_remove(p.at), p.style))
            .collect::<Vec<_>>(),
    )
}

/// Draws the bar, fitted to `area`'s width.
pub fn draw(app: &App, theme: &Theme, frame: &mut Frame, area: Rect) {
    let line = fitted(app, theme, usize::from(area.width));
    frame.render_widget(Paragraph::new(line).style(theme.title), area);
}
