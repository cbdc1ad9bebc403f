//! A book rendered in shards and gathered (issue #51): byte for byte the output of one render
//! of the whole book, each shard holding its share of the takes and the gather rendering none;
//! a shard killed and resumed gathers to the same bytes; a shard of other text or settings, and
//! a missing share, are refused by name.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::cli_common::isolated_env;
use serde_json::Value;

fn lectern() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lectern"));
    cmd.envs(isolated_env());
    cmd.env("LECTERN_VOICES", "/nonexistent-lectern-voices");
    cmd
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn ok(o: Output) -> Output {
    assert!(o.status.success(), "{}", stderr(&o));
    o
}

const BOOK: &str = "# One\n\nThe lamp was lit at dusk.\n\nA dog barked twice. Then it slept.\n\n\
    Rain fell on the roof all night long.\n\n# Two\n\nMorning came grey and cold.\n\n\
    She opened the door. The street was empty.\n\nA cart rolled by.\n\n# Three\n\n\
    The river was high.\n\nNobody crossed it that day.\n\nThe end.\n";

fn shard(book: &Path, k: usize, dir: &Path, extra: &[&str]) -> Command {
    let mut cmd = lectern();
    cmd.arg("render").arg(book).args(["--quiet", "--shard", &format!("{k}/3"), "--project"]);
    cmd.arg(dir).args(extra);
    cmd
}

fn gather(book: &Path, project: &Path, shards: &[PathBuf], out: &Path) -> Output {
    let mut cmd = lectern();
    cmd.arg("render").arg(book).arg("--quiet").arg("--project").arg(project);
    cmd.arg("-o").arg(out).arg("--report").arg(out.with_extension("json")).arg("--gather");
    cmd.args(shards).output().unwrap()
}

fn take_files(project: &Path) -> usize {
    std::fs::read_dir(project.join("takes"))
        .map(|d| {
            d.filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "wav")).count()
        })
        .unwrap_or(0)
}

#[test]
fn three_shards_gather_to_the_bytes_of_one_render() {
    let tmp = tempfile::tempdir().unwrap();
    let book = tmp.path().join("book.md");
    std::fs::write(&book, BOOK).unwrap();
    let whole = tmp.path().join("whole.wav");
    ok(lectern()
        .arg("render")
        .arg(&book)
        .args(["--quiet", "--project"])
        .arg(tmp.path().join("whole.lectern"))
        .arg("-o")
        .arg(&whole)
        .output()
        .unwrap());
    let total = take_files(&tmp.path().join("whole.lectern"));

    let shards: Vec<PathBuf> = (1..=3).map(|k| tmp.path().join(format!("shard{k}"))).collect();
    for (k, dir) in shards.iter().enumerate() {
        let o = ok(shard(&book, k + 1, dir, &[]).output().unwrap());
        assert!(stderr(&o).contains(&format!("shard {}/3", k + 1)), "{}", stderr(&o));
        let n = take_files(dir);
        assert!(n >= 2 && n <= total / 2, "shard {} holds {n} of {total} takes", k + 1);
    }
    assert_eq!(shards.iter().map(|d| take_files(d)).sum::<usize>(), total);

    let out = tmp.path().join("gathered.wav");
    let o = ok(gather(&book, &tmp.path().join("gathered.lectern"), &shards, &out));
    assert!(stderr(&o).contains("gathered 3 shard(s)"), "{}", stderr(&o));
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(out.with_extension("json")).unwrap())
            .unwrap();
    assert_eq!(report["rendered"], 0, "a gather renders nothing");
    assert!(std::fs::read(&out).unwrap() == std::fs::read(&whole).unwrap(), "same bytes");

    // A shard killed mid-render and resumed gathers to the same bytes.
    let again = tmp.path().join("shard2-again");
    let mut child = shard(&book, 2, &again, &[]).spawn().unwrap();
    // Killed once its first flow group is saved, before the rest.
    let started = std::time::Instant::now();
    while take_files(&again) == 0 && started.elapsed().as_secs() < 60 {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let _ = child.kill();
    let _ = child.wait();
    let partial = take_files(&again);
    assert!(partial > 0, "the shard saved nothing in a minute");
    ok(shard(&book, 2, &again, &[]).output().unwrap());
    let resumed = [shards[0].clone(), again, shards[2].clone()];
    let out2 = tmp.path().join("resumed.wav");
    ok(gather(&book, &tmp.path().join("resumed.lectern"), &resumed, &out2));
    assert!(std::fs::read(&out2).unwrap() == std::fs::read(&whole).unwrap(), "same bytes");

    // A missing share is refused, naming a segment; so are a shard of other settings and one
    // of other text.
    let o = gather(&book, &tmp.path().join("g2.lectern"), &shards[..2], &tmp.path().join("g2.wav"));
    let err = stderr(&o);
    assert!(!o.status.success() && err.contains("a share is missing"), "{err}");
    let slow = tmp.path().join("shard3-nfe5");
    ok(shard(&book, 3, &slow, &["--nfe", "5"]).output().unwrap());
    let mixed = [shards[0].clone(), shards[1].clone(), slow.clone()];
    let o = gather(&book, &tmp.path().join("g3.lectern"), &mixed, &tmp.path().join("g3.wav"));
    let err = stderr(&o);
    assert!(
        !o.status.success() && err.contains("other settings") && err.contains("shard3-nfe5"),
        "{err}"
    );
    std::fs::write(&book, BOOK.replace("The river was high.", "The river was low.")).unwrap();
    let o = gather(&book, &tmp.path().join("g4.lectern"), &shards, &tmp.path().join("g4.wav"));
    let err = stderr(&o);
    assert!(
        !o.status.success() && err.contains("other content") && err.contains("The river was high"),
        "{err}"
    );
}
