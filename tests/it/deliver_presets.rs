//! Retailer presets, the synthetic speech disclosure and the book's metadata in every format:
//! each preset's export passes its own `check --preset`; the EPUB's publisher, rights, ISBN,
//! description and date reach the MP3's ID3 frames (read back with the `id3` crate), the M4B
//! (ffprobe) and the FLAC master (claxon); every format says the speech is synthetic and
//! names the voice.

use std::path::Path;

use id3::TagLike;

use crate::deliver_common::{PNG, ffprobe, lectern, names, project_with};
use lectern::audio::tags::{SYNTHETIC_SPEECH, SYNTHETIC_SPEECH_ENGINE, SYNTHETIC_SPEECH_VOICE};
use lectern::deliver::check::{self, Rules};
use lectern::deliver::preset::Preset;
use lectern::deliver::{self, BookMeta, DeliveryFormat, DeliveryOptions, MetaFlags};
use lectern::store::{BookRecord, Project};

/// The voice `store_common::synthetic_take` records on every take.
const VOICE: &str = "test-voice";

/// An EPUB whose package carries everything the tags can hold: a UUID and an ISBN identifier,
/// publisher, rights, an escaped-XHTML description and two dates.
fn epub_with_metadata(path: &Path) {
    let opf = r#"<?xml version="1.0" encoding="UTF-8"?>
<package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="uid">
  <metadata xmlns:dc="http://purl.org/dc/elements/1.1/">
    <dc:identifier id="uid">urn:uuid:6c1b1d5e-0000-4000-8000-00000000abcd</dc:identifier>
    <dc:identifier>urn:isbn:978-0-306-40615-7</dc:identifier>
    <dc:title>The Lighthouse</dc:title>
    <dc:creator>Ada Writer</dc:creator>
    <dc:language>en</dc:language>
    <dc:publisher>Harbour &amp; Sons</dc:publisher>
    <dc:rights>© 2024 Ada Writer</dc:rights>
    <dc:description>&lt;p&gt;A keeper and her light.&lt;/p&gt;</dc:description>
    <dc:date>2024-03-01</dc:date>
  </metadata>
  <manifest>
    <item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>
    <item id="c1" href="c1.xhtml" media-type="application/xhtml+xml"/>
  </manifest>
  <spine><itemref idref="c1"/></spine>
</package>"#;
    let nav = lectern_test_support::epub::xhtml(
        "Contents",
        r#"<nav epub:type="toc"><ol><li><a href="c1.xhtml">One</a></li></ol></nav>"#,
    );
    let c1 = lectern_test_support::epub::xhtml("One", "<h1>One</h1><p>The lamp was lit.</p>");
    lectern_test_support::epub::write_epub(
        path,
        "OEBPS/content.opf",
        &[
            ("OEBPS/content.opf", opf.as_bytes()),
            ("OEBPS/nav.xhtml", nav.as_bytes()),
            ("OEBPS/c1.xhtml", c1.as_bytes()),
        ],
    );
}

/// A project of `n` chosen takes (three per chapter) each repeated to `seconds`, whose book
/// record holds the metadata the EPUB above gives.
fn book_project(dir: &Path, n: usize, seconds: f64) -> Project {
    let samples = (seconds * 24_000.0) as usize;
    let (mut p, _, _) =
        project_with(dir, n, 3, |take| take.iter().copied().cycle().take(samples).collect());
    let epub = dir.with_extension("epub");
    epub_with_metadata(&epub);
    let doc = lectern_text::epub::read(&epub, &lectern_text::ReadPolicy::default()).unwrap();
    p.set_book(BookRecord { info: doc.info, ..BookRecord::default() }).unwrap();
    p
}

/// The options of a preset's export, the metadata resolved from the project's book record.
fn preset_options(p: &Project, preset: &Preset, out: &Path) -> DeliveryOptions {
    let book = p.book().unwrap();
    let config = lectern::config::BookDefaults::default();
    let flags = MetaFlags { narrator: Some("Nell Reader".into()), ..MetaFlags::default() };
    DeliveryOptions {
        out_dir: out.to_path_buf(),
        format: preset.format,
        split_chapters: preset.split_chapters,
        meta: BookMeta::resolve(&flags, &book, p.dir(), &config, "fallback"),
        rules: preset.rules.clone(),
        targets: preset.targets.clone(),
        max_file_s: preset.max_file_s,
        ..DeliveryOptions::default()
    }
}

