//! The whole front end against the engine's fake backend and a real session: the real event
//! loop on a `TestBackend`, scripted input, a recording player, a project in a temp dir.
//! Checks the round trip (plan → engine → saved takes → playback commands; keys → session
//! commands), that a reopened project renders nothing, and that a saved manuscript renders
//! only what changed — not timing.

use crate::session_common;

use std::io;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use lectern::audio::player::{AudioCommand, Playback, PlayerStatus};
use lectern::tui::App;
use lectern::tui::desk::Desk;
use lectern::tui::keymap::KeyMap;
use lectern::tui::run::{Io, RunConfig, event_loop};
use lectern::tui::theme::Theme;
use lectern::tui::watch::ManuscriptSource;
use lectern_engine::protocol::{Request, SegmentState};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use session_common::{fake_engine, open_desk};

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

impl Recorder {
    fn enqueued(&self) -> Vec<u64> {
        let cmds = self.cmds.lock().unwrap();
        cmds.iter()
            .filter_map(
                |c| if let AudioCommand::Enqueue(c) = c { Some(c.segment_id) } else { None },
            )
            .collect()
    }
}

fn key(c: char) -> Event {
    Event::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE))
}

const BOOK: &str = "The first paragraph stays.\n\nThe second paragraph will change.\n\n\
                    The third paragraph stays too.\n";

/// Runs the loop with `script(elapsed)` giving keys, against the fake engine; every request
/// sent to the engine is recorded. Returns the final App and the requests.
fn run_loop(
    desk: &mut Desk,
    manuscript: Option<&Path>,
    script: impl FnMut(Duration) -> Option<Event>,
) -> (App, Vec<Request>, Recorder) {
    run_loop_on(TestBackend::new(120, 36), desk, manuscript, script)
}

/// [`run_loop`] drawing on `backend`.
fn run_loop_on<B: ratatui::backend::Backend>(
    backend: B,
    desk: &mut Desk,
    manuscript: Option<&Path>,
    mut script: impl FnMut(Duration) -> Option<Event>,
) -> (App, Vec<Request>, Recorder) {
    let h = fake_engine(lectern_engine::protocol::RenderParams::default());
    let (tx, tap) = std::sync::mpsc::channel::<Request>();
    let sent = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&sent);
    let engine_tx = h.tx.clone();
    let forward = std::thread::spawn(move || {
        for r in tap {
            log.lock().unwrap().push(r.clone());
            let _ = engine_tx.send(r);
        }
    });
    let mut cfg = RunConfig {
        themes_dir: None,
        manuscript: manuscript.map(|p| ManuscriptSource { path: p.to_path_buf() }),
        fps: 200,
        ..RunConfig::default()
    };
    cfg.app.autoplay = true;
    let player = Recorder::default();
    let mut terminal = Terminal::new(backend).unwrap();
    let start = Instant::now();
    let mut input = |timeout: Duration| -> io::Result<Option<Event>> {
        std::thread::sleep(timeout);
        Ok(script(start.elapsed()))
    };
    let io = Io { engine_tx: &tx, player: &player, desk };
    let app = event_loop(&mut terminal, &cfg, KeyMap::default(), &h.rx, io, &mut input).unwrap();
    drop(tx);
    forward.join().unwrap();
    h.shutdown();
    let sent = sent.lock().unwrap().clone();
    (app, sent, player)
}

/// Keys at given times (ms), once each.
fn keys_at(plan: Vec<(u64, Event)>) -> impl FnMut(Duration) -> Option<Event> {
    let mut plan = std::collections::VecDeque::from(plan);
    move |t| match plan.front() {
        Some((ms, _)) if t >= Duration::from_millis(*ms) => plan.pop_front().map(|(_, e)| e),
        _ => None,
    }
}

fn enqueued_texts(sent: &[Request]) -> Vec<String> {
    sent.iter()
        .filter_map(|r| if let Request::Enqueue(v) = r { Some(v.clone()) } else { None })
        .flatten()
        .map(|s| s.text)
        .collect()
}

