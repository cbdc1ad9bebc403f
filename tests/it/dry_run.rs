//! `lectern render --dry-run`: the `lectern.dry-run/1` object (`docs/dry-run.md`) from the real
//! binary — languages, pauses, chapters and their estimated minutes, what an EPUB's reading
//! rules left out, the ACX warning —, the reading flags as they fill the policy, and the demo
//! model segmenting as a real model directory does (the real Qwen2 BPE, not bytes).

use std::path::{Path, PathBuf};
use std::process::Command;

use clap::Parser as _;
use lectern::cli::{Cli, Command as Sub};
use lectern::reading::ReadOptions;
use lectern_test_support::epub::{write_epub, xhtml};
use lectern_text::{NotesPolicy, Tokenizer, TokenizerKind};
use serde_json::Value;

use crate::cli_common::isolated_env;

fn lectern() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lectern"));
    cmd.envs(isolated_env());
    cmd.env("LECTERN_VOICES", "/nonexistent-lectern-voices");
    cmd
}

/// `lectern render BOOK --dry-run --json ARGS…`: the object on stdout, and stderr.
fn dry_run_json(book: &Path, args: &[&str]) -> (Value, String) {
    let out = book.with_extension("wav");
    let o = lectern()
        .arg("render")
        .arg(book)
        .arg("-o")
        .arg(&out)
        .args(["--quiet", "--dry-run", "--json"])
        .args(args)
        .output()
        .expect("run lectern");
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{stderr}");
    assert!(!out.exists(), "a dry run writes nothing");
    (serde_json::from_slice(&o.stdout).expect("dry-run json"), stderr)
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn n(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a number: {v}"))
}

fn array(v: &Value) -> &Vec<Value> {
    v.as_array().unwrap_or_else(|| panic!("not an array: {v}"))
}

/// What the estimate says of these segments (words at 155/min, pauses), as `docs/dry-run.md`
/// defines it, for English text.
fn expected_minutes(segments: &[&Value]) -> f64 {
    let is_cjk = |c: char| ('\u{4e00}'..='\u{9fff}').contains(&c);
    let words: usize = segments
        .iter()
        .flat_map(|s| s["text"].as_str().unwrap().split_whitespace())
        .filter(|w| !w.chars().any(is_cjk))
        .count();
    let pause_ms: u64 = segments.iter().map(|s| n(&s["pause_after"])).sum();
    words as f64 / 155.0 + pause_ms as f64 / 60_000.0
}

#[test]
fn the_json_is_a_versioned_object_with_languages_pauses_and_chapters() {
    let dir = tempfile::tempdir().unwrap();
    let words = "word ".repeat(310);
    let text = format!(
        "---\ntitle: The Keeper\nauthor: Ada Writer\nlanguage: en-GB\n---\n\n# The Keeper\n\n\
         The keeper left. [pause:1s] Then he waited.\n\n[lang:fr]Bonjour mes amis.[/lang]\n\n\
         # Two\n\n他走了。\n\n{words}\n"
    );
    let book = write(dir.path(), "book.md", &text);
    let (v, _) = dry_run_json(&book, &[]);

    assert_eq!(v["schema"], "lectern.dry-run/1");
    assert_eq!(v["book"]["title"], "The Keeper");
    assert_eq!(v["book"]["author"], "Ada Writer");
    assert_eq!(v["book"]["language"], "en-gb");
    assert!(v["tokenizer"].as_str().unwrap().starts_with("Qwen2 BPE"), "{}", v["tokenizer"]);
    assert!(array(&v["warnings"]).is_empty(), "{}", v["warnings"]);
    assert!(array(&v["skipped"]).is_empty(), "Markdown skips nothing");

    let segments = array(&v["segments"]);
    let by_source = |src: &str| {
        segments
            .iter()
            .find(|s| s["source"].as_str().unwrap().contains(src))
            .unwrap_or_else(|| panic!("no segment of {src:?}: {segments:?}"))
    };
    // The book's English tag, the markup's French, Chinese text's zh.
    assert_eq!(by_source("The keeper left.")["language"], "en-gb");
    assert_eq!(by_source("Bonjour")["language"], "fr");
    assert_eq!(by_source("他走了")["language"], "zh");
    assert_eq!(by_source("他走了")["unit"], "characters");
    // `[pause:1s]` is the silence after its segment, in milliseconds.
    assert_eq!(n(&by_source("The keeper left.")["pause_after"]), 1000);
    for s in segments {
        for key in ["segment", "chapter", "line", "tokens", "length", "limit", "pause_after"] {
            assert!(s[key].is_u64(), "{key} of {s}");
        }
        for key in ["source", "text", "unit", "boundary", "reason", "language"] {
            assert!(s[key].is_string(), "{key} of {s}");
        }
        assert!(s["spoken_by"]["voice"].is_string(), "{s}");
    }

    let chapters = array(&v["chapters"]);
    assert_eq!(chapters.len(), 2);
    let mut first = 1;
    for c in chapters {
        let k = n(&c["chapter"]);
        let members: Vec<&Value> = segments.iter().filter(|s| n(&s["chapter"]) == k).collect();
        assert_eq!(n(&c["segments"]) as usize, members.len());
        assert_eq!(n(&c["first_segment"]), first);
        first += members.len() as u64;
        assert!(c["marks"].is_array());
        let minutes = c["estimated_minutes"].as_f64().unwrap();
        // Chapter 2's Chinese characters add 3/250 min beside its words.
        let cjk = if k == 2 { 3.0 / 250.0 } else { 0.0 };
        let want = expected_minutes(&members) + cjk;
        assert!((minutes - want).abs() <= 0.051, "chapter {k}: {minutes} vs {want}");
    }
    assert_eq!(chapters[0]["title"], "The Keeper");
    // 310 words at 155 a minute.
    assert!(chapters[1]["estimated_minutes"].as_f64().unwrap() >= 2.0, "{}", chapters[1]);

    let summary = &v["summary"];
    assert_eq!(n(&summary["segments"]) as usize, segments.len());
    assert!(n(&summary["read_chars"]) > 310 * 4, "{summary}");
    assert_eq!(n(&summary["skipped_chars"]), 0);
    assert_eq!(summary["skipped_by_reason"], serde_json::json!({}));
}

#[test]
fn the_table_shows_languages_pauses_and_chapters() {
    let dir = tempfile::tempdir().unwrap();
    let book = write(dir.path(), "book.md", "# One\n\nHello there. [pause:1.5s] Goodbye.\n");
    let o = lectern()
        .arg("render")
        .arg(&book)
        .arg("-o")
        .arg(dir.path().join("book.wav"))
        .args(["--quiet", "--dry-run"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let table = String::from_utf8(o.stdout).unwrap();
    assert!(table.contains("lang") && table.contains("pause"), "{table}");
    assert!(table.lines().any(|l| l.contains(" en ") && l.contains("1.5s")), "{table}");
    assert!(table.contains("chapters (minutes estimated from the text)"), "{table}");
    assert!(table.lines().any(|l| l.trim_end().ends_with("One") && l.contains("0.")), "{table}");
}

/// An EPUB 3 whose spine holds its contents page and whose chapter carries printed page
/// numbers.
fn paged_epub(path: &Path) {
    let opf = r#"<?xml version="1.0" encoding="UTF-8"?>
<package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="id">
  <metadata xmlns:dc="http://purl.org/dc/elements/1.1/">
    <dc:identifier id="id">urn:uuid:5678</dc:identifier>
    <dc:title>Paged</dc:title>
    <dc:creator>Ada Writer</dc:creator>
    <dc:language>en</dc:language>
  </metadata>
  <manifest>
    <item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>
    <item id="c1" href="ch1.xhtml" media-type="application/xhtml+xml"/>
    <item id="c2" href="ch2.xhtml" media-type="application/xhtml+xml"/>
  </manifest>
  <spine>
    <itemref idref="nav"/>
    <itemref idref="c1"/>
    <itemref idref="c2"/>
  </spine>
</package>"#;
    let nav = xhtml(
        "Contents",
        r#"<nav epub:type="toc" id="toc"><h1>Table of Contents</h1><ol>
  <li><a href="ch1.xhtml">The Harbour</a></li>
  <li><a href="ch2.xhtml">The Lighthouse</a></li>
</ol></nav>"#,
    );
    let c1 = xhtml(
        "The Harbour",
        r#"<section epub:type="chapter"><h1>The Harbour</h1>
<p>The boats came home before the storm.</p>
<span epub:type="pagebreak" role="doc-pagebreak" id="p417">417</span>
<p>Nobody stayed on the quay after dark.</p></section>"#,
    );
    let c2 = xhtml(
        "The Lighthouse",
        r#"<section epub:type="chapter"><h1>The Lighthouse</h1>
<p>The lamp turned all night.</p>
<div epub:type="pagebreak" role="doc-pagebreak" id="p418" title="418">418</div>
<p>By morning the sea was calm.</p></section>"#,
    );
    write_epub(
        path,
        "OEBPS/content.opf",
        &[
            ("OEBPS/content.opf", opf.as_bytes()),
            ("OEBPS/nav.xhtml", nav.as_bytes()),
            ("OEBPS/ch1.xhtml", c1.as_bytes()),
            ("OEBPS/ch2.xhtml", c2.as_bytes()),
        ],
    );
}

#[test]
fn an_epubs_page_numbers_and_contents_are_listed_as_skipped_never_read() {
    let dir = tempfile::tempdir().unwrap();
    let book = dir.path().join("paged.epub");
    paged_epub(&book);
    let (v, _) = dry_run_json(&book, &[]);

    assert_eq!(v["book"]["title"], "Paged");
    assert_eq!(v["book"]["language"], "en");
    let segments = array(&v["segments"]);
    for s in segments {
        let (source, text) = (s["source"].as_str().unwrap(), s["text"].as_str().unwrap());
        for page in ["417", "418"] {
            assert!(!source.contains(page), "page number read: {s}");
        }
        assert!(!text.contains("hundred"), "page number read: {s}");
        assert!(!source.contains("Table of Contents"), "contents read: {s}");
        assert_eq!(s["language"], "en");
    }
    let read: String =
        segments.iter().map(|s| s["source"].as_str().unwrap()).collect::<Vec<_>>().join(" ");
    assert!(read.contains("Nobody stayed on the quay") && read.contains("sea was calm"), "{read}");

    let skipped = array(&v["skipped"]);
    assert!(!skipped.is_empty(), "{v}");
    for s in skipped {
        assert!(n(&s["chapter"]) >= 1 && s["line"].is_u64(), "{s}");
        assert!(s["reason"].is_string() && s["text"].is_string(), "{s}");
        assert!(s["kind"].is_string() || s["kind"].is_null(), "{s}");
        assert!(s["file"].is_string() || s["file"].is_null(), "{s}");
    }
    let reasons: Vec<&str> = skipped.iter().map(|s| s["reason"].as_str().unwrap()).collect();
    assert!(reasons.contains(&"page-number"), "{reasons:?}");
    assert!(reasons.contains(&"navigation"), "{reasons:?}");

    let summary = &v["summary"];
    let by_reason = summary["skipped_by_reason"].as_object().unwrap();
    assert_eq!(by_reason.values().map(n).sum::<u64>() as usize, skipped.len(), "{summary}");
    assert_eq!(
        n(&by_reason["page-number"]),
        reasons.iter().filter(|r| **r == "page-number").count() as u64
    );
    assert!(n(&summary["read_chars"]) > 0 && n(&summary["skipped_chars"]) > 0, "{summary}");
    assert_eq!(n(&summary["segments"]) as usize, segments.len());
    // Less was skipped than read: no warning.
    assert!(array(&v["warnings"]).is_empty(), "{}", v["warnings"]);
    assert_eq!(array(&v["chapters"]).len(), 2, "{}", v["chapters"]);
}

#[test]
fn a_chapter_over_two_hours_is_named_in_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    // ~20,000 words: about 130 minutes at 155 words a minute.
    let paragraph = "The keeper walked along the quiet shore at dawn today. ".repeat(10);
    let long: String = (0..200).map(|_| format!("{paragraph}\n\n")).collect();
    let text = format!("# The Long Night\n\n{long}# Morning\n\nIt was over.\n");
    let book = write(dir.path(), "long.md", &text);
    let (v, stderr) = dry_run_json(&book, &[]);

    let warnings: Vec<&str> = array(&v["warnings"]).iter().map(|w| w.as_str().unwrap()).collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let w = warnings[0];
    assert!(w.starts_with("chapter 1 \"The Long Night\" is about 1"), "{w}");
    assert!(w.ends_with("min, over ACX's 120-minute limit: split it"), "{w}");
    assert!(stderr.contains(&format!("warning: {w}")), "{stderr}");
    let minutes = array(&v["chapters"])[0]["estimated_minutes"].as_f64().unwrap();
    assert!((129.0..150.0).contains(&minutes), "{minutes}");
}

fn read_options(args: &[&str]) -> ReadOptions {
    let cli = Cli::try_parse_from([&["lectern", "render", "book.epub"], args].concat())
        .unwrap_or_else(|e| panic!("{args:?}: {e}"));
    match cli.command {
        Some(Sub::Render(r)) => r.read.options(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_reading_flags_fill_the_policy() {
    let read = read_options(&[
        "--skip",
        "dedication,Epigraph",
        "--read",
        "code",
        "--notes",
        "chapter-end",
        "--chapter-level",
        "2",
    ]);
    let p = read.effective_policy();
    assert!(p.skips("dedication") && p.skips("epigraph") && !p.skips("code"));
    assert!(p.skips("titlepage") && !p.skips("preface"), "the defaults stay");
    assert_eq!(p.notes, NotesPolicy::ChapterEnd);
    assert_eq!(p.chapter_level, Some(2));

    // No flag: the default policy.
    assert_eq!(read_options(&[]).effective_policy(), lectern_text::ReadPolicy::default());
    // `--read` takes a kind back from `--skip-front-matter`; repeated flags add up.
    let p = read_options(&["--skip-front-matter", "--read", "epigraph", "--skip", "index"])
        .effective_policy();
    assert!(p.skips("preface") && p.skips("dedication") && !p.skips("epigraph"));
    let p = read_options(&["--skip", "index", "--skip", "appendix"]).effective_policy();
    assert!(p.skips("index") && p.skips("appendix"));
    assert_eq!(read_options(&["--notes", "inline"]).policy.notes, NotesPolicy::Inline);

    // The workstation takes the same flags.
    let cli = Cli::try_parse_from(["lectern", "book.epub", "--skip", "index"]).unwrap();
    assert!(cli.workstation.read.options().effective_policy().skips("index"));

    for bad in [
        &["--chapter-level", "0"][..],
        &["--chapter-level", "7"],
        &["--notes", "footer"],
        &["--skip", "front matter"],
        &["--skip", ""],
    ] {
        let args = [&["lectern", "render", "b.md"], bad].concat();
        assert!(Cli::try_parse_from(args).is_err(), "{bad:?} accepted");
    }
}

#[test]
fn read_options_round_trip_and_old_projects_read_as_before() {
    let read = read_options(&["--skip", "index", "--notes", "inline", "--chapter-level", "3"]);
    let json = serde_json::to_string(&read).unwrap();
    assert_eq!(serde_json::from_str::<ReadOptions>(&json).unwrap(), read);
    // A project recorded before the policy existed: the default policy, front matter as it
    // said.
    let old: ReadOptions = serde_json::from_str(r#"{"skip_front_matter":true}"#).unwrap();
    assert_eq!(old.policy, lectern_text::ReadPolicy::default());
    assert!(old.effective_policy().skips("preface"));
    let old: ReadOptions = serde_json::from_str("{}").unwrap();
    assert_eq!(old, ReadOptions::default());
}

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Segments as a real model's tokenizer cuts them: long sentences, merged up to 80 tokens.
const PROSE: &str = "# The Crossing\n\n\
    The ferry left the harbour an hour late, because the harbourmaster, who had slept badly \
    and quarrelled with his brother over breakfast, refused to sign the papers until the \
    captain had counted every passenger twice. Nobody complained. The sea was flat and grey, \
    and the gulls followed the boat all the way to the island, crying over the wake as if \
    they had been promised something and meant to collect it.\n\n\
    On the island, the keeper's daughter was waiting on the quay with a lantern, a basket of \
    bread and a letter she had been told to give to nobody but the doctor; she gave it to the \
    first man who stepped ashore, who was not the doctor, and that, as her father said \
    afterwards, was how the whole business began.\n";

#[test]
fn the_demo_model_segments_as_a_real_model_directory_does() {
    let dir = tempfile::tempdir().unwrap();
    let book = write(dir.path(), "crossing.md", PROSE);
    let (v, _) = dry_run_json(&book, &[]);

    // The materialised demo model carries the Qwen2 BPE.
    let data = isolated_env().into_iter().find(|(k, _)| *k == "XDG_DATA_HOME").unwrap().1;
    let demo = Tokenizer::from_model_dir(&data.join("lectern/demo/model")).unwrap();
    assert_eq!(demo.kind(), TokenizerKind::Qwen2, "{}", demo.describe());
    assert!(v["tokenizer"].as_str().unwrap().starts_with("Qwen2 BPE"), "{}", v["tokenizer"]);

    // The binary's listing equals the one made with the real tokenizer fixture.
    let qwen2 = Tokenizer::from_model_dir(&repo().join("fixtures/qwen2-tokenizer")).unwrap();
    let fixture = listed(&book, &qwen2);
    let from_binary: Vec<(u64, u64, String, String, u64, String)> = array(&v["segments"])
        .iter()
        .map(|s| {
            let st = |k: &str| s[k].as_str().unwrap().to_string();
            (
                n(&s["segment"]),
                n(&s["line"]),
                st("source"),
                st("text"),
                n(&s["tokens"]),
                st("boundary"),
            )
        })
        .collect();
    assert_eq!(from_binary, fixture);
    assert_eq!(demo.encode(PROSE).unwrap(), qwen2.encode(PROSE).unwrap());
    // Bytes as tokens would have cut it elsewhere: the comparison means something.
    let bytes = Tokenizer::tiny_fallback(Path::new("bytes"));
    assert_ne!(listed(&book, &bytes), fixture);
}

/// (segment, line, source, text, tokens, boundary) of every segment, read in this process.
fn listed(book: &Path, tokenizer: &Tokenizer) -> Vec<(u64, u64, String, String, u64, String)> {
    let m = lectern::reading::load(book, tokenizer, &ReadOptions::default()).unwrap();
    let cast = lectern::cast::Cast::beside(book, "tiny-demo").unwrap();
    lectern::dry_run::listing(&m, tokenizer, &cast, book)
        .unwrap()
        .into_iter()
        .map(|s| {
            let boundary = serde_json::to_value(s.boundary).unwrap().as_str().unwrap().to_string();
            (s.segment as u64, s.line as u64, s.source, s.text, s.tokens as u64, boundary)
        })
        .collect()
}
