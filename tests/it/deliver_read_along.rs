//! Captions and the read-along EPUB (#54): `export --format srt|vtt` writes a caption file
//! beside each delivered MP3 whose cues are the file's segment spans, and `export --format
//! epub` writes the book with its chapters' MP3s and EPUB 3 Media Overlays that EPUBCheck
//! passes, each clip the span of its segment.

use std::io::Read;
use std::path::{Path, PathBuf};

use lectern::deliver::captions::{self, CaptionFormat, PrintedTexts};
use lectern::deliver::{self, DeliveredFile, DeliveryOptions, Heard};
use lectern_test_support::epub::{write_epub, xhtml};

use crate::deliver_common::{self, ffmpeg_decode, names};

/// The delivery rate the spans count in.
const RATE: u32 = 44_100;

/// A cue as a caption file writes it: start and end, milliseconds, and its text.
type ParsedCue = (u64, u64, String);

/// The cues of an SRT or WebVTT file (WebVTT's header and NOTE blocks left out).
fn parse_cues(text: &str) -> Vec<ParsedCue> {
    let ms = |t: &str| {
        let t = t.trim().replace(',', ".");
        let (hms, frac) = t.split_once('.').unwrap();
        let parts: Vec<u64> = hms.split(':').map(|p| p.parse().unwrap()).collect();
        ((parts[0] * 60 + parts[1]) * 60 + parts[2]) * 1000 + frac.parse::<u64>().unwrap()
    };
    text.split("\n\n")
        .filter_map(|block| {
            let mut lines = block.lines().skip_while(|l| !l.contains(" --> "));
            let (start, end) = lines.next()?.split_once(" --> ")?;
            let words = lines.collect::<Vec<_>>().join(" ");
            Some((ms(start), ms(end), words))
        })
        .collect()
}

/// A span's sample, as milliseconds rounded (what a caption's clock holds).
fn to_ms(samples: u64) -> u64 {
    (samples * 1000 + u64::from(RATE) / 2) / u64::from(RATE)
}

/// RMS, dBFS, of `samples[from..to]` (clamped to the signal).
fn rms_db(samples: &[f32], from: usize, to: usize) -> f64 {
    let part = &samples[from.min(samples.len())..to.min(samples.len())];
    let power: f64 = part.iter().map(|&s| f64::from(s) * f64::from(s)).sum::<f64>();
    10.0 * (power / part.len().max(1) as f64).max(1e-20).log10()
}

/// Lets the decoded audio sit on the file's timeline: a margin for the encoder's and
/// decoder's delay, a frame or so (LAME writes no info frame that would say it).
const MARGIN_MS: u64 = 60;

/// The inside of a cue or clip from `start` to `end` ms, its edges' margins left out (a short
/// one keeps its middle half).
fn inside(start: u64, end: u64) -> (u64, u64) {
    let margin = MARGIN_MS.min((end - start) / 4);
    (start + margin, end - margin)
}

/// The caption file of a delivered MP3: its cues equal the file's segment spans, in order, to
/// the millisecond; the decoded MP3 is voice inside every cue and room tone before the first.
fn assert_captions_follow(file: &DeliveredFile, caption: &Path, srt: bool) {
    let text = std::fs::read_to_string(caption).unwrap();
    let mut cues = parse_cues(&text);
    if srt {
        // SRT's first cue is the disclosure over the head's room tone.
        let first = cues.remove(0);
        assert!(first.2.contains("synthetic voice"), "{text}");
        assert_eq!(first.0, 0);
    } else {
        assert!(text.starts_with("WEBVTT\n\nNOTE\nSYNTHETIC_SPEECH=yes"), "{text}");
    }
    let spans: Vec<_> =
        file.spans.iter().filter(|s| matches!(s.what, Heard::Segment { .. })).collect();
    assert_eq!(cues.len(), spans.len(), "{text}");
    let (rate, audio) = ffmpeg_decode(&file.path);
    assert_eq!(rate, RATE);
    let at = |ms: u64| (ms * u64::from(rate) / 1000) as usize;
    for (cue, span) in cues.iter().zip(&spans) {
        assert_eq!((cue.0, cue.1), (to_ms(span.start), to_ms(span.end)), "{text}");
        let (from, to) = inside(cue.0, cue.1);
        let loud = rms_db(&audio, at(from), at(to));
        assert!(loud > -40.0, "cue {cue:?}: {loud:.1} dB inside");
    }
    let head = rms_db(&audio, 0, at(cues[0].0 - MARGIN_MS));
    assert!(head < -60.0, "{head:.1} dB before the first cue: room tone expected");
}

