//! The terminal edge: raw mode + alternate screen + mouse capture, restored on exit, on error,
//! on panic (a hook that runs before the default one), on Ctrl-C (a key in raw mode) and on
//! SIGTERM / SIGHUP / SIGINT (which quit like `q`, so the playback file is finalised too). The
//! loop drains engine events without blocking, hands takes to the session ([`Desk`]), waits for
//! input and applies every event already waiting (a burst of keys lands before the next
//! frame), and draws only when something changed (an engine event, a key, a resize, a reloaded
//! file or theme, the player's status — the playhead while audio plays). It looks at the engine
//! at the frame rate while the engine works or just after any event, at the playhead's rate
//! while audio plays, and every `IDLE_WAIT` otherwise. Engine requests go out over an
//! unbounded channel, so the UI never waits for the engine.

use std::io;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender, TryRecvError};
use std::time::{Duration, Instant};

use crossterm::event::{self, DisableMouseCapture, EnableMouseCapture, Event};
use crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use ratatui::Terminal;
use ratatui::backend::{Backend, CrosstermBackend};

use super::action::Action;
use super::app::{AUDITION_ID, App, AppConfig, Command, Msg};
use super::desk::Desk;
use super::keymap::{KeyMap, KeymapError};
use super::theme::{Theme, ThemeError, ThemeWatcher};
use super::view;
use super::watch::{DEBOUNCE, ManuscriptSource, ManuscriptWatcher};
use crate::audio::player::Playback;
use lectern_engine::protocol::{EngineEvent, Request, SegmentId};

/// Engine events (and, apart, terminal events) applied per frame at most, so a flood cannot
/// stall drawing.
const MAX_EVENTS_PER_FRAME: usize = 2000;
/// After a key, an engine event or a reload, how long the loop keeps looking at the engine at
/// the frame rate (a request's answer shows at once); then it waits for input [`IDLE_WAIT`].
const ACTIVE_GRACE: Duration = Duration::from_secs(1);
/// While audio plays and nothing else happens: the playhead's redraw period.
const PLAYHEAD_TICK: Duration = Duration::from_millis(100);
/// With nothing rendering, nothing playing and nothing typed, the loop waits this long for
/// input before it looks at the engine's channel, the player and the watchers again. It
/// draws only if one of them changed something.
const IDLE_WAIT: Duration = Duration::from_millis(250);