#[test]
fn the_loop_renders_saves_reseeds_and_a_reopened_project_renders_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let book = dir.path().join("book.txt");
    std::fs::write(&book, BOOK).unwrap();
    let mut desk = open_desk(&book, 1000);
    let script = keys_at(vec![(600, key('[')), (800, key('s')), (1300, key('q'))]);
    let (app, sent, player) = run_loop(&mut desk, None, script);
    assert!(app.quit);
    assert_eq!(app.params.nfe, 9, "the engine echoed SetNfe(9)");
    assert_eq!(enqueued_texts(&sent).len(), 3, "each segment once");
    for row in &app.rows {
        assert_eq!(row.state, SegmentState::Ready, "{row:?}");
        assert_eq!(row.chosen, Some(0), "the first take is chosen");
    }
    assert_eq!(app.rows[0].takes.len(), 2, "re-seed made a second take");
    let (s1, s2) = (app.rows[0].takes[0].record.seed, app.rows[0].takes[1].record.seed);
    assert_ne!(s1, s2);
    let ids: Vec<u64> = app.rows.iter().map(|r| r.id).collect();
    assert_eq!(player.enqueued(), ids, "autoplay queued every segment once, in order");
    drop(desk);

    // Reopen: the takes, the choice and the seeds are there; nothing renders.
    let mut desk = open_desk(&book, 1000);
    let (again, sent, _) = run_loop(&mut desk, None, keys_at(vec![(300, key('q'))]));
    assert!(enqueued_texts(&sent).is_empty(), "nothing re-renders: {sent:?}");
    for (a, b) in app.rows.iter().zip(&again.rows) {
        assert_eq!(a.id, b.id);
        assert_eq!(a.takes.len(), b.takes.len());
        assert_eq!(a.chosen, b.chosen);
        let seeds =
            |r: &lectern::tui::app::Row| r.takes.iter().map(|t| t.record.seed).collect::<Vec<_>>();
        assert_eq!(seeds(a), seeds(b));
    }
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
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("book.txt");
    std::fs::write(&path, BOOK).unwrap();
    let v2 = BOOK.replace("will change", "has changed now");
    let mut desk = open_desk(&path, 7);
    let edit_path = path.clone();
    let mut step = 0;
    let script = move |t: Duration| -> Option<Event> {
        match step {
            0 if t > Duration::from_millis(800) => std::fs::write(&edit_path, &v2).unwrap(),
            1 if t > Duration::from_millis(2000) => std::fs::write(&edit_path, "").unwrap(),
            2 if t > Duration::from_millis(3000) => {
                step += 1;
                return Some(key('q'));
            }
            _ => return None,
        }
        step += 1;
        None
    };
    let (app, sent, _) = run_loop(&mut desk, Some(&path), script);
    let texts: Vec<&str> = app.rows.iter().map(|r| r.text.as_str()).collect();
    assert_eq!(texts.len(), 3);
    assert!(texts[1].contains("has changed now"), "{texts:?}");
    let enqueued = enqueued_texts(&sent);
    assert_eq!(enqueued.len(), 4, "three, then only the changed one: {enqueued:?}");
    assert!(enqueued[3].contains("has changed now"));
    for row in &app.rows {
        assert_eq!(row.state, SegmentState::Ready, "{row:?}");
        assert_eq!(row.takes.len(), 1, "one take each: {row:?}");
    }
    assert!(
        app.log.iter().any(|l| l.contains("manuscript not reloaded")),
        "the parse error is logged: {:?}",
        app.log
    );
}

