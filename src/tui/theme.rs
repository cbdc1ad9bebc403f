//! Themes: a set of named style roles. Widgets ask for roles (`theme.state_ready`), never for
//! colours. Built-in `dark` and `light` defaults live in code; `themes/NAME.toml` is a patch
//! over its `base` (or the built-in of the same name), so a file lists only what it changes and
//! new roles never break old files. [`ThemeWatcher`] reports edits so the UI can reload.
//!
//! ```toml
//! base = "dark"
//! [roles]
//! title = { fg = "black", bg = "#5fafd7", bold = true }
//! ```
//!
//! Colours: names (`red`, `lightblue`, `darkgray`, `reset`), `#rrggbb`, or a 0–255 index.
//! Modifiers: `bold`, `dim`, `italic`, `underlined`, `reversed` (true/false).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::mpsc;

use ratatui::style::{Color, Modifier, Style};
use serde::Deserialize;

/// Errors loading a theme file.
#[derive(Debug, thiserror::Error)]
pub enum ThemeError {
    // `cause`, not `source`: the message shows it (see `text::TextError::Io`).
    #[error("theme {path}: {cause}")]
    Io { path: String, cause: std::io::Error },
    #[error("theme {path}: {cause}")]
    Toml { path: String, cause: toml::de::Error },
    #[error("theme {path}: unknown role {role:?}")]
    UnknownRole { path: String, role: String },
    #[error("theme {path}: role {role}: bad colour {value:?}")]
    BadColour { path: String, role: String, value: String },
    #[error("theme {path}: unknown base theme {base:?}")]
    UnknownBase { path: String, base: String },
    #[error("theme watcher: {0}")]
    Watch(notify::Error),
}

