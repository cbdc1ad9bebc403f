//! `lectern export`: a project's chosen takes as the WAV/FLAC master, or as delivery files
//! (MP3, M4B, `--preset acx`) with credits, room tone and a retail sample.

use std::path::PathBuf;

use anyhow::Result;

use super::common::{output_dir, print_checks};
use super::{DeliveryArgs, ExportArgs, ExportFormatArg, ExportPreset};
use crate::config::Config;
use crate::store;

pub(super) fn run(args: ExportArgs) -> Result<()> {
    let cfg = Config::load_default();
    cfg.check()?;
    if args.preset.is_some()
        || matches!(args.format, Some(ExportFormatArg::Mp3 | ExportFormatArg::M4b))
    {
        return run_delivery(&cfg, args);
    }
    let ExportArgs { project, out, split, format, bits, loudness, allow_stale, .. } = args;
    let format = format.unwrap_or(ExportFormatArg::Wav);
    let out = match out {
        Some(o) => o,
        None => {
            let stem = project.file_stem().map_or_else(
                || "book".to_string(),
                |s| s.to_string_lossy().trim_end_matches(".lectern").to_string(),
            );
            let ext = if format == ExportFormatArg::Flac { "flac" } else { "wav" };
            output_dir(&cfg).join(format!("{stem}.{ext}"))
        }
    };
    let opts =
        MasterExport { out, split_chapters: split.is_some(), format, bits, loudness, allow_stale };
    run_export(&project, opts)
}

/// What `lectern export` was asked for, besides the project.
struct MasterExport {
    out: PathBuf,
    split_chapters: bool,
    format: ExportFormatArg,
    bits: u32,
    loudness: Option<f64>,
    allow_stale: bool,
}

fn run_export(project: &std::path::Path, args: MasterExport) -> Result<()> {
    use store::export::{ExportFormat, ExportOptions, SampleFormat};
    let sample_format = match args.bits {
        16 => SampleFormat::Int16,
        24 => SampleFormat::Int24,
        32 => SampleFormat::Float32,
        other => anyhow::bail!("--bits {other}: use 16, 24 or 32"),
    };
    let format = match args.format {
        ExportFormatArg::Flac => ExportFormat::Flac,
        _ => ExportFormat::Wav,
    };
    let project = open_for_export(project)?;
    let opts = ExportOptions {
        out: args.out,
        format,
        sample_format,
        split_chapters: args.split_chapters,
        loudness_lufs: args.loudness,
        allow_stale: args.allow_stale,
    };
    let report = store::export::export(&project, &opts)?;
    for s in &report.stale {
        eprintln!("warning: stale take exported (--allow-stale) for {s}");
    }
    for f in &report.files {
        let lufs = f
            .measured_lufs
            .map_or(String::new(), |l| format!(", {l:.2} LUFS → {:+.2} dB", f.gain_db));
        eprintln!("wrote {} ({:.1} s{lufs})", f.path.display(), f.samples as f64 / 24_000.0);
        if f.clipped_samples > 0 {
            eprintln!("warning: {} samples clipped in {}", f.clipped_samples, f.path.display());
        }
    }
    eprintln!("chapters: {} and {}", report.cue_path.display(), report.json_path.display());
    Ok(())
}

/// Opens the project of `project` (a project directory or its manuscript) for export; given
/// the manuscript, syncs it first, so edits since the last render show up as stale or missing
/// segments instead of the old text exported silently.
fn open_for_export(project: &std::path::Path) -> Result<store::Project> {
    let dir = if project.is_file() {
        store::Project::dir_for_manuscript(project)
    } else {
        project.to_path_buf()
    };
    anyhow::ensure!(dir.join(store::DB_FILE).is_file(), "no Lectern project at {}", dir.display());
    if project.is_file() {
        crate::session::resync_for_export(project, &dir)?;
    }
    Ok(store::Project::open(&dir)?)
}

/// The manuscript's name without `.lectern` or extension, for default titles and outputs.
fn book_stem(project: &std::path::Path) -> String {
    project.file_stem().map_or_else(
        || "book".to_string(),
        |s| s.to_string_lossy().trim_end_matches(".lectern").to_string(),
    )
}