/// `captions::write_beside` on a delivery of synthetic takes: one caption file per MP3, its
/// cues the spans; the store's text where no printed text is known.
#[test]
fn captions_are_the_delivered_files_segment_spans() {
    let tmp = tempfile::tempdir().unwrap();
    let (project, segments, _) = deliver_common::project(&tmp.path().join("p"), 5, 3, 2400);
    let opts = DeliveryOptions { out_dir: tmp.path().join("out"), ..DeliveryOptions::default() };
    let report = deliver::export(&project, &opts).unwrap();
    assert_eq!(report.files.len(), 2);
    let printed = PrintedTexts::new();
    for (format, srt) in [(CaptionFormat::Srt, true), (CaptionFormat::Vtt, false)] {
        let d = lectern::audio::tags::Disclosure::lectern(vec!["Ava".into()]);
        let written = captions::write_beside(&report.files, format, RATE, &printed, &d).unwrap();
        assert_eq!(written.len(), 2);
        for (file, caption) in report.files.iter().zip(&written) {
            assert_eq!(caption, &file.path.with_extension(format.extension()));
            assert_captions_follow(file, caption, srt);
        }
    }
    let vtt = std::fs::read_to_string(report.files[0].path.with_extension("vtt")).unwrap();
    let first = &parse_cues(&vtt)[0].2;
    assert_eq!(first, &segments[0].text.split_whitespace().collect::<Vec<_>>().join(" "));
    // `--captions` on an M4B: one caption file for the book, its cues the book's spans.
    let m4b_opts = DeliveryOptions {
        out_dir: tmp.path().join("m4b"),
        format: deliver::DeliveryFormat::M4b,
        ..DeliveryOptions::default()
    };
    let book = deliver::export(&project, &m4b_opts).unwrap().files;
    let d = lectern::audio::tags::Disclosure::default();
    let written = captions::write_beside(&book, CaptionFormat::Srt, RATE, &printed, &d).unwrap();
    assert_eq!(written.len(), 1);
    assert_captions_follow(&book[0], &written[0], true);
}

/// A two-chapter EPUB 3: a nav document, a heading and prose per chapter, emphasis that a
/// sentence ends inside, curly quotes, and a file name with a space.
fn two_chapter_epub(path: &Path) {
    let opf = r#"<?xml version="1.0" encoding="UTF-8"?>
<package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="id" xml:lang="en">
  <metadata xmlns:dc="http://purl.org/dc/elements/1.1/">
    <dc:identifier id="id">urn:uuid:8f1d6a52-3a9e-4f4e-9a51-2f0f3c1d7b10</dc:identifier>
    <dc:title>Two Evenings</dc:title>
    <dc:creator>Ada Writer</dc:creator>
    <dc:language>en</dc:language>
    <meta property="dcterms:modified">2026-01-01T00:00:00Z</meta>
  </metadata>
  <manifest>
    <item id="nav" href="text/nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>
    <item id="css" href="text/style.css" media-type="text/css"/>
    <item id="c1" href="text/one.xhtml" media-type="application/xhtml+xml"/>
    <item id="c2" href="text/chapter%20two.xhtml" media-type="application/xhtml+xml"/>
  </manifest>
  <spine>
    <itemref idref="c1"/>
    <itemref idref="c2"/>
  </spine>
</package>"#;
    let nav = xhtml(
        "Contents",
        r#"<nav epub:type="toc" id="toc"><h1>Contents</h1><ol>
  <li><a href="one.xhtml">Arrival</a></li>
  <li><a href="chapter%20two.xhtml">Departure</a></li>
</ol></nav>"#,
    );
    let one = xhtml(
        "Arrival",
        "<h1>Arrival</h1>\n<p>The train came in at dusk. Nobody met <em>it. Not one</em> \
         person was there.</p>\n<p>\u{201c}Hello,\u{201d} she said to the porter.</p>",
    );
    let two = xhtml(
        "Departure",
        "<h1>Departure</h1>\n<p>Morning was <strong>grey and cold</strong>. The train left.</p>",
    );
    write_epub(
        path,
        "OEBPS/content.opf",
        &[
            ("OEBPS/content.opf", opf.as_bytes()),
            ("OEBPS/text/nav.xhtml", nav.as_bytes()),
            ("OEBPS/text/style.css", b"p { margin: 0; }\n"),
            ("OEBPS/text/one.xhtml", one.as_bytes()),
            ("OEBPS/text/chapter two.xhtml", two.as_bytes()),
        ],
    );
}

