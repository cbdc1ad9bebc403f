//! Snapshot tests of the views on ratatui's `TestBackend`: the main layout, the help overlay,
//! the reduced layout for small terminals, and every panel with known telemetry. Expected
//! screens are insta snapshots under `tests/it/snapshots/` (`cargo insta review` after a
//! deliberate change). Nothing depends on timing: the state is built by hand.

use lectern::audio::player::{NowPlaying, PlayState, PlayerStatus, SinkInfo};
use lectern::quality::TakeFigures;
use lectern::review::Review;
use lectern::tui::app::{App, AppConfig, Msg, RowInit};
use lectern::tui::keymap::KeyMap;
use lectern::tui::theme::Theme;
use lectern::tui::{layout, view};
use lectern_engine::protocol::{
    EngineEvent, LaneMemory, MemorySample, SegmentState, TelemetrySample,
};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

const TEXTS: [&str; 6] = [
    "Chapter One. The Lighthouse.",
    "The keeper climbed the stairs every evening at dusk.",
    "Nobody in the village remembered when he had arrived.",
    "He spoke little, and only of the weather.",
    "One night the lamp did not turn.",
    "The boats came home by starlight.",
];

fn take(app: &App, i: usize, take_id: u64, tokens: usize) -> Msg {
    take_measured(app, i, take_id, tokens, None)
}

/// A take of row `i` with the quality figures it was saved with.
fn take_measured(
    app: &App,
    i: usize,
    take_id: u64,
    tokens: usize,
    figures: Option<TakeFigures>,
) -> Msg {
    let row = &app.rows[i];
    let hz = 220.0 + (row.seed % 8) as f32 * 55.0;
    let samples: Vec<f32> = (0..tokens * 960)
        .map(|k| 0.3 * (std::f32::consts::TAU * hz * k as f32 / 24_000.0).sin())
        .collect();
    crate::tui_common::saved_take(app, i, take_id, samples, figures)
}

/// A deterministic telemetry sample after the `k`-th group.
fn telemetry(k: u64, lanes_active: usize, audio_s_total: f64) -> TelemetrySample {
    let w = (k % 7) as f64;
    let lm = 0.30 + 0.02 * w;
    let flow = 0.12 + 0.01 * w;
    let voc = 0.05 + 0.005 * w;
    let mib = 1024 * 1024;
    TelemetrySample {
        at_ms: k * 250,
        lm_rtf: lm,
        flow_rtf: flow,
        vocoder_rtf: voc,
        total_rtf: lm + flow + voc,
        avg_lm_rtf: lm,
        avg_flow_rtf: flow,
        avg_vocoder_rtf: voc,
        avg_total_rtf: lm + flow + voc,
        lm_tokens_per_s: 25.0 / lm,
        flow_frames_per_s: 50.0 / flow,
        time_to_first_audio_ms: Some(820),
        audio_s_total,
        lanes: (0..lanes_active)
            .map(|lane| LaneMemory {
                lane,
                used_bytes: (lane as u64 + 1) * 3 * mib,
                capacity_bytes: 24 * mib,
            })
            .collect(),
        memory: MemorySample {
            rss: Some(900 * mib + k * 4 * mib),
            swap: Some(0),
            pss: None,
            phys_footprint: None,
            device_used: None,
            suspect: false,
        },
    }
}

