//! Installed like any terminal app (issue #20): the binary carries what it needs.
//!
//! - The binary holds no path into the source tree's asset folders (`fixtures/`, `voices/`,
//!   `themes/`, `samples/`): nothing is looked up through `CARGO_MANIFEST_DIR` at run time.
//! - A copy of the binary, run from an empty directory with `HOME` and the XDG variables in a
//!   temp dir, renders the sample, lists the demo voice, prints its configuration and opens the
//!   workstation under tmux on the demo model with a user theme from the configuration folder;
//!   the first start writes `config.toml`, a second start reads it.
//!
//! Needs tmux (`apt-get install -y tmux`).

use crate::tmux_common::Tmux;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A temp home: `HOME`, `XDG_CONFIG_HOME`, `XDG_DATA_HOME` inside it.
struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn new() -> Self {
        Self { dir: tempfile::tempdir().unwrap() }
    }
    fn path(&self) -> &Path {
        self.dir.path()
    }
    fn config(&self) -> PathBuf {
        self.path().join("config/lectern")
    }
    fn data(&self) -> PathBuf {
        self.path().join("data/lectern")
    }
    fn env(&self) -> Vec<(&'static str, PathBuf)> {
        vec![
            ("HOME", self.path().to_path_buf()),
            ("XDG_CONFIG_HOME", self.path().join("config")),
            ("XDG_DATA_HOME", self.path().join("data")),
        ]
    }
}

/// The binary copied away from the build tree.
fn installed_binary(into: &Path) -> PathBuf {
    let dest = into.join("lectern");
    std::fs::copy(env!("CARGO_BIN_EXE_lectern"), &dest).unwrap();
    dest
}

