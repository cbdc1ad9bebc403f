//! A tmux server for the end-to-end tests: its own socket, one session (`e2e`) of 160×50
//! running a script, driven with send-keys and read back with capture-pane; killed on drop
//! (also when an assertion fails).
//!
//! Needs tmux (`apt-get install -y tmux`); without it the tests fail and say so.

use std::path::Path;
use std::process::{Command, Output};
use std::thread::sleep;
use std::time::{Duration, Instant};

/// How long a screen may take to show what a test waits for.
const WAIT: Duration = Duration::from_secs(60);

/// The pane's session name.
const SESSION: &str = "e2e";

/// What tmux's client prints when its new server dies while starting: a known tmux race
/// (seen once in CI on `new-session`), gone when the server is started again.
const SERVER_LOST: &str = "server exited unexpectedly";

pub struct Tmux {
    socket: String,
}

impl Tmux {
    /// A server on the socket `lectern-TAG-PID`: one tag per test, so tests run side by side.
    pub fn named(tag: &str) -> Self {
        let ok = Command::new("tmux").arg("-V").output().is_ok_and(|o| o.status.success());
        assert!(
            ok,
            "tmux is not installed: this end-to-end test drives the workstation in tmux \
             (apt-get install -y tmux)"
        );
        Self { socket: format!("lectern-{tag}-{}", std::process::id()) }
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new("tmux").arg("-L").arg(&self.socket).args(args).output().unwrap()
    }

    pub fn cmd(&self, args: &[&str]) -> Output {
        let out = self.run(args);
        assert!(out.status.success(), "tmux {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        out
    }

    /// Runs `script` in a new session in `cwd`. A server lost while it started is started
    /// again once; any other failure fails the test.
    pub fn open(&self, cwd: &Path, script: &str) {
        let cwd = cwd.display().to_string();
        let args =
            ["new-session", "-d", "-s", SESSION, "-x", "160", "-y", "50", "-c", &cwd, script];
        let first = self.run(&args);
        if first.status.success() {
            return;
        }
        let err = String::from_utf8_lossy(&first.stderr);
        assert!(err.contains(SERVER_LOST), "tmux {args:?}: {err}");
        let _ = self.run(&["kill-server"]);
        sleep(Duration::from_millis(100));
        self.cmd(&args);
    }

    pub fn keys(&self, keys: &str) {
        self.cmd(&["send-keys", "-t", SESSION, keys]);
    }

    pub fn screen(&self) -> String {
        String::from_utf8_lossy(&self.cmd(&["capture-pane", "-p", "-t", SESSION]).stdout).into()
    }

    /// A `#{...}` format of the pane, e.g. `#{alternate_on}`.
    pub fn pane_format(&self, format: &str) -> String {
        let out = self.cmd(&["display-message", "-p", "-t", SESSION, format]);
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// Polls the pane until `done` holds; panics with the last screen after [`WAIT`].
    pub fn wait_for(&self, what: &str, done: impl Fn(&str) -> bool) -> String {
        self.wait_longer(what, WAIT, done)
    }

    pub fn wait_longer(&self, what: &str, wait: Duration, done: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if done(&s) {
                return s;
            }
            assert!(start.elapsed() < wait, "timed out waiting for {what}; screen:\n{s}");
            sleep(Duration::from_millis(100));
        }
    }

    /// Waits for the pane's script to print its end marker, then closes the session.
    pub fn close_after_exit(&self) -> String {
        // An aborted workstation leaves its screen behind, and the marker may be printed over
        // it at a line's end and wrap: look for it across line breaks.
        let s = self.wait_for("exit", |s| s.replace('\n', "").contains("LECTERN-EXITED"));
        self.cmd(&["kill-session", "-t", SESSION]);
        s
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.run(&["kill-server"]);
    }
}