/// Idle means idle: once everything is rendered and nothing plays, the loop draws nothing and
/// looks at its inputs only a few times a second (it drew 200 frames a second at this `fps`
/// before issue #20).
#[test]
fn an_idle_workstation_draws_nothing_and_rarely_wakes() {
    let dir = tempfile::tempdir().unwrap();
    let book = dir.path().join("book.txt");
    std::fs::write(&book, BOOK).unwrap();
    let mut desk = open_desk(&book, 1000);
    let idle_from = Duration::from_millis(2000);
    let quit_at = Duration::from_millis(4000);
    let wakes = Arc::new(Mutex::new(0usize));
    let counted = Arc::clone(&wakes);
    let script = move |t: Duration| -> Option<Event> {
        if t >= quit_at {
            return Some(key('q'));
        }
        if t >= idle_from {
            *counted.lock().unwrap() += 1;
        }
        None
    };
    let (app, _, _) = run_loop(&mut desk, None, script);
    assert!(app.rows.iter().all(|r| r.state == SegmentState::Ready), "all rendered");
    // The frames drawn while the fake engine rendered, and the one after `q`.
    assert!(app.redraws < 100, "{} frames in 4 s", app.redraws);
    let wakes = *wakes.lock().unwrap();
    // 2 s at one look per 250 ms: 8 (the first after the last event comes at the frame rate).
    assert!(wakes <= 12, "{wakes} wake-ups in 2 idle seconds");
}

/// `w` on a segment offers its words (a word with a pronunciation entry as the entry); enter
/// asks the engine to speak the pick in the current voice as the audition id, and the loop
/// plays what comes back without saving it as a take.
#[test]
fn auditioning_a_word_plays_it_and_keeps_no_take() {
    use lectern::tui::app::{AUDITION_ID, Mode};
    let dir = tempfile::tempdir().unwrap();
    let book = dir.path().join("book.txt");
    std::fs::write(&book, "Nguyen paid 3 dollars.\n").unwrap();
    std::fs::write(dir.path().join("pronunciations.txt"), "Nguyen = [N][W][IY1][N]\n").unwrap();
    let mut desk = open_desk(&book, 1000);
    let right = Event::Key(KeyEvent::new(KeyCode::Right, KeyModifiers::NONE));
    let enter = Event::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE));
    // Ctrl-C quits with the picker open, so its choices can be read from the final App.
    let ctrl_c = Event::Key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL));
    let script = keys_at(vec![
        (600, key('w')),
        (700, enter.clone()),
        (1000, right.clone()),
        (1100, right),
        (1200, enter),
        (1700, ctrl_c),
    ]);
    let (app, sent, player) = run_loop(&mut desk, None, script);
    let Mode::Audition(picker) = &app.mode else { panic!("picker closed: {:?}", app.mode) };
    let labels: Vec<_> = picker.choices.iter().map(|c| c.label.as_str()).collect();
    assert_eq!(labels, ["Nguyen → [N][W][IY1][N]", "paid", "3", "dollars"]);
    let auditions: Vec<_> = sent
        .iter()
        .filter_map(|r| if let Request::Reseed(s) = r { Some(s) } else { None })
        .filter(|s| s.id == AUDITION_ID)
        .map(|s| s.text.as_str())
        .collect();
    assert_eq!(auditions, ["[N][W][IY1][N].", "three."], "the entry, then the number as read");
    let played: Vec<_> = player
        .cmds
        .lock()
        .unwrap()
        .iter()
        .filter_map(|c| if let AudioCommand::Play(c) = c { Some(c.clone()) } else { None })
        .filter(|c| c.segment_id == AUDITION_ID)
        .collect();
    assert_eq!(played.len(), 2, "each audition played once");
    assert!(played.iter().all(|c| !c.samples.is_empty()));
    // Not kept: the segment has only its own take, the project nothing more.
    assert_eq!(app.rows.len(), 1);
    assert_eq!(app.rows[0].takes.len(), 1);
    assert_eq!(desk.rows().unwrap()[0].takes.len(), 1);
}

/// A `TestBackend` that keeps, for each frame drawn, the NFE its parameters panel shows.
struct NfeFrames {
    inner: TestBackend,
    drawn: Arc<Mutex<Vec<usize>>>,
}

