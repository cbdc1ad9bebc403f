//! The whole front end against the scripted fake engine: the real event loop on a
//! `TestBackend`, scripted input, a recording player. Checks the protocol round trip (enqueue →
//! states → takes → playback commands; keys → requests → ParamsChanged), not timing.

use std::io;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use lectern::audio::player::{AudioCommand, Playback, PlayerStatus};
use lectern::engine::protocol::SegmentState;
use lectern::tui::demo::{FakeEngineConfig, SAMPLES_PER_TOKEN, spawn_fake_engine, tokens_for};
use lectern::tui::keymap::KeyMap;
use lectern::tui::run::{RunConfig, event_loop};
use lectern::tui::theme::Theme;
use ratatui::Terminal;
use ratatui::backend::TestBackend;

#[derive(Default)]
struct Recorder {
    cmds: Mutex<Vec<AudioCommand>>,
}

impl Playback for Recorder {
    fn command(&self, cmd: AudioCommand) {
        self.cmds.lock().unwrap().push(cmd);
    }
    fn status(&self) -> PlayerStatus {
        PlayerStatus::default()
    }
}

fn key(c: char) -> Event {
    Event::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE))
}

#[test]
fn event_loop_against_the_fake_engine() {
    let (tx, rx, engine) = spawn_fake_engine(FakeEngineConfig::default());
    let texts: Vec<String> =
        ["First sentence here.", "Second one, a bit longer.", "Third."].map(String::from).to_vec();
    let mut cfg =
        RunConfig { segments: texts.clone(), themes_dir: None, fps: 200, ..RunConfig::default() };
    cfg.app.autoplay = true;
    let player = Recorder::default();
    let mut terminal = Terminal::new(TestBackend::new(120, 36)).unwrap();
    // Script: wait ~0.5 s for renders, press '[', wait, press 's', wait, then 'q'.
    let start = Instant::now();
    let mut step = 0;
    let mut input = |timeout: Duration| -> io::Result<Option<Event>> {
        std::thread::sleep(timeout);
        let t = start.elapsed();
        let ev = match step {
            0 if t > Duration::from_millis(500) => Some(key('[')),
            1 if t > Duration::from_millis(700) => Some(key('s')),
            2 if t > Duration::from_millis(1000) => Some(key('q')),
            _ => None,
        };
        if ev.is_some() {
            step += 1;
        }
        Ok(ev)
    };
    let app =
        event_loop(&mut terminal, &cfg, KeyMap::default(), &tx, &rx, &player, &mut input).unwrap();
    engine.join().unwrap();
    assert!(app.quit);
    assert_eq!(app.params.nfe, 9, "the engine echoed SetNfe(9)");
    for (row, text) in app.rows.iter().zip(&texts) {
        assert_eq!(row.state, SegmentState::Ready, "{row:?}");
        assert_eq!(row.takes[0].samples.len(), tokens_for(text) * SAMPLES_PER_TOKEN);
    }
    assert_eq!(app.rows[0].takes.len(), 2, "re-seed made a second take");
    assert_ne!(app.rows[0].takes[0].record.seed, app.rows[0].takes[1].record.seed);
    assert!(app.telemetry.samples.len() >= 4);
    let cmds = player.cmds.lock().unwrap();
    let queued: Vec<u64> = cmds
        .iter()
        .filter_map(|c| if let AudioCommand::Enqueue(c) = c { Some(c.segment_id) } else { None })
        .collect();
    let ids: Vec<u64> = app.rows.iter().map(|r| r.id).collect();
    assert_eq!(queued, ids, "autoplay queued every segment once, in order");
    let screen: String = terminal.backend().buffer().content().iter().map(|c| c.symbol()).collect();
    assert!(screen.contains("manuscript · 3 segments"));
}

#[test]
fn theme_files_match_the_builtins_and_list_every_role() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("themes");
    for name in ["dark", "light"] {
        let text = std::fs::read_to_string(dir.join(format!("{name}.toml"))).unwrap();
        for role in Theme::ROLES {
            assert!(text.contains(&format!("\n{role} = ")), "{name}.toml lacks role {role}");
        }
        let t = Theme::load(Some(&dir), name).unwrap();
        assert_eq!(t, Theme::builtin(name).unwrap(), "{name}.toml restates the built-in");
    }
    let mut t = Theme::dark();
    t.patch("[roles]\ntitle = { fg = \"#ff0000\", bold = false }\n", "x").unwrap();
    assert_eq!(t.title.fg, Some(ratatui::style::Color::Rgb(255, 0, 0)));
    assert!(t.patch("[roles]\nnope = { fg = \"red\" }\n", "x").is_err());
    assert!(t.patch("[roles]\ntitle = { fg = \"mauve-ish\" }\n", "x").is_err());
}

#[test]
fn theme_watcher_reports_edits() {
    let dir = tempfile::tempdir().unwrap();
    let (_w, rx) = lectern::tui::theme::ThemeWatcher::new(dir.path()).unwrap();
    std::fs::write(dir.path().join("mine.toml"), "base = \"light\"\n").unwrap();
    assert!(rx.recv_timeout(Duration::from_secs(5)).is_ok(), "no change notification");
    let t = Theme::load(Some(dir.path()), "mine").unwrap();
    assert_eq!(t.title, Theme::light().title);
    assert!(Theme::available(Some(dir.path())).contains(&"mine".to_string()));
}