#[test]
fn each_synthetic_store_preset_passes_its_own_check() {
    let tmp = tempfile::tempdir().unwrap();
    // Seven takes of 45 s: a book over Google's five-minute minimum.
    let p = book_project(&tmp.path().join("p"), 7, 45.0);
    for preset in [Preset::google_play(), Preset::findaway()] {
        let out = tmp.path().join(preset.name);
        let report = deliver::export(&p, &preset_options(&p, &preset, &out)).unwrap();
        assert_eq!(report.files.len(), 3, "{}", preset.name);
        for f in &report.files {
            assert!(f.check.passes(), "{}", check::table(std::slice::from_ref(&f.check)));
        }
        let checks = check::check_dir_with(&out, &preset.rules).unwrap();
        assert!(checks.iter().all(check::FileCheck::passes), "{}", check::table(&checks));
        // The CLI's `check --preset` says the same.
        let cli = lectern().args(["check", "--preset", preset.name]).arg(&out).output().unwrap();
        assert!(cli.status.success(), "{}", String::from_utf8_lossy(&cli.stderr));
    }
}

#[test]
fn a_book_under_five_minutes_fails_google_play_and_names_the_rule() {
    let tmp = tempfile::tempdir().unwrap();
    let p = book_project(&tmp.path().join("p"), 3, 2.0);
    let google = Preset::google_play();
    let out = tmp.path().join("out");
    let err = deliver::export(&p, &preset_options(&p, &google, &out)).unwrap_err().to_string();
    assert!(err.contains("Google Play Books asks for at least 5.0 min"), "{err}");
    assert!(err.contains("Google Play Books rules"), "{err}");
    // The same files under ACX's rules: the book's length is no rule there.
    let acx = DeliveryOptions { out_dir: tmp.path().join("acx"), ..DeliveryOptions::default() };
    let report = deliver::export(&p, &acx).unwrap();
    assert!(report.files.iter().all(|f| f.check.passes()));
    let cli = lectern()
        .args(["check", "--preset", "google-play"])
        .arg(tmp.path().join("acx"))
        .output()
        .unwrap();
    assert!(!cli.status.success());
    let stderr = String::from_utf8_lossy(&cli.stderr);
    assert!(stderr.contains("fail Google Play Books's requirements"), "{stderr}");
}

fn id3_text<'a>(tag: &'a id3::Tag, id: &str) -> Option<&'a str> {
    tag.get(id).and_then(|f| f.content().text())
}

fn txxx<'a>(tag: &'a id3::Tag, name: &str) -> Option<&'a str> {
    tag.extended_texts().find(|t| t.description == name).map(|t| t.value.as_str())
}

#[test]
fn the_epub_metadata_and_the_disclosure_reach_every_mp3() {
    let tmp = tempfile::tempdir().unwrap();
    let p = book_project(&tmp.path().join("p"), 4, 1.0);
    let out = tmp.path().join("out");
    deliver::export(&p, &preset_options(&p, &Preset::acx(), &out)).unwrap();
    let files = names(&out);
    assert_eq!(files.len(), 2);
    for name in files {
        let tag = id3::Tag::read_from_path(out.join(&name)).unwrap();
        assert_eq!(tag.album(), Some("The Lighthouse"));
        assert_eq!(tag.artist(), Some("Ada Writer"));
        assert_eq!(id3_text(&tag, "TCOM"), Some("Nell Reader"));
        assert_eq!(id3_text(&tag, "TPUB"), Some("Harbour & Sons"));
        assert_eq!(id3_text(&tag, "TCOP"), Some("© 2024 Ada Writer"));
        assert_eq!(tag.year(), Some(2024));
        assert_eq!(txxx(&tag, "ISBN"), Some("9780306406157"));
        assert_eq!(txxx(&tag, "DATE"), Some("2024-03-01"));
        assert_eq!(txxx(&tag, "LANGUAGE"), Some("en"));
        let description = tag.comments().find(|c| c.description == "description").unwrap();
        assert_eq!(description.text, "A keeper and her light.");
        // The disclosure: machine-readable frames, and the comment a player shows.
        assert_eq!(txxx(&tag, SYNTHETIC_SPEECH), Some("yes"));
        assert_eq!(txxx(&tag, SYNTHETIC_SPEECH_VOICE), Some(VOICE));
        assert!(txxx(&tag, SYNTHETIC_SPEECH_ENGINE).unwrap().starts_with("Lectern "));
        let comment = tag.comments().find(|c| c.description.is_empty()).unwrap();
        assert!(comment.text.contains("narrated by a synthetic voice (test-voice)"), "{name}");
    }
}

