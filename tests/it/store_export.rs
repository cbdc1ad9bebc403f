//! Export: lengths are exactly the chosen takes plus pauses; FLAC decodes to the quantised PCM;
//! chapter lists match; loudness is measured per BS.1770 and normalised to a target.

use crate::store_common;

use std::f32::consts::PI;
use std::sync::Arc;

use lectern::audio::loudness::integrated_lufs;
use lectern::store::export::{
    ExportFormat, ExportOptions, SampleFormat, cue_time, export, quantise,
};
use lectern::store::{Project, StoreError, StoredSegment};
use store_common::{manuscript, sentences, synthetic_take};

/// A project of 7 segments in 3 chapters with a chosen take each; returns the expected
/// sample stream per chapter: the master (each take faded at its edges, then its pause).
fn project_with_takes(dir: &std::path::Path) -> (Project, Vec<StoredSegment>, Vec<Vec<f32>>) {
    let segments = manuscript(&sentences(7), 3, 1);
    let mut p = Project::open(dir).unwrap();
    p.sync_manuscript(&segments).unwrap();
    let mut chapters: Vec<Vec<f32>> = vec![Vec::new(); 3];
    for (k, s) in segments.iter().enumerate() {
        // A second take that is chosen, so export must follow the choice.
        p.save_take(&synthetic_take(k as u64, s, 1)).unwrap();
        let take = synthetic_take(k as u64, s, 2);
        let id = p.save_take(&take).unwrap();
        p.choose_take(s.id, id).unwrap();
        let ch = &mut chapters[s.chapter as usize - 1];
        let pause = s.pause_after_ms as usize * 24;
        ch.extend(lectern::audio::master::segment_master(&take.samples, 0, pause));
    }
    (p, segments, chapters)
}

fn read_wav_f32(path: &std::path::Path) -> Vec<f32> {
    hound::WavReader::open(path).unwrap().into_samples::<f32>().map(Result::unwrap).collect()
}

fn read_wav_i32(path: &std::path::Path) -> Vec<i32> {
    hound::WavReader::open(path).unwrap().into_samples::<i32>().map(Result::unwrap).collect()
}

fn read_flac(path: &std::path::Path) -> (u32, Vec<i32>) {
    let mut reader = claxon::FlacReader::open(path).unwrap();
    let info = reader.streaminfo();
    assert_eq!(info.sample_rate, 24_000);
    assert_eq!(info.channels, 1);
    let samples = reader.samples().map(Result::unwrap).collect();
    (info.bits_per_sample, samples)
}

#[test]
fn whole_book_wav_is_exactly_takes_plus_pauses() {
    let tmp = tempfile::tempdir().unwrap();
    let (p, _, chapters) = project_with_takes(&tmp.path().join("p"));
    let expected: Vec<f32> = chapters.concat();
    let out = tmp.path().join("out/book.wav");
    let opts = ExportOptions {
        out: out.clone(),
        sample_format: SampleFormat::Float32,
        ..Default::default()
    };
    let report = export(&p, &opts).unwrap();
    assert_eq!(report.total_samples, expected.len() as u64);
    assert_eq!(read_wav_f32(&out), expected);

    let opts = ExportOptions { out: out.clone(), ..Default::default() };
    export(&p, &opts).unwrap();
    let want: Vec<i32> = expected.iter().map(|&x| quantise(x, 16)).collect();
    assert_eq!(read_wav_i32(&out), want);

    // Chapter list: starts are cumulative chapter lengths, in JSON and in the cue sheet.
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report.json_path).unwrap()).unwrap();
    let cue = std::fs::read_to_string(&report.cue_path).unwrap();
    let mut start = 0u64;
    for (i, ch) in chapters.iter().enumerate() {
        let mark = &json["chapters"][i];
        assert_eq!(mark["chapter"], i as u64 + 1);
        assert_eq!(mark["file"], "book.wav");
        assert_eq!(mark["start_samples"], start);
        assert_eq!(mark["duration_samples"], ch.len() as u64);
        assert!((mark["start_s"].as_f64().unwrap() - start as f64 / 24000.0).abs() < 1e-9);
        assert_eq!(report.chapters[i].start_samples, start);
        assert!(cue.contains(&format!("TRACK {:02} AUDIO\n", i + 1)));
        assert!(cue.contains(&format!("INDEX 01 {}\n", cue_time(start))), "{cue}");
        start += ch.len() as u64;
    }
    assert_eq!(cue.matches("FILE ").count(), 1);
    assert_eq!(cue_time(24000 * 61 + 320 * 3), "01:01:03");
}

