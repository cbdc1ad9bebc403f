//! App unit tests: keys produce the right requests and player commands; engine events update
//! state; the manuscript diff re-renders only changed segments. Plain data, no terminal.

use std::sync::Arc;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use lectern::audio::player::{AudioCommand, NowPlaying, PlayState, PlayerStatus};
use lectern::engine::protocol::{
    EngineEvent, RenderParams, Request, SegmentState, Take, TelemetrySample,
};
use lectern::tui::action::Action;
use lectern::tui::app::{App, AppConfig, Mode, Msg, NFE_MAX, segment_hash};
use lectern::tui::demo;
use lectern::tui::keymap::KeyMap;

fn key(c: char) -> Msg {
    Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE))
}

fn code(c: KeyCode) -> Msg {
    Msg::Key(KeyEvent::new(c, KeyModifiers::NONE))
}

fn texts(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| (*s).to_string()).collect()
}

fn app_with(segs: &[&str]) -> App {
    let cfg = AppConfig { autoplay: false, ..AppConfig::default() };
    let mut app = App::new(cfg, KeyMap::default());
    app.set_segments(&texts(segs));
    app
}

/// A finished take for row `i` of `app`, as the engine would send it.
fn take_for(app: &App, i: usize, take_id: u64) -> Take {
    let row = &app.rows[i];
    let samples = demo::sine_take(3, row.seed);
    let mut record = lectern::engine::protocol::TakeRecord {
        segment_id: row.id,
        text: row.text.clone(),
        voice_id: "v".into(),
        model_id: "m".into(),
        seed: row.seed,
        nfe: 10,
        cfg_rate: 0.7,
        precision: Default::default(),
        min_len_rule: Default::default(),
        backend: "cpu".into(),
        flow_matmul: "f32".into(),
        group: lectern::engine::protocol::GroupInfo {
            segment_ids: vec![row.id],
            token_counts: vec![3],
            tokens: Vec::new(),
            index: 0,
        },
        noise_source: "x".into(),
        engine_version: "0".into(),
        tokens: vec![1, 2, 3],
        timings: Default::default(),
    };
    record.seed = row.seed;
    Take { id: take_id, record, samples: Arc::new(samples) }
}

#[test]
fn load_enqueues_every_segment_with_distinct_ids_and_seeds() {
    let mut app = App::new(AppConfig::default(), KeyMap::default());
    let reqs = app.set_segments(&texts(&["One.", "Two.", "Three."]));
    assert_eq!(reqs.len(), 1);
    let Request::Enqueue(specs) = &reqs[0] else { panic!("want Enqueue, got {reqs:?}") };
    assert_eq!(
        specs.iter().map(|s| s.text.as_str()).collect::<Vec<_>>(),
        ["One.", "Two.", "Three."]
    );
    let mut ids: Vec<_> = specs.iter().map(|s| s.id).collect();
    ids.dedup();
    assert_eq!(ids.len(), 3);
    assert!(app.rows.iter().all(|r| r.state == SegmentState::Queued));
}

#[test]
fn reseed_sends_a_new_seed_for_the_selected_segment() {
    let mut app = app_with(&["a", "b"]);
    app.update(key('j'));
    let (id, old) = (app.rows[1].id, app.rows[1].seed);
    let reqs = app.update(key('s'));
    match reqs.as_slice() {
        [Request::Reseed { id: got, seed }] => {
            assert_eq!(*got, id);
            assert_ne!(*seed, old);
            assert_eq!(app.rows[1].seed, *seed);
        }
        other => panic!("want one Reseed, got {other:?}"),
    }
    assert_eq!(app.rows[1].state, SegmentState::Queued);
    // Again: yet another seed.
    let prev = app.rows[1].seed;
    let Request::Reseed { seed: s2, .. } = app.update(key('s'))[0].clone() else { panic!() };
    assert_ne!(s2, prev);
}

#[test]
fn nfe_keys_step_and_clamp() {
    let mut app = app_with(&["a"]);
    assert_eq!(app.params.nfe, 10);
    assert!(matches!(app.update(key('[')).as_slice(), [Request::SetNfe(9)]));
    assert!(matches!(app.update(key(']')).as_slice(), [Request::SetNfe(10)]));
    app.params.nfe = 1;
    assert!(app.update(key('[')).is_empty(), "NFE never goes below 1");
    assert_eq!(app.params.nfe, 1);
    app.params.nfe = NFE_MAX;
    assert!(app.update(key(']')).is_empty());
}