#[test]
fn the_m4b_carries_the_metadata_and_the_disclosure() {
    let tmp = tempfile::tempdir().unwrap();
    let p = book_project(&tmp.path().join("p"), 4, 1.0);
    let out = tmp.path().join("out");
    let opts = DeliveryOptions {
        format: DeliveryFormat::M4b,
        split_chapters: false,
        enforce_acx: false,
        ..preset_options(&p, &Preset::acx(), &out)
    };
    let report = deliver::export(&p, &opts).unwrap();
    let probe = ffprobe(&report.files[0].path);
    let tags = &probe["format"]["tags"];
    assert_eq!(tags["title"], "The Lighthouse");
    assert_eq!(tags["copyright"], "© 2024 Ada Writer");
    assert_eq!(tags["description"], "A keeper and her light.");
    assert_eq!(tags["date"], "2024");
    let comment = tags["comment"].as_str().unwrap();
    assert!(
        comment.starts_with(&format!(
            "{SYNTHETIC_SPEECH}=yes; {SYNTHETIC_SPEECH_VOICE}={VOICE}; {SYNTHETIC_SPEECH_ENGINE}=Lectern "
        )),
        "{comment}"
    );
    assert!(
        comment.contains("Publisher: Harbour & Sons.") && comment.contains("ISBN: 9780306406157.")
    );
}

#[test]
fn the_flac_and_wav_masters_carry_the_metadata_and_the_disclosure() {
    use lectern::store::export::{ExportFormat, ExportOptions, export};
    let tmp = tempfile::tempdir().unwrap();
    let p = book_project(&tmp.path().join("p"), 4, 1.0);
    let flac = tmp.path().join("book.flac");
    let opts =
        ExportOptions { out: flac.clone(), format: ExportFormat::Flac, ..Default::default() };
    export(&p, &opts).unwrap();
    let reader = claxon::FlacReader::open(&flac).unwrap();
    let tag = |key: &str| reader.get_tag(key).next().map(str::to_string);
    assert_eq!(tag("TITLE").as_deref(), Some("The Lighthouse"));
    assert_eq!(tag("ARTIST").as_deref(), Some("Ada Writer"));
    assert_eq!(tag("ORGANIZATION").as_deref(), Some("Harbour & Sons"));
    assert_eq!(tag("COPYRIGHT").as_deref(), Some("© 2024 Ada Writer"));
    assert_eq!(tag("ISBN").as_deref(), Some("9780306406157"));
    assert_eq!(tag("DESCRIPTION").as_deref(), Some("A keeper and her light."));
    assert_eq!(tag("DATE").as_deref(), Some("2024-03-01"));
    assert_eq!(tag(SYNTHETIC_SPEECH).as_deref(), Some("yes"));
    assert_eq!(tag(SYNTHETIC_SPEECH_VOICE).as_deref(), Some(VOICE));
    assert!(tag("COMMENT").unwrap().contains("synthetic voice"));
    // The WAV master: a LIST/INFO chunk after the audio, the samples as before.
    let wav = tmp.path().join("book.wav");
    export(&p, &ExportOptions { out: wav.clone(), ..Default::default() }).unwrap();
    let bytes = std::fs::read(&wav).unwrap();
    let has = |needle: &[u8]| bytes.windows(needle.len()).any(|w| w == needle);
    assert!(
        has(b"LIST")
            && has(b"INFOINAM")
            && has(b"SYNTHETIC_SPEECH=yes; SYNTHETIC_SPEECH_VOICE=test-voice")
    );
    let samples = hound::WavReader::open(&wav).unwrap().duration();
    assert!(samples > 0);
    // The caller's resolved metadata (the export's flags, config.toml's `[book]`) wins over
    // the manuscript's in the tags, the cue sheet and the chapter list.
    let fields = lectern::audio::tags::BookFields {
        title: "The Keeper".into(),
        author: "Bea Author".into(),
        narrator: "Nell Reader".into(),
        ..Default::default()
    };
    let opts = ExportOptions {
        out: flac.clone(),
        format: ExportFormat::Flac,
        book: Some(fields),
        ..Default::default()
    };
    let report = export(&p, &opts).unwrap();
    let reader = claxon::FlacReader::open(&flac).unwrap();
    let tag = |key: &str| reader.get_tag(key).next().map(str::to_string);
    assert_eq!(tag("TITLE").as_deref(), Some("The Keeper"));
    assert_eq!(tag("ARTIST").as_deref(), Some("Bea Author"));
    assert_eq!(tag("ORGANIZATION"), None);
    let cue = std::fs::read_to_string(&report.cue_path).unwrap();
    assert!(cue.contains("TITLE \"The Keeper\"\nPERFORMER \"Bea Author\"\n"), "{cue}");
    let list = std::fs::read_to_string(&report.json_path).unwrap();
    let list: serde_json::Value = serde_json::from_str(&list).unwrap();
    assert_eq!(list["book"]["author"], "Bea Author");
    assert_eq!(list["book"]["language"], serde_json::Value::Null);
}