#[test]
fn flac_decodes_to_the_quantised_pcm() {
    let tmp = tempfile::tempdir().unwrap();
    let (p, _, chapters) = project_with_takes(&tmp.path().join("p"));
    let expected: Vec<f32> = chapters.concat();
    for (fmt, bits) in [(SampleFormat::Int16, 16), (SampleFormat::Int24, 24)] {
        let out = tmp.path().join(format!("book{bits}.flac"));
        let opts = ExportOptions {
            out: out.clone(),
            format: ExportFormat::Flac,
            sample_format: fmt,
            ..Default::default()
        };
        let report = export(&p, &opts).unwrap();
        assert_eq!(report.files[0].path, out);
        let (got_bits, got) = read_flac(&out);
        assert_eq!(got_bits, bits);
        let want: Vec<i32> = expected.iter().map(|&x| quantise(x, bits)).collect();
        assert_eq!(got.len(), want.len());
        assert!(got == want, "FLAC {bits}-bit differs from the quantised PCM");
    }
    let opts = ExportOptions {
        out: tmp.path().join("x.flac"),
        format: ExportFormat::Flac,
        sample_format: SampleFormat::Float32,
        ..Default::default()
    };
    assert!(matches!(export(&p, &opts), Err(StoreError::InvalidInput(_))));
}

#[test]
fn split_chapters_writes_one_file_per_chapter() {
    let tmp = tempfile::tempdir().unwrap();
    let (p, _, chapters) = project_with_takes(&tmp.path().join("p"));
    let out = tmp.path().join("book.flac");
    let opts = ExportOptions {
        out: out.clone(),
        format: ExportFormat::Flac,
        split_chapters: true,
        ..Default::default()
    };
    let report = export(&p, &opts).unwrap();
    assert_eq!(report.files.len(), 3);
    assert!(!out.exists());
    let cue = std::fs::read_to_string(&report.cue_path).unwrap();
    for (i, ch) in chapters.iter().enumerate() {
        let path = tmp.path().join(format!("book-{:02}.flac", i + 1));
        assert_eq!(report.files[i].path, path);
        let (_, got) = read_flac(&path);
        let want: Vec<i32> = ch.iter().map(|&x| quantise(x, 16)).collect();
        assert!(got == want, "chapter {} differs", i + 1);
        assert_eq!(report.chapters[i].start_samples, 0);
        assert_eq!(report.chapters[i].file, format!("book-{:02}.flac", i + 1));
        assert!(cue.contains(&format!("FILE \"book-{:02}.flac\" FLAC", i + 1)));
    }
    assert_eq!(report.total_samples, chapters.iter().map(|c| c.len() as u64).sum::<u64>());
}

#[test]
fn export_refuses_segments_without_takes() {
    let tmp = tempfile::tempdir().unwrap();
    let segments = manuscript(&sentences(3), 3, 1);
    let mut p = Project::open(tmp.path().join("p")).unwrap();
    p.sync_manuscript(&segments).unwrap();
    p.save_take(&synthetic_take(0, &segments[0], 1)).unwrap();
    let opts = ExportOptions { out: tmp.path().join("b.wav"), ..Default::default() };
    let err = export(&p, &opts).unwrap_err();
    let StoreError::MissingTakes { count: 2, first } = &err else { panic!("{err}") };
    assert_eq!(first.iter().map(|s| s.id).collect::<Vec<_>>(), vec![2, 3]);
    // The message names each segment by number, manuscript line and text.
    let message = err.to_string();
    for s in &segments[1..] {
        let line = format!("segment {} at line {}", s.id + 1, s.span.0);
        assert!(message.contains(&line), "{message}");
        assert!(message.contains(&s.text[..20]), "{message}");
    }
    assert!(!tmp.path().join("b.wav").exists());
}

fn sine(freq: f32, amplitude: f32, seconds: f32) -> Vec<f32> {
    (0..(seconds * 24000.0) as usize)
        .map(|i| amplitude * (2.0 * PI * freq * i as f32 / 24000.0).sin())
        .collect()
}

