//! App unit tests: keys produce the right commands and player commands; engine events and
//! saved takes update state; what plays is each segment's master (take, fade, pause); choices,
//! approval, pickups and notes become session commands. Plain data, no terminal.

use std::sync::Arc;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use lectern::audio::master;
use lectern::audio::player::{AudioCommand, NowPlaying, PlayState, PlayerStatus};
use lectern::review::Review;
use lectern::tui::action::Action;
use lectern::tui::app::{App, AppConfig, Command, Mode, Msg, NFE_MAX, RowInit, TakeEntry};
use lectern::tui::keymap::KeyMap;
use lectern_engine::protocol::{
    EngineEvent, GroupInfo, RenderParams, Request, SegmentState, TakeRecord, TelemetrySample,
};

fn key(c: char) -> Msg {
    Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE))
}

fn code(c: KeyCode) -> Msg {
    Msg::Key(KeyEvent::new(c, KeyModifiers::NONE))
}

fn record(segment: u64, seed: u64, tokens: usize) -> TakeRecord {
    TakeRecord {
        segment_id: segment,
        text: format!("segment {segment}"),
        voice_id: "v".into(),
        model_id: "m".into(),
        seed,
        nfe: 10,
        cfg_rate: 0.7,
        precision: Default::default(),
        min_len_rule: Default::default(),
        backend: "cpu".into(),
        flow_matmul: "f32".into(),
        group: GroupInfo {
            segment_ids: vec![segment],
            token_counts: vec![tokens],
            tokens: vec![vec![1; tokens]],
            index: 0,
        },
        noise_source: "x".into(),
        engine_version: "0".into(),
        tokens: vec![1; tokens],
        timings: Default::default(),
        content: Default::default(),
    }
}

/// A take of `tokens` tokens whose samples are a ramp (so joins and fades are visible).
fn entry(take: u64, segment: u64, seed: u64, tokens: usize, loaded: bool) -> TakeEntry {
    let samples: Vec<f32> = (0..tokens * 960).map(|i| 0.25 + (i % 7) as f32 * 0.01).collect();
    TakeEntry {
        id: take,
        samples: loaded.then(|| Arc::new(samples)),
        record: record(segment, seed, tokens),
        stale: false,
        figures: None,
    }
}

fn init(id: u64, text: &str) -> RowInit {
    RowInit {
        id,
        chapter: 0,
        text: text.to_string(),
        source: text.to_string(),
        pause_after_ms: 100,
        default_seed: 100 + id,
        takes: Vec::new(),
        chosen: None,
        review: Review::Unheard,
        edited_since_approval: false,
        note: String::new(),
        cast: Default::default(),
    }
}

/// Rows with ids 1, 2, … (the store's keys), none rendered.
fn app_with(texts: &[&str]) -> App {
    let cfg = AppConfig { autoplay: false, ..AppConfig::default() };
    let mut app = App::new(cfg, KeyMap::default());
    app.set_rows(texts.iter().enumerate().map(|(i, t)| init(i as u64 + 1, t)).collect());
    app
}

/// The session saved a take of row `i`.
fn saved(app: &App, i: usize, take: u64, seed: u64) -> Msg {
    Msg::Saved {
        segment: app.rows[i].id,
        take: Box::new(entry(take, app.rows[i].id, seed, 3, true)),
        restored: false,
    }
}

fn engine(cmds: &[Command]) -> Vec<&Request> {
    cmds.iter()
        .map(|c| match c {
            Command::Engine(r) => r,
            other => panic!("want engine requests only, got {other:?}"),
        })
        .collect()
}

