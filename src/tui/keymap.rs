//! Key bindings: defaults in code, optionally patched by a TOML file.
//!
//! ```toml
//! # keymap.toml: a listed key replaces its default binding; "none" unbinds it.
//! [bindings]
//! "x" = "quit"
//! "ctrl-r" = "reseed"
//! "q" = "none"
//! ```
//!
//! Key names: a single character (`j`, `L`, `?`, `[`), `space`, `enter`, `esc`, `tab`,
//! `backtab`, `backspace`, `up`, `down`, `left`, `right`, `pageup`, `pagedown`, `home`, `end`,
//! `f1`..`f12`, with optional `ctrl-` / `alt-` prefixes.

use std::collections::HashMap;
use std::path::Path;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde::Deserialize;
use serde::de::IntoDeserializer;

use super::action::Action;

/// Errors reading a keymap file.
#[derive(Debug, thiserror::Error)]
pub enum KeymapError {
    // `cause`, not `source`: the message shows it (see `text::TextError::Io`).
    #[error("keymap {path}: {cause}")]
    Io { path: String, cause: std::io::Error },
    #[error("keymap: {0}")]
    Toml(toml::de::Error),
    #[error("keymap: unknown key {0:?}")]
    UnknownKey(String),
    #[error("keymap: unknown action {0:?}")]
    UnknownAction(String),
}

/// A key with its modifiers, normalised (shift is part of the character).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KeyChord {
    pub code: KeyCode,
    pub mods: KeyModifiers,
}

impl KeyChord {
    #[must_use]
    pub fn new(code: KeyCode, mods: KeyModifiers) -> Self {
        let mut mods = mods & (KeyModifiers::CONTROL | KeyModifiers::ALT | KeyModifiers::SHIFT);
        if matches!(code, KeyCode::Char(_) | KeyCode::BackTab) {
            mods.remove(KeyModifiers::SHIFT);
        }
        Self { code, mods }
    }

    /// Parses a key name (see the module docs).
    pub fn parse(s: &str) -> Result<Self, KeymapError> {
        let mut mods = KeyModifiers::NONE;
        let mut rest = s;
        loop {
            if let Some(r) = rest.strip_prefix("ctrl-") {
                mods |= KeyModifiers::CONTROL;
                rest = r;
            } else if let Some(r) = rest.strip_prefix("alt-") {
                mods |= KeyModifiers::ALT;
                rest = r;
            } else {
                break;
            }
        }
        let mut chars = rest.chars();
        let code = match (chars.next(), chars.next()) {
            (Some(c), None) => KeyCode::Char(c),
            _ => match rest.to_ascii_lowercase().as_str() {
                "space" => KeyCode::Char(' '),
                "enter" | "return" => KeyCode::Enter,
                "esc" | "escape" => KeyCode::Esc,
                "tab" => KeyCode::Tab,
                "backtab" => KeyCode::BackTab,
                "backspace" => KeyCode::Backspace,
                "up" => KeyCode::Up,
                "down" => KeyCode::Down,
                "left" => KeyCode::Left,
                "right" => KeyCode::Right,
                "pageup" | "pgup" => KeyCode::PageUp,
                "pagedown" | "pgdn" => KeyCode::PageDown,
                "home" => KeyCode::Home,
                "end" => KeyCode::End,
                f if f.starts_with('f')
                    && f[1..].parse::<u8>().is_ok_and(|n| (1..=12).contains(&n)) =>
                {
                    KeyCode::F(f[1..].parse().unwrap_or(1))
                }
                _ => return Err(KeymapError::UnknownKey(s.to_string())),
            },
        };
        Ok(Self::new(code, mods))
    }

    /// The name [`KeyChord::parse`] reads back.
    #[must_use]
    pub fn name(&self) -> String {
        let mut s = String::new();
        if self.mods.contains(KeyModifiers::CONTROL) {
            s.push_str("ctrl-");
        }
        if self.mods.contains(KeyModifiers::ALT) {
            s.push_str("alt-");
        }
        match self.code {
            KeyCode::Char(' ') => s.push_str("space"),
            KeyCode::Char(c) => s.push(c),
            KeyCode::Enter => s.push_str("enter"),
            KeyCode::Esc => s.push_str("esc"),
            KeyCode::Tab => s.push_str("tab"),
            KeyCode::BackTab => s.push_str("backtab"),
            KeyCode::Backspace => s.push_str("backspace"),
            KeyCode::Up => s.push('↑'),
            KeyCode::Down => s.push('↓'),
            KeyCode::Left => s.push('←'),
            KeyCode::Right => s.push('→'),
            KeyCode::PageUp => s.push_str("pgup"),
            KeyCode::PageDown => s.push_str("pgdn"),
            KeyCode::Home => s.push_str("home"),
            KeyCode::End => s.push_str("end"),
            KeyCode::F(n) => s.push_str(&format!("f{n}")),
            other => s.push_str(&format!("{other:?}")),
        }
        s
    }
}