fn run_ok(cmd: &mut std::process::Command) -> String {
    let out = cmd.output().expect("run lectern");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{err}");
    err
}

/// The entries of a ZIP by name.
fn unzip(path: &Path) -> Vec<(String, Vec<u8>)> {
    let mut zip = zip::ZipArchive::new(std::fs::File::open(path).unwrap()).unwrap();
    (0..zip.len())
        .map(|k| {
            let mut f = zip.by_index(k).unwrap();
            let mut bytes = Vec::new();
            f.read_to_end(&mut bytes).unwrap();
            (f.name().unwrap().to_string(), bytes)
        })
        .collect()
}

/// A SMIL `<par>`: the text's href, the audio's href, clipBegin and clipEnd in milliseconds.
fn pars(smil: &str) -> Vec<(String, String, u64, u64)> {
    let attr = |tag: &str, name: &str| {
        let at = tag.find(&format!("{name}=\"")).unwrap() + name.len() + 2;
        tag[at..].split('"').next().unwrap().to_string()
    };
    let clock = |v: String| {
        let parts: Vec<&str> = v.split(':').collect();
        let (s, ms) = parts[2].split_once('.').unwrap();
        (parts[0].parse::<u64>().unwrap() * 3600
            + parts[1].parse::<u64>().unwrap() * 60
            + s.parse::<u64>().unwrap())
            * 1000
            + ms.parse::<u64>().unwrap()
    };
    smil.split("<par ")
        .skip(1)
        .map(|par| {
            let text = &par[par.find("<text ").unwrap()..];
            let audio = &par[par.find("<audio ").unwrap()..];
            (
                attr(text, "src"),
                attr(audio, "src"),
                clock(attr(audio, "clipBegin")),
                clock(attr(audio, "clipEnd")),
            )
        })
        .collect()
}

/// EPUBCheck's verdict on `epub` (its output), or `None` when it is not installed here and
/// this is not CI (`.ci/run` installs it and sets `LECTERN_REQUIRE_EPUBCHECK`; there, or
/// wherever `CI` is set, a missing one fails).
fn epubcheck(epub: &Path) -> Option<(bool, String)> {
    let jar = Path::new("/usr/share/java/epubcheck.jar");
    let java = std::process::Command::new("java")
        .arg("-version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !(java && jar.is_file()) {
        assert!(
            std::env::var_os("CI").is_none()
                && std::env::var_os("LECTERN_REQUIRE_EPUBCHECK").is_none(),
            "CI must have EPUBCheck: `apt install default-jre-headless epubcheck` (.ci/run does)"
        );
        eprintln!(
            "no java or EPUBCheck (Debian's `epubcheck`) here: the EPUBCheck part is skipped"
        );
        return None;
    }
    let out = std::process::Command::new("java").arg("-jar").arg(jar).arg(epub).output().unwrap();
    let text =
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    Some((out.status.success(), text))
}