/// Errors of the terminal front end.
#[derive(Debug, thiserror::Error)]
pub enum TuiError {
    #[error("terminal: {0}")]
    Io(#[from] io::Error),
    #[error(transparent)]
    Keymap(#[from] KeymapError),
    #[error(transparent)]
    Theme(#[from] ThemeError),
    #[error("session: {0:#}")]
    Session(anyhow::Error),
}

/// How to start the workstation.
#[derive(Debug, Clone)]
pub struct RunConfig {
    pub app: AppConfig,
    /// Optional keymap patch file.
    pub keymap_file: Option<PathBuf>,
    /// Directory of `*.toml` themes, watched for edits.
    pub themes_dir: Option<PathBuf>,
    /// The manuscript file, re-read when it is saved; `None` to never re-read it.
    pub manuscript: Option<ManuscriptSource>,
    /// Frames per second.
    pub fps: u32,
    /// Set (by a signal handler) to quit as `q` does.
    pub quit_signal: Option<Arc<AtomicBool>>,
    /// For measuring the loop (`LECTERN_REDRAW_LOG`): a file holding the frames drawn so far,
    /// rewritten at each frame.
    pub redraw_log: Option<PathBuf>,
}

impl Default for RunConfig {
    fn default() -> Self {
        Self {
            app: AppConfig::default(),
            keymap_file: None,
            themes_dir: Some(PathBuf::from("themes")),
            manuscript: None,
            fps: 30,
            quit_signal: None,
            redraw_log: None,
        }
    }
}

/// Runs the workstation on the real terminal until the user quits.
pub fn run(
    cfg: RunConfig,
    engine_tx: &Sender<Request>,
    engine_rx: &Receiver<EngineEvent>,
    player: &dyn Playback,
    desk: &mut Desk,
) -> Result<(), TuiError> {
    let keymap = match &cfg.keymap_file {
        Some(p) => KeyMap::from_file(p)?,
        None => KeyMap::default(),
    };
    let mut terminal = enter()?;
    let _guard = RestoreGuard;
    let mut input = |timeout: Duration| -> io::Result<Option<Event>> {
        // Events crossterm already holds first; then wait on the terminal ourselves, so a
        // hang-up ends the loop instead of crossterm's read spinning on it (see `tty_wait`).
        tty_wait(Duration::ZERO)?;
        if event::poll(Duration::ZERO)? {
            return event::read().map(Some);
        }
        if tty_wait(timeout)? && event::poll(Duration::ZERO)? {
            return event::read().map(Some);
        }
        Ok(None)
    };
    let io = Io { engine_tx, player, desk };
    event_loop(&mut terminal, &cfg, keymap, engine_rx, io, &mut input).map(|_| ())
}

/// What the loop talks to: the engine's request channel, the player and the session.
pub struct Io<'a> {
    pub engine_tx: &'a Sender<Request>,
    pub player: &'a dyn Playback,
    pub desk: &'a mut Desk,
}

impl Io<'_> {
    /// Applies a message and everything it causes: the App's commands go to the session (and
    /// the engine), whose answers go back to the App, until nothing is left; then the App's
    /// audio commands go to the player.
    fn apply(&mut self, app: &mut App, msg: Msg) {
        let mut msgs = std::collections::VecDeque::from([msg]);
        while let Some(msg) = msgs.pop_front() {
            for cmd in app.update(msg) {
                msgs.extend(self.command(cmd));
            }
        }
        for c in app.drain_audio() {
            self.player.command(c);
        }
    }

    fn command(&mut self, cmd: Command) -> Vec<Msg> {
        self.desk.handle(cmd, self.engine_tx)
    }

    /// Carries out commands the App gave outside [`App::update`], and what they cause.
    fn commands(&mut self, app: &mut App, cmds: Vec<Command>) {
        for cmd in cmds {
            for msg in self.command(cmd) {
                self.apply(app, msg);
            }
        }
        for c in app.drain_audio() {
            self.player.command(c);
        }
    }

    /// An engine event: takes go to the session first (which saves them), then the App hears
    /// of what was saved; everything else goes to the App as it is.
    fn engine_event(&mut self, app: &mut App, ev: EngineEvent) {
        match ev {
            // An audition is heard, never kept.
            EngineEvent::TakeReady(take) if take.record.segment_id == AUDITION_ID => {
                self.apply(app, Msg::Auditioned(Arc::clone(&take.samples)));
            }
            EngineEvent::TakeReady(take) => {
                for msg in self.desk.accept(*take) {
                    self.apply(app, msg);
                }
            }
            other => self.apply(app, Msg::Engine(other)),
        }
    }
}

/// The loop itself, generic over the backend and the input source (tests drive it with a
/// `TestBackend` and scripted events). Returns the final App.
pub fn event_loop<B: Backend>(
    terminal: &mut Terminal<B>,
    cfg: &RunConfig,
    keymap: KeyMap,
    engine_rx: &Receiver<EngineEvent>,
    mut io: Io<'_>,
    input: &mut dyn FnMut(Duration) -> io::Result<Option<Event>>,
) -> Result<App, TuiError> {
    let mut app_cfg = cfg.app.clone();
    let dir = cfg.themes_dir.as_deref().filter(|d| d.is_dir());
    app_cfg.themes = Theme::available(dir);
    app_cfg.lead_in_samples = io.desk.lead_in_samples();
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
    open_rows(&mut app, &mut io)?;

    let period = Duration::from_secs_f64(1.0 / f64::from(cfg.fps.clamp(1, 240)));
    let mut dirty = true;
    let mut last_player: Option<crate::audio::player::PlayerStatus> = None;
    let mut kept_position = app.listening();
    // Until then the loop looks at the engine at the frame rate: after any event, a request
    // may be on its way to the engine and its answer should show without delay.
    let mut active_until = Instant::now() + ACTIVE_GRACE;
    loop {
        let mut activity = false;
        for _ in 0..MAX_EVENTS_PER_FRAME {
            match engine_rx.try_recv() {
                Ok(ev) => {
                    io.engine_event(&mut app, ev);
                    activity = true;
                }
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    if !app.engine_gone {
                        activity = true;
                    }
                    app.update(Msg::EngineGone);
                    break;
                }
            }
        }
        for msg in io.desk.poll_checks() {
            io.apply(&mut app, msg);
            activity = true;
        }
        let status = io.player.status();
        if last_player.as_ref() != Some(&status) {
            // A playhead move is a change to draw, not activity to watch for.
            let state_changed = last_player.as_ref().is_none_or(|p| {
                p.state != status.state
                    || p.now_playing.map(|n| n.take_id) != status.now_playing.map(|n| n.take_id)
            });
            activity |= state_changed;
            last_player = Some(status.clone());
            io.apply(&mut app, Msg::Player(status));
            keep_listening_position(&mut app, &mut io, &mut kept_position);
            dirty = true;
        }
        if manuscript.as_mut().is_some_and(|w| w.poll(Instant::now())) {
            reload_manuscript(&mut app, &mut io);
            activity = true;
        }
        if cfg.quit_signal.as_ref().is_some_and(|q| q.load(Ordering::Relaxed)) && !app.quit {
            app.push_log("signal: quitting");
            io.apply(&mut app, Msg::Action(Action::Quit));
            activity = true;
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
            activity = true;
        }
        if activity {
            dirty = true;
            active_until = Instant::now() + ACTIVE_GRACE;
        }
        if dirty {
            terminal.draw(|f| view::draw(&app, &theme, f))?;
            app.redraws += 1;
            dirty = false;
            if let Some(path) = &cfg.redraw_log {
                let _ = std::fs::write(path, format!("{}\n", app.redraws));
            }
        }
        if app.quit {
            break;
        }
        let now = Instant::now();
        let playing = app.player.state == crate::audio::player::PlayState::Playing;
        let wait = if !app.engine_idle || now < active_until {
            period
        } else if playing {
            period.max(PLAYHEAD_TICK)
        } else {
            IDLE_WAIT
        };
        let mut deadline = now + wait;
        if let Some(due) = manuscript.as_ref().and_then(ManuscriptWatcher::due) {
            deadline = deadline.min(due.max(now));
        }
        loop {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            let Some(ev) = input(deadline - now)? else { break };
            // Every event already waiting is applied before the next frame: a burst of keys
            // (a held key, a paste) lands whole, however slow drawing is.
            let mut next = Some(ev);
            let mut applied = 0;
            while let Some(ev) = next.take() {
                if let Some(msg) = input_msg(ev) {
                    io.apply(&mut app, msg);
                    applied += 1;
                }
                if app.quit || applied >= MAX_EVENTS_PER_FRAME {
                    break;
                }
                next = input(Duration::ZERO)?;
            }
            if applied == 0 {
                continue;
            }
            dirty = true;
            active_until = Instant::now() + ACTIVE_GRACE;
            break;
        }
    }
    Ok(app)
}

