//! Delivery export (`export --preset acx`, `--format mp3|m4b`): files decoded by an independent
//! decoder (Debian's ffprobe/ffmpeg) have ACX's format, tags, chapter marks and levels; the same
//! project exported twice gives the same bytes; take silences are trimmed to the pause plan;
//! long chapters split; credits and the retail sample are their own files.

use crate::deliver_common;
use crate::store_common;

use deliver_common::{ffmpeg_decode, ffprobe, names, project, project_with, write_wav};
use lectern::deliver::check::{self, acx};
use lectern::deliver::{self, BookMeta, DeliveryFormat, DeliveryOptions, HEAD_S, TAIL_S};

fn acx_options(out: &std::path::Path) -> DeliveryOptions {
    DeliveryOptions {
        out_dir: out.to_path_buf(),
        meta: BookMeta {
            title: "The Lighthouse".into(),
            author: "Ada Writer".into(),
            narrator: "Nell Reader".into(),
            cover: None,
            ..BookMeta::default()
        },
        ..DeliveryOptions::default()
    }
}

#[test]
fn acx_export_is_one_passing_tagged_mp3_per_chapter_and_deterministic() {
    let tmp = tempfile::tempdir().unwrap();
    let (p, _, _) = project(&tmp.path().join("p"), 7, 3, 0);
    let out = tmp.path().join("out");
    let report = deliver::export(&p, &acx_options(&out)).unwrap();
    assert_eq!(report.files.len(), 3);
    let files = names(&out);
    assert_eq!(files.len(), 3, "{files:?}");
    for (i, name) in files.iter().enumerate() {
        assert!(name.starts_with(&format!("{:02}-sentence-number-{}", i + 1, i * 3)), "{name}");
        assert!(name.ends_with(".mp3"));
        let probe = ffprobe(&out.join(name));
        let stream = &probe["streams"][0];
        assert_eq!(stream["codec_name"], "mp3");
        assert_eq!(stream["sample_rate"], "44100");
        assert_eq!(stream["channels"], 1);
        // The audio stream's rate (the format's counts the tags' bytes too).
        assert_eq!(stream["bit_rate"], "192000");
        let tags = &probe["format"]["tags"];
        assert_eq!(tags["album"], "The Lighthouse");
        assert_eq!(tags["artist"], "Ada Writer");
        assert_eq!(tags["composer"], "Nell Reader");
        assert_eq!(tags["track"], format!("{}/3", i + 1));
        assert_eq!(tags["genre"], "Audiobook");
        assert!(tags["title"].as_str().unwrap().starts_with(&format!("Sentence number {}", i * 3)));
    }
    // Every frame is 192 kbps (CBR), read from the headers.
    for f in &report.files {
        let frames = check::mp3_frames(&std::fs::read(&f.path).unwrap()).unwrap();
        assert!(frames.mpeg1_layer3 && frames.mono && frames.frames > 10);
        assert_eq!(frames.bitrates_kbps, vec![192]);
        assert!(f.check.passes(), "{}", check::table(std::slice::from_ref(&f.check)));
    }
    // The check's levels agree with ffmpeg's decoding of the same file.
    for f in &report.files {
        let (rate, samples) = ffmpeg_decode(&f.path);
        assert_eq!(rate, 44_100);
        let l = check::levels(&samples, rate).unwrap();
        assert!(
            (l.rms_db - f.check.levels.rms_db).abs() < 0.1,
            "{} vs {}",
            l.rms_db,
            f.check.levels.rms_db
        );
        assert!(l.peak_db <= acx::PEAK_MAX_DB, "{}", l.peak_db);
        assert!((acx::RMS_MIN_DB..=acx::RMS_MAX_DB).contains(&l.rms_db));
        assert!(
            l.noise_floor_db <= acx::NOISE_FLOOR_MAX_DB
                && l.noise_floor_db > check::DIGITAL_SILENCE_DB
        );
        assert!((acx::HEAD_MIN_S..=acx::HEAD_MAX_S).contains(&l.head_s), "{}", l.head_s);
        assert!((acx::TAIL_MIN_S..=acx::TAIL_MAX_S).contains(&l.tail_s), "{}", l.tail_s);
    }
    // `check` on the folder passes too; a second export is byte-identical.
    assert!(check::check_dir(&out).unwrap().iter().all(check::FileCheck::passes));
    let again = tmp.path().join("again");
    deliver::export(&p, &acx_options(&again)).unwrap();
    assert_eq!(names(&again), files);
    for name in &files {
        let (a, b) =
            (std::fs::read(out.join(name)).unwrap(), std::fs::read(again.join(name)).unwrap());
        assert!(a == b, "{name} differs between two exports");
    }
}