fn run_delivery(cfg: &Config, run: ExportArgs) -> Result<()> {
    use crate::deliver::{self, DeliveryFormat, DeliveryOptions, RoomToneSource};
    let acx = run.preset == Some(ExportPreset::Acx);
    if acx && run.loudness.is_some() {
        anyhow::bail!(
            "--preset acx sets its own levels (RMS −23…−18 dB, peaks ≤ −3 dB): leave out --loudness"
        );
    }
    if run.loudness.is_some() {
        anyhow::bail!(
            "--loudness applies to wav and flac; mp3 and m4b are mastered to RMS −20 dB with peaks ≤ −3 dB"
        );
    }
    let format = match run.format {
        None | Some(ExportFormatArg::Mp3) => DeliveryFormat::Mp3,
        Some(ExportFormatArg::M4b) if !acx => DeliveryFormat::M4b,
        Some(other) => anyhow::bail!(
            "--preset acx delivers MP3 files; --format {} cannot be combined with it",
            format!("{other:?}").to_lowercase()
        ),
    };
    let d = run.delivery;
    let stem = book_stem(&run.project);
    let room_tone = match (d.room_tone.clone(), d.room_tone_db) {
        (Some(p), _) => RoomToneSource::Recording(p),
        (None, Some(level_db)) => RoomToneSource::Noise { level_db },
        (None, None) => RoomToneSource::default(),
    };
    let project = open_for_export(&run.project)?;
    let flags = deliver::MetaFlags {
        title: d.title.clone(),
        author: d.author.clone(),
        narrator: d.narrator.clone(),
        cover: d.cover.clone(),
    };
    let book = project.book()?;
    let meta = deliver::BookMeta::resolve(&flags, &book, project.dir(), &cfg.settings.book, &stem);
    let sample = sample_span(&d)?;
    let spoken = spoken_credits(&project, &meta, &d, &cfg.settings.book)?;
    let opts = DeliveryOptions {
        out_dir: run.out.unwrap_or_else(|| output_dir(cfg).join(&stem)),
        format,
        split_chapters: acx || run.split.is_some(),
        meta,
        room_tone,
        opening_credits: d.opening_credits.or_else(|| spoken.opening.clone()),
        closing_credits: d.closing_credits.or_else(|| spoken.closing.clone()),
        sample,
        enforce_acx: acx,
        allow_stale: run.allow_stale,
        ..DeliveryOptions::default()
    };
    let report = deliver::export(&project, &opts)?;
    for s in &report.stale {
        eprintln!("warning: stale take exported (--allow-stale) for {s}");
    }
    for f in &report.files {
        eprintln!("wrote {} ({:.1} s)", f.path.display(), f.samples as f64 / 44_100.0);
    }
    // Files of an earlier export (another chapter list) would be uploaded or checked with
    // these; they are not removed, but named.
    let written: std::collections::HashSet<&std::path::Path> =
        report.files.iter().map(|f| f.path.as_path()).collect();
    for other in deliver::check::delivery_files(&opts.out_dir).unwrap_or_default() {
        if !written.contains(other.as_path()) {
            eprintln!("warning: {} is not from this export (left as it was)", other.display());
        }
    }
    let checks: Vec<_> = report.files.iter().map(|f| f.check.clone()).collect();
    print_checks(&checks, d.json)?;
    Ok(())
}

/// The retail sample asked for: `--sample N`, `--sample-from CH:SEG` or `--sample-start TIME`,
/// with `--sample-length` (which alone is an error: it needs a start).
fn sample_span(d: &DeliveryArgs) -> Result<Option<crate::deliver::SampleSpan>> {
    use crate::deliver::{SampleSpan, SampleStart};
    let start = match (d.sample, d.sample_from, d.sample_start) {
        (Some(chapter), ..) => SampleStart::Segment { chapter, segment: 1 },
        (_, Some((chapter, segment)), _) => SampleStart::Segment { chapter, segment },
        (.., Some(seconds)) => SampleStart::Time { seconds },
        (None, None, None) if d.sample_length.is_some() => {
            anyhow::bail!(
                "--sample-length needs a start: --sample N, --sample-from CH:SEG or --sample-start TIME"
            )
        }
        (None, None, None) => return Ok(None),
    };
    let length_s = d.sample_length.unwrap_or(crate::deliver::check::acx::SAMPLE_MAX_S);
    Ok(Some(SampleSpan { start, length_s }))
}

/// The credits to speak: a side with a recording is not spoken; a side's template is its flag,
/// else config.toml's `[book]`, else ACX's wording, when `--credits` asks for both.
fn spoken_credits(
    project: &store::Project,
    meta: &crate::deliver::BookMeta,
    d: &DeliveryArgs,
    config: &crate::config::BookDefaults,
) -> Result<crate::deliver::credits::SpokenCredits> {
    use crate::deliver::credits::{DEFAULT_CLOSING, DEFAULT_OPENING, render_both};
    let template = |flag: &Option<String>, file: &Option<String>, default: &'static str| {
        flag.clone().or_else(|| d.credits.then(|| file.clone().unwrap_or(default.to_string())))
    };
    let opening = match d.opening_credits {
        Some(_) => None,
        None => template(&d.opening_credits_text, &config.opening_credits, DEFAULT_OPENING),
    };
    let closing = match d.closing_credits {
        Some(_) => None,
        None => template(&d.closing_credits_text, &config.closing_credits, DEFAULT_CLOSING),
    };
    render_both(project, meta, opening.as_deref(), closing.as_deref())
}