/// The App's message for a terminal event (focus and paste events mean nothing to it).
fn input_msg(ev: Event) -> Option<Msg> {
    match ev {
        Event::Key(k) => Some(Msg::Key(k)),
        Event::Mouse(m) => Some(Msg::Mouse(m)),
        Event::Resize(w, h) => Some(Msg::Resize(w, h)),
        _ => None,
    }
}

/// Shows the project's rows and asks the engine for what is missing.
fn open_rows(app: &mut App, io: &mut Io<'_>) -> Result<(), TuiError> {
    app.cast = io.desk.cast_view();
    app.set_rows(io.desk.rows().map_err(TuiError::Session)?);
    let queued = io.desk.start_work(io.engine_tx).map_err(TuiError::Session)?;
    let stored = app.rows.len() - queued.len();
    if stored > 0 {
        app.push_log(format!(
            "project: {stored} segment(s) have their takes, {} to render",
            queued.len()
        ));
    }
    app.mark_queued(&queued);
    log_carried_work(app, io.desk);
    let edited = app.rows.iter().filter(|r| r.edited_since_approval).count();
    if edited > 0 {
        app.push_log(format!(
            "project: {edited} segment(s) edited since approval: listen again, then approve"
        ));
    }
    for msg in io.desk.check_chapters(None) {
        app.update(msg);
    }
    app.wait_at(io.desk.listening_position());
    let cmds = app.start_playback();
    io.commands(app, cmds);
    Ok(())
}