impl From<&KeyEvent> for KeyChord {
    fn from(k: &KeyEvent) -> Self {
        Self::new(k.code, k.modifiers)
    }
}

/// The default bindings (the issue's key list plus a few extras).
pub const DEFAULTS: &[(&str, Action)] = &[
    ("space", Action::TogglePlay),
    ("enter", Action::PlayFromSegment),
    ("r", Action::Replay),
    ("j", Action::MoveDown),
    ("down", Action::MoveDown),
    ("k", Action::MoveUp),
    ("up", Action::MoveUp),
    ("pagedown", Action::PageDown),
    ("ctrl-d", Action::PageDown),
    ("pageup", Action::PageUp),
    ("ctrl-u", Action::PageUp),
    ("g", Action::Top),
    ("home", Action::Top),
    ("G", Action::Bottom),
    ("end", Action::Bottom),
    ("s", Action::Reseed),
    ("t", Action::CycleTake),
    ("c", Action::ChooseTake),
    ("a", Action::ToggleApproved),
    ("p", Action::TogglePickup),
    ("N", Action::EditNote),
    ("w", Action::Audition),
    ("v", Action::PickVoice),
    ("i", Action::EditStyle),
    ("V", Action::ToggleVoices),
    ("d", Action::ToggleDetails),
    ("P", Action::TogglePickups),
    ("R", Action::Rerender),
    ("[", Action::NfeDown),
    ("]", Action::NfeUp),
    ("{", Action::GroupDown),
    ("}", Action::GroupUp),
    ("l", Action::LanesDown),
    ("L", Action::LanesUp),
    ("-", Action::VolumeDown),
    ("+", Action::VolumeUp),
    ("=", Action::VolumeUp),
    ("f", Action::ToggleFreeze),
    ("/", Action::Search),
    ("n", Action::SearchNext),
    ("<", Action::ScrollLogUp),
    (">", Action::ScrollLogDown),
    ("T", Action::CycleTheme),
    ("?", Action::ToggleHelp),
    ("q", Action::Quit),
    ("ctrl-c", Action::Quit),
];

#[derive(Deserialize)]
struct KeymapFile {
    #[serde(default)]
    bindings: HashMap<String, String>,
}

/// Key → action.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyMap {
    bindings: HashMap<KeyChord, Action>,
}

impl Default for KeyMap {
    fn default() -> Self {
        let bindings =
            DEFAULTS.iter().filter_map(|(k, a)| KeyChord::parse(k).ok().map(|c| (c, *a))).collect();
        Self { bindings }
    }
}

impl KeyMap {
    /// The action bound to a key, if any.
    #[must_use]
    pub fn lookup(&self, key: &KeyEvent) -> Option<Action> {
        self.bindings.get(&KeyChord::from(key)).copied()
    }

    /// Applies a TOML patch (see the module docs) over the current bindings.
    pub fn patch(&mut self, text: &str) -> Result<(), KeymapError> {
        let file: KeymapFile = toml::from_str(text).map_err(KeymapError::Toml)?;
        for (key, action) in file.bindings {
            let chord = KeyChord::parse(&key)?;
            if action == "none" {
                self.bindings.remove(&chord);
                continue;
            }
            let de: serde::de::value::StrDeserializer<'_, serde::de::value::Error> =
                action.as_str().into_deserializer();
            let action = Action::deserialize(de).map_err(|_| KeymapError::UnknownAction(action))?;
            self.bindings.insert(chord, action);
        }
        Ok(())
    }

    /// The defaults patched by the file at `path`.
    pub fn from_file(path: &Path) -> Result<Self, KeymapError> {
        let text = std::fs::read_to_string(path)
            .map_err(|cause| KeymapError::Io { path: path.display().to_string(), cause })?;
        let mut map = Self::default();
        map.patch(&text)?;
        Ok(map)
    }

    /// Names of the keys bound to `action`, in the order of [`DEFAULTS`] then the rest sorted.
    #[must_use]
    pub fn keys_for(&self, action: Action) -> Vec<String> {
        let mut keys: Vec<String> =
            self.bindings.iter().filter(|(_, a)| **a == action).map(|(k, _)| k.name()).collect();
        let rank = |name: &String| {
            DEFAULTS
                .iter()
                .position(|(k, _)| KeyChord::parse(k).is_ok_and(|c| c.name() == *name))
                .unwrap_or(usize::MAX)
        };
        keys.sort_by(|a, b| rank(a).cmp(&rank(b)).then_with(|| a.cmp(b)));
        keys
    }
}