#[test]
fn rows_come_from_the_session_with_their_takes_and_choice() {
    let mut app = app_with(&[]);
    let mut row = init(7, "Stored.");
    row.takes = vec![entry(11, 7, 5, 3, false), entry(12, 7, 6, 3, false)];
    row.chosen = Some(0);
    row.review = Review::Approved;
    app.set_rows(vec![row, init(8, "New.")]);
    let r = &app.rows[0];
    assert_eq!((r.current_take, r.chosen, r.review), (0, Some(0), Review::Approved));
    assert_eq!(r.state, SegmentState::Ready);
    assert_eq!(r.shown_seed(), 5, "the seed shown is the auditioned take's");
    assert_eq!(app.rows[1].shown_seed(), 108, "no take: the default seed");
    assert!(!r.needs_work());
    assert!(!app.rows[1].needs_work(), "rendering: not yet the narrator's work");
    app.update(Msg::Engine(EngineEvent::SegmentState {
        id: 8,
        state: SegmentState::Failed("x".into()),
    }));
    assert!(app.rows[1].needs_work());
}

#[test]
fn reseed_asks_the_session_and_plays_the_new_take_when_saved() {
    let mut app = app_with(&["a", "b"]);
    app.update(saved(&app, 1, 1, 101));
    app.update(key('j'));
    let cmds = app.update(key('s'));
    assert!(matches!(cmds.as_slice(), [Command::Reseed(2)]), "{cmds:?}");
    assert_eq!(app.rows[1].state, SegmentState::Queued);
    app.update(Msg::Seeded { segment: 2, seed: 4242 });
    assert_eq!(app.rows[1].shown_seed(), 4242, "the pending take's seed while it renders");
    app.drain_audio();
    app.update(saved(&app, 1, 2, 4242));
    let r = &app.rows[1];
    assert_eq!(
        (r.takes.len(), r.current_take, r.chosen),
        (2, 1, Some(0)),
        "auditioned, not chosen"
    );
    match app.drain_audio().as_slice() {
        [AudioCommand::Play(cue)] => assert_eq!(cue.take_id, 2),
        other => panic!("want the new take played, got {other:?}"),
    }
    // `R` renders again with the chosen take's seed (the session knows it).
    assert!(matches!(app.update(key('R')).as_slice(), [Command::Rerender(2)]));
}

#[test]
fn nfe_keys_step_and_clamp() {
    let mut app = app_with(&["a"]);
    assert_eq!(app.params.nfe, 10);
    assert!(matches!(engine(&app.update(key('['))).as_slice(), [Request::SetNfe(9)]));
    assert!(matches!(engine(&app.update(key(']'))).as_slice(), [Request::SetNfe(10)]));
    app.params.nfe = 1;
    assert!(app.update(key('[')).is_empty(), "NFE never goes below 1");
    assert_eq!(app.params.nfe, 1);
    app.params.nfe = NFE_MAX;
    assert!(app.update(key(']')).is_empty());
}

/// The engine echoes every parameter change; echoes of earlier presses arriving between the
/// presses of a burst do not undo the later ones, and the echo of the last is taken as it is.
#[test]
fn stale_parameter_echoes_do_not_undo_a_burst() {
    let mut app = app_with(&["a"]);
    let start = app.params.nfe;
    let echo = |nfe| {
        Msg::Engine(EngineEvent::ParamsChanged(RenderParams { nfe, ..RenderParams::default() }))
    };
    for k in 1..=5 {
        app.update(key(']'));
        // The engine answers each request after the next press went out.
        if k > 1 {
            app.update(echo(start + k - 1));
        }
        assert_eq!(app.params.nfe, start + k, "press {k}");
    }
    app.update(echo(start + 5));
    assert_eq!(app.params.nfe, start + 5);
    // With nothing pending the engine's word is final (it may clamp).
    app.update(echo(3));
    assert_eq!(app.params.nfe, 3);
}

#[test]
fn group_and_lane_keys() {
    let mut app = app_with(&["a"]);
    assert!(matches!(engine(&app.update(key('{'))).as_slice(), [Request::SetGroupTarget(1750)]));
    assert!(matches!(engine(&app.update(key('}'))).as_slice(), [Request::SetGroupTarget(2000)]));
    assert!(matches!(engine(&app.update(key('l'))).as_slice(), [Request::SetLanes(7)]));
    assert!(matches!(engine(&app.update(key('L'))).as_slice(), [Request::SetLanes(8)]));
    app.params.lanes = 1;
    assert!(app.update(key('l')).is_empty(), "lanes never below 1");
    app.params.group_target_frames = 100;
    assert!(matches!(engine(&app.update(key('{'))).as_slice(), [Request::SetGroupTarget(0)]));
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
    assert!(matches!(engine(&app.update(key('q'))).as_slice(), [Request::Shutdown]));
    assert!(app.quit);
    let mut app = app_with(&["a"]);
    app.update(key('/'));
    assert!(matches!(app.mode, Mode::Search(_)), "{:?}", app.mode);
    let cmds = app.update(Msg::Key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL)));
    assert!(matches!(engine(&cmds).as_slice(), [Request::Shutdown]));
}