#[test]
fn take_silences_are_trimmed_to_the_pause_plan() {
    let tmp = tempfile::tempdir().unwrap();
    // 0.5 s of digital silence around every take.
    let (p, segments, takes) = project(&tmp.path().join("p"), 3, 3, 12_000);
    let out = tmp.path().join("out");
    let report = deliver::export(&p, &acx_options(&out)).unwrap();
    // The voice: each take without its silence (the synthetic audio is voiced edge to edge)
    // but for a 30 ms guard each side, then the manuscript's pause, except after the last.
    let guard = 720;
    let voice_24k: usize =
        takes.iter().map(|t| t.samples.len() - 24_000 + 2 * guard).sum::<usize>()
            + segments[..2].iter().map(|s| s.pause_after_ms as usize * 24).sum::<usize>();
    let voice_44k = (voice_24k * 147).div_ceil(80);
    let head = (HEAD_S * 44_100.0) as usize;
    let tail = (TAIL_S * 44_100.0) as usize;
    assert_eq!(report.files[0].samples as usize, head + voice_44k + tail);
    // And room tone, not silence, where the take's silence was.
    let c = &report.files[0].check;
    assert!(c.passes(), "{}", check::table(std::slice::from_ref(c)));
}

#[test]
fn long_chapters_split_at_segment_boundaries() {
    let tmp = tempfile::tempdir().unwrap();
    let (p, _, _) = project(&tmp.path().join("p"), 6, 6, 0);
    let out = tmp.path().join("out");
    // Files of at most head + tail + 1 s: the 6 takes (0.1–0.4 s plus pauses) need several.
    let opts = DeliveryOptions { max_file_s: HEAD_S + TAIL_S + 1.0, ..acx_options(&out) };
    let report = deliver::export(&p, &opts).unwrap();
    assert!(report.files.len() >= 2, "{}", report.files.len());
    for (i, f) in report.files.iter().enumerate() {
        assert!(f.title.ends_with(&format!("(part {})", i + 1)), "{}", f.title);
        assert!(f.check.duration_s <= opts.max_file_s + 0.1, "{}", f.check.duration_s);
        let tags = &ffprobe(&f.path)["format"]["tags"];
        assert_eq!(tags["track"], format!("{}/{}", i + 1, report.files.len()));
    }
    // A take that cannot fit in a file at all is an error, not a cut mid-sentence.
    let opts = DeliveryOptions {
        max_file_s: HEAD_S + TAIL_S + 0.05,
        ..acx_options(&tmp.path().join("x"))
    };
    let err = deliver::export(&p, &opts).unwrap_err().to_string();
    assert!(err.contains("longer than a whole file"), "{err}");
}

