//! The `V` overlay: the cast — the book's voice, every voice of the session with its defaults
//! from `cast.toml`, every character with its voice, style and pace — and how many segments
//! each speaks.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph, Wrap};

use super::panel;
use crate::tui::app::App;
use crate::tui::casting::{CharacterEntry, VoiceEntry, pace_label};
use crate::tui::theme::Theme;

/// `3 segments`, `1 segment`.
fn segments_label(n: usize) -> String {
    if n == 1 { "1 segment".into() } else { format!("{n} segments") }
}

/// A voice's defaults: `pace 0.95 · language en · cross-lingual`, or `no defaults`.
fn voice_defaults(v: &VoiceEntry) -> String {
    let mut parts = Vec::new();
    if let Some(w) = &v.written {
        parts.push(format!("from {w}"));
    }
    if let Some(p) = v.pace {
        parts.push(format!("pace {}", pace_label(p)));
    }
    if let Some(l) = &v.language {
        parts.push(format!("language {l}"));
    }
    if v.cross_lingual {
        parts.push("cross-lingual".into());
    }
    if parts.is_empty() { "no defaults".into() } else { parts.join(" · ") }
}

/// A character's casting: `alto · “Speak softly.” · pace 1.1`.
fn character_casting(c: &CharacterEntry) -> String {
    let mut parts = vec![c.voice.clone()];
    if let Some(s) = &c.style {
        parts.push(format!("“{s}”"));
    }
    if let Some(p) = c.pace {
        parts.push(format!("pace {}", pace_label(p)));
    }
    parts.join(" · ")
}

/// The panel's lines.
#[must_use]
pub fn lines(app: &App) -> Vec<(String, String, String)> {
    let book = app.book_voice().to_string();
    let speaks = |voice: &str| app.rows.iter().filter(|r| r.cast.voice(&book) == voice).count();
    let mut out = vec![("book voice".to_string(), book.clone(), String::new())];
    let voices: Vec<VoiceEntry> = if app.cast.voices.is_empty() {
        vec![VoiceEntry { name: book.clone(), ..VoiceEntry::default() }]
    } else {
        app.cast.voices.clone()
    };
    out.push(("voices".into(), String::new(), String::new()));
    for v in &voices {
        out.push((format!("  {}", v.name), voice_defaults(v), segments_label(speaks(&v.name))));
    }
    let file = app.cast.file.as_deref().unwrap_or("no cast.toml");
    out.push(("characters".into(), file.to_string(), String::new()));
    if app.cast.characters.is_empty() {
        out.push(("  none".into(), String::new(), String::new()));
    }
    for c in &app.cast.characters {
        let n = app
            .rows
            .iter()
            .filter(|r| {
                r.cast.character.as_deref().is_some_and(|x| x.eq_ignore_ascii_case(&c.name))
            })
            .count();
        out.push((format!("  {}", c.name), character_casting(c), segments_label(n)));
    }
    let chosen = app.rows.iter().filter(|r| !r.cast.recast.is_empty()).count();
    if chosen > 0 {
        let keys = |a| app.keymap.keys_for(a).join("/");
        let how = format!(
            "{} voice, {} style",
            keys(crate::tui::action::Action::PickVoice),
            keys(crate::tui::action::Action::EditStyle)
        );
        out.push(("✎ chosen here".into(), how, segments_label(chosen)));
    }
    out
}

pub fn draw(app: &App, theme: &Theme, frame: &mut Frame, area: Rect) {
    let items = lines(app);
    let w = area.width.min(76);
    let h = area.height.min(items.len() as u16 + 2);
    let popup = Rect::new(area.x + (area.width - w) / 2, area.y + (area.height - h) / 2, w, h);
    frame.render_widget(Clear, popup);
    let block = panel("voices · any key closes", theme).style(theme.help);
    let name_w = items.iter().map(|(n, _, _)| n.chars().count()).max().unwrap_or(0).min(18);
    let text: Vec<Line> = items
        .into_iter()
        .map(|(name, what, count)| {
            let indented = name.starts_with(' ');
            let name_style = if indented { theme.help_key } else { theme.panel_title };
            Line::from(vec![
                Span::styled(format!(" {name:<name_w$}  "), name_style),
                Span::styled(what, theme.help_text),
                Span::styled(
                    if count.is_empty() { count } else { format!(" · {count}") },
                    theme.dim,
                ),
            ])
        })
        .collect();
    frame.render_widget(
        Paragraph::new(text).block(block).style(theme.help).wrap(Wrap { trim: false }),
        popup,
    );
}