#[test]
fn engine_events_and_saved_takes_update_rows() {
    let mut app = app_with(&["a", "b"]);
    let id = app.rows[0].id;
    app.update(Msg::Engine(EngineEvent::SegmentState { id, state: SegmentState::Flow }));
    assert_eq!(app.rows[0].state, SegmentState::Flow);
    app.update(saved(&app, 0, 7, 3));
    assert_eq!(app.rows[0].state, SegmentState::Ready);
    assert_eq!(
        (app.rows[0].takes.len(), app.rows[0].chosen),
        (1, Some(0)),
        "the first take is chosen"
    );
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
fn audition_choose_approve_and_lock() {
    let mut app = app_with(&["a"]);
    app.update(saved(&app, 0, 1, 10));
    app.update(saved(&app, 0, 2, 20));
    assert_eq!((app.rows[0].current_take, app.rows[0].chosen), (1, Some(0)));
    assert_eq!(app.rows[0].shown_seed(), 20);
    app.drain_audio();
    app.update(key('t'));
    assert_eq!(app.rows[0].current_take, 0);
    assert_eq!(app.rows[0].shown_seed(), 10, "the row's seed follows `t`");
    assert!(matches!(app.drain_audio().as_slice(), [AudioCommand::Play(c)] if c.take_id == 1));
    app.update(key('t'));
    let cmds = app.update(key('c'));
    assert!(matches!(cmds.as_slice(), [Command::Choose { segment: 1, take: 2 }]), "{cmds:?}");
    assert_eq!(app.rows[0].chosen, Some(1));
    let cmds = app.update(key('a'));
    assert!(
        matches!(cmds.as_slice(), [Command::SetReview { segment: 1, review: Review::Approved }]),
        "{cmds:?}"
    );
    // Approved: the choice is locked, and so is re-seeding.
    assert!(app.update(key('s')).is_empty());
    app.update(key('t'));
    assert!(app.update(key('c')).is_empty());
    assert_eq!(app.rows[0].chosen, Some(1));
    let cmds = app.update(key('a'));
    assert!(matches!(cmds.as_slice(), [Command::SetReview { review: Review::Heard, .. }]));
}

#[test]
fn approving_an_auditioned_take_chooses_it_first() {
    let mut app = app_with(&["a"]);
    app.update(saved(&app, 0, 1, 10));
    app.update(saved(&app, 0, 2, 20));
    let cmds = app.update(key('a'));
    assert!(
        matches!(
            cmds.as_slice(),
            [Command::Choose { take: 2, .. }, Command::SetReview { review: Review::Approved, .. }]
        ),
        "{cmds:?}"
    );
}

#[test]
fn what_plays_is_the_master_take_fade_pause_and_lead_in() {
    let cfg = AppConfig { autoplay: false, lead_in_samples: 480, ..AppConfig::default() };
    let mut app = App::new(cfg, KeyMap::default());
    app.set_rows(vec![init(1, "a"), init(2, "b")]);
    app.update(saved(&app, 0, 1, 10));
    app.update(saved(&app, 1, 2, 20));
    app.drain_audio();
    app.update(code(KeyCode::Enter));
    let cues: Vec<Arc<Vec<f32>>> = app
        .drain_audio()
        .into_iter()
        .filter_map(|c| match c {
            AudioCommand::Enqueue(c) => Some(c.samples),
            _ => None,
        })
        .collect();
    assert_eq!(cues.len(), 2);
    let take: Vec<f32> = (0..3 * 960).map(|i| 0.25 + (i % 7) as f32 * 0.01).collect();
    let pause = master::ms_to_samples(100);
    assert_eq!(
        *cues[0],
        master::segment_master(&take, 480, pause),
        "first: lead-in + take + pause"
    );
    assert_eq!(*cues[1], master::segment_master(&take, 0, pause));
}

#[test]
fn stored_takes_load_before_they_play() {
    let mut app = app_with(&[]);
    let mut row = init(5, "a");
    row.takes = vec![entry(9, 5, 1, 2, false)];
    row.chosen = Some(0);
    app.set_rows(vec![row, init(6, "b")]);
    app.update(code(KeyCode::Enter));
    let cmds = app.update(Msg::Log(String::new()));
    let loads = app.start_playback();
    let all: Vec<&Command> = cmds.iter().chain(loads.iter()).collect();
    assert!(all.iter().any(|c| matches!(c, Command::Load { segment: 5, take: 9 })), "{all:?}");
    assert!(!app.drain_audio().iter().any(|c| matches!(c, AudioCommand::Enqueue(_))));
    let samples = Arc::new(vec![0.5f32; 2 * 960]);
    app.update(Msg::Loaded { segment: 5, take: 9, samples });
    assert!(
        app.drain_audio().iter().any(|c| matches!(c, AudioCommand::Enqueue(c) if c.take_id == 9))
    );
}

#[test]
fn play_from_queues_ready_segments_in_order_and_waits_for_the_rest() {
    let mut app = app_with(&["a", "b", "c"]);
    app.update(saved(&app, 0, 1, 1));
    app.drain_audio();
    app.update(code(KeyCode::Enter));
    let cmds = app.drain_audio();
    assert!(matches!(cmds[0], AudioCommand::Stop));
    assert!(matches!(cmds[1], AudioCommand::Resume));
    assert!(matches!(&cmds[2], AudioCommand::Enqueue(c) if c.take_id == 1));
    assert_eq!(cmds.len(), 3, "segment 2 is not ready yet");
    // Segment 3 finishes first: it waits for segment 2.
    app.update(saved(&app, 2, 3, 3));
    assert!(app.drain_audio().is_empty());
    app.update(saved(&app, 1, 2, 2));
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

/// The player plays take `take` of segment `segment`, at `pos` of its cue's `len` samples.
fn playing(take: u64, segment: u64, pos: u64, len: u64) -> Msg {
    Msg::Player(PlayerStatus {
        state: PlayState::Playing,
        now_playing: Some(NowPlaying {
            take_id: take,
            segment_id: segment,
            pos_samples: pos,
            len_samples: len,
        }),
        queued: 1,
        ..PlayerStatus::default()
    })
}

/// The segments a batch of commands marks heard.
fn marked_heard(cmds: &[Command]) -> Vec<u64> {
    cmds.iter()
        .filter_map(|c| match c {
            Command::SetReview { segment, review: Review::Heard } => Some(*segment),
            _ => None,
        })
        .collect()
}

#[test]
fn a_take_is_heard_when_played_to_its_end_never_when_skipped_selected_or_queued() {
    let mut app = app_with(&["a", "b", "c", "d"]);
    for i in 0..4 {
        app.update(saved(&app, i, i as u64 + 1, 1));
    }
    // Each cue is the take (3 tokens) and its 100 ms pause.
    let take = 3 * 960;
    let len = take + lectern::audio::master::ms_to_samples(100) as u64;
    let unheard = |app: &App| app.rows.iter().filter(|r| r.review == Review::Unheard).count();

    // Everything is queued from segment 1; it plays past its middle, then the narrator skips
    // to segment 2: segment 1 was skipped over, not heard.
    app.update(code(KeyCode::Enter));
    assert!(marked_heard(&app.update(playing(1, 1, take / 2, len))).is_empty());
    app.update(key('j'));
    app.update(code(KeyCode::Enter));
    assert!(marked_heard(&app.update(playing(2, 2, 0, len))).is_empty(), "a skip is not heard");
    assert_eq!(app.rows[0].review, Review::Unheard);

    // Segment 2 is seen at its middle, then the playhead moves on to segment 3 by itself:
    // segment 2 played to its end.
    assert!(marked_heard(&app.update(playing(2, 2, take / 2, len))).is_empty());
    assert_eq!(marked_heard(&app.update(playing(3, 3, 10, len))), [2]);
    assert_eq!(app.listening(), Some(3), "the segment listened to is followed");

    // Segment 3 is heard once past the heard fraction of its take, once.
    let before = (lectern::tui::app::HEARD_FRACTION * take as f64) as u64 - 1;
    assert!(marked_heard(&app.update(playing(3, 3, before, len))).is_empty());
    assert_eq!(marked_heard(&app.update(playing(3, 3, before + 2, len))), [3]);
    assert!(marked_heard(&app.update(playing(3, 3, take, len))).is_empty(), "once");

    // Segment 4 is queued and selected, never played: not heard.
    app.update(key('j'));
    app.update(key('j'));
    assert_eq!(app.rows[app.selected].id, 4);
    assert_eq!(unheard(&app), 2, "segments 1 and 4 stay unheard");
}

#[test]
fn a_reopened_book_waits_paused_at_the_segment_last_listened_to() {
    let cfg = AppConfig { autoplay: true, ..AppConfig::default() };
    let mut app = App::new(cfg, KeyMap::default());
    let rows: Vec<RowInit> = (1..=3)
        .map(|id| RowInit {
            takes: vec![entry(10 + id, id, 1, 3, false)],
            chosen: Some(0),
            ..init(id, "stored")
        })
        .collect();
    app.set_rows(rows);
    app.wait_at(Some(2));
    let loads = app.start_playback();
    assert!(loads.is_empty(), "nothing is loaded to play: {loads:?}");
    assert!(app.drain_audio().is_empty(), "nothing plays");
    assert_eq!(app.rows[app.selected].id, 2);
    assert_eq!(app.listening(), Some(2));
    assert!(app.rows.iter().all(|r| r.review == Review::Unheard));
    assert!(app.log.iter().any(|l| l.contains("paused at segment 2")), "{:?}", app.log);
    // Play starts there.
    app.update(key(' '));
    let loads = app.start_playback();
    assert!(matches!(loads.as_slice(), [Command::Load { segment: 2, take: 12 }]), "{loads:?}");

    // A position no longer in the book: the first segment.
    let mut app = App::new(AppConfig::default(), KeyMap::default());
    app.set_rows(vec![RowInit {
        takes: vec![entry(5, 1, 1, 3, false)],
        chosen: Some(0),
        ..init(1, "x")
    }]);
    app.wait_at(Some(99));
    assert_eq!((app.selected, app.listening()), (0, Some(1)));
}

#[test]
fn a_book_with_nothing_rendered_still_plays_as_it_renders() {
    let mut app = App::new(AppConfig { autoplay: true, ..AppConfig::default() }, KeyMap::default());
    app.set_rows(vec![init(1, "a"), init(2, "b")]);
    app.wait_at(None);
    assert!(!app.log.iter().any(|l| l.contains("paused at")), "{:?}", app.log);
    app.update(saved(&app, 0, 1, 1));
    assert!(
        app.drain_audio()
            .iter()
            .any(|c| matches!(c, AudioCommand::Enqueue(c) if c.segment_id == 1)),
        "autoplay plays the first take when it is saved"
    );
}

#[test]
fn pickups_view_notes_and_progress() {
    let mut app = app_with(&["a", "b", "c"]);
    for i in 0..3 {
        app.update(saved(&app, i, i as u64 + 1, 1));
    }
    app.update(key('j'));
    assert!(matches!(
        app.update(key('p')).as_slice(),
        [Command::SetReview { segment: 2, review: Review::Pickup }]
    ));
    app.update(key('N'));
    assert!(matches!(app.mode, Mode::Note(_)), "{:?}", app.mode);
    for c in "breath at end".chars() {
        app.update(key(c));
    }
    let cmds = app.update(code(KeyCode::Enter));
    assert!(
        matches!(cmds.as_slice(), [Command::SetNote { segment: 2, note }] if note == "breath at end")
    );
    assert_eq!(app.rows[1].note, "breath at end");
    app.update(key('g'));
    app.update(key('P'));
    assert!(app.pickups_only);
    assert_eq!(app.visible_rows(), vec![1]);
    assert_eq!(app.selected, 1, "the selection moves to a listed segment");
    assert!(app.progress_line().contains("0/3 approved"), "{}", app.progress_line());
    assert!(app.progress_line().contains("1 pickup"), "{}", app.progress_line());
    app.update(key('P'));
    assert_eq!(app.visible_rows(), vec![0, 1, 2]);
}

#[test]
fn set_rows_keeps_loaded_samples_and_selection() {
    let mut app = app_with(&["a", "b"]);
    app.update(saved(&app, 1, 9, 1));
    app.update(key('j'));
    let mut b = init(2, "b");
    b.takes = vec![entry(9, 2, 1, 3, false)];
    b.chosen = Some(0);
    app.set_rows(vec![init(3, "zero"), init(1, "a"), b]);
    assert_eq!(app.rows[2].id, 2);
    assert!(app.rows[2].takes[0].samples.is_some(), "loaded samples are kept");
    assert_eq!(app.selected, 2, "selection follows the row");
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
fn search_finds_what_the_narrator_wrote() {
    let mut app =
        App::new(AppConfig { autoplay: false, ..AppConfig::default() }, KeyMap::default());
    let row = |id: u64, source: &str, text: &str| RowInit {
        source: source.to_string(),
        ..init(id, text)
    };
    app.set_rows(vec![
        row(1, "The keeper left.", "The keeper left."),
        row(
            2,
            "In 1999 he came back for £3.",
            "In nineteen ninety-nine he came back for three pounds.",
        ),
        row(3, "He stayed.", "He stayed."),
    ]);
    let search = |app: &mut App, q: &str| {
        app.update(key('/'));
        for c in q.chars() {
            app.update(key(c));
        }
        app.update(code(KeyCode::Enter));
        app.search_matches()
    };
    // The digits as written find the segment whose spoken text has none.
    assert_eq!(search(&mut app, "1999"), [1]);
    assert_eq!(app.selected, 1);
    assert_eq!(search(&mut app, "£3"), [1]);
    // The spoken form still finds it.
    app.selected = 0;
    assert_eq!(search(&mut app, "ninety-nine"), [1]);
    assert_eq!(app.selected, 1);
    assert_eq!(search(&mut app, "2001"), Vec::<usize>::new());
}

#[test]
fn the_audition_picker_asks_for_choices_then_speaks_the_pick_and_plays_it() {
    use lectern::tui::app::{AUDITION_ID, AuditionChoice};
    let mut app = app_with(&["Nguyen paid.", "Then left."]);
    app.update(key('j'));
    let id = app.rows[1].id;
    let cmds = app.update(key('w'));
    assert!(matches!(cmds.as_slice(), [Command::AuditionChoices(s)] if *s == id), "{cmds:?}");
    // An answer for a segment no longer selected opens nothing.
    let choice = |w: &str| AuditionChoice { label: w.to_string(), text: w.to_string() };
    app.update(Msg::AuditionChoices { segment: app.rows[0].id, choices: vec![choice("x")] });
    assert_eq!(app.mode, Mode::Normal);
    app.update(Msg::AuditionChoices { segment: id, choices: vec![choice("Then"), choice("left")] });
    assert!(matches!(app.mode, Mode::Audition(_)), "{:?}", app.mode);
    app.update(code(KeyCode::Right));
    let cmds = app.update(code(KeyCode::Enter));
    match cmds.as_slice() {
        [Command::Audition { segment, text }] => {
            assert_eq!((*segment, text.as_str()), (id, "left"))
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(app.mode, Mode::Audition(_)), "stays open to try another");
    app.update(code(KeyCode::Right));
    assert!(matches!(&app.mode, Mode::Audition(p) if p.at == 0), "wraps: {:?}", app.mode);
    // The audio comes back: it plays alone, as the audition id.
    app.drain_audio();
    app.update(Msg::Auditioned(Arc::new(vec![0.1; 960])));
    let audio = app.drain_audio();
    assert!(matches!(audio.first(), Some(AudioCommand::Stop)), "{audio:?}");
    assert!(
        matches!(audio.last(), Some(AudioCommand::Play(c)) if c.segment_id == AUDITION_ID && c.samples.len() == 960),
        "{audio:?}"
    );
    app.update(code(KeyCode::Esc));
    assert_eq!(app.mode, Mode::Normal);
    assert!(app.rows.iter().all(|r| r.takes.is_empty()), "no take was added");
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

/// The segments of the cues the app handed the player since the last drain (enqueues only).
fn enqueued_segments(app: &mut App) -> Vec<u64> {
    app.drain_audio()
        .iter()
        .filter_map(|c| match c {
            AudioCommand::Enqueue(c) => Some(c.segment_id),
            _ => None,
        })
        .collect()
}

/// A book that renders faster than it plays is not queued whole: the player is handed about
/// 20 s ahead of the playhead, at most 32 takes keep their samples, and the rest are read again
/// from the project when the playhead reaches them, so memory stays bounded over a long book.
#[test]
fn playback_runs_ahead_a_bounded_stretch_and_loaded_takes_are_bounded() {
    let texts: Vec<String> = (0..100).map(|i| format!("segment {i}")).collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let mut app = app_with(&refs);
    app.update(code(KeyCode::Enter));
    app.drain_audio();
    // Every take arrives (4 s each), far faster than it plays.
    for i in 0..100 {
        let id = app.rows[i].id;
        app.update(Msg::Saved {
            segment: id,
            take: Box::new(entry(1000 + i as u64, id, 1, 100, true)),
            restored: false,
        });
    }
    let handed = enqueued_segments(&mut app);
    assert_eq!(handed, [1, 2, 3, 4, 5], "20 s ahead: five 4-second takes");
    let loaded = app.rows.iter().flat_map(|r| &r.takes).filter(|t| t.samples.is_some()).count();
    assert_eq!(loaded, 32);
    // The playhead reaches segment 3: the player is handed more, and the takes that were
    // unloaded are asked for again.
    let status = PlayerStatus {
        state: PlayState::Playing,
        now_playing: Some(NowPlaying {
            take_id: 1002,
            segment_id: 3,
            pos_samples: 0,
            len_samples: 96_000,
        }),
        queued: 2,
        ..PlayerStatus::default()
    };
    let cmds = app.update(Msg::Player(status));
    let loads = cmds.iter().filter(|c| matches!(c, Command::Load { .. })).count();
    assert_eq!(loads, 1, "{cmds:?}");
    assert!(app.drain_audio().is_empty(), "segment 6 waits for its samples");
    let Command::Load { segment, take } =
        cmds.iter().find(|c| matches!(c, Command::Load { .. })).unwrap()
    else {
        unreachable!()
    };
    assert_eq!(*segment, 6);
    app.update(Msg::Loaded {
        segment: *segment,
        take: *take,
        samples: Arc::new(vec![0.1; 96_000]),
    });
    let more = enqueued_segments(&mut app);
    assert_eq!(more, [6], "handed up to 20 s past the playhead again");
}

#[test]
fn a_take_that_ends_between_two_looks_is_heard_from_the_players_count() {
    let mut app = app_with(&["a", "b"]);
    for i in 0..2 {
        app.update(saved(&app, i, i as u64 + 1, 1));
    }
    app.update(key('j'));
    app.update(key('r'));
    // Seen at its start only, then the player says it played a cue to its end: segment 2.
    assert!(marked_heard(&app.update(playing(2, 2, 0, 10_000))).is_empty());
    let ended =
        PlayerStatus { played_through: 1, last_played_through: Some(2), ..PlayerStatus::default() };
    assert_eq!(marked_heard(&app.update(Msg::Player(ended.clone()))), [2]);
    assert!(marked_heard(&app.update(Msg::Player(ended))).is_empty(), "counted once");
    assert_eq!(app.rows[0].review, Review::Unheard);
}