/// The two-chapter EPUB written into `dir` and rendered there on the bundled model; its path.
fn rendered_two_chapter_epub(dir: &Path) -> PathBuf {
    let book = dir.join("book.epub");
    two_chapter_epub(&book);
    run_ok(
        deliver_common::lectern()
            .arg("render")
            .arg(&book)
            .arg("-o")
            .arg(dir.join("r.wav"))
            .arg("--quiet"),
    );
    book
}

/// `export --format epub` of a rendered EPUB: EPUBCheck passes it; each chapter's SMIL pairs
/// every segment's anchor with its clip, the clips equal the spans of the same delivery made
/// through the library, the anchors hold the segments' printed text, and each chapter's MP3
/// (decoded with ffmpeg) is as long as delivered and voice inside every clip.
#[test]
fn a_read_along_epub_passes_epubcheck_and_its_clips_are_the_spans() {
    let tmp = tempfile::tempdir().unwrap();
    let book = rendered_two_chapter_epub(tmp.path());
    let out = tmp.path().join("out");
    let err = run_ok(
        deliver_common::lectern()
            .arg("export")
            .arg(&book)
            .args(["--format", "epub", "-o"])
            .arg(&out),
    );
    assert!(!err.contains("not found in the book"), "{err}");
    assert_eq!(names(&out), ["01-arrival.mp3", "02-departure.mp3", "book.epub"]);
    let epub = out.join("book.epub");
    if let Some((passed, report)) = epubcheck(&epub) {
        let clean = report.contains(" 0 errors") || report.contains("No errors or warnings");
        assert!(passed && clean, "{report}");
    }
    // The same delivery through the library: the spans the clips must equal.
    let project = lectern::store::Project::open(tmp.path().join("book.lectern")).unwrap();
    let lib_opts =
        DeliveryOptions { out_dir: tmp.path().join("lib"), ..DeliveryOptions::default() };
    let delivered = deliver::export(&project, &lib_opts).unwrap().files;
    let entries = unzip(&epub);
    let entry = |name: &str| {
        entries
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, b)| b.clone())
            .unwrap_or_else(|| panic!("no {name}"))
    };
    assert_eq!(entries[0].0, "mimetype");
    let opf = String::from_utf8(entry("OEBPS/content.opf")).unwrap();
    for needle in [
        "media-overlay=\"lectern-mo-1\"",
        "property=\"media:active-class\"",
        "lectern:synthetic-speech\">yes<",
        "lectern:disclosure",
    ] {
        assert!(opf.contains(needle), "{needle}: {opf}");
    }
    let smils = ["OEBPS/lectern/overlays/001.smil", "OEBPS/lectern/overlays/002.smil"];
    for (chapter, (smil, file)) in smils.iter().zip(&delivered).enumerate() {
        let smil_text = String::from_utf8(entry(smil)).unwrap();
        let list = pars(&smil_text);
        let spans: Vec<_> =
            file.spans.iter().filter(|s| matches!(s.what, Heard::Segment { .. })).collect();
        assert_eq!(list.len(), spans.len(), "chapter {}: {smil_text}", chapter + 1);
        let audio_name = format!("OEBPS/lectern/{}", list[0].1.trim_start_matches("../"));
        let audio = entry(&audio_name);
        assert_eq!(audio, std::fs::read(out.join(names(&out)[chapter].clone())).unwrap());
        let mp3 = tmp.path().join(format!("ch{chapter}.mp3"));
        std::fs::write(&mp3, &audio).unwrap();
        let (rate, samples) = ffmpeg_decode(&mp3);
        // As long as the delivered file, within one MP3 frame, and past the last clip.
        let frame = 1152;
        assert!(
            samples.len().abs_diff(file.samples as usize) <= 2 * frame,
            "{} vs {}",
            samples.len(),
            file.samples
        );
        assert!(list.last().unwrap().3 * u64::from(rate) / 1000 <= samples.len() as u64);
        for (par, span) in list.iter().zip(&spans) {
            assert_eq!((par.2, par.3), (to_ms(span.start), to_ms(span.end)), "{smil_text}");
            let at = |ms: u64| (ms * u64::from(rate) / 1000) as usize;
            let (from, to) = inside(par.2, par.3);
            let loud = rms_db(&samples, at(from), at(to));
            assert!(loud > -40.0, "{par:?}: {loud:.1} dB");
            // The anchor is in the chapter's document, around the segment's printed words.
            let (doc, id) = par.0.split_once('#').unwrap();
            let doc_name =
                format!("OEBPS/text/{}", doc.trim_start_matches("../../text/").replace("%20", " "));
            let xhtml = String::from_utf8(entry(&doc_name)).unwrap();
            let anchored = span_text(&xhtml, id);
            let Heard::Segment { text, .. } = &span.what else { unreachable!() };
            let words = |s: &str| {
                s.chars().filter(|c| c.is_alphanumeric()).collect::<String>().to_lowercase()
            };
            // The store keeps the spoken text; its letters are the printed ones here.
            assert_eq!(words(&anchored), words(text), "{id} in {doc_name}: {xhtml}");
        }
    }
}