/// What the last sync did with the narrator's work: where review states, notes and pickup
/// flags moved, and a line for each one that stayed with removed text.
fn log_carried_work(app: &mut App, desk: &Desk) {
    if let Some(line) = desk.session().carry_summary() {
        app.push_log(format!("manuscript: {line}"));
    }
    for line in desk.session().left_behind() {
        app.push_log(format!("manuscript: {line}"));
    }
}

/// Keeps the segment the narrator listens to in the project when it changes (once per
/// segment, not per frame).
fn keep_listening_position(app: &mut App, io: &mut Io<'_>, kept: &mut Option<SegmentId>) {
    let now = app.listening();
    if now == *kept {
        return;
    }
    *kept = now;
    if let Some(msg) = now.and_then(|id| io.desk.set_listening_position(id)) {
        app.update(msg);
    }
}

/// Re-reads a saved manuscript: only segments whose content changed render; a file that no
/// longer parses is reported in the log and the old segments stay.
fn reload_manuscript(app: &mut App, io: &mut Io<'_>) {
    match io.desk.reload(io.engine_tx) {
        Ok(None) => {
            // cast.toml may have changed what nobody hears yet (a voice's defaults unused).
            app.cast = io.desk.cast_view();
            app.push_log("manuscript saved: no segment changed");
        }
        Ok(Some(queued)) => match io.desk.rows() {
            Ok(rows) => {
                app.cast = io.desk.cast_view();
                app.set_rows(rows);
                app.mark_queued(&queued);
                app.push_log(format!("manuscript: {} segment(s) to render", queued.len()));
                log_carried_work(app, io.desk);
                for msg in io.desk.check_chapters(None) {
                    app.update(msg);
                }
            }
            Err(e) => app.push_log(format!("manuscript not reloaded: {e:#}")),
        },
        Err(e) => app.push_log(format!("manuscript not reloaded: {e:#}")),
    }
}

/// Waits up to `timeout` for the terminal (stdin) to be readable. An error once the terminal
/// has hung up (its window closed, its tmux pane killed): crossterm's reader would otherwise
/// spin on the dead descriptor at 100 % of a core, its poll never returning
/// (crossterm-rs/crossterm#793).
#[cfg(unix)]
#[allow(unsafe_code)]
fn tty_wait(timeout: Duration) -> io::Result<bool> {
    let mut fds = libc::pollfd { fd: libc::STDIN_FILENO, events: libc::POLLIN, revents: 0 };
    let ms = libc::c_int::try_from(timeout.as_millis()).unwrap_or(libc::c_int::MAX);
    // SAFETY: one valid pollfd, for the duration of the call.
    let n = unsafe { libc::poll(&raw mut fds, 1, ms) };
    if n < 0 {
        let e = io::Error::last_os_error();
        return if e.kind() == io::ErrorKind::Interrupted { Ok(false) } else { Err(e) };
    }
    if fds.revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0 {
        return Err(io::Error::new(io::ErrorKind::BrokenPipe, "the terminal hung up"));
    }
    Ok(n > 0)
}

/// Elsewhere crossterm's own wait.
#[cfg(not(unix))]
fn tty_wait(timeout: Duration) -> io::Result<bool> {
    event::poll(timeout)
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
