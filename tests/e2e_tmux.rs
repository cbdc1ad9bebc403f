//! The real binary in a real terminal: `lectern book.md` on the bundled tiny model inside a
//! tmux pane (its own server socket), driven with send-keys and read back with capture-pane.
//! Open → segments ready → play (to the file sink: no sound card here) → re-seed → change NFE
//! → re-seed again with the new NFE → quit: exit status 0 and the terminal restored.
//! Needs tmux (`apt-get install -y tmux`); without it the test fails and says so.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

const WAIT: Duration = Duration::from_secs(60);

/// A tmux server on its own socket, killed on drop (also when an assertion fails).
struct Tmux {
    socket: String,
}

impl Tmux {
    fn start() -> Self {
        let ok = Command::new("tmux").arg("-V").output().is_ok_and(|o| o.status.success());
        assert!(
            ok,
            "tmux is not installed: this end-to-end test drives the workstation in tmux \
             (apt-get install -y tmux)"
        );
        Self { socket: format!("lectern-e2e-{}", std::process::id()) }
    }

    fn cmd(&self, args: &[&str]) -> Output {
        let out = Command::new("tmux").arg("-L").arg(&self.socket).args(args).output().unwrap();
        assert!(out.status.success(), "tmux {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        out
    }

    fn keys(&self, keys: &str) {
        self.cmd(&["send-keys", "-t", "e2e", keys]);
    }

    fn screen(&self) -> String {
        String::from_utf8_lossy(&self.cmd(&["capture-pane", "-p", "-t", "e2e"]).stdout).into()
    }

    /// Polls the pane until `done` holds; panics with the last screen after [`WAIT`].
    fn wait_for(&self, what: &str, done: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if done(&s) {
                return s;
            }
            assert!(start.elapsed() < WAIT, "timed out waiting for {what}; screen:\n{s}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux").arg("-L").arg(&self.socket).arg("kill-server").output();
    }
}

/// The selected segment's take line: (take k, of n, seed, NFE).
fn take_info(screen: &str) -> Option<(usize, usize, u64, usize)> {
    let line = screen.lines().find(|l| l.contains("take ") && l.contains(" · seed "))?;
    let after = |key: &str| -> Option<&str> {
        let i = line.find(key)? + key.len();
        line[i..].split(|c: char| !c.is_ascii_alphanumeric() && c != '/').next()
    };
    let (k, n) = after("take ")?.split_once('/')?;
    Some((
        k.parse().ok()?,
        n.parse().ok()?,
        after("seed ")?.parse().ok()?,
        after("NFE ")?.parse().ok()?,
    ))
}

fn ready_rows(screen: &str) -> usize {
    screen.matches("● ready").count()
}

fn quote(p: &Path) -> String {
    format!("'{}'", p.display().to_string().replace('\'', r"'\''"))
}

#[test]
fn workstation_in_tmux() {
    let tmux = Tmux::start();
    let dir = tempfile::tempdir().unwrap();
    let book = dir.path().join("book.md");
    std::fs::write(&book, "The lamp was lit.\n\nRain fell on the roof.\n\nShe turned the page.\n")
        .unwrap();
    let wav = dir.path().join("playback.wav");
    let status = dir.path().join("status");
    let stty = dir.path().join("stty");
    // The pane's shell records the exit status and the terminal modes after lectern exits, then
    // keeps the pane open so the restored screen can be read.
    let script = format!(
        "{bin} {book} --fallback-wav {wav}; echo $? > {status}; stty -a > {stty}; \
         echo LECTERN-EXITED; sleep 60",
        bin = quote(&PathBuf::from(env!("CARGO_BIN_EXE_lectern"))),
        book = quote(&book),
        wav = quote(&wav),
        status = quote(&status),
        stty = quote(&stty),
    );
    let cwd = dir.path().display().to_string();
    tmux.cmd(&["new-session", "-d", "-s", "e2e", "-x", "160", "-y", "50", "-c", &cwd, &script]);

    let s = tmux.wait_for("three ready segments", |s| ready_rows(s) == 3);
    assert!(s.contains("Lectern · book.md"), "title bar:\n{s}");
    assert!(s.contains("tiny random-weight model"), "tiny-model notice in the title:\n{s}");
    assert!(s.contains("manuscript · 3 segments"), "{s}");
    let (k, n, seed1, nfe1) = take_info(&s).unwrap_or_else(|| panic!("no take line:\n{s}"));
    assert_eq!((k, n, nfe1), (1, 1, 10), "{s}");

    // Play: no sound card here, so playback goes to the file and the UI says so.
    tmux.keys("Space");
    let s = tmux.wait_for("playback", |s| s.contains("▶ playing"));
    assert!(s.contains("playback.wav"), "the file-sink notice names the file:\n{s}");

    // Re-seed the selected (first) segment: a second take with another seed.
    tmux.keys("s");
    let s = tmux.wait_for("a second take", |s| take_info(s).is_some_and(|t| t.1 == 2));
    let (k, n, seed2, nfe2) = take_info(&s).unwrap();
    assert_eq!((k, n, nfe2), (2, 2, 10), "{s}");
    assert_ne!(seed2, seed1, "re-seed changes the seed:\n{s}");

    // NFE up: the parameter panel shows it and the next render's record carries it.
    tmux.keys("]");
    tmux.wait_for("NFE 11 in the parameter panel", |s| {
        s.lines().any(|l| l.split("NFE").skip(1).any(|r| r.trim_start().starts_with("11 ")))
    });
    tmux.keys("s");
    let s = tmux.wait_for("a third take", |s| take_info(s).is_some_and(|t| t.1 == 3));
    let (k, n, seed3, nfe3) = take_info(&s).unwrap();
    assert_eq!((k, n, nfe3), (3, 3, 11), "the new take was rendered with NFE 11:\n{s}");
    assert!(seed3 != seed2 && seed3 != seed1, "{s}");
    println!("workstation screen:\n{s}");

    tmux.keys("q");
    let s = tmux.wait_for("exit", |s| s.contains("LECTERN-EXITED"));
    let code = std::fs::read_to_string(&status).unwrap();
    assert_eq!(code.trim(), "0", "exit status; screen:\n{s}");
    // Restored: main screen (no UI left on it), cooked mode with echo.
    let alt = tmux.cmd(&["display-message", "-p", "-t", "e2e", "#{alternate_on}"]);
    assert_eq!(String::from_utf8_lossy(&alt.stdout).trim(), "0", "still on the alternate screen");
    assert!(!s.contains("manuscript · 3 segments"), "UI left on the main screen:\n{s}");
    let modes = std::fs::read_to_string(&stty).unwrap();
    for flag in ["icanon", "echo", "isig"] {
        assert!(
            modes.split_whitespace().any(|w| w == flag),
            "terminal left without {flag}: {modes}"
        );
    }
    assert!(std::fs::metadata(&wav).is_ok_and(|m| m.len() > 44), "playback reached the file");
}