#[test]
fn loudness_of_reference_sines() {
    // BS.1770: a 0 dBFS 997 Hz sine reads −3.01 LUFS (mono, channel weight 1).
    let lufs = integrated_lufs(&sine(997.0, 1.0, 10.0)).unwrap();
    eprintln!("997 Hz 0 dBFS: {lufs:.4} LUFS");
    assert!((lufs + 3.01).abs() < 0.05, "997 Hz 0 dBFS: {lufs}");
    // 1 kHz at −20 dBFS: −23.0 LUFS (K-weighting is within 0.01 dB of 0 dB there).
    let lufs = integrated_lufs(&sine(1000.0, 0.1, 10.0)).unwrap();
    eprintln!("1 kHz -20 dBFS: {lufs:.4} LUFS");
    assert!((lufs + 23.01).abs() < 0.05, "1 kHz −20 dBFS: {lufs}");
    assert!(integrated_lufs(&vec![0.0; 48000]).unwrap().is_infinite());
}

#[test]
fn normalisation_hits_the_target_within_a_tenth_of_a_lu() {
    let tmp = tempfile::tempdir().unwrap();
    let segments = manuscript(&sentences(4), 2, 1);
    let mut p = Project::open(tmp.path().join("p")).unwrap();
    p.sync_manuscript(&segments).unwrap();
    for (k, s) in segments.iter().enumerate() {
        let mut take = synthetic_take(k as u64, s, 1);
        take.samples = Arc::new(sine(220.0 * (k + 1) as f32, 0.02 + 0.03 * k as f32, 1.5));
        p.save_take(&take).unwrap();
    }
    for (sample_format, split) in
        [(SampleFormat::Float32, false), (SampleFormat::Int16, false), (SampleFormat::Int24, true)]
    {
        let out = tmp.path().join("norm.wav");
        let opts = ExportOptions {
            out: out.clone(),
            sample_format,
            split_chapters: split,
            loudness_lufs: Some(-18.0),
            ..Default::default()
        };
        let report = export(&p, &opts).unwrap();
        for file in &report.files {
            assert!(file.measured_lufs.unwrap() < -19.0);
            let reader = hound::WavReader::open(&file.path).unwrap();
            let samples: Vec<f32> = match sample_format {
                SampleFormat::Float32 => reader.into_samples::<f32>().map(Result::unwrap).collect(),
                f => {
                    let scale = (1i64 << (f.bits() - 1)) as f32;
                    reader.into_samples::<i32>().map(|s| s.unwrap() as f32 / scale).collect()
                }
            };
            let lufs = integrated_lufs(&samples).unwrap();
            eprintln!("normalised {sample_format:?}: {lufs:.4} LUFS");
            assert!((lufs + 18.0).abs() < 0.1, "{sample_format:?}: {lufs} LUFS");
            assert_eq!(file.clipped_samples, 0);
        }
    }
}