impl NfeFrames {
    /// The NFE of the frame's `NFE  N` line, if the frame shows one.
    fn nfe(&self) -> Option<usize> {
        let buf = self.inner.buffer();
        (0..buf.area.height).find_map(|y| {
            let line: String = (0..buf.area.width).map(|x| buf[(x, y)].symbol()).collect();
            let after = line.split("│NFE").nth(1)?;
            after.split_whitespace().next()?.parse().ok()
        })
    }
}

impl ratatui::backend::Backend for NfeFrames {
    fn draw<'a, I>(&mut self, content: I) -> io::Result<()>
    where
        I: Iterator<Item = (u16, u16, &'a ratatui::buffer::Cell)>,
    {
        self.inner.draw(content)
    }
    fn hide_cursor(&mut self) -> io::Result<()> {
        self.inner.hide_cursor()
    }
    fn show_cursor(&mut self) -> io::Result<()> {
        self.inner.show_cursor()
    }
    fn get_cursor_position(&mut self) -> io::Result<ratatui::layout::Position> {
        self.inner.get_cursor_position()
    }
    fn set_cursor_position<P: Into<ratatui::layout::Position>>(&mut self, p: P) -> io::Result<()> {
        self.inner.set_cursor_position(p)
    }
    fn clear(&mut self) -> io::Result<()> {
        self.inner.clear()
    }
    fn size(&self) -> io::Result<ratatui::layout::Size> {
        self.inner.size()
    }
    fn window_size(&mut self) -> io::Result<ratatui::backend::WindowSize> {
        self.inner.window_size()
    }
    /// A frame is complete: note its NFE.
    fn flush(&mut self) -> io::Result<()> {
        if let Some(nfe) = self.nfe() {
            self.drawn.lock().unwrap().push(nfe);
        }
        self.inner.flush()
    }
}

/// Twenty `]` pressed at once (a held key, keys sent together) all land before the next frame:
/// no frame shows NFE part of the way up, and the engine's echoes of the earlier changes do not
/// undo the later presses. NFE goes from its default up by twenty, inside its limits.
#[test]
fn a_burst_of_keys_changes_nfe_by_each_press() {
    use lectern::limits::{NFE_MAX, NFE_MIN};
    const PRESSES: usize = 20;
    let dir = tempfile::tempdir().unwrap();
    let book = dir.path().join("book.txt");
    std::fs::write(&book, BOOK).unwrap();
    let mut desk = open_desk(&book, 1000);
    let start = lectern_engine::protocol::RenderParams::default().nfe;
    assert!((NFE_MIN..=NFE_MAX).contains(&(start + PRESSES)), "the burst stays in the limits");
    let mut plan: Vec<(u64, Event)> = (0..PRESSES).map(|_| (600, key(']'))).collect();
    plan.push((1500, key('q')));
    let drawn = Arc::new(Mutex::new(Vec::new()));
    let backend = NfeFrames { inner: TestBackend::new(120, 36), drawn: Arc::clone(&drawn) };
    let (app, sent, _) = run_loop_on(backend, &mut desk, None, keys_at(plan));
    assert_eq!(app.params.nfe, start + PRESSES, "every press counted");
    let asked: Vec<usize> = sent
        .iter()
        .filter_map(|r| if let Request::SetNfe(n) = r { Some(*n) } else { None })
        .collect();
    let expected: Vec<usize> = (start + 1..=start + PRESSES).collect();
    assert_eq!(asked, expected, "one request per press, in order");
    let drawn = drawn.lock().unwrap().clone();
    assert!(drawn.contains(&start) && drawn.contains(&(start + PRESSES)), "{drawn:?}");
    assert!(
        drawn.iter().all(|n| *n == start || *n == start + PRESSES),
        "a frame was drawn in the middle of the burst: {drawn:?}"
    );
}
