//! The screen a narrator reads (#53): the hint bar from the live keymap, fitted to the width;
//! the prompts as line editors; the layout at 80×24, 120×36 and 200×60 with a segment that
//! carries flags, a note and a long source (insta snapshots on ratatui's `TestBackend`); the
//! selected take's waveform with the playhead. The state is built by hand: nothing depends
//! on timing.

use std::sync::Arc;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use lectern::review::{CastingOverride, Review};
use lectern::tui::app::{App, AppConfig, Command, Mode, Msg, RowInit};
use lectern::tui::casting::RowCasting;
use lectern::tui::keymap::KeyMap;
use lectern::tui::theme::Theme;
use lectern::tui::view;
use lectern::tui::view::hints;
use lectern_engine::protocol::{Casting, Mode as SpeechMode};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;

fn key(c: char) -> Msg {
    Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE))
}

fn ctrl(c: char) -> Msg {
    Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL))
}

fn code(c: KeyCode) -> Msg {
    Msg::Key(KeyEvent::new(c, KeyModifiers::NONE))
}

fn row(id: u64, source: &str, text: &str) -> RowInit {
    RowInit {
        id,
        chapter: 0,
        text: text.to_string(),
        source: source.to_string(),
        pause_after_ms: 300,
        default_seed: 1000 + id,
        takes: Vec::new(),
        chosen: None,
        review: Review::Unheard,
        edited_since_approval: false,
        note: String::new(),
        cast: Default::default(),
    }
}

fn app_with(keymap: KeyMap) -> App {
    let mut app = App::new(AppConfig { autoplay: false, ..AppConfig::default() }, keymap);
    app.set_rows(vec![row(1, "The ferry left at dawn.", "The ferry left at dawn.")]);
    app
}

/// The buffer as text, one line per row, trailing spaces trimmed.
fn lines(buf: &Buffer) -> String {
    let area = buf.area;
    let mut s = String::new();
    for y in 0..area.height {
        let line: String = (0..area.width).map(|x| buf[(x, y)].symbol()).collect();
        s.push_str(line.trim_end());
        s.push('\n');
    }
    s
}

fn draw_app(app: &App, w: u16, h: u16) -> Buffer {
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    t.draw(|f| view::draw(app, &Theme::plain(), f)).unwrap();
    t.backend().buffer().clone()
}

/// The bottom line of a drawn screen.
fn hint_bar(app: &App, w: u16, h: u16) -> String {
    lines(&draw_app(app, w, h)).lines().last().unwrap_or_default().to_string()
}

/// Hints as the bar draws them: ` KEY  what ` each.
fn drawn(hints: &[(String, &str)]) -> String {
    hints.iter().map(|(k, l)| format!(" {k}  {l} ")).collect::<String>().trim_end().to_string()
}

#[test]
fn the_hint_bar_follows_a_rebound_keymap() {
    let wide = hint_bar(&app_with(KeyMap::default()), 200, 60);
    assert!(wide.contains(" s  re-seed "), "{wide}");
    assert!(wide.contains(" c  choose "), "{wide}");
    let mut keymap = KeyMap::default();
    keymap.patch("[bindings]\ns = \"none\"\nc = \"none\"\nx = \"choose_take\"\n").unwrap();
    let bar = hint_bar(&app_with(keymap), 200, 60);
    assert!(!bar.contains("re-seed"), "an unbound action has no hint: {bar}");
    assert!(bar.contains(" x  choose "), "the rebound key shows: {bar}");
    assert!(!bar.contains(" c  choose "), "{bar}");
}

#[test]
fn the_hint_bar_fits_the_width_dropping_whole_hints() {
    let keymap = KeyMap::default();
    let all = hints::fitted(&keymap, usize::MAX, false);
    for width in [100u16, 120, 160, 200] {
        let fitted = hints::fitted(&keymap, usize::from(width), false);
        let text = drawn(&fitted);
        assert!(text.chars().count() <= usize::from(width), "{width}: {text}");
        // Whole hints only, in the bar's order: each one shown is one of all, in order.
        let mut rest = all.iter();
        assert!(fitted.iter().all(|h| rest.any(|a| a == h)), "{width}: {fitted:?}");
        // Play, help and quit are the last to go.
        for l in ["play/pause", "help", "quit"] {
            assert!(fitted.iter().any(|(_, d)| *d == l), "{width}: {l} missing: {text}");
        }
        let bar = hint_bar(&app_with(KeyMap::default()), width, 40);
        assert_eq!(bar, text, "the drawn bar is the fitted hints at {width} columns");
    }
    // Where the layout hides the segment panel its toggle is hinted, ahead of most others.
    for width in [40u16, 60, 80] {
        let fitted = hints::fitted(&keymap, usize::from(width), true);
        let text = drawn(&fitted);
        assert!(text.chars().count() <= usize::from(width), "{width}: {text}");
        let toggle = fitted.contains(&("d".to_string(), "segment"));
        assert!(toggle || width < 60, "{width}: {text}");
        assert_eq!(hint_bar(&app_with(KeyMap::default()), width, 24), text, "{width}");
    }
    let at_80 = hints::fitted(&keymap, 80, true);
    assert!(at_80.len() < all.len() && at_80.len() >= 5, "{at_80:?}");
}