/// The picture a file's streams hold as its cover (ffprobe's attached picture).
fn attached_picture(path: &Path) -> serde_json::Value {
    let probe = ffprobe(path);
    let streams = probe["streams"].as_array().unwrap();
    let picture = streams.iter().find(|s| s["disposition"]["attached_pic"] == 1);
    picture.unwrap_or_else(|| panic!("no attached picture in {probe}")).clone()
}

/// The FLAC master carries the book's cover as its front cover (a PICTURE block, which
/// ffprobe reads back) and writes it beside; a cover given instead replaces both; a bad one
/// is refused before any audio is written.
#[test]
fn the_flac_master_embeds_the_cover() {
    use lectern::store::export::{ExportFormat, ExportOptions, export};
    let tmp = tempfile::tempdir().unwrap();
    let mut p = book_project(&tmp.path().join("p"), 2, 1.0);
    let mut book = p.book().unwrap();
    book.info.cover =
        Some(lectern_text::Cover { media_type: "image/png".into(), bytes: PNG.into() });
    p.set_book(book).unwrap();
    let flac = tmp.path().join("book.flac");
    let opts =
        ExportOptions { out: flac.clone(), format: ExportFormat::Flac, ..Default::default() };
    export(&p, &opts).unwrap();
    let picture = attached_picture(&flac);
    assert_eq!((&picture["codec_name"], &picture["width"]), (&"png".into(), &3.into()));
    assert_eq!(std::fs::read(tmp.path().join("book.cover.png")).unwrap(), PNG);
    // A JPEG given instead (made by ffmpeg, so its header is an encoder's).
    let jpeg = tmp.path().join("art.jpg");
    let made = crate::deliver_common::program("ffmpeg")
        .args(["-v", "error", "-f", "lavfi", "-i", "color=c=blue:s=8x4", "-frames:v", "1"])
        .arg(&jpeg)
        .status()
        .unwrap();
    assert!(made.success());
    export(&p, &ExportOptions { cover: Some(jpeg.clone()), ..opts.clone() }).unwrap();
    let picture = attached_picture(&flac);
    assert_eq!((&picture["codec_name"], &picture["width"]), (&"mjpeg".into(), &8.into()));
    let beside = std::fs::read(tmp.path().join("book.cover.jpg")).unwrap();
    assert_eq!(beside, std::fs::read(&jpeg).unwrap());
    // Not an image: refused, naming it, the master as it was.
    let bad = tmp.path().join("bad.jpg");
    std::fs::write(&bad, "not an image").unwrap();
    let before = std::fs::read(&flac).unwrap();
    let err = export(&p, &ExportOptions { cover: Some(bad), ..opts }).unwrap_err().to_string();
    assert!(err.contains("bad.jpg") && err.contains("not a JPEG or PNG"), "{err}");
    assert_eq!(std::fs::read(&flac).unwrap(), before);
}