#[test]
fn credits_are_their_own_files_and_the_sample_is_short() {
    let tmp = tempfile::tempdir().unwrap();
    let (p, _, _) = project(&tmp.path().join("p"), 4, 2, 0);
    // Credits recorded at 48 kHz stereo with silence around the voice.
    let mut credit = vec![0f32; 48_000];
    credit.extend((0..96_000).map(|i| 0.3 * (i as f32 * 0.05).sin()));
    credit.extend(vec![0f32; 48_000]);
    let opening = tmp.path().join("opening.wav");
    let closing = tmp.path().join("closing.wav");
    write_wav(&opening, &credit, 48_000, 2);
    write_wav(&closing, &credit, 48_000, 2);
    let out = tmp.path().join("out");
    let opts = DeliveryOptions {
        opening_credits: Some(opening),
        closing_credits: Some(closing),
        sample: Some(deliver::SampleSpan::chapter(2)),
        ..acx_options(&out)
    };
    let report = deliver::export(&p, &opts).unwrap();
    let files = names(&out);
    assert_eq!(
        files[..2],
        ["01-opening-credits.mp3".to_string(), "02-sentence-number-0-of-the-book.mp3".to_string()]
    );
    assert_eq!(files[3], "04-closing-credits.mp3");
    assert_eq!(files[4], "sample.mp3");
    assert_eq!(files.len(), 5);
    // The credits' 2 s of voice, trimmed, between the head and the tail.
    let credits = &report.files[0];
    let voice = credits.check.duration_s - HEAD_S - TAIL_S;
    assert!((1.9..2.2).contains(&voice), "{voice}");
    assert!(report.files.iter().all(|f| f.check.passes()));
    let sample = report.files.iter().find(|f| f.path.ends_with("sample.mp3")).unwrap();
    assert!(sample.check.duration_s <= acx::SAMPLE_MAX_S);
    assert_eq!(ffprobe(&sample.path)["format"]["tags"]["title"], "Retail Sample");
    // A chapter the manuscript does not have is an error.
    assert_eq!(ffprobe(&sample.path)["format"]["tags"]["album"], "The Lighthouse");
    // Chapter 2 in reading order, whole (it is short): the same length as its file.
    let chapter2 = &report.files[2];
    assert!(chapter2.title.starts_with("Sentence number 2"), "{}", chapter2.title);
    assert_eq!(sample.samples, chapter2.samples);
    // A chapter the manuscript does not have is an error.
    for n in [0, 3] {
        let opts = DeliveryOptions {
            sample: Some(deliver::SampleSpan::chapter(n)),
            ..acx_options(&tmp.path().join("y"))
        };
        let err = deliver::export(&p, &opts).unwrap_err().to_string();
        assert!(err.contains(&format!("no chapter {n} (it has 2, numbered from 1)")), "{err}");
    }
}

#[test]
fn m4b_has_chapter_marks_and_tags_and_is_deterministic() {
    let tmp = tempfile::tempdir().unwrap();
    let (p, _, _) = project(&tmp.path().join("p"), 6, 2, 0);
    let out = tmp.path().join("out");
    let opts = DeliveryOptions {
        format: DeliveryFormat::M4b,
        split_chapters: false,
        enforce_acx: false,
        ..acx_options(&out)
    };
    let report = deliver::export(&p, &opts).unwrap();
    assert_eq!(names(&out), ["the-lighthouse.m4b"]);
    let file = &report.files[0];
    let probe = ffprobe(&file.path);
    let stream = &probe["streams"][0];
    assert_eq!(stream["codec_name"], "aac");
    assert_eq!(stream["sample_rate"], "44100");
    assert_eq!(stream["channels"], 1);
    let tags = &probe["format"]["tags"];
    assert_eq!(tags["title"], "The Lighthouse");
    assert_eq!(tags["artist"], "Ada Writer");
    assert_eq!(tags["composer"], "Nell Reader");
    let chapters = probe["chapters"].as_array().unwrap();
    assert_eq!(chapters.len(), 3);
    for (i, ch) in chapters.iter().enumerate() {
        assert!(
            ch["tags"]["title"]
                .as_str()
                .unwrap()
                .starts_with(&format!("Sentence number {}", i * 2))
        );
        let start: f64 = ch["start_time"].as_str().unwrap().parse().unwrap();
        assert!((start - file.chapters[i].1).abs() < 0.01, "{start} vs {}", file.chapters[i].1);
    }
    // Levels as mastered (ACX's figures, though ACX itself takes MP3s).
    let (rate, samples) = ffmpeg_decode(&file.path);
    let l = check::levels(&samples, rate).unwrap();
    assert!((acx::RMS_MIN_DB..=acx::RMS_MAX_DB).contains(&l.rms_db), "{}", l.rms_db);
    assert!(l.peak_db <= acx::PEAK_MAX_DB, "{}", l.peak_db);
    let again = tmp.path().join("again");
    deliver::export(&p, &DeliveryOptions { out_dir: again.clone(), ..opts }).unwrap();
    assert!(
        std::fs::read(&file.path).unwrap()
            == std::fs::read(again.join("the-lighthouse.m4b")).unwrap()
    );
}

#[test]
fn a_missing_ffmpeg_is_a_clear_error_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    store_common::manuscript(&store_common::sentences(1), 1, 1);
    let (_p, _, _) = project(&tmp.path().join("p"), 2, 2, 0);
    drop(_p);
    let out = tmp.path().join("out");
    let o = deliver_common::lectern()
        .env("LECTERN_FFMPEG", "/nonexistent/ffmpeg")
        .args(["export", "--format", "m4b", "-o"])
        .arg(&out)
        .arg(tmp.path().join("p"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        err.contains("needs the ffmpeg program") && err.contains("apt install ffmpeg"),
        "{err}"
    );
    assert!(!out.exists() || names(&out).is_empty());
}