/// The prompts are line editors: Ctrl-U clears, Ctrl-W deletes a word, ←/→ move the cursor
/// (typing inserts there), ↑/↓ recall what was entered before.
#[test]
fn prompts_edit_like_a_line_editor_with_history() {
    let mut app = app_with(KeyMap::default());
    let note = |app: &App| match &app.mode {
        Mode::Note(p) => p.input.value().to_string(),
        other => panic!("no note prompt: {other:?}"),
    };
    app.update(key('N'));
    for c in "breath at end".chars() {
        app.update(key(c));
    }
    app.update(ctrl('w'));
    assert_eq!(note(&app), "breath at ");
    app.update(ctrl('u'));
    assert_eq!(note(&app), "", "Ctrl-U clears, it does not type u");
    for c in "too fast".chars() {
        app.update(key(c));
    }
    for _ in 0.." fast".len() {
        app.update(code(KeyCode::Left));
    }
    app.update(key('o'));
    assert_eq!(note(&app), "tooo fast", "typing goes in at the cursor");
    let cmds = app.update(code(KeyCode::Enter));
    assert!(
        matches!(cmds.as_slice(), [Command::SetNote { note, .. }] if note == "tooo fast"),
        "{cmds:?}"
    );
    // Again, from a cleared prompt: ↑ recalls the last note, ↓ goes back to what was typed.
    app.update(key('N'));
    app.update(ctrl('u'));
    app.update(key('x'));
    app.update(code(KeyCode::Up));
    assert_eq!(note(&app), "tooo fast");
    app.update(code(KeyCode::Down));
    assert_eq!(note(&app), "x");
    app.update(code(KeyCode::Esc));
    assert!(matches!(app.mode, Mode::Normal));
    assert_eq!(app.rows[0].note, "tooo fast", "esc keeps the saved note");
}

/// The prompt's text is drawn with its cursor; a long text scrolls so the cursor stays in view.
#[test]
fn a_long_prompt_keeps_its_cursor_in_view() {
    let mut app = app_with(KeyMap::default());
    app.update(key('/'));
    let long = "the keeper climbed the stairs every evening at dusk";
    for c in long.chars() {
        app.update(key(c));
    }
    let bar = hint_bar(&app, 60, 24);
    assert!(bar.starts_with('/'), "{bar}");
    assert!(bar.contains("at dusk"), "the end being typed is in view: {bar}");
    assert!(bar.contains("match(es)"), "{bar}");
    assert!(bar.chars().count() <= 60, "{bar}");
}

/// Sources of the scene's rows; the third is the one under study.
const SOURCES: [&str; 6] = [
    "Chapter Two. The Crossing.",
    "The ferry was late.",
    "On 14 March the ferry left Harwich at 6:05 with $12.50 in the captain's tin, and nobody \
     aboard — not the cook, not the two boys from the village, not even the captain himself — \
     could say where it would put in before the weather turned.",
    "Rain came in from the east.",
    "The cook said nothing.",
    "Nobody slept.",
];

/// What the model reads for the third row: its numbers and symbols spoken.
const SPOKEN_THIRD: &str = "On the fourteenth of March the ferry left Harwich at six oh five \
     with twelve dollars and fifty cents in the captain's tin, and nobody aboard, not the cook, \
     not the two boys from the village, not even the captain himself, could say where it would \
     put in before the weather turned.";

fn figures(lufs: f64) -> lectern::quality::TakeFigures {
    lectern::quality::TakeFigures {
        voiced_s: 4.0,
        text_units: 10,
        loudness_lufs: Some(lufs),
        similarity: Some(0.8),
    }
}

