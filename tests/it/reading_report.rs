//! `lectern render BOOK --dry-run --report FILE`: the reading report (`docs/dry-run.md`,
//! `reading`) of a manuscript full of traps, beside the listing in the report file, inside the
//! listing itself, and its summary on stderr.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::cli_common::isolated_env;

const TRAPS: &str = "\
# Traps

On 14 March 2023 Louis XVI paid £5 10s. 6d. at 21:00 for 3 kg; see http://example.com.
Then ⅔ of #2701 went to Mr. Smith | NASA said so.

The clock struck 22:00 at last.
";

/// Runs the dry run with `--report`; the report object and stderr.
fn dry_run_report(dir: &Path) -> (Value, String) {
    let book = dir.join("traps.md");
    std::fs::write(&book, TRAPS).unwrap();
    let report = dir.join("r.json");
    let o = Command::new(env!("CARGO_BIN_EXE_lectern"))
        .envs(isolated_env())
        .env("LECTERN_VOICES", "/nonexistent-lectern-voices")
        .arg("render")
        .arg(&book)
        .arg("-o")
        .arg(dir.join("traps.wav"))
        .args(["--quiet", "--dry-run", "--report"])
        .arg(&report)
        .output()
        .expect("run lectern");
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{stderr}");
    let json = std::fs::read(&report).expect("the report is written");
    (serde_json::from_slice(&json).expect("report json"), stderr)
}

fn count(reading: &Value, kind: &str) -> u64 {
    reading["decisions"][kind]["count"].as_u64().unwrap_or(0)
}

fn first(reading: &Value, kind: &str) -> Value {
    reading["decisions"][kind]["items"][0].clone()
}

#[test]
fn dry_run_reports_decisions_and_leftovers() {
    let dir = tempfile::tempdir().unwrap();
    let (report, stderr) = dry_run_report(dir.path());
    let reading = &report["reading"];
    assert_eq!(reading, &report["listing"]["reading"], "the listing carries the same report");
    for (kind, n) in [
        ("date", 1),
        ("roman", 1),
        ("money", 1),
        ("time", 2),
        ("unit", 1),
        ("url", 1),
        ("fraction", 1),
        ("symbol", 1),
        ("abbreviation", 1),
    ] {
        assert_eq!(count(reading, kind), n, "{kind}: {}", reading["decisions"]);
    }
    let date = first(reading, "date");
    assert_eq!(date["source"], "14 March 2023");
    assert_eq!(date["spoken"], "the fourteenth of March, twenty twenty-three");
    assert_eq!((date["chapter"].as_u64(), date["line"].as_u64()), (Some(1), Some(3)));
    // The second line of the paragraph, and the next paragraph's line.
    assert_eq!(first(reading, "symbol")["source"], "#2701");
    assert_eq!(first(reading, "symbol")["line"], 4);
    assert_eq!(reading["decisions"]["time"]["items"][1]["line"], 6);

    let suspicious = &reading["suspicious"];
    let items = suspicious["items"].as_array().expect("items");
    let bar = items.iter().find(|f| f["text"] == "|").expect("the leftover `|`");
    assert_eq!(bar["kind"], "symbol");
    assert_eq!(bar["chapter"], 1);
    assert!(bar["context"].as_str().unwrap().contains("Smith | NASA"), "{bar}");
    assert!(items.iter().any(|f| f["kind"] == "all-caps" && f["text"] == "NASA"), "{items:?}");
    assert_eq!(suspicious["count"].as_u64(), Some(items.len() as u64));

    assert!(stderr.contains("reading: 10 decisions (roman 1, date 1, time 2"), "{stderr}");
    assert!(stderr.contains("symbol `|`"), "{stderr}");
}