#[test]
fn export_subcommand_parses_and_writes() {
    use clap::Parser;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("book.lectern");
    let (p, _, chapters) = project_with_takes(&dir);
    drop(p);
    // A split export writes a folder of its own.
    let out = tmp.path().join("cli");
    let cli = lectern::cli::Cli::try_parse_from([
        "lectern",
        "export",
        dir.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--format",
        "flac",
        "--split",
        "chapters",
        "--loudness",
        "-18",
    ])
    .unwrap();
    lectern::cli::run(cli).unwrap();
    for (i, ch) in chapters.iter().enumerate() {
        let (_, got) = read_flac(&tmp.path().join(format!("cli/book-{:02}.flac", i + 1)));
        assert_eq!(got.len(), ch.len());
    }
    assert!(tmp.path().join("cli/book.flac.cue").is_file());
    assert!(tmp.path().join("cli/book.flac.chapters.json").is_file());
    // A manuscript path resolves to its project beside it; the manuscript is checked against
    // the takes with the model and voice of the last render, which this project (made through
    // the store alone, like one of an older Lectern) does not record: refused, saying why.
    std::fs::write(tmp.path().join("book.txt"), "text").unwrap();
    let cli = lectern::cli::Cli::try_parse_from([
        "lectern",
        "export",
        tmp.path().join("book.txt").to_str().unwrap(),
        "-o",
        tmp.path().join("m.wav").to_str().unwrap(),
    ])
    .unwrap();
    let err = lectern::cli::run(cli).unwrap_err();
    assert!(format!("{err:#}").contains("does not record the model and voice"), "{err:#}");
    assert!(!tmp.path().join("m.wav").exists());
    // A delivery's flags are refused by name for the master, which would leave them unused;
    // the metadata flags are not: they tag every format.
    let m_wav = tmp.path().join("m.wav");
    let master = |extra: &[&str]| {
        let mut args = vec!["lectern", "export", dir.to_str().unwrap(), "-o"];
        args.push(m_wav.to_str().unwrap());
        args.extend_from_slice(extra);
        lectern::cli::run(lectern::cli::Cli::try_parse_from(args).unwrap())
    };
    let err = master(&["--title", "T", "--room-tone-db", "-70", "--credits"]).unwrap_err();
    let err = format!("{err:#}");
    assert!(err.starts_with("--room-tone-db, --credits shape a delivery"), "{err}");
    assert!(!m_wav.exists());
    // The project directory exports the takes as they are, tagged with the flags' metadata.
    let cover = tmp.path().join("art.png");
    std::fs::write(&cover, crate::deliver_common::PNG).unwrap();
    let flags =
        ["--title", "The Flagged Title", "--author", "Ada Flag", "--narrator", "Nell Reader"];
    master(&[&flags[..], &["--cover", cover.to_str().unwrap()]].concat()).unwrap();
    let beside = tmp.path().join("m.cover.png");
    assert_eq!(std::fs::read(beside).unwrap(), crate::deliver_common::PNG);
    let bytes = std::fs::read(&m_wav).unwrap();
    let has = |needle: &[u8]| bytes.windows(needle.len()).any(|w| w == needle);
    assert!(has(b"INAM\x12\0\0\0The Flagged Title\0") && has(b"IART\x09\0\0\0Ada Flag\0"));
    let cue = std::fs::read_to_string(tmp.path().join("m.wav.cue")).unwrap();
    assert!(cue.contains("TITLE \"The Flagged Title\"\nPERFORMER \"Ada Flag\"\nFILE"), "{cue}");
    let list = std::fs::read_to_string(tmp.path().join("m.wav.chapters.json")).unwrap();
    let list: serde_json::Value = serde_json::from_str(&list).unwrap();
    assert_eq!(list["book"]["title"], "The Flagged Title");
    assert_eq!(list["book"]["narrator"], "Nell Reader");
}

#[test]
fn wav_and_flac_exports_of_one_name_keep_their_own_chapter_lists() {
    let tmp = tempfile::tempdir().unwrap();
    let (p, _, _) = project_with_takes(&tmp.path().join("p"));
    let wav = export(&p, &ExportOptions { out: tmp.path().join("book.wav"), ..Default::default() })
        .unwrap();
    let flac = ExportOptions {
        out: tmp.path().join("book.flac"),
        format: ExportFormat::Flac,
        ..Default::default()
    };
    let flac = export(&p, &flac).unwrap();
    assert_ne!(wav.cue_path, flac.cue_path);
    assert_ne!(wav.json_path, flac.json_path);
    let wav_cue = std::fs::read_to_string(&wav.cue_path).unwrap();
    let flac_cue = std::fs::read_to_string(&flac.cue_path).unwrap();
    assert!(wav_cue.contains("FILE \"book.wav\" WAVE"), "{wav_cue}");
    assert!(flac_cue.contains("book.flac"), "{flac_cue}");
    assert!(!flac_cue.contains("book.wav"), "{flac_cue}");
    let json = std::fs::read_to_string(&wav.json_path).unwrap();
    assert!(json.contains("book.wav") && !json.contains("book.flac"), "{json}");
}

/// A project synced from a manuscript numbers its chapters from 0; split files are numbered
/// from 1 in reading order all the same, as `render --split chapters` names them (#19).
#[test]
fn split_files_are_numbered_from_one_whatever_the_stored_chapter_numbers() {
    let tmp = tempfile::tempdir().unwrap();
    let mut segments = manuscript(&sentences(4), 2, 1);
    for s in &mut segments {
        s.chapter -= 1;
    }
    let mut p = Project::open(tmp.path().join("p")).unwrap();
    p.sync_manuscript(&segments).unwrap();
    for (k, s) in segments.iter().enumerate() {
        p.save_take(&synthetic_take(k as u64, s, 1)).unwrap();
    }
    let out = tmp.path().join("book.wav");
    let opts = ExportOptions { out, split_chapters: true, ..Default::default() };
    let report = export(&p, &opts).unwrap();
    let names: Vec<&str> = report.chapters.iter().map(|c| c.file.as_str()).collect();
    assert_eq!(names, ["book-01.wav", "book-02.wav"]);
    assert!(tmp.path().join("book-01.wav").is_file() && !tmp.path().join("book-00.wav").exists());
}