/// A saved take of row `i`: `tokens` long, a tone as its samples, measured as `lufs`.
fn saved(app: &App, i: usize, tokens: usize, lufs: f64) -> Msg {
    let samples: Vec<f32> = (0..tokens * 960)
        .map(|k| {
            let envelope = (k as f32 / (tokens * 960) as f32 * std::f32::consts::PI).sin();
            0.4 * envelope * (std::f32::consts::TAU * 220.0 * k as f32 / 24_000.0).sin()
        })
        .collect();
    crate::tui_common::saved_take(app, i, 10 + i as u64, samples, Some(figures(lufs)))
}

/// Six rendered segments; the third selected: a long source whose spoken form differs, recast
/// to another voice, a note, a take implausibly short for its text (⚠) and quieter than the
/// book (◆).
fn scene() -> App {
    let cfg = AppConfig {
        manuscript: "crossing.md".into(),
        voice: "narrator".into(),
        model: "tiny".into(),
        project: Some("crossing".into()),
        autoplay: false,
        ..AppConfig::default()
    };
    let mut app = App::new(cfg, KeyMap::default());
    let rows = SOURCES
        .iter()
        .enumerate()
        .map(|(i, source)| {
            let mut r = row(i as u64 + 1, source, if i == 2 { SPOKEN_THIRD } else { source });
            if i == 2 {
                r.note = "breathe before “not even”; the dashes want a pause".into();
                r.cast = RowCasting {
                    casting: Casting {
                        voice: "alto".into(),
                        mode: SpeechMode::Instruct("Warmly.".into()),
                        pace: 1.0,
                    },
                    character: None,
                    recast: CastingOverride {
                        voice: Some("alto".into()),
                        style: Some("Warmly.".into()),
                    },
                };
            }
            r
        })
        .collect();
    app.set_rows(rows);
    for i in 0..SOURCES.len() {
        let (tokens, lufs) = if i == 2 { (20, -25.0) } else { (40, -20.0) };
        let msg = saved(&app, i, tokens, lufs);
        app.update(msg);
    }
    app.update(Msg::Log("project: 6 segment(s) have their takes, 0 to render".into()));
    app.update(code(KeyCode::Down));
    app.update(code(KeyCode::Down));
    assert_eq!(app.selected, 2);
    app
}

/// What the segment panel must show of the scene's third segment, wrapped or not.
const DETAILS: [&str; 5] = [
    "captain himself",
    "spoken: On the fourteenth",
    "alto",
    "note: breathe",
    "⚠ take is implausibly short",
];

/// The screen's text with its borders and line breaks taken out, for looking up wrapped text.
fn flat(screen: &str) -> String {
    screen.lines().flat_map(|l| l.split('│')).map(str::trim).collect::<Vec<_>>().join(" ")
}

/// At 120×36 and 200×60 the segment panel grows (the log shrinks) to show the whole source,
/// its spoken form, the casting, the note and the flags.
#[test]
fn the_segment_panel_grows_to_show_all_it_has() {
    let app = scene();
    for (w, h, name) in [(120, 36, "crossing_120x36"), (200, 60, "crossing_200x60")] {
        let screen = lines(&draw_app(&app, w, h));
        insta::assert_snapshot!(name, screen);
        let text = flat(&screen);
        for want in
            DETAILS.iter().chain(&["◆ outlier in this book: quiet", "before the weather turned."])
        {
            assert!(text.contains(want), "{w}x{h}: {want:?} missing:\n{screen}");
        }
        assert!(screen.contains("┌ log"), "the log keeps a place:\n{screen}");
    }
}

/// At 80×24 list rows show their text first and their tags after; `d` shows the segment panel
/// in the charts' place, and again gives them back.
#[test]
fn at_80x24_rows_lead_with_text_and_the_segment_panel_is_a_key_away() {
    let mut app = scene();
    let screen = lines(&draw_app(&app, 80, 24));
    insta::assert_snapshot!("crossing_80x24", screen);
    let third = screen.lines().find(|l| l.contains("  3 ")).expect("row 3");
    let text_at = third.find("On 14 March").expect("the text");
    let tag_at = third.find('⚠').expect("the flag");
    assert!(text_at < tag_at, "text first, tags after: {third}");
    assert!(third.contains("On 14 March the fe"), "most of the row is text: {third}");
    assert!(third.contains("⚠◆"), "the flag and outlier marks: {third}");
    assert!(screen.contains("crossing.md") && screen.contains("0/6 approved"), "{screen}");
    app.update(key('d'));
    let screen = lines(&draw_app(&app, 80, 24));
    insta::assert_snapshot!("crossing_80x24_segment", screen);
    assert!(screen.contains("┌ segment 3"), "{screen}");
    assert!(!screen.contains("profiler"), "{screen}");
    let text = flat(&screen);
    for want in ["weather turned.", "note: breathe", "⚠ take is implausibly short"] {
        assert!(text.contains(want), "{want:?} missing:\n{screen}");
    }
    app.update(key('d'));
    assert!(lines(&draw_app(&app, 80, 24)).contains("profiler"));
}