#[test]
fn rules_without_a_published_figure_check_nothing_of_it() {
    // A file that breaks every ACX level rule passes Google's rules, which publish none.
    let loud = check::FileCheck {
        file: "01-x.mp3".into(),
        sample_rate_hz: 48_000,
        channels: 1,
        bitrates_kbps: vec![128],
        duration_s: 600.0,
        levels: check::Levels {
            rms_db: -10.0,
            peak_db: 0.0,
            true_peak_db: 0.5,
            noise_floor_db: -40.0,
            head_s: 0.0,
            tail_s: 0.0,
            samples: 600 * 48_000,
        },
        failures: Vec::new(),
    };
    assert!(check::failures_of(&loud, None, false, &Preset::google_play().rules).is_empty());
    let acx: Vec<&str> =
        check::failures_of(&loud, None, false, &Rules::acx()).iter().map(|f| f.rule).collect();
    assert_eq!(acx, ["sample_rate", "rms", "peak", "noise_floor", "head", "tail"]);
}

/// The command line end to end: a Markdown book's front matter and the flags reach the tags,
/// the default spoken credits say a synthetic voice narrated it and name the voice, the
/// preset's notes are printed, and `check --preset` (by an alias) passes what it wrote; ACX's
/// preset warns that ACX takes human narration only.
#[test]
fn the_cli_tags_front_matter_and_speaks_the_disclosure() {
    let tmp = tempfile::tempdir().unwrap();
    let book = tmp.path().join("book.md");
    std::fs::write(
        &book,
        "---\ntitle: The Lighthouse\nauthor: Ada Writer\npublisher: Harbour Press\n\
         isbn: 9780306406157\n---\n\n# One\n\nThe lamp turned.\n",
    )
    .unwrap();
    let render = lectern()
        .arg("render")
        .arg(&book)
        .arg("-o")
        .arg(tmp.path().join("book.wav"))
        .output()
        .unwrap();
    assert!(render.status.success(), "{}", String::from_utf8_lossy(&render.stderr));
    let export = |preset: &str, dir: &str| {
        lectern()
            .arg("export")
            .arg(&book)
            .args(["--preset", preset, "--credits", "--narrator", "Nell Reader"])
            .args(["--rights", "© 2026 Ada Writer", "--date", "2026-01-02", "-o"])
            .arg(tmp.path().join(dir))
            .output()
            .unwrap()
    };
    let out = export("findaway", "spotify");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("This audiobook is narrated by a synthetic voice, "), "{stderr}");
    assert!(stderr.contains("This audiobook was narrated by a synthetic voice, "), "{stderr}");
    assert!(stderr.contains("note: Spotify labels digital-voice audiobooks"), "{stderr}");
    assert!(!stderr.contains("human narration only"), "{stderr}");
    let dir = tmp.path().join("spotify");
    assert_eq!(names(&dir), ["01-opening-credits.mp3", "02-one.mp3", "03-closing-credits.mp3"]);
    let tag = id3::Tag::read_from_path(dir.join("02-one.mp3")).unwrap();
    assert_eq!(id3_text(&tag, "TPUB"), Some("Harbour Press"));
    assert_eq!(id3_text(&tag, "TCOP"), Some("© 2026 Ada Writer"));
    assert_eq!(txxx(&tag, "ISBN"), Some("9780306406157"));
    assert_eq!(txxx(&tag, "DATE"), Some("2026-01-02"));
    assert_eq!(txxx(&tag, SYNTHETIC_SPEECH), Some("yes"));
    let voice = txxx(&tag, SYNTHETIC_SPEECH_VOICE).unwrap();
    assert!(!voice.is_empty() && voice != "unnamed voice", "{voice}");
    assert!(stderr.contains(&format!("a synthetic voice, {voice}.")), "{stderr}");
    let check = lectern().args(["check", "--preset", "spotify"]).arg(&dir).output().unwrap();
    assert!(check.status.success(), "{}", String::from_utf8_lossy(&check.stdout));

    let acx = export("acx", "acx");
    let stderr = String::from_utf8_lossy(&acx.stderr);
    assert!(acx.status.success(), "{stderr}");
    assert!(stderr.contains("Audible (ACX) accepts human narration only"), "{stderr}");
}