#[test]
fn group_and_lane_keys() {
    let mut app = app_with(&["a"]);
    assert!(matches!(app.update(key('{')).as_slice(), [Request::SetGroupTarget(1750)]));
    assert!(matches!(app.update(key('}')).as_slice(), [Request::SetGroupTarget(2000)]));
    assert!(matches!(app.update(key('l')).as_slice(), [Request::SetLanes(7)]));
    assert!(matches!(app.update(key('L')).as_slice(), [Request::SetLanes(8)]));
    app.params.lanes = 1;
    assert!(app.update(key('l')).is_empty(), "lanes never below 1");
    app.params.group_target_frames = 100;
    assert!(matches!(app.update(key('{')).as_slice(), [Request::SetGroupTarget(0)]));
}

#[test]
fn params_changed_event_replaces_local_params() {
    let mut app = app_with(&["a"]);
    let p = RenderParams { nfe: 4, lanes: 2, ..RenderParams::default() };
    app.update(Msg::Engine(EngineEvent::ParamsChanged(p.clone())));
    assert_eq!(app.params, p);
}

#[test]
fn movement_keys_and_bounds() {
    let mut app = app_with(&["a", "b", "c"]);
    app.update(code(KeyCode::Down));
    app.update(key('j'));
    app.update(key('j'));
    assert_eq!(app.selected, 2);
    app.update(key('k'));
    assert_eq!(app.selected, 1);
    app.update(key('g'));
    assert_eq!(app.selected, 0);
    app.update(key('G'));
    assert_eq!(app.selected, 2);
    app.update(code(KeyCode::Up));
    assert_eq!(app.selected, 1);
}

#[test]
fn quit_sends_shutdown_and_ctrl_c_quits_in_any_mode() {
    let mut app = app_with(&["a"]);
    assert!(matches!(app.update(key('q')).as_slice(), [Request::Shutdown]));
    assert!(app.quit);
    let mut app = app_with(&["a"]);
    app.update(key('/'));
    assert_eq!(app.mode, Mode::Search);
    let reqs = app.update(Msg::Key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL)));
    assert!(matches!(reqs.as_slice(), [Request::Shutdown]));
}

#[test]
fn engine_events_update_rows_and_takes() {
    let mut app = app_with(&["a", "b"]);
    let id = app.rows[0].id;
    app.update(Msg::Engine(EngineEvent::SegmentState { id, state: SegmentState::Flow }));
    assert_eq!(app.rows[0].state, SegmentState::Flow);
    let t = take_for(&app, 0, 7);
    app.update(Msg::Engine(EngineEvent::TakeReady(t)));
    assert_eq!(app.rows[0].state, SegmentState::Ready);
    assert_eq!(app.rows[0].takes.len(), 1);
    assert_eq!(app.backend, "cpu");
    app.update(Msg::Engine(EngineEvent::SegmentState {
        id: app.rows[1].id,
        state: SegmentState::Failed("boom".into()),
    }));
    assert!(app.log.back().is_some_and(|l| l.contains("failed: boom")));
    let s = TelemetrySample { lm_rtf: 0.5, ..TelemetrySample::default() };
    app.update(Msg::Engine(EngineEvent::Telemetry(s)));
    assert_eq!(app.telemetry.latest().map(|t| t.lm_rtf), Some(0.5));
    app.update(Msg::Engine(EngineEvent::Idle));
    assert!(app.engine_idle);
}

#[test]
fn cycle_takes_and_replay() {
    let mut app = app_with(&["a"]);
    app.update(Msg::Engine(EngineEvent::TakeReady(take_for(&app, 0, 1))));
    app.update(key('s'));
    app.update(Msg::Engine(EngineEvent::TakeReady(take_for(&app, 0, 2))));
    assert_eq!(app.rows[0].takes.len(), 2);
    assert_eq!(app.rows[0].current_take, 1, "a new take becomes current");
    app.update(key('t'));
    assert_eq!(app.rows[0].current_take, 0);
    app.drain_audio();
    app.update(key('r'));
    match app.drain_audio().as_slice() {
        [AudioCommand::Play(cue)] => assert_eq!(cue.take_id, 1),
        other => panic!("want Play of take 1, got {other:?}"),
    }
}