fn run(bin: &Path, home: &Home, cwd: &Path, args: &[&str]) -> Output {
    let mut cmd = Command::new(bin);
    cmd.args(args).current_dir(cwd).env_remove("LECTERN_VOICES");
    for (k, v) in home.env() {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

#[test]
fn the_binary_holds_no_path_into_the_source_tree() {
    let bytes = std::fs::read(env!("CARGO_BIN_EXE_lectern")).unwrap();
    let root = env!("CARGO_MANIFEST_DIR");
    for dir in ["fixtures", "voices", "themes", "samples"] {
        let needle = format!("{root}/{dir}");
        let found = bytes.windows(needle.len()).any(|w| w == needle.as_bytes());
        assert!(!found, "the binary names {needle}: an asset found through the build tree");
    }
}

#[test]
fn a_copied_binary_runs_from_an_empty_directory() {
    let home = Home::new();
    let place = tempfile::tempdir().unwrap();
    let bin = installed_binary(place.path());
    let cwd = tempfile::tempdir().unwrap();

    // The sample renders on the demo model, materialised into the data directory.
    let o = run(&bin, &home, cwd.path(), &["render", "--quiet", "--nfe", "2"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(cwd.path().join("welcome.wav").is_file(), "{}", text(&o));
    assert!(home.data().join("demo/model/llm.pt").is_file());
    assert!(home.data().join("sample/welcome.md").is_file());

    let o = run(&bin, &home, cwd.path(), &["voice", "list"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("tiny-demo"), "{}", text(&o));

    // The settings, each with its source.
    std::fs::create_dir_all(home.config()).unwrap();
    std::fs::write(home.config().join("config.toml"), "nfe = 4\nlanes = 2\n").unwrap();
    let o = run(&bin, &home, cwd.path(), &["config", "--lanes", "3"]);
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    let line = |key: &str| out.lines().find(|l| l.starts_with(key)).unwrap_or("").to_string();
    assert!(line("nfe ").contains(" 4 ") && line("nfe ").contains("config.toml"), "{out}");
    assert!(line("lanes ").contains(" 3 ") && line("lanes ").contains("command line"), "{out}");
    assert!(line("group_target ").contains("(default)"), "{out}");

    // A bad key stops render, naming the file, the line and the key.
    std::fs::write(home.config().join("config.toml"), "voice = \"tiny-demo\"\nnfe = 0\n").unwrap();
    let o = run(&bin, &home, cwd.path(), &["render", "--quiet", "-o", "x.wav"]);
    assert!(!o.status.success());
    let expected = format!("{}:2: nfe: ", home.config().join("config.toml").display());
    assert!(text(&o).contains(&expected), "{}", text(&o));
    std::fs::remove_file(home.config().join("config.toml")).unwrap();

    // Nothing was written into the working directory but the render's WAV.
    let mut left: Vec<_> = std::fs::read_dir(cwd.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, vec!["welcome.wav".to_string()]);
}

fn quote(p: &Path) -> String {
    format!("'{}'", p.display().to_string().replace('\'', r"'\''"))
}

/// Runs the installed workstation in `cwd` until `ready` holds for its screen (or it exits),
/// then quits it with `quit_key`; returns that screen.
fn workstation(
    tmux: &Tmux,
    bin: &Path,
    home: &Home,
    cwd: &Path,
    quit_key: &str,
    ready: impl Fn(&str) -> bool,
) -> String {
    let env: Vec<String> = home.env().iter().map(|(k, v)| format!("{k}={}", quote(v))).collect();
    let script = format!(
        "env -u LECTERN_VOICES {} {} --playback-device file; echo LECTERN-EXITED $?; sleep 60",
        env.join(" "),
        quote(bin)
    );
    tmux.open(cwd, &script);
    let s = tmux.wait_for("the workstation", |s| ready(s) || s.contains("EXITED"));
    tmux.keys(quit_key);
    let end = tmux.close_after_exit();
    assert!(end.contains("LECTERN-EXITED 0"), "{end}");
    s
}

#[test]
fn the_installed_workstation_opens_on_the_demo_model_and_writes_its_config() {
    let tmux = Tmux::named("install");
    let home = Home::new();
    let place = tempfile::tempdir().unwrap();
    let bin = installed_binary(place.path());
    let cwd = tempfile::tempdir().unwrap();

    // The sample is 5 segments (the demo model cuts it with the Qwen2 BPE, as a real one does).
    let rendered = |s: &str| s.matches("● ready").count() + s.matches("▶ playing").count() == 5;
    let s = workstation(&tmux, &bin, &home, cwd.path(), "q", rendered);
    assert!(s.contains("welcome.md") && s.contains("tiny-a"), "{s}");
    let cfg = home.config().join("config.toml");
    let written = std::fs::read_to_string(&cfg).expect("the first start writes config.toml");
    assert!(written.contains("# nfe = 10"), "{written}");
    assert!(home.config().join("themes").is_dir());

    // A user theme beside the built-ins, chosen in config.toml, and a key override.
    std::fs::write(home.config().join("themes/paper.toml"), "base = \"light\"\n").unwrap();
    std::fs::write(&cfg, "theme = \"paper\"\nnfe = 5\n").unwrap();
    std::fs::write(home.config().join("keymap.toml"), "[bindings]\n\"x\" = \"quit\"\n").unwrap();
    // `x` quits: the keymap override is in force. (The first segment's take is the sign that
    // the whole screen, a banner included, has been drawn; the sample need not finish.)
    let started = |s: &str| s.contains("welcome.md") && s.contains("● ready");
    let s = workstation(&tmux, &bin, &home, cwd.path(), "x", started);
    assert!(!s.contains("config:"), "no configuration problem: {s}");
    assert!(!s.contains("no such theme"), "{s}");

    // A bad key: a banner, and the workstation still runs.
    std::fs::write(&cfg, "nfe = 99\n").unwrap();
    let banner = |s: &str| started(s) && s.contains("config: 1 problem");
    let s = workstation(&tmux, &bin, &home, cwd.path(), "x", banner);
    assert!(s.contains("config: 1 problem"), "{s}");
}