#[test]
fn peaks_are_limited_until_the_encoded_file_passes() {
    let tmp = tempfile::tempdir().unwrap();
    // Speech-like crest factor: a quiet tone with a loud 2 ms burst every 50 ms (+25 dB).
    let (p, _, _) = project_with(&tmp.path().join("p"), 4, 4, |take| {
        take.iter()
            .enumerate()
            .map(|(i, &s)| if i % 1200 < 48 { s * 3.0 } else { s * 0.15 })
            .collect()
    });
    let out = tmp.path().join("out");
    let report = deliver::export(&p, &acx_options(&out)).unwrap();
    let f = &report.files[0];
    assert!(f.ceiling_db <= deliver::FIRST_CEILING_DB, "{}", f.ceiling_db);
    let (rate, samples) = ffmpeg_decode(&f.path);
    let l = check::levels(&samples, rate).unwrap();
    assert!(l.peak_db <= acx::PEAK_MAX_DB, "{}", l.peak_db);
    assert!(l.true_peak_db <= deliver::TRUE_PEAK_MAX_DB, "{}", l.true_peak_db);
    assert!((acx::RMS_MIN_DB..=acx::RMS_MAX_DB).contains(&l.rms_db), "{}", l.rms_db);
    assert!(f.check.passes(), "{}", check::table(std::slice::from_ref(&f.check)));
}

#[test]
fn a_room_tone_recording_lies_under_every_file() {
    let tmp = tempfile::tempdir().unwrap();
    let (p, _, _) = project(&tmp.path().join("p"), 2, 1, 0);
    // 1 s of "room" at 48 kHz, −65 dB RMS.
    let mut room: Vec<f32> =
        (0..48_000u32).map(|i| (i * 7919 % 1000) as f32 / 1000.0 - 0.5).collect();
    lectern::deliver::mastering::gain_to_rms(&mut room, -65.0);
    let wav = tmp.path().join("room.wav");
    write_wav(&wav, &room, 48_000, 1);
    let out = tmp.path().join("out");
    let opts = DeliveryOptions {
        room_tone: deliver::RoomToneSource::Recording(wav.clone()),
        ..acx_options(&out)
    };
    let report = deliver::export(&p, &opts).unwrap();
    for f in &report.files {
        assert!(
            (f.check.levels.noise_floor_db + 65.0).abs() < 2.0,
            "{}",
            f.check.levels.noise_floor_db
        );
        assert!(f.check.passes());
    }
    // A recording over the noise floor is refused, naming it and its level.
    let mut loud = room.clone();
    lectern::deliver::mastering::gain_to_rms(&mut loud, -50.0);
    write_wav(&wav, &loud, 48_000, 1);
    let opts = DeliveryOptions {
        room_tone: deliver::RoomToneSource::Recording(wav.clone()),
        ..acx_options(&tmp.path().join("z"))
    };
    let err = deliver::export(&p, &opts).unwrap_err().to_string();
    assert!(err.contains("room.wav") && err.contains("-50.1 dB RMS"), "{err}");
}

/// A PNG the size of its signature and header: enough for a tag's picture.
const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x02\0\0\0\x90wS\xde";