/// A workstation mid-session: two takes rendered, one playing, others in each stage.
fn scene() -> App {
    let cfg = AppConfig {
        manuscript: "lighthouse.md".into(),
        voice: "narrator".into(),
        model: "tiny".into(),
        tiny_model: true,
        autoplay: false,
        ..AppConfig::default()
    };
    let mut app = App::new(cfg, KeyMap::default());
    let rows = TEXTS
        .iter()
        .enumerate()
        .map(|(i, t)| RowInit {
            id: i as u64 + 1,
            chapter: i / 3,
            text: (*t).to_string(),
            source: (*t).to_string(),
            pause_after_ms: 300,
            default_seed: 1000 + i as u64,
            takes: Vec::new(),
            chosen: None,
            review: Review::Unheard,
            edited_since_approval: false,
            note: String::new(),
            cast: Default::default(),
        })
        .collect();
    app.set_rows(rows);
    let t0 = take(&app, 0, 1, 20);
    let t1 = take(&app, 1, 2, 40);
    app.update(t0);
    app.update(t1);
    for (i, st) in [(2, SegmentState::Vocoder), (3, SegmentState::Flow), (4, SegmentState::Lm)] {
        let id = app.rows[i].id;
        app.update(Msg::Engine(EngineEvent::SegmentState { id, state: st }));
    }
    let id5 = app.rows[5].id;
    app.update(Msg::Engine(EngineEvent::SegmentState {
        id: id5,
        state: SegmentState::Failed("out of memory".into()),
    }));
    for k in 1..=12 {
        app.update(Msg::Engine(EngineEvent::Telemetry(telemetry(k, 3, k as f64 * 1.6))));
    }
    app.update(Msg::Engine(EngineEvent::Log("loaded tiny model in 0.4 s".into())));
    app.update(Msg::Player(PlayerStatus {
        sink: SinkInfo::Device {
            name: "alsa:default".into(),
            rate_hz: 24_000,
            channels: 2,
            format: "f32".into(),
        },
        state: PlayState::Playing,
        now_playing: Some(NowPlaying {
            take_id: 2,
            segment_id: app.rows[1].id,
            pos_samples: 24_000 * 3 / 2,
            len_samples: 40 * 960,
        }),
        underruns: 2,
        buffered_ms: 480,
        ..PlayerStatus::default()
    }));
    app.update(Msg::Action(lectern::tui::action::Action::MoveDown));
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

/// The screen against its reviewed snapshot (`tests/it/snapshots/`, managed with insta:
/// `cargo insta review` after a deliberate change, or `INSTA_UPDATE=always` to rewrite).
fn check(name: &str, buf: &Buffer) {
    insta::assert_snapshot!(name, lines(buf));
}

fn draw_app(app: &App, w: u16, h: u16, theme: &Theme) -> Buffer {
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    t.draw(|f| view::draw(app, theme, f)).unwrap();
    t.backend().buffer().clone()
}

fn draw_panel(w: u16, h: u16, f: impl FnOnce(&mut ratatui::Frame, Rect)) -> Buffer {
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    t.draw(|frame| {
        let a = frame.area();
        f(frame, a);
    })
    .unwrap();
    t.backend().buffer().clone()
}

#[test]
fn main_layout() {
    let mut app = scene();
    app.update(Msg::Resize(120, 36));
    check("main_120x36", &draw_app(&app, 120, 36, &Theme::plain()));
}

#[test]
fn main_layout_uses_theme_roles() {
    let mut app = scene();
    app.update(Msg::Resize(120, 36));
    let theme = Theme::dark();
    let buf = draw_app(&app, 120, 36, &theme);
    assert_eq!(buf[(1, 0)].style().bg, theme.title.bg, "title bar");
    // The tiny-model notice is in the title bar, in its own role.
    let title: String = (0..120).map(|x| buf[(x, 0)].symbol().to_string()).collect();
    let at = title.find("tiny random-weight model").expect("notice in the title");
    let x = title[..at].chars().count() as u16;
    assert_eq!(buf[(x, 0)].style().bg, theme.title_notice.bg);
}

#[test]
fn help_overlay() {
    let mut app = scene();
    app.update(Msg::Resize(100, 30));
    app.update(Msg::Action(lectern::tui::action::Action::ToggleHelp));
    check("help_100x30", &draw_app(&app, 100, 30, &Theme::plain()));
}

#[test]
fn small_terminal_gets_the_reduced_layout() {
    let mut app = scene();
    app.update(Msg::Resize(60, 14));
    check("small_60x14", &draw_app(&app, 60, 14, &Theme::plain()));
    app.update(Msg::Resize(20, 5));
    check("tiny_20x5", &draw_app(&app, 20, 5, &Theme::plain()));
}

#[test]
fn the_default_terminal_size_shows_the_profiler_memory_and_kv_panels() {
    let mut app = scene();
    app.update(Msg::Resize(80, 24));
    let buf = draw_app(&app, 80, 24, &Theme::plain());
    check("medium_80x24", &buf);
    let text = lines(&buf);
    for panel in ["profiler · stage RTF", "memory", "KV lanes", "transport", "manuscript"] {
        assert!(text.contains(panel), "{panel} missing at 80×24:\n{text}");
    }
    let a = layout::layout(Rect::new(0, 0, 80, 24), 8);
    assert!(a.medium && !a.compact);
}

/// The light theme on a dark terminal: every cell has the theme's own background and
/// foreground (none left to the terminal's defaults), and every visible glyph stands out from
/// its background (WCAG contrast ≥ 3, the minimum for UI graphics and bold text).
#[test]
fn the_light_theme_sets_every_colour_and_keeps_contrast() {
    use lectern::tui::theme::{contrast, rgb};
    let theme = Theme::light();
    for (w, h) in [(120, 36), (80, 24), (60, 14)] {
        let mut app = scene();
        app.update(Msg::Resize(w, h));
        let buf = draw_app(&app, w, h, &theme);
        for y in 0..h {
            for x in 0..w {
                let cell = &buf[(x, y)];
                let style = cell.style();
                let bg = style.bg.and_then(rgb);
                let fg = style.fg.and_then(rgb);
                assert!(bg.is_some(), "({x},{y}) at {w}x{h}: no background of the theme's");
                assert!(fg.is_some(), "({x},{y}) at {w}x{h}: no foreground of the theme's");
                if cell.symbol().trim().is_empty() {
                    continue;
                }
                let c = contrast(fg.unwrap(), bg.unwrap());
                assert!(
                    c >= 3.0,
                    "({x},{y}) {:?} at {w}x{h}: contrast {c:.2} ({:?} on {:?})",
                    cell.symbol(),
                    style.fg,
                    style.bg
                );
            }
        }
    }
}

#[test]
fn contrast_is_wcags() {
    use lectern::tui::theme::contrast;
    assert!((contrast((0, 0, 0), (255, 255, 255)) - 21.0).abs() < 1e-9);
    assert!((contrast((9, 9, 9), (9, 9, 9)) - 1.0).abs() < 1e-9);
}

#[test]
fn panels_with_known_telemetry() {
    let app = scene();
    let th = Theme::plain();
    check(
        "panel_profiler",
        &draw_panel(72, 8, |f, a| view::telemetry::draw_profiler(&app, &th, f, a)),
    );
    check("panel_memory", &draw_panel(40, 7, |f, a| view::telemetry::draw_memory(&app, &th, f, a)));
    check("panel_lanes", &draw_panel(44, 6, |f, a| view::telemetry::draw_lanes(&app, &th, f, a)));
    check(
        "panel_transport",
        &draw_panel(52, 6, |f, a| view::transport::draw_transport(&app, &th, f, a)),
    );
    check("panel_params", &draw_panel(36, 7, |f, a| view::transport::draw_params(&app, &th, f, a)));
    check("panel_log", &draw_panel(50, 5, |f, a| view::log::draw(&app, &th, f, a)));
    check("panel_segments", &draw_panel(80, 9, |f, a| view::segments::draw_list(&app, &th, f, a)));
    check("panel_text", &draw_panel(50, 6, |f, a| view::segments::draw_text(&app, &th, f, a)));
}

/// Every take measured; segment 4 is 5 dB under the book's median and segment 2 speaks at
/// twice its rate: the list marks both with the figure, the selected take's details show
/// its figures and why it is flagged (#19).
#[test]
fn quality_outliers_are_flagged_in_the_list_and_details() {
    let mut app =
        App::new(AppConfig { autoplay: false, ..AppConfig::default() }, KeyMap::default());
    let rows = TEXTS
        .iter()
        .enumerate()
        .map(|(i, t)| RowInit {
            id: i as u64 + 1,
            chapter: i / 3,
            text: (*t).to_string(),
            source: (*t).to_string(),
            pause_after_ms: 300,
            default_seed: 1000 + i as u64,
            takes: Vec::new(),
            chosen: None,
            review: Review::Unheard,
            edited_since_approval: false,
            note: String::new(),
            cast: Default::default(),
        })
        .collect();
    app.set_rows(rows);
    let figures = |lufs: f64, voiced_s: f64, similarity: f32| TakeFigures {
        voiced_s,
        text_units: 10,
        loudness_lufs: Some(lufs),
        similarity: Some(similarity),
    };
    let measured = [
        figures(-20.0, 4.0, 0.80),
        figures(-20.4, 2.0, 0.81),
        figures(-19.8, 4.1, 0.79),
        figures(-25.0, 3.9, 0.80),
        figures(-20.0, 4.0, 0.82),
        figures(-20.0, 4.0, 0.80),
    ];
    for (i, f) in measured.into_iter().enumerate() {
        let msg = take_measured(&app, i, 10 + i as u64, 20, Some(f));
        app.update(msg);
    }
    for _ in 0..3 {
        app.update(Msg::Action(lectern::tui::action::Action::MoveDown));
    }
    assert_eq!(app.selected, 3);
    let th = Theme::plain();
    let list = draw_panel(90, 9, |f, a| view::segments::draw_list(&app, &th, f, a));
    let text = draw_panel(90, 7, |f, a| view::segments::draw_text(&app, &th, f, a));
    let screen = format!("{}{}", lines(&list), lines(&text));
    check(
        "quality_outliers",
        &draw_panel(90, 16, |f, a| {
            let (top, bottom) = (Rect { height: 9, ..a }, Rect { y: 9, height: 7, ..a });
            view::segments::draw_list(&app, &th, f, top);
            view::segments::draw_text(&app, &th, f, bottom);
        }),
    );
    assert!(screen.contains("◆ quiet -5.0 dB"), "{screen}");
    assert!(screen.contains("◆ fast ×2.00"), "{screen}");
    assert!(screen.contains("outlier in this book: quiet -5.0 dB"), "{screen}");
    let flagged = screen.lines().filter(|l| l.contains('◆')).count();
    assert_eq!(flagged, 3, "two rows in the list and the details:\n{screen}");
}

/// A chapter whose takes are all chosen shows its ACX check in the segment panel of each of
/// its segments: pass with the figures, or the failing figure (#19).
#[test]
fn a_chapters_acx_status_shows_with_its_segments() {
    use lectern::deliver::check::{Failure, FileCheck, Levels};
    use lectern::tui::app::ChapterAcx;
    let mut app = scene();
    let figures = |rms_db: f64, failures: Vec<Failure>| FileCheck {
        file: "Chapter".into(),
        sample_rate_hz: 44_100,
        channels: 1,
        bitrates_kbps: Vec::new(),
        duration_s: 62.4,
        levels: Levels {
            rms_db,
            peak_db: -4.0,
            true_peak_db: -3.8,
            noise_floor_db: -70.2,
            head_s: 0.75,
            tail_s: 2.5,
            samples: 624 * 4_410,
        },
        failures,
    };
    let low = Failure { rule: "rms", detail: "RMS -25.1 dB outside -23…-18 dB".into() };
    for (chapter, c) in [(0, figures(-25.1, vec![low])), (1, figures(-20.0, Vec::new()))] {
        let status = Some(ChapterAcx::Checked(Box::new(c)));
        app.update(Msg::ChapterStatus { chapter, status });
    }
    let th = Theme::plain();
    let first = draw_panel(72, 5, |f, a| view::segments::draw_text(&app, &th, f, a));
    for _ in 0..3 {
        app.update(Msg::Action(lectern::tui::action::Action::MoveDown));
    }
    assert_eq!(app.rows[app.selected].chapter, 1);
    let second = draw_panel(72, 5, |f, a| view::segments::draw_text(&app, &th, f, a));
    check("chapter_acx_fails", &first);
    check("chapter_acx_passes", &second);
    let (first, second) = (lines(&first), lines(&second));
    assert!(first.contains("chapter 1 · ACX ✗ RMS -25.1 dB outside -23…-18 dB"), "{first}");
    assert!(
        second.contains("chapter 2 · ACX ✓ RMS -20.0 dB · peak -4.0 dB · floor -70.2 dB · 1:02"),
        "{second}"
    );
    assert!(app.log.iter().any(|l| l.contains("chapter 1: ACX ✗")));
    // A chapter whose choices are no longer complete has no status.
    app.update(Msg::ChapterStatus { chapter: 1, status: None });
    assert!(
        !lines(&draw_panel(72, 5, |f, a| view::segments::draw_text(&app, &th, f, a)))
            .contains("ACX")
    );
}

#[test]
fn the_list_shows_the_source_and_the_details_show_both_texts() {
    let mut app =
        App::new(AppConfig { autoplay: false, ..AppConfig::default() }, KeyMap::default());
    let row = |id: u64, source: &str, text: &str| RowInit {
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
    };
    app.set_rows(vec![
        row(1, "The keeper left.", "The keeper left."),
        row(
            2,
            "In 1999 the **keeper** came back.",
            "In nineteen ninety-nine the keeper came back.",
        ),
    ]);
    app.update(Msg::Action(lectern::tui::action::Action::Search));
    for c in "1999".chars() {
        app.update(Msg::Key(crossterm::event::KeyEvent::from(crossterm::event::KeyCode::Char(c))));
    }
    assert_eq!(app.selected, 1);
    let th = Theme::plain();
    check(
        "search_source_list",
        &draw_panel(72, 4, |f, a| view::segments::draw_list(&app, &th, f, a)),
    );
    check(
        "search_source_text",
        &draw_panel(50, 6, |f, a| view::segments::draw_text(&app, &th, f, a)),
    );
}

#[test]
fn empty_panels_say_so() {
    let app = App::new(AppConfig::default(), KeyMap::default());
    let th = Theme::plain();
    let buf = draw_panel(40, 6, |f, a| view::telemetry::draw_profiler(&app, &th, f, a));
    assert!(lines(&buf).contains("no telemetry yet"));
    let buf = draw_panel(40, 6, |f, a| view::telemetry::draw_lanes(&app, &th, f, a));
    assert!(lines(&buf).contains("no active lanes"));
}

#[test]
fn layout_is_the_same_for_app_and_view() {
    let a = layout::layout(Rect::new(0, 0, 120, 36), 3);
    assert!(!a.compact);
    assert_eq!(a.list_inner().y, 2);
    let small = layout::layout(Rect::new(0, 0, 60, 14), 3);
    assert!(small.compact);
    assert!(layout::layout(Rect::new(0, 0, 20, 5), 3).too_small);
}
