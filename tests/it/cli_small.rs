//! Small command-line promises (#47): output cut short by the reader ends quietly, and the
//! help documents the keymap format the workstation's loader reads.

use std::process::{Command, Stdio};

use crate::cli_common::isolated_env;

fn lectern() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lectern"));
    cmd.envs(isolated_env());
    cmd
}

/// `lectern config | head -0`: the reader is gone before the first line is written.
#[test]
fn config_into_a_closed_pipe_exits_quietly() {
    let mut child = lectern()
        .arg("config")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run lectern");
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert!(out.status.success(), "{err}");
}

/// The keymap example of `--help`, loaded by the workstation's loader, binds what it says.
#[test]
fn the_help_documents_the_keymap_format_the_loader_reads() {
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    use lectern::tui::action::Action;
    use lectern::tui::keymap::KeyMap;

    let help = lectern().arg("--help").output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout).replace('\n', " ");
    let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(help.contains("`[bindings]` table of `\"KEY\" = \"ACTION\"` lines"), "{help}");
    let example = help
        .split("lines, e.g. `")
        .nth(1)
        .and_then(|rest| rest.split('`').next())
        .expect("a keymap example in --help");
    let mut map = KeyMap::default();
    map.patch(&format!("[bindings]\n{example}\n")).unwrap();
    let ctrl_r = KeyEvent::new(KeyCode::Char('r'), KeyModifiers::CONTROL);
    assert_eq!(example, "\"ctrl-r\" = \"reseed\"");
    assert_eq!(map.lookup(&ctrl_r), Some(Action::Reseed));
}