/// Book metadata comes from the flags, else the manuscript the project recorded (EPUB, front
/// matter; its cover copied into the project), else the config's `[book]` (#19); the MP3s carry
/// the winner's tags and the cover as their front-cover picture, read back with `id3`.
#[test]
fn book_metadata_flags_win_over_the_manuscript_over_the_config_and_the_cover_is_tagged() {
    use lectern::config::BookDefaults;
    use lectern::deliver::MetaFlags;
    use lectern::store::BookRecord;
    let tmp = tempfile::tempdir().unwrap();
    let (mut p, _, _) = project(&tmp.path().join("p"), 2, 2, 0);
    let mut book = BookRecord::default();
    book.info.title = Some("The Lighthouse".into());
    book.info.author = Some("Ada Writer".into());
    book.info.cover =
        Some(lectern_text::Cover { media_type: "image/png".into(), bytes: PNG.into() });
    p.set_book(book).unwrap();
    let config = BookDefaults {
        narrator: Some("Config Narrator".into()),
        author: Some("Config Author".into()),
        ..BookDefaults::default()
    };
    let flags = MetaFlags { title: Some("Flag Title".into()), ..MetaFlags::default() };
    let meta = BookMeta::resolve(&flags, &p.book().unwrap(), p.dir(), &config, "book");
    assert_eq!(meta.title, "Flag Title", "a flag wins");
    assert_eq!(meta.author, "Ada Writer", "the manuscript beats the config");
    assert_eq!(meta.narrator, "Config Narrator", "the config fills what the others lack");
    let out = tmp.path().join("out");
    let opts = DeliveryOptions { out_dir: out.clone(), meta, ..DeliveryOptions::default() };
    let report = deliver::export(&p, &opts).unwrap();
    let tag = id3::Tag::read_from_path(&report.files[0].path).unwrap();
    use id3::TagLike;
    assert_eq!(tag.album(), Some("Flag Title"));
    assert_eq!(tag.artist(), Some("Ada Writer"));
    assert_eq!(tag.get("TCOM").and_then(|f| f.content().text()), Some("Config Narrator"));
    // The front cover, as ffmpeg reads it (the `id3` crate built without picture decoding
    // leaves APIC frames undecoded): an attached picture whose bytes are the cover's.
    let probe = ffprobe(&report.files[0].path);
    let streams = probe["streams"].as_array().unwrap();
    let pic = streams.iter().find(|s| s["codec_name"] == "png").expect("an attached picture");
    assert_eq!(pic["tags"]["comment"], "Cover (front)");
    let extracted = tmp.path().join("extracted.png");
    let mp3 = report.files[0].path.to_str().unwrap();
    deliver_common::ffmpeg(&["-i", mp3, "-an", "-c:v", "copy", extracted.to_str().unwrap()]);
    assert_eq!(std::fs::read(&extracted).unwrap(), PNG);

    // Nothing in the manuscript or config: the fallback title, no author, no cover.
    let bare = BookMeta::resolve(
        &MetaFlags::default(),
        &BookRecord::default(),
        p.dir(),
        &BookDefaults::default(),
        "book",
    );
    assert_eq!((bare.title.as_str(), bare.author.as_str(), bare.cover), ("book", "", None));
    // A cover that is not an image is refused by name, before anything is written.
    let text = tmp.path().join("cover.jpg");
    std::fs::write(&text, "not a picture").unwrap();
    let out2 = tmp.path().join("out2");
    let meta = BookMeta { cover: Some(text.clone()), ..BookMeta::default() };
    let opts = DeliveryOptions { out_dir: out2.clone(), meta, ..DeliveryOptions::default() };
    let err = deliver::export(&p, &opts).unwrap_err().to_string();
    assert!(err.contains("cover.jpg") && err.contains("not a JPEG or PNG"), "{err}");
    assert!(!out2.exists() || names(&out2).is_empty());
}

/// A Markdown front matter's `cover:` is read relative to the manuscript, checked to be an
/// image, and named with its line's value when it is missing (#19).
#[test]
fn a_front_matter_cover_is_read_beside_the_manuscript() {
    let (_, _, tokenizer) = crate::session_common::tiny();
    let tmp = tempfile::tempdir().unwrap();
    let book = tmp.path().join("book.md");
    let text = "---\ntitle: The Lighthouse\nnarrator: Nell Reader\ncover: art/cover.png\n---\n\n\
                The lamp turned.\n";
    std::fs::write(&book, text).unwrap();
    let read = lectern::reading::ReadOptions::default();
    let err = lectern::reading::load(&book, &tokenizer, &read).unwrap_err();
    let err = format!("{err:#}");
    assert!(err.contains("book.md") && err.contains("cover: art/cover.png"), "{err}");
    std::fs::create_dir(tmp.path().join("art")).unwrap();
    std::fs::write(tmp.path().join("art/cover.png"), PNG).unwrap();
    let m = lectern::reading::load(&book, &tokenizer, &read).unwrap();
    assert_eq!(m.info.title.as_deref(), Some("The Lighthouse"));
    assert_eq!(m.info.narrator.as_deref(), Some("Nell Reader"));
    let cover = m.info.cover.expect("cover read");
    assert_eq!((cover.media_type.as_str(), cover.bytes.as_slice()), ("image/png", PNG));
}