/// The selected take's waveform sits at the foot of the segment panel; its envelope is made
/// once when the take's samples arrive (not per frame), and the playhead's mark follows the
/// player's position in the take.
#[test]
fn the_selected_takes_waveform_shows_its_playhead() {
    use lectern::audio::player::{NowPlaying, PlayState, PlayerStatus};
    use lectern::tui::view::waveform::PLAYHEAD_MARK;
    let mut app = scene();
    app.update(code(KeyCode::Down));
    assert_eq!(app.selected, 3);
    assert_eq!(app.envelopes.len(), SOURCES.len(), "one envelope per take, made on arrival");
    let take = app.rows[3].takes[0].id;
    let before = Arc::clone(app.envelopes.get(take).unwrap());
    let mark_column = |app: &App| {
        let screen = lines(&draw_app(app, 120, 36));
        let at = screen.lines().position(|l| l.contains(PLAYHEAD_MARK))?;
        let line = screen.lines().nth(at)?;
        let above = screen.lines().nth(at - 1)?;
        assert!(above.chars().any(|c| ('▁'..='█').contains(&c)), "waveform above:\n{screen}");
        line.chars().position(|c| c.to_string() == PLAYHEAD_MARK)
    };
    assert_eq!(mark_column(&app), None, "no playhead while the take is not playing");
    let len = app.rows[3].takes[0].len_samples();
    let mut columns = Vec::new();
    for k in 1..=3 {
        app.update(Msg::Player(PlayerStatus {
            state: PlayState::Playing,
            now_playing: Some(NowPlaying {
                take_id: take,
                segment_id: app.rows[3].id,
                pos_samples: len * k / 4,
                len_samples: len,
            }),
            ..PlayerStatus::default()
        }));
        columns.push(mark_column(&app).expect("the playhead's mark"));
    }
    assert!(columns.windows(2).all(|w| w[0] < w[1]), "the mark moves forward: {columns:?}");
    assert!(Arc::ptr_eq(&before, app.envelopes.get(take).unwrap()), "made once, not per frame");
}

#[test]
fn a_segment_edited_since_approval_is_marked_in_the_list_the_panel_and_the_title() {
    let mut app =
        App::new(AppConfig { autoplay: false, ..AppConfig::default() }, KeyMap::default());
    let edited = RowInit {
        review: Review::Pickup,
        edited_since_approval: true,
        note: "Breath noise before Mara; redo".into(),
        ..row(2, "Mara ran home at last.", "Mara ran home at last.")
    };
    let pickup = RowInit { review: Review::Pickup, ..row(3, "She slept.", "She slept.") };
    app.set_rows(vec![
        row(1, "The ferry left at dawn.", "The ferry left at dawn."),
        edited,
        pickup,
    ]);
    for i in 0..3 {
        app.update(saved(&app, i, 20, -20.0));
    }
    app.update(code(KeyCode::Down));
    let screen = lines(&draw_app(&app, 160, 40));
    assert!(screen.contains("0/3 approved · 1 pickup(s) · 1 edited since approval"), "{screen}");
    let list_row = |n: &str| screen.lines().find(|l| l.contains(n)).unwrap_or_default().to_string();
    assert!(list_row("Mara ran home").contains(" e "), "{}", list_row("Mara ran home"));
    assert!(
        list_row("She slept.").contains(" ! "),
        "a pickup keeps its mark: {}",
        list_row("She slept.")
    );
    assert!(screen.contains("· edited since approval"), "the panel names it:\n{screen}");
    assert!(screen.contains("note: Breath noise before Mara; redo"), "{screen}");

    // Approving it again clears the mark: it is approved, nothing else.
    let cmds = app.update(key('a'));
    assert!(
        matches!(cmds.as_slice(), [Command::SetReview { segment: 2, review: Review::Approved }]),
        "{cmds:?}"
    );
    let screen = lines(&draw_app(&app, 160, 40));
    assert!(screen.contains("1/3 approved · 1 pickup(s)"), "{screen}");
    assert!(!screen.contains("edited since approval"), "{screen}");
}
