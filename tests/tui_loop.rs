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

/// Saving the watched manuscript re-renders exactly the segments whose text changed; a file
/// that no longer parses is reported in the log and leaves the rows alone.
#[test]
fn saving_the_manuscript_rerenders_only_changed_segments() {
    use lectern::engine::protocol::Request;
    use lectern::text::{Manuscript, ParseOptions};
    use lectern::tui::watch::{ManuscriptSource, Reparse};
    use std::sync::Arc;

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("book.md");
    let v1 = "# One\n\nThe first paragraph stays.\n\nThe second paragraph will change.\n\n\
              The third paragraph stays too.\n";
    let v2 = v1.replace("will change", "has changed now");
    std::fs::write(&path, v1).unwrap();
    let reparse: Reparse = Arc::new(|p: &std::path::Path| {
        Manuscript::load(p, &ParseOptions::default())
            .map(|m| m.segments().map(|s| s.text.clone()).collect())
            .map_err(|e| e.to_string())
    });
    let before = reparse(&path).unwrap();
    let probe = dir.path().join("probe.md");
    std::fs::write(&probe, &v2).unwrap();
    let after = reparse(&probe).unwrap();
    assert_eq!(before.len(), after.len());
    let changed: Vec<usize> = (0..before.len()).filter(|&i| before[i] != after[i]).collect();
    assert_eq!(changed.len(), 1, "{before:?} vs {after:?}");

    // Record every request on its way to the fake engine.
    let (fake_tx, rx, engine) = spawn_fake_engine(FakeEngineConfig::default());
    let (tx, tap) = std::sync::mpsc::channel::<Request>();
    let sent = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&sent);
    let forward = std::thread::spawn(move || {
        for r in tap {
            log.lock().unwrap().push(r.clone());
            let _ = fake_tx.send(r);
        }
    });
    let cfg = RunConfig {
        segments: before.clone(),
        themes_dir: None,
        manuscript: Some(ManuscriptSource { path: path.clone(), reparse }),
        fps: 200,
        ..RunConfig::default()
    };
    let player = Recorder::default();
    let mut terminal = Terminal::new(TestBackend::new(120, 36)).unwrap();
    let start = Instant::now();
    let mut step = 0;
    let edit = v2.clone();
    let mut input = |timeout: Duration| -> io::Result<Option<Event>> {
        std::thread::sleep(timeout);
        let t = start.elapsed();
        match step {
            0 if t > Duration::from_millis(800) => std::fs::write(&path, &edit)?,
            1 if t > Duration::from_millis(2000) => std::fs::write(&path, "")?,
            2 if t > Duration::from_millis(3000) => {
                step += 1;
                return Ok(Some(key('q')));
            }
            _ => return Ok(None),
        }
        step += 1;
        Ok(None)
    };
    let app =
        event_loop(&mut terminal, &cfg, KeyMap::default(), &tx, &rx, &player, &mut input).unwrap();
    drop(tx);
    forward.join().unwrap();
    engine.join().unwrap();

    let texts: Vec<&str> = app.rows.iter().map(|r| r.text.as_str()).collect();
    assert_eq!(texts, after.iter().map(String::as_str).collect::<Vec<_>>());
    let enqueued: Vec<(u64, String)> = sent
        .lock()
        .unwrap()
        .iter()
        .filter_map(|r| if let Request::Enqueue(v) = r { Some(v.clone()) } else { None })
        .flatten()
        .map(|s| (s.id, s.text))
        .collect();
    let mut expected: Vec<String> = before.clone();
    expected.extend(changed.iter().map(|&i| after[i].clone()));
    assert_eq!(enqueued.iter().map(|(_, t)| t.clone()).collect::<Vec<_>>(), expected);
    for (i, row) in app.rows.iter().enumerate() {
        assert_eq!(row.state, SegmentState::Ready, "{row:?}");
        assert_eq!(row.takes.len(), 1, "one take each: {row:?}");
        let first_id = enqueued[i].0;
        if changed.contains(&i) {
            assert_ne!(row.id, first_id, "the changed segment is a new row");
        } else {
            assert_eq!(row.id, first_id, "unchanged segments keep their row and take");
        }
    }
    assert!(
        app.log.iter().any(|l| l.contains("manuscript not reloaded")),
        "the parse error is logged: {:?}",
        app.log
    );
}
