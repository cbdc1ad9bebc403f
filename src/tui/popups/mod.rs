//! The workstation's modals, one file each (a model: gitui's `src/popups/`): each owns its
//! state, turns keys into an outcome and draws its line in the hint bar. A leaf of the TUI: no
//! popup knows the App; the App opens them inside its [`super::app::Mode`] and acts on what
//! they answer.
//!
//! - [`prompt`]: the line editor every typed prompt uses (`tui-input`, with history);
//! - [`note`], [`style`], [`search`]: the prompts of `N`, `i` and `/`;
//! - [`audition`], [`voice`]: the pickers of `w` and `v`.

pub mod audition;
pub mod note;
pub mod prompt;
pub mod search;
pub mod style;
pub mod voice;

use crossterm::event::KeyCode;

/// What a picker made of a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PickerKey {
    /// The cursor moved, or the key meant nothing here.
    Moved,
    /// Close the picker, nothing picked.
    Close,
    /// The choice at this index.
    Pick(usize),
}

/// Moves a picker's cursor over `n` choices: forward and back wrap.
fn step(at: usize, n: usize, forward: bool) -> usize {
    let n = n.max(1);
    if forward { (at + 1) % n } else { (at + n - 1) % n }
}

/// Enter picks, esc or `q` closes; anything else is for the picker's own movement keys.
fn picker_common(code: KeyCode, at: usize) -> Option<PickerKey> {
    match code {
        KeyCode::Esc | KeyCode::Char('q') => Some(PickerKey::Close),
        KeyCode::Enter => Some(PickerKey::Pick(at)),
        _ => None,
    }
}