#[test]
fn play_from_queues_ready_segments_in_order_and_waits_for_the_rest() {
    let mut app = app_with(&["a", "b", "c"]);
    app.update(Msg::Engine(EngineEvent::TakeReady(take_for(&app, 0, 1))));
    app.update(code(KeyCode::Enter));
    let cmds = app.drain_audio();
    assert!(matches!(cmds[0], AudioCommand::Stop));
    assert!(matches!(cmds[1], AudioCommand::Resume));
    assert!(matches!(&cmds[2], AudioCommand::Enqueue(c) if c.take_id == 1));
    assert_eq!(cmds.len(), 3, "segment 2 is not ready yet");
    // Segment 3 finishes first: it waits for segment 2.
    app.update(Msg::Engine(EngineEvent::TakeReady(take_for(&app, 2, 3))));
    assert!(app.drain_audio().is_empty());
    app.update(Msg::Engine(EngineEvent::TakeReady(take_for(&app, 1, 2))));
    let ids: Vec<u64> = app
        .drain_audio()
        .iter()
        .map(|c| match c {
            AudioCommand::Enqueue(c) => c.take_id,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(ids, [2, 3]);
}

#[test]
fn space_pauses_and_resumes_by_player_state() {
    let mut app = app_with(&["a"]);
    let playing = PlayerStatus {
        state: PlayState::Playing,
        now_playing: Some(NowPlaying {
            take_id: 1,
            segment_id: app.rows[0].id,
            pos_samples: 0,
            len_samples: 10,
        }),
        ..PlayerStatus::default()
    };
    app.update(Msg::Player(playing));
    app.update(key(' '));
    assert!(matches!(app.drain_audio().as_slice(), [AudioCommand::Pause]));
    app.update(key(' '));
    assert!(matches!(app.drain_audio().as_slice(), [AudioCommand::Resume]));
}

#[test]
fn volume_freeze_theme_and_help() {
    let mut app = app_with(&["a"]);
    app.update(key('-'));
    assert!(
        matches!(app.drain_audio().as_slice(), [AudioCommand::SetVolume(v)] if (*v - 0.9).abs() < 1e-6)
    );
    app.update(Msg::Engine(EngineEvent::Telemetry(TelemetrySample {
        lm_rtf: 1.0,
        ..Default::default()
    })));
    app.update(key('f'));
    app.update(Msg::Engine(EngineEvent::Telemetry(TelemetrySample {
        lm_rtf: 2.0,
        ..Default::default()
    })));
    assert_eq!(app.shown_telemetry().latest().map(|t| t.lm_rtf), Some(1.0), "frozen");
    app.update(key('f'));
    assert_eq!(app.shown_telemetry().latest().map(|t| t.lm_rtf), Some(2.0));
    assert_eq!(app.theme_name, "dark");
    app.update(key('T'));
    assert_eq!(app.theme_name, "light");
    app.update(key('?'));
    assert_eq!(app.mode, Mode::Help);
    app.update(key('x'));
    assert_eq!(app.mode, Mode::Normal);
}

#[test]
fn search_selects_matches() {
    let mut app = app_with(&["The cat.", "A dog.", "Another cat."]);
    app.update(key('/'));
    for c in "CAT".chars() {
        app.update(key(c));
    }
    assert_eq!(app.selected, 0);
    app.update(code(KeyCode::Enter));
    assert_eq!(app.mode, Mode::Normal);
    app.update(key('n'));
    assert_eq!(app.selected, 2);
    app.update(key('n'));
    assert_eq!(app.selected, 0, "wraps");
    assert_eq!(app.search_matches(), [0, 2]);
}

#[test]
fn mouse_click_selects_a_segment() {
    let mut app = app_with(&["a", "b", "c", "d"]);
    app.update(Msg::Resize(120, 40));
    // The list's first row is inside the border: y = 1 (title) + 1 (border).
    let click = MouseEvent {
        kind: MouseEventKind::Down(MouseButton::Left),
        column: 5,
        row: 2 + 2,
        modifiers: KeyModifiers::NONE,
    };
    app.update(Msg::Mouse(click));
    assert_eq!(app.selected, 2);
    let wheel = MouseEvent { kind: MouseEventKind::ScrollDown, ..click };
    app.update(Msg::Mouse(wheel));
    assert_eq!(app.selected, 3);
}

#[test]
fn keymap_patch_rebinds_and_unbinds() {
    let mut km = KeyMap::default();
    km.patch("[bindings]\n\"x\" = \"quit\"\n\"q\" = \"none\"\n\"ctrl-r\" = \"reseed\"\n").unwrap();
    let ev = |c, m| KeyEvent::new(KeyCode::Char(c), m);
    assert_eq!(km.lookup(&ev('x', KeyModifiers::NONE)), Some(Action::Quit));
    assert_eq!(km.lookup(&ev('q', KeyModifiers::NONE)), None);
    assert_eq!(km.lookup(&ev('r', KeyModifiers::CONTROL)), Some(Action::Reseed));
    // Shift is part of the character.
    assert_eq!(km.lookup(&ev('L', KeyModifiers::SHIFT)), Some(Action::LanesUp));
    assert!(km.patch("[bindings]\n\"x\" = \"fly\"\n").is_err());
    assert!(km.patch("[bindings]\n\"superkey\" = \"quit\"\n").is_err());
}

// ---- manuscript diff ----

#[test]
fn diff_unchanged_manuscript_sends_nothing() {
    let mut app = app_with(&["a", "b", "c"]);
    assert!(app.set_segments(&texts(&["a", "b", "c"])).is_empty());
}

#[test]
fn diff_edit_cancels_old_and_enqueues_new_only() {
    let mut app = app_with(&["a", "b", "c"]);
    let ids: Vec<u64> = app.rows.iter().map(|r| r.id).collect();
    let reqs = app.set_segments(&texts(&["a", "B!", "c"]));
    assert_eq!(reqs.len(), 2, "{reqs:?}");
    assert!(matches!(&reqs[0], Request::Cancel(c) if *c == vec![ids[1]]));
    let Request::Enqueue(specs) = &reqs[1] else { panic!() };
    assert_eq!(specs.len(), 1);
    assert_eq!(specs[0].text, "B!");
    assert!(!ids.contains(&specs[0].id), "new text, new id");
    assert_eq!(app.rows[0].id, ids[0]);
    assert_eq!(app.rows[2].id, ids[2]);
}

#[test]
fn diff_insert_delete_and_reorder_keep_rendered_rows() {
    let mut app = app_with(&["a", "b", "c"]);
    let ids: Vec<u64> = app.rows.iter().map(|r| r.id).collect();
    // b finished: deleting it needs no cancel.
    app.update(Msg::Engine(EngineEvent::TakeReady(take_for(&app, 1, 1))));
    let reqs = app.set_segments(&texts(&["c", "new", "a"]));
    assert_eq!(reqs.len(), 1, "{reqs:?}");
    let Request::Enqueue(specs) = &reqs[0] else { panic!() };
    assert_eq!(specs.iter().map(|s| s.text.as_str()).collect::<Vec<_>>(), ["new"]);
    assert_eq!(app.rows[0].id, ids[2]);
    assert_eq!(app.rows[2].id, ids[0]);
}

#[test]
fn diff_duplicate_texts_match_one_to_one() {
    let mut app = app_with(&["x", "x"]);
    let reqs = app.set_segments(&texts(&["x", "x", "x"]));
    let Request::Enqueue(specs) = &reqs[0] else { panic!("{reqs:?}") };
    assert_eq!(specs.len(), 1);
    let reqs = app.set_segments(&texts(&["x"]));
    assert!(matches!(&reqs[..], [Request::Cancel(c)] if c.len() == 2));
}

#[test]
fn diff_keeps_takes_and_selection_of_matched_rows() {
    let mut app = app_with(&["a", "b"]);
    app.update(Msg::Engine(EngineEvent::TakeReady(take_for(&app, 1, 9))));
    app.update(key('j'));
    let b_id = app.rows[1].id;
    app.set_segments(&texts(&["zero", "a", "b"]));
    assert_eq!(app.rows[2].id, b_id);
    assert_eq!(app.rows[2].takes.len(), 1);
    assert_eq!(app.selected, 2, "selection follows the row");
}

#[test]
fn segment_hash_is_stable_fnv1a() {
    assert_eq!(segment_hash(""), 0xcbf2_9ce4_8422_2325);
    assert_eq!(segment_hash("a"), 0xaf63_dc4c_8601_ec8c);
    assert_ne!(segment_hash("ab"), segment_hash("ba"));
}