/// The text inside the element of `id` in `xhtml` (tags left out).
fn span_text(xhtml: &str, id: &str) -> String {
    let start = xhtml.find(&format!("id=\"{id}\"")).unwrap_or_else(|| panic!("no #{id}: {xhtml}"));
    let open = xhtml[..start].rfind('<').unwrap();
    let name: String = xhtml[open + 1..].chars().take_while(|c| c.is_alphanumeric()).collect();
    let body = &xhtml[start..];
    let body = &body[body.find('>').unwrap() + 1..];
    let mut depth = 1;
    let mut out = String::new();
    let mut rest = body;
    while let Some(k) = rest.find('<') {
        out.push_str(&rest[..k]);
        let tag = &rest[k..rest[k..].find('>').unwrap() + k + 1];
        if tag.starts_with(&format!("</{name}")) {
            depth -= 1;
            if depth == 0 {
                break;
            }
        } else if tag.starts_with(&format!("<{name}")) && !tag.ends_with("/>") {
            depth += 1;
        }
        rest = &rest[k + tag.len()..];
    }
    out
}

/// `--format epub` of a book that is no EPUB is refused before anything is written.
#[test]
fn a_read_along_epub_of_a_markdown_book_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let book = tmp.path().join("book.md");
    std::fs::write(&book, "# One\n\nThe lamp turned.\n").unwrap();
    let out = deliver_common::lectern()
        .arg("export")
        .arg(&book)
        .args(["--format", "epub", "-o"])
        .arg(tmp.path().join("out"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("read-along edition of an EPUB book"), "{err}");
    assert!(!tmp.path().join("out").exists());
}

/// `export --format srt` on a rendered book: an SRT beside each MP3, the printed text in it.
#[test]
fn srt_export_writes_captions_beside_the_delivery() {
    let tmp = tempfile::tempdir().unwrap();
    let book = rendered_two_chapter_epub(tmp.path());
    let out = tmp.path().join("captions");
    run_ok(
        deliver_common::lectern()
            .arg("export")
            .arg(&book)
            .args(["--format", "srt", "--split", "chapters", "-o"])
            .arg(&out),
    );
    assert_eq!(
        names(&out),
        ["01-arrival.mp3", "01-arrival.srt", "02-departure.mp3", "02-departure.srt"]
    );
    let srt = std::fs::read_to_string(out.join("01-arrival.srt")).unwrap();
    let cues: Vec<String> = parse_cues(&srt).into_iter().map(|c| c.2).collect();
    // After the disclosure, the chapter's heading as printed, then its paragraphs.
    assert_eq!(cues[1], "Arrival", "{srt}");
    assert!(cues.contains(&"\u{201c}Hello,\u{201d} she said to the porter.".to_string()), "{srt}");
}
