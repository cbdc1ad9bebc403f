//! The hint bar of the normal mode: the most useful actions with the keys the live keymap binds
//! them to (an unbound action has no hint; a rebound one shows its new key), fitted to the
//! width by leaving out the least useful hints whole, never cutting one.

use ratatui::text::{Line, Span};

use crate::tui::action::Action;
use crate::tui::keymap::KeyMap;
use crate::tui::theme::Theme;

/// The hints, in the order shown, each with its rank: when the bar is short, the highest rank
/// goes first.
const HINTS: &[(Action, &str, u8)] = &[
    (Action::TogglePlay, "play/pause", 0),
    (Action::ToggleDetails, "segment", 3),
    (Action::PlayFromSegment, "play from", 3),
    (Action::Reseed, "re-seed", 4),
    (Action::CycleTake, "takes", 5),
    (Action::ChooseTake, "choose", 6),
    (Action::ToggleApproved, "approve", 7),
    (Action::TogglePickup, "pickup", 9),
    (Action::EditNote, "note", 10),
    (Action::TogglePickups, "pickups", 8),
    (Action::Search, "search", 11),
    (Action::ToggleHelp, "help", 1),
    (Action::Quit, "quit", 2),
];

/// One hint as drawn: ` KEY ` then ` what `.
fn width_of(key: &str, label: &str) -> usize {
    key.chars().count() + label.chars().count() + 4
}

/// The hints that fit in `width` columns: `(key, label)` in the bar's order, each action under
/// the first key the keymap binds to it. `small`: the layout has no room for the segment panel
/// beside the charts, so its toggle is hinted.
#[must_use]
pub fn fitted(keymap: &KeyMap, width: usize, small: bool) -> Vec<(String, &'static str)> {
    let mut shown: Vec<(String, &'static str, u8)> = HINTS
        .iter()
        .filter(|(a, ..)| small || *a != Action::ToggleDetails)
        .filter_map(|&(a, label, rank)| {
            keymap.keys_for(a).into_iter().next().map(|k| (k, label, rank))
        })
        .collect();
    while shown.iter().map(|(k, l, _)| width_of(k, l)).sum::<usize>() > width {
        let Some(worst) = shown.iter().enumerate().max_by_key(|(_, h)| h.2).map(|(i, _)| i) else {
            break;
        };
        shown.remove(worst);
    }
    shown.into_iter().map(|(k, l, _)| (k, l)).collect()
}

/// The normal mode's bar: the fitted hints, then the player's notice where room is left.
#[must_use]
pub fn line<'a>(
    keymap: &KeyMap,
    notice: Option<&str>,
    theme: &Theme,
    width: usize,
    small: bool,
) -> Line<'a> {
    let hints = fitted(keymap, width, small);
    let used: usize = hints.iter().map(|(k, l)| width_of(k, l)).sum();
    let mut spans = Vec::new();
    for (k, d) in hints {
        spans.push(Span::styled(format!(" {k} "), theme.hint_key));
        spans.push(Span::styled(format!(" {d} "), theme.hint_text));
    }
    if let Some(n) = notice
        && used + 1 + n.chars().count() <= width
    {
        spans.push(Span::styled(format!(" {n}"), theme.notice));
    }
    Line::from(spans)
}
