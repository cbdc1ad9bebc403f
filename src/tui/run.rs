//! The terminal edge: raw mode + alternate screen + mouse capture, restored on exit, on error,
//! on panic (a hook that runs before the default one) and on Ctrl-C (a key in raw mode). The
//! loop drains engine events without blocking, polls input until the next frame, and draws from
//! the App at a steady rate; engine requests go out over an unbounded channel, so the UI never
//! waits for the engine.

use std::io;
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, Sender, TryRecvError};
use std::time::{Duration, Instant};

use crossterm::event::{self, DisableMouseCapture, EnableMouseCapture, Event};
use crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use ratatui::Terminal;
use ratatui::backend::{Backend, CrosstermBackend};

use super::app::{App, AppConfig, Msg};
use super::keymap::{KeyMap, KeymapError};
use super::theme::{Theme, ThemeError, ThemeWatcher};
use super::view;
use super::watch::{DEBOUNCE, ManuscriptSource, ManuscriptWatcher};
use crate::audio::player::Playback;
use crate::engine::protocol::{EngineEvent, Request};

/// Engine events applied per frame at most, so a flood cannot stall drawing.
const MAX_EVENTS_PER_FRAME: usize = 2000;

/// Errors of the terminal front end.
#[derive(Debug, thiserror::Error)]
pub enum TuiError {
    #[error("terminal: {0}")]
    Io(#[from] io::Error),
    #[error(transparent)]
    Keymap(#[from] KeymapError),
    #[error(transparent)]
    Theme(#[from] ThemeError),
}

/// How to start the workstation.
#[derive(Debug, Clone)]
pub struct RunConfig {
    pub app: AppConfig,
    /// The manuscript's segment texts, in order.
    pub segments: Vec<String>,
    /// Optional keymap patch file.
    pub keymap_file: Option<PathBuf>,
    /// Directory of `*.toml` themes, watched for edits.
    pub themes_dir: Option<PathBuf>,
    /// The manuscript file, re-parsed when it is saved; `None` for a fixed list of segments.
    pub manuscript: Option<ManuscriptSource>,
    /// Frames per second.
    pub fps: u32,
}

impl Default for RunConfig {
    fn default() -> Self {
        Self {
            app: AppConfig::default(),
            segments: Vec::new(),
            keymap_file: None,
            themes_dir: Some(PathBuf::from("themes")),
            manuscript: None,
            fps: 30,
        }
    }
}

/// Runs the workstation on the real terminal until the user quits.
pub fn run(
    cfg: RunConfig,
    engine_tx: &Sender<Request>,
    engine_rx: &Receiver<EngineEvent>,
    player: &dyn Playback,
) -> Result<(), TuiError> {
    let keymap = match &cfg.keymap_file {
        Some(p) => KeyMap::from_file(p)?,
        None => KeyMap::default(),
    };
    let mut terminal = enter()?;
    let _guard = RestoreGuard;
    let mut input = |timeout: Duration| -> io::Result<Option<Event>> {
        if event::poll(timeout)? { event::read().map(Some) } else { Ok(None) }
    };
    event_loop(&mut terminal, &cfg, keymap, engine_tx, engine_rx, player, &mut input).map(|_| ())
}

/// The loop itself, generic over the backend and the input source (tests drive it with a
/// `TestBackend` and scripted events). Returns the final App.
pub fn event_loop<B: Backend>(
    terminal: &mut Terminal<B>,
    cfg: &RunConfig,
    keymap: KeyMap,
    engine_tx: &Sender<Request>,
    engine_rx: &Receiver<EngineEvent>,
    player: &dyn Playback,
    input: &mut dyn FnMut(Duration) -> io::Result<Option<Event>>,
) -> Result<App, TuiError> {
    let mut app_cfg = cfg.app.clone();
    let dir = cfg.themes_dir.as_deref().filter(|d| d.is_dir());
    app_cfg.themes = Theme::available(dir);
    let mut app = App::new(app_cfg, keymap);
    let mut theme = Theme::load(dir, &app.theme_name).unwrap_or_else(|e| {
        app.push_log(e.to_string());
        Theme::dark()
    });
    let watch = dir.map(ThemeWatcher::new).transpose().unwrap_or_else(|e| {
        app.push_log(format!("themes will not hot-reload: {e}"));
        None
    });
    let mut manuscript = cfg.manuscript.clone().and_then(|src| {
        let path = src.path.display().to_string();
        ManuscriptWatcher::new(src, DEBOUNCE)
            .map_err(|e| app.push_log(format!("{path} will not reload on save: {e}")))
            .ok()
    });
    let size = terminal.size()?;
    app.update(Msg::Resize(size.width, size.height));
    let reqs = app.set_segments(&cfg.segments);
    send(&mut app, engine_tx, player, reqs);

    let period = Duration::from_secs_f64(1.0 / f64::from(cfg.fps.clamp(1, 240)));
    let mut next = Instant::now();
    loop {
        for _ in 0..MAX_EVENTS_PER_FRAME {
            match engine_rx.try_recv() {
                Ok(ev) => {
                    let reqs = app.update(Msg::Engine(ev));
                    send(&mut app, engine_tx, player, reqs);
                }
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    app.update(Msg::EngineGone);
                    break;
                }
            }
        }
        app.update(Msg::Player(player.status()));
        if let Some(w) = manuscript.as_mut() {
            reload_manuscript(&mut app, w, engine_tx, player);
        }
        let reload = watch.as_ref().is_some_and(|(_, rx)| rx.try_iter().count() > 0);
        if reload || app.theme_name != theme.name {
            match Theme::load(dir, &app.theme_name) {
                Ok(t) => theme = t,
                Err(e) => {
                    app.push_log(e.to_string());
                    app.theme_name.clone_from(&theme.name);
                }
            }
        }
        terminal.draw(|f| view::draw(&app, &theme, f))?;
        if app.quit {
            break;
        }
        next += period;
        loop {
            let now = Instant::now();
            if now >= next {
                next = now.max(next);
                break;
            }
            let Some(ev) = input(next - now)? else { break };
            let msg = match ev {
                Event::Key(k) => Msg::Key(k),
                Event::Mouse(m) => Msg::Mouse(m),
                Event::Resize(w, h) => Msg::Resize(w, h),
                _ => continue,
            };
            let reqs = app.update(msg);
            send(&mut app, engine_tx, player, reqs);
            if app.quit {
                break;
            }
        }
    }
    Ok(app)
}

/// Hands a saved manuscript's new segments to the App (which re-renders only changed ones);
/// a file that no longer parses is reported in the log and the old segments stay.
fn reload_manuscript(
    app: &mut App,
    watcher: &mut ManuscriptWatcher,
    engine_tx: &Sender<Request>,
    player: &dyn Playback,
) {
    match watcher.poll(Instant::now()) {
        None => {}
        Some(Ok(texts)) => {
            let reqs = app.set_segments(&texts);
            if reqs.is_empty() {
                app.push_log("manuscript saved: no segment changed");
            }
            send(app, engine_tx, player, reqs);
        }
        Some(Err(e)) => app.push_log(format!("manuscript not reloaded: {e}")),
    }
}

/// Sends the App's requests to the engine and its audio commands to the player.
fn send(app: &mut App, engine_tx: &Sender<Request>, player: &dyn Playback, reqs: Vec<Request>) {
    for r in reqs {
        if engine_tx.send(r).is_err() {
            app.update(Msg::EngineGone);
            break;
        }
    }
    for c in app.drain_audio() {
        player.command(c);
    }
}

fn enter() -> io::Result<Terminal<CrosstermBackend<io::Stdout>>> {
    install_panic_hook();
    enable_raw_mode()?;
    let mut out = io::stdout();
    if let Err(e) = crossterm::execute!(out, EnterAlternateScreen, EnableMouseCapture) {
        restore();
        return Err(e);
    }
    Terminal::new(CrosstermBackend::new(out))
}

/// Puts the terminal back: cooked mode, main screen, no mouse capture, visible cursor.
pub fn restore() {
    let _ = disable_raw_mode();
    let _ = crossterm::execute!(
        io::stdout(),
        DisableMouseCapture,
        LeaveAlternateScreen,
        crossterm::cursor::Show
    );
}

struct RestoreGuard;

impl Drop for RestoreGuard {
    fn drop(&mut self) {
        restore();
    }
}

/// Restores the terminal before the previous hook prints the panic, so the message is
/// readable and the shell usable.
fn install_panic_hook() {
    let prev = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore();
        prev(info);
    }));
}