macro_rules! roles {
    ($($(#[doc = $doc:literal])* $name:ident,)*) => {
        /// Named styles for every visual role of the UI.
        #[derive(Debug, Clone, PartialEq)]
        pub struct Theme {
            pub name: String,
            $($(#[doc = $doc])* pub $name: Style,)*
        }

        impl Theme {
            /// Every role name, in declaration order.
            pub const ROLES: &'static [&'static str] = &[$(stringify!($name),)*];

            fn role_mut(&mut self, role: &str) -> Option<&mut Style> {
                match role {
                    $(stringify!($name) => Some(&mut self.$name),)*
                    _ => None,
                }
            }

            /// A role's style by name.
            #[must_use]
            pub fn role(&self, role: &str) -> Option<Style> {
                match role {
                    $(stringify!($name) => Some(self.$name),)*
                    _ => None,
                }
            }
        }
    };
}

roles! {
    /// Title bar.
    title,
    /// Title bar warning (tiny model).
    title_notice,
    /// Panel borders.
    border,
    /// Panel titles.
    panel_title,
    /// Ordinary text.
    text,
    /// Secondary text (units, labels, hints).
    dim,
    /// Selected segment row.
    selection,
    /// Segment states.
    state_queued,
    state_lm,
    state_flow,
    state_vocoder,
    state_ready,
    state_playing,
    state_failed,
    state_cancelled,
    /// Profiler series.
    rtf_lm,
    rtf_flow,
    rtf_vocoder,
    rtf_total,
    /// A figure faster than real time / slower than real time.
    value_good,
    value_bad,
    /// Memory chart.
    memory,
    /// KV lane gauges: used and free parts.
    gauge_filled,
    gauge_unfilled,
    /// Transport progress bar.
    playhead,
    /// Log pane.
    log,
    /// Warnings and notices (no audio device, frozen panels).
    notice,
    /// Bottom hint bar: key and description.
    hint_key,
    hint_text,
    /// Help overlay: background, keys, descriptions.
    help,
    help_key,
    help_text,
    /// Search prompt and matches.
    search,
}

fn fg(c: Color) -> Style {
    Style::new().fg(c)
}

impl Theme {
    /// The dark built-in theme (for dark terminal backgrounds).
    #[must_use]
    pub fn dark() -> Self {
        Self {
            name: "dark".into(),
            title: Style::new().fg(Color::Black).bg(Color::Cyan).add_modifier(Modifier::BOLD),
            title_notice: Style::new().fg(Color::Black).bg(Color::Yellow),
            border: fg(Color::DarkGray),
            panel_title: fg(Color::Cyan).add_modifier(Modifier::BOLD),
            text: Style::new(),
            dim: fg(Color::DarkGray),
            selection: Style::new().bg(Color::Indexed(237)).add_modifier(Modifier::BOLD),
            state_queued: fg(Color::DarkGray),
            state_lm: fg(Color::Magenta),
            state_flow: fg(Color::Blue),
            state_vocoder: fg(Color::Cyan),
            state_ready: fg(Color::Green),
            state_playing: fg(Color::LightGreen).add_modifier(Modifier::BOLD),
            state_failed: fg(Color::Red).add_modifier(Modifier::BOLD),
            state_cancelled: fg(Color::DarkGray).add_modifier(Modifier::CROSSED_OUT),
            rtf_lm: fg(Color::Magenta),
            rtf_flow: fg(Color::Blue),
            rtf_vocoder: fg(Color::Cyan),
            rtf_total: fg(Color::White).add_modifier(Modifier::BOLD),
            value_good: fg(Color::Green),
            value_bad: fg(Color::Red),
            memory: fg(Color::Yellow),
            gauge_filled: fg(Color::Green),
            gauge_unfilled: fg(Color::DarkGray),
            playhead: fg(Color::LightGreen),
            log: fg(Color::Gray),
            notice: fg(Color::Yellow).add_modifier(Modifier::BOLD),
            hint_key: fg(Color::Black).bg(Color::DarkGray),
            hint_text: fg(Color::Gray),
            help: Style::new().bg(Color::Indexed(235)),
            help_key: fg(Color::Cyan).add_modifier(Modifier::BOLD),
            help_text: fg(Color::White),
            search: fg(Color::Yellow).add_modifier(Modifier::BOLD),
        }
    }

    /// The light built-in theme. It paints its own white background (the `text` role's, under
    /// every cell) and gives every role an explicit colour from the xterm 256-colour cube, so it
    /// reads the same on a dark terminal as on a light one: nothing falls back to the
    /// terminal's default colours.
    #[must_use]
    pub fn light() -> Self {
        const INK: Color = Color::Indexed(16); // #000000
        const PAPER: Color = Color::Indexed(231); // #ffffff
        const GREY: Color = Color::Indexed(240); // #585858
        const RULE: Color = Color::Indexed(245); // #8a8a8a
        const BLUE: Color = Color::Indexed(25); // #005faf
        const PURPLE: Color = Color::Indexed(90); // #870087
        const TEAL: Color = Color::Indexed(30); // #008787
        const GREEN: Color = Color::Indexed(28); // #008700
        const RED: Color = Color::Indexed(160); // #d70000
        const BROWN: Color = Color::Indexed(130); // #af5f00
        Self {
            name: "light".into(),
            title: Style::new().fg(PAPER).bg(BLUE).add_modifier(Modifier::BOLD),
            title_notice: Style::new().fg(INK).bg(Color::Indexed(229)),
            border: fg(RULE),
            panel_title: fg(BLUE).add_modifier(Modifier::BOLD),
            text: Style::new().fg(INK).bg(PAPER),
            dim: fg(GREY),
            selection: Style::new().bg(Color::Indexed(254)).add_modifier(Modifier::BOLD),
            state_queued: fg(GREY),
            state_lm: fg(PURPLE),
            state_flow: fg(BLUE),
            state_vocoder: fg(TEAL),
            state_ready: fg(GREEN),
            state_playing: fg(GREEN).add_modifier(Modifier::BOLD),
            state_failed: fg(RED).add_modifier(Modifier::BOLD),
            state_cancelled: fg(RULE).add_modifier(Modifier::CROSSED_OUT),
            rtf_lm: fg(PURPLE),
            rtf_flow: fg(BLUE),
            rtf_vocoder: fg(TEAL),
            rtf_total: fg(INK).add_modifier(Modifier::BOLD),
            value_good: fg(GREEN),
            value_bad: fg(RED),
            memory: fg(BROWN),
            gauge_filled: fg(GREEN),
            gauge_unfilled: fg(RULE),
            playhead: fg(GREEN),
            log: fg(GREY),
            notice: fg(BROWN).add_modifier(Modifier::BOLD),
            hint_key: fg(PAPER).bg(GREY),
            hint_text: fg(GREY),
            help: Style::new().fg(INK).bg(Color::Indexed(255)),
            help_key: fg(BLUE).add_modifier(Modifier::BOLD),
            help_text: fg(INK),
            search: fg(BROWN).add_modifier(Modifier::BOLD),
        }
    }

    /// A style-free theme (every role is `Style::default()`), for tests that compare text only.
    #[must_use]
    pub fn plain() -> Self {
        let mut t = Self::dark();
        t.name = "plain".into();
        for role in Self::ROLES {
            if let Some(s) = t.role_mut(role) {
                *s = Style::new();
            }
        }
        t
    }

    /// A built-in theme by name.
    #[must_use]
    pub fn builtin(name: &str) -> Option<Self> {
        match name {
            "dark" => Some(Self::dark()),
            "light" => Some(Self::light()),
            "plain" => Some(Self::plain()),
            _ => None,
        }
    }

    /// Applies a TOML patch; `path` only names the source in errors.
    pub fn patch(&mut self, text: &str, path: &str) -> Result<(), ThemeError> {
        let file: ThemeFile =
            toml::from_str(text).map_err(|cause| ThemeError::Toml { path: path.into(), cause })?;
        for (role, spec) in file.roles {
            let Some(style) = self.role_mut(&role) else {
                return Err(ThemeError::UnknownRole { path: path.into(), role });
            };
            *style = spec.apply(*style).map_err(|value| ThemeError::BadColour {
                path: path.into(),
                role: role.clone(),
                value,
            })?;
        }
        Ok(())
    }

    /// Parses a theme file: its `base` (default: the built-in named like the file, else dark)
    /// patched with its roles.
    pub fn from_toml(name: &str, text: &str, path: &str) -> Result<Self, ThemeError> {
        let file: ThemeFile =
            toml::from_str(text).map_err(|cause| ThemeError::Toml { path: path.into(), cause })?;
        let mut theme = match &file.base {
            Some(base) => Self::builtin(base)
                .ok_or_else(|| ThemeError::UnknownBase { path: path.into(), base: base.clone() })?,
            None => Self::builtin(name).unwrap_or_else(Self::dark),
        };
        theme.patch(text, path)?;
        theme.name = name.to_string();
        Ok(theme)
    }

    /// Loads theme `name`: `dir/NAME.toml` if it exists, else the built-in of that name.
    pub fn load(dir: Option<&Path>, name: &str) -> Result<Self, ThemeError> {
        let path = dir.map(|d| d.join(format!("{name}.toml")));
        match path {
            Some(p) if p.exists() => {
                let text = std::fs::read_to_string(&p)
                    .map_err(|cause| ThemeError::Io { path: p.display().to_string(), cause })?;
                Self::from_toml(name, &text, &p.display().to_string())
            }
            _ => Self::builtin(name).ok_or_else(|| ThemeError::Io {
                path: name.to_string(),
                cause: std::io::Error::new(std::io::ErrorKind::NotFound, "no such theme"),
            }),
        }
    }

    /// Theme names available: the built-ins plus every `*.toml` in `dir`, sorted, unique.
    #[must_use]
    pub fn available(dir: Option<&Path>) -> Vec<String> {
        let mut names: Vec<String> = vec!["dark".into(), "light".into()];
        if let Some(Ok(entries)) = dir.map(std::fs::read_dir) {
            for e in entries.flatten() {
                let p = e.path();
                if p.extension().is_some_and(|x| x == "toml") {
                    if let Some(stem) = p.file_stem().and_then(|s| s.to_str()) {
                        names.push(stem.to_string());
                    }
                }
            }
        }
        names.sort();
        names.dedup();
        names
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ThemeFile {
    #[serde(default)]
    base: Option<String>,
    #[serde(default)]
    roles: BTreeMap<String, StyleSpec>,
}

/// One role in a theme file; absent fields keep the base style's value.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct StyleSpec {
    fg: Option<String>,
    bg: Option<String>,
    bold: Option<bool>,
    dim: Option<bool>,
    italic: Option<bool>,
    underlined: Option<bool>,
    reversed: Option<bool>,
    crossed_out: Option<bool>,
}

impl StyleSpec {
    /// The base style with this spec's fields applied; Err(value) names a bad colour.
    fn apply(&self, mut style: Style) -> Result<Style, String> {
        let colour = |v: &String| Color::from_str(v).map_err(|_| v.clone());
        if let Some(c) = &self.fg {
            style.fg = Some(colour(c)?);
        }
        if let Some(c) = &self.bg {
            style.bg = Some(colour(c)?);
        }
        for (flag, m) in [
            (self.bold, Modifier::BOLD),
            (self.dim, Modifier::DIM),
            (self.italic, Modifier::ITALIC),
            (self.underlined, Modifier::UNDERLINED),
            (self.reversed, Modifier::REVERSED),
            (self.crossed_out, Modifier::CROSSED_OUT),
        ] {
            match flag {
                Some(true) => {
                    style = style.add_modifier(m);
                    style.sub_modifier.remove(m);
                }
                Some(false) => {
                    style = style.remove_modifier(m);
                    style.add_modifier.remove(m);
                }
                None => {}
            }
        }
        Ok(style)
    }
}

/// Watches a themes directory; a `()` arrives on the receiver after any `.toml` file in it is
/// written, created or removed. Dropping the watcher stops it.
pub struct ThemeWatcher {
    _watcher: notify::RecommendedWatcher,
    pub dir: PathBuf,
}

impl ThemeWatcher {
    pub fn new(dir: &Path) -> Result<(Self, mpsc::Receiver<()>), ThemeError> {
        use notify::Watcher;
        let (tx, rx) = mpsc::channel();
        let mut watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
            if let Ok(ev) = res {
                let relevant = !ev.kind.is_access()
                    && ev.paths.iter().any(|p| p.extension().is_some_and(|x| x == "toml"));
                if relevant {
                    let _ = tx.send(());
                }
            }
        })
        .map_err(ThemeError::Watch)?;
        watcher.watch(dir, notify::RecursiveMode::NonRecursive).map_err(ThemeError::Watch)?;
        Ok((Self { _watcher: watcher, dir: dir.to_path_buf() }, rx))
    }
}

/// A colour's sRGB value in the xterm default palette (`None`: the terminal's default colour,
/// which a theme cannot know).
#[must_use]
pub fn rgb(c: Color) -> Option<(u8, u8, u8)> {
    const BASE: [(u8, u8, u8); 16] = [
        (0, 0, 0),
        (205, 0, 0),
        (0, 205, 0),
        (205, 205, 0),
        (0, 0, 238),
        (205, 0, 205),
        (0, 205, 205),
        (229, 229, 229),
        (127, 127, 127),
        (255, 0, 0),
        (0, 255, 0),
        (255, 255, 0),
        (92, 92, 255),
        (255, 0, 255),
        (0, 255, 255),
        (255, 255, 255),
    ];
    let named = |i: usize| Some(BASE[i]);
    match c {
        Color::Reset => None,
        Color::Black => named(0),
        Color::Red => named(1),
        Color::Green => named(2),
        Color::Yellow => named(3),
        Color::Blue => named(4),
        Color::Magenta => named(5),
        Color::Cyan => named(6),
        Color::Gray => named(7),
        Color::DarkGray => named(8),
        Color::LightRed => named(9),
        Color::LightGreen => named(10),
        Color::LightYellow => named(11),
        Color::LightBlue => named(12),
        Color::LightMagenta => named(13),
        Color::LightCyan => named(14),
        Color::White => named(15),
        Color::Rgb(r, g, b) => Some((r, g, b)),
        Color::Indexed(i @ 0..=15) => named(usize::from(i)),
        Color::Indexed(i @ 16..=231) => {
            let level = |v: u8| if v == 0 { 0 } else { 55 + 40 * v };
            let i = i - 16;
            Some((level(i / 36), level((i / 6) % 6), level(i % 6)))
        }
        Color::Indexed(i) => {
            let v = 8 + 10 * (i - 232);
            Some((v, v, v))
        }
    }
}

/// WCAG contrast ratio of two colours (1 to 21).
#[must_use]
pub fn contrast(a: (u8, u8, u8), b: (u8, u8, u8)) -> f64 {
    let lum = |(r, g, b): (u8, u8, u8)| {
        let ch = |v: u8| {
            let c = f64::from(v) / 255.0;
            if c <= 0.039_28 { c / 12.92 } else { ((c + 0.055) / 1.055).powf(2.4) }
        };
        0.2126 * ch(r) + 0.7152 * ch(g) + 0.0722 * ch(b)
    };
    let (x, y) = (lum(a), lum(b));
    (x.max(y) + 0.05) / (x.min(y) + 0.05)
}