/// `--credits`: opening and closing credits spoken by the model in the book's voice from ACX's
/// templates and the book's metadata (here the front matter's title and author, the narrator
/// from the flag), delivered as the first and last files; the same bytes on a second export; a
/// value the template needs and nobody gives is an error that writes nothing (#19).
#[test]
fn spoken_credits_name_the_book_and_are_deterministic() {
    let tmp = tempfile::tempdir().unwrap();
    let book = tmp.path().join("book.md");
    std::fs::write(
        &book,
        "---\ntitle: The Lighthouse\nauthor: Ada Writer\n---\n\n# One\n\nThe lamp turned.\n",
    )
    .unwrap();
    let book_s = book.to_str().unwrap();
    let out = deliver_common::lectern()
        .args(["render", book_s, "-o", tmp.path().join("book.wav").to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let export = |dir: &str, extra: &[&str]| {
        deliver_common::lectern()
            .args(["export", book_s, "--preset", "acx", "--credits", "-o"])
            .arg(tmp.path().join(dir))
            .args(extra)
            .output()
            .unwrap()
    };
    let failed = export("none", &[]);
    let err = String::from_utf8_lossy(&failed.stderr);
    assert!(!failed.status.success());
    assert!(err.contains("credits need the book's narrator"), "{err}");
    assert!(!tmp.path().join("none").exists());

    let first = export("a", &["--narrator", "Nell Reader"]);
    assert!(first.status.success(), "{}", String::from_utf8_lossy(&first.stderr));
    let files = names(&tmp.path().join("a"));
    assert_eq!(files, ["01-opening-credits.mp3", "02-one.mp3", "03-closing-credits.mp3"]);
    let probe = ffprobe(&tmp.path().join("a/01-opening-credits.mp3"));
    assert_eq!(probe["format"]["tags"]["album"], "The Lighthouse");
    assert_eq!(probe["format"]["tags"]["composer"], "Nell Reader");
    let second = export("b", &["--narrator", "Nell Reader"]);
    assert!(second.status.success());
    for name in &files {
        let a = std::fs::read(tmp.path().join("a").join(name)).unwrap();
        let b = std::fs::read(tmp.path().join("b").join(name)).unwrap();
        assert!(a == b, "{name} differs between two exports");
    }
}

/// A retail sample from any span (#19): `--sample-from CH:SEG` or `--sample-start TIME` with
/// `--sample-length`; the file is whole segments, no longer than asked, and passes ACX's check.
#[test]
fn a_retail_sample_starts_where_asked() {
    use clap::Parser;
    use deliver::{SampleSpan, SampleStart};
    use lectern::cli::{Cli, parse_clock};
    assert_eq!(parse_clock("4:30"), Ok(270.0));
    assert_eq!(parse_clock("1:02:03"), Ok(3723.0));
    assert_eq!(parse_clock("12.5"), Ok(12.5));
    for bad in ["4:60", "a:10", "-3", "1:2:3:4", "1.5:00"] {
        assert!(parse_clock(bad).is_err(), "{bad}");
    }
    let parse = |args: &[&str]| Cli::try_parse_from([&["lectern", "export", "p"], args].concat());
    assert!(parse(&["--sample-from", "2:3", "--sample-length", "1:30"]).is_ok());
    let err = parse(&["--sample-from", "0:3"]).unwrap_err().to_string();
    assert!(err.contains("CHAPTER:SEGMENT"), "{err}");
    assert!(parse(&["--sample", "1", "--sample-start", "0:10"]).is_err());

    let tmp = tempfile::tempdir().unwrap();
    let (p, _, _) = project(&tmp.path().join("p"), 6, 2, 0);
    for (k, start) in
        [SampleStart::Segment { chapter: 2, segment: 2 }, SampleStart::Time { seconds: 1.0 }]
            .into_iter()
            .enumerate()
    {
        let out = tmp.path().join(format!("out{k}"));
        let opts = DeliveryOptions {
            sample: Some(SampleSpan { start, length_s: 4.5 }),
            ..acx_options(&out)
        };
        let report = deliver::export(&p, &opts).unwrap();
        let sample = report.files.iter().find(|f| f.path.ends_with("sample.mp3")).unwrap();
        assert!(sample.check.duration_s <= 4.5 + 0.05, "{}", sample.check.duration_s);
        assert!(sample.check.passes(), "{}", check::table(std::slice::from_ref(&sample.check)));
    }
}
