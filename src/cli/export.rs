//! `lectern export`: a project's chosen takes as the WAV/FLAC master, or as delivery files
//! (MP3, M4B, `--preset acx`) with credits, room tone and a retail sample.

use std::path::PathBuf;

use anyhow::{Context, Result};

use super::common::{output_dir, print_checks};
use super::{DeliveryArgs, ExportArgs, ExportFormatArg, ExportPreset};
use crate::config::Config;
use crate::deliver;
use crate::output::{Guard, StagedFolder};
use crate::store;

pub(super) fn run(args: ExportArgs) -> Result<()> {
    let book = args.project.clone();
    export(args).map_err(|e| {
        // Segments without takes: `--render` renders them first.
        let missing = e.chain().any(|c| {
            c.downcast_ref::<store::StoreError>()
                .is_some_and(|s| matches!(s, store::StoreError::MissingTakes { .. }))
        });
        if missing {
            e.context(format!(
                "the book is not all rendered: `lectern export {} --render …` renders what is \
                 missing, then exports",
                book.display()
            ))
        } else {
            e
        }
    })
}

fn export(args: ExportArgs) -> Result<()> {
    let cfg = Config::load_default();
    cfg.check()?;
    let mut args = args;
    if args.render {
        render_first(&cfg, &args)?;
    }
    if let Some(out) = &args.out {
        export_guard(&args.project, args.force).not_input(out, "the export")?;
    }
    // A delivery (a preset, MP3, M4B) and a split export write folders: no extension to read.
    let folder = args.split.is_some() || args.preset.is_some();
    args.format = format_of(args.format, args.out.as_deref(), folder)?;
    if args.preset.is_some() || args.format.is_some_and(ExportFormatArg::is_delivery) {
        return run_delivery(&cfg, args);
    }
    // The master is the 24 kHz render as it is, tagged with the book's metadata and cover: a
    // delivery's other flags (room tone, credits, sample, captions) have nothing to shape.
    let given = args.delivery.given_for_delivery_only();
    anyhow::ensure!(
        given.is_empty(),
        "{} shape a delivery: use them with --format mp3, --format m4b or a --preset (a WAV or \
         FLAC master is the render as it is, with the book's metadata and cover)",
        given.join(", ")
    );
    let meta = args.delivery.meta_flags();
    let ExportArgs {
        project,
        out,
        split,
        format,
        bits,
        loudness,
        allow_stale,
        force,
        require_approved,
        report,
        ..
    } = args;
    let format = format.unwrap_or(ExportFormatArg::Wav);
    let ext = if format == ExportFormatArg::Flac { "flac" } else { "wav" };
    let out = match out {
        Some(o) => o,
        None if split.is_some() => output_dir(&cfg).join(book_stem(&project)),
        None => output_dir(&cfg).join(format!("{}.{ext}", book_stem(&project))),
    };
    let mut guard = export_guard(&project, force);
    if let Some(cover) = &meta.cover {
        guard = guard.protect(cover, "a file this export reads");
    }
    let opts = MasterExport {
        out,
        meta,
        split_chapters: split.is_some(),
        format,
        bits,
        loudness,
        allow_stale,
        require_approved,
        report,
    };
    if let Some(path) = &opts.report {
        guard.file(path, "the report", &["json"], "name it .json")?;
    }
    if opts.split_chapters {
        guard.folder(&opts.out, "the chapters' folder")?;
    } else {
        for (path, what, extension) in master_files(&opts.out, ext) {
            guard.file(&path, what, &[extension], "")?;
        }
    }
    run_export(&cfg, &project, opts)
}

/// The format an export writes: `--format`, else the output file's extension (a folder output
/// — `--split chapters` — has none), else WAV. An extension that is no format Lectern writes,
/// or one that contradicts `--format`, is refused.
fn format_of(
    format: Option<ExportFormatArg>,
    out: Option<&std::path::Path>,
    folder: bool,
) -> Result<Option<ExportFormatArg>> {
    let Some(out) = out.filter(|_| !folder) else { return Ok(format) };
    let extension = path_ext(out);
    let named = match extension.as_str() {
        "wav" => ExportFormatArg::Wav,
        "flac" => ExportFormatArg::Flac,
        "mp3" | "m4b" => anyhow::bail!(
            "{}: MP3 and M4B delivery writes a folder (chapters, cover, sample): give -o a \
             folder, e.g. -o {}",
            out.display(),
            out.with_extension("").display()
        ),
        // A delivery's output is a folder; its name may hold a dot.
        _ if format.is_some_and(ExportFormatArg::is_delivery) => {
            return Ok(format);
        }
        _ => anyhow::bail!(
            "{}: the extension sets the export's format: .wav or .flac ({} is neither); \
             MP3/M4B delivery (`--format mp3|m4b`, `--preset acx`) writes a folder",
            out.display(),
            out.extension()
                .map_or("no extension".to_string(), |e| format!("`.{}`", e.to_string_lossy()))
        ),
    };
    match format {
        Some(f) if !f.is_delivery() && f != named => {
            anyhow::bail!(
                "{}: --format {} but the file is named .{}; name it as its format",
                out.display(),
                format!("{f:?}").to_lowercase(),
                extension
            )
        }
        Some(f) => Ok(Some(f)),
        None => Ok(Some(named)),
    }
}

/// A path's extension, lower case ("" for none).
fn path_ext(path: &std::path::Path) -> String {
    path.extension().map_or(String::new(), |e| e.to_string_lossy().to_ascii_lowercase())
}

/// The files a single-file master export writes, each with what it is and its extension: the
/// audio, its cue sheet, chapter list and the book's cover.
fn master_files(
    out: &std::path::Path,
    ext: &'static str,
) -> [(PathBuf, &'static str, &'static str); 5] {
    let name = |suffix: &str| {
        let mut n = out.file_name().map(|n| n.to_os_string()).unwrap_or_default();
        n.push(suffix);
        out.with_file_name(n)
    };
    let stem = out.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let cover = |ext: &str| out.with_file_name(format!("{stem}.cover.{ext}"));
    [
        (out.with_extension(ext), "the export", ext),
        (name(".cue"), "the export's cue sheet", "cue"),
        (name(".chapters.json"), "the export's chapter list", "json"),
        (cover("jpg"), "the export's cover", "jpg"),
        (cover("png"), "the export's cover", "png"),
    ]
}

/// The guard of an export's outputs: the project, its manuscript and the setup are inputs.
fn export_guard(project: &std::path::Path, force: bool) -> Guard {
    let dir = project_dir(project);
    let mut guard = Guard::new(force).protect_setup().protect(&dir, "the project folder");
    if project.is_file() {
        return guard.protect_manuscript(project);
    }
    // Given the project folder, its manuscript is the file beside it of the same name.
    for ext in MANUSCRIPT_EXTENSIONS {
        guard = guard.protect_manuscript(&dir.with_extension(ext));
    }
    guard
}

/// The extensions a manuscript may have (plain text, Markdown, EPUB, Word).
const MANUSCRIPT_EXTENSIONS: [&str; 5] = ["txt", "md", "markdown", "epub", "docx"];

fn project_dir(project: &std::path::Path) -> PathBuf {
    if project.is_file() {
        store::Project::dir_for_manuscript(project)
    } else {
        project.to_path_buf()
    }
}

/// What `lectern export` was asked for, besides the project.
struct MasterExport {
    out: PathBuf,
    /// The metadata flags, which win over the manuscript's and config.toml's `[book]`.
    meta: deliver::MetaFlags,
    split_chapters: bool,
    format: ExportFormatArg,
    bits: u32,
    loudness: Option<f64>,
    allow_stale: bool,
    require_approved: bool,
    report: Option<PathBuf>,
}

fn run_export(cfg: &Config, project: &std::path::Path, args: MasterExport) -> Result<()> {
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
    let stem = book_stem(project);
    let book = project;
    let project = open_for_export(project)?;
    tell_book_state(&project, book, args.require_approved)?;
    // A split export's files are staged in a folder that replaces the previous one whole.
    let staged = if args.split_chapters { Some(StagedFolder::begin(&args.out)?) } else { None };
    let out = match &staged {
        Some(s) => s.path().join(format!("{stem}.{}", format.extension())),
        None => args.out,
    };
    // The master's tags and cue sheet resolve the book's metadata as a delivery's do.
    let meta = deliver::BookMeta::resolve(
        &args.meta,
        &project.book()?,
        project.dir(),
        &cfg.settings.book,
        &stem,
    );
    let opts = ExportOptions {
        out,
        book: Some(meta.fields()),
        cover: args.meta.cover.clone(),
        format,
        sample_format,
        split_chapters: args.split_chapters,
        loudness_lufs: args.loudness,
        allow_stale: args.allow_stale,
    };
    let mut report = store::export::export(&project, &opts)?;
    if let Some(staged) = staged {
        for f in &mut report.files {
            f.path = staged.final_path(&f.path);
        }
        report.cue_path = staged.final_path(&report.cue_path);
        report.json_path = staged.final_path(&report.json_path);
        for kept in staged.commit()? {
            eprintln!("note: {kept} was in the folder before; kept");
        }
    }
    for s in &report.stale {
        eprintln!("warning: stale take exported (--allow-stale) for {s}");
    }
    for note in &report.notes {
        eprintln!("note: {note}");
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
    if let Some(path) = &args.report {
        let files: Vec<PathBuf> = report.files.iter().map(|f| f.path.clone()).collect();
        write_report(path, &super::book_state::report_json(&project, &files)?)?;
    }
    Ok(())
}

fn write_report(path: &std::path::Path, report: &serde_json::Value) -> Result<()> {
    let text = serde_json::to_string_pretty(report)?;
    crate::output::write_atomically(path, |tmp| std::fs::write(tmp, &text))?;
    Ok(())
}

/// Prints the book's review state; with `require_approved`, refuses a book not all approved.
fn tell_book_state(
    project: &store::Project,
    book: &std::path::Path,
    require_approved: bool,
) -> Result<()> {
    let state = super::book_state::BookState::of(project)?;
    eprintln!("{}", state.summary());
    for (n, text) in state.pickups.iter().take(3) {
        eprintln!("  pickup: segment {n} (\u{201c}{text}\u{201d})");
    }
    if require_approved {
        state.require_approved(book)?;
    }
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
    if !dir.join(store::DB_FILE).is_file() {
        let render = if project.is_file() {
            format!("`lectern render {}` renders it", project.display())
        } else {
            "render the manuscript first (`lectern render BOOK`)".to_string()
        };
        anyhow::bail!("no Lectern project at {}: nothing rendered yet; {render}", dir.display());
    }
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
    use crate::deliver::{DeliveryFormat, DeliveryOptions, RoomToneSource};
    let acx = run.preset == Some(ExportPreset::Acx);
    let preset = run.preset.map(ExportPreset::preset);
    if let (Some(p), Some(_)) = (&preset, run.loudness) {
        anyhow::bail!(
            "--preset {} sets its own levels{}: leave out --loudness",
            p.name,
            if acx { " (RMS −23…−18 dB, peaks ≤ −3 dB)" } else { "" }
        );
    }
    if run.loudness.is_some() {
        anyhow::bail!(
            "--loudness applies to wav and flac; mp3 and m4b are mastered to RMS −20 dB with peaks ≤ −3 dB"
        );
    }
    let format = match (run.format, &preset) {
        (None, Some(p)) => p.format,
        (None | Some(ExportFormatArg::Mp3), _) => DeliveryFormat::Mp3,
        (Some(ExportFormatArg::M4b), None) => DeliveryFormat::M4b,
        // Captions and the read-along EPUB go with the MP3 delivery.
        (Some(ExportFormatArg::Srt | ExportFormatArg::Vtt | ExportFormatArg::Epub), None) => {
            DeliveryFormat::Mp3
        }
        (Some(other), Some(p)) => anyhow::bail!(
            "--preset {} delivers {} files; --format {} cannot be combined with it",
            p.name,
            format!("{:?}", p.format).to_uppercase(),
            format!("{other:?}").to_lowercase()
        ),
        (Some(other), None) => anyhow::bail!(
            "--format {} is not a delivery format",
            format!("{other:?}").to_lowercase()
        ),
    };
    let companions = super::read_along::Companions::of(run.format, run.delivery.captions)?;
    companions.check(&run.project)?;
    let d = run.delivery;
    let stem = book_stem(&run.project);
    let room_tone = match (d.room_tone.clone(), d.room_tone_db) {
        (Some(p), _) => RoomToneSource::Recording(p),
        (None, Some(level_db)) => RoomToneSource::Noise { level_db },
        (None, None) => RoomToneSource::default(),
    };
    let out_dir = run.out.clone().unwrap_or_else(|| output_dir(cfg).join(&stem));
    let mut guard = export_guard(&run.project, run.force);
    let recordings = [&d.room_tone, &d.opening_credits, &d.closing_credits, &d.cover];
    for path in recordings.into_iter().flatten() {
        guard = guard.protect(path, "a file this export reads");
    }
    guard.folder(&out_dir, "the delivery folder")?;
    if let Some(path) = &run.report {
        guard.file(path, "the report", &["json"], "name it .json")?;
    }
    let project = open_for_export(&run.project)?;
    tell_book_state(&project, &run.project, run.require_approved)?;
    let spoken_credits_asked = d.credits || d.opening_credits_text.is_some();
    if acx && d.opening_credits.is_none() && !spoken_credits_asked {
        eprintln!(
            "warning: ACX requires opening and closing credits (title, author, narrator): \
             `--credits` speaks them, `--opening-credits FILE`/`--closing-credits FILE` take \
             recordings"
        );
    }
    let flags = d.meta_flags();
    let book = project.book()?;
    let mut meta =
        deliver::BookMeta::resolve(&flags, &book, project.dir(), &cfg.settings.book, &stem);
    meta.disclosure.voices = deliver::book_voices(&project, run.allow_stale)?;
    if let Some(p) = &preset {
        tell_preset(p, &meta)?;
    }
    let sample = sample_span(&d)?;
    let spoken = spoken_credits(&project, &meta, &d, &cfg.settings.book)?;
    let staged = StagedFolder::begin(&out_dir)?;
    let opts = DeliveryOptions {
        out_dir: staged.path().to_path_buf(),
        format,
        // A read-along EPUB pairs each chapter's text with that chapter's own MP3.
        split_chapters: preset.as_ref().is_some_and(|p| p.split_chapters)
            || run.split.is_some()
            || companions.epub,
        meta,
        room_tone,
        // A side with a narrator's recording is not spoken, so has no text.
        opening_credits_text: spoken.opening_text.clone(),
        closing_credits_text: spoken.closing_text.clone(),
        opening_credits: d.opening_credits.or_else(|| spoken.opening.clone()),
        closing_credits: d.closing_credits.or_else(|| spoken.closing.clone()),
        sample,
        enforce_acx: preset.is_some(),
        allow_stale: run.allow_stale,
        ..preset.as_ref().map_or_else(DeliveryOptions::default, preset_options)
    };
    let mut report = deliver::export(&project, &opts)?;
    let companions =
        super::read_along::write(companions, &run.project, &project, &opts, &report.files, &stem)?;
    let companions: Vec<PathBuf> = companions.iter().map(|p| staged.final_path(p)).collect();
    for f in &mut report.files {
        f.path = staged.final_path(&f.path);
        f.check.file = staged.final_path(&f.check.file);
    }
    // The delivery replaces the previous one as a whole; files the narrator put in the folder
    // are kept, and named when they would be uploaded or checked with these.
    let kept = staged.commit()?;
    for s in &report.stale {
        eprintln!("warning: stale take exported (--allow-stale) for {s}");
    }
    for f in &report.files {
        eprintln!("wrote {} ({:.1} s)", f.path.display(), f.samples as f64 / 44_100.0);
    }
    for path in &companions {
        eprintln!("wrote {}", path.display());
    }
    for name in kept {
        let path = out_dir.join(&name);
        if deliver::check::delivery_files(&path).is_ok_and(|f| !f.is_empty()) {
            eprintln!("warning: {} is not from this export (kept as it was)", path.display());
        }
    }
    if let Some(path) = &run.report {
        let files: Vec<PathBuf> = report.files.iter().map(|f| f.path.clone()).collect();
        write_report(path, &super::book_state::report_json(&project, &files)?)?;
    }
    let checks: Vec<_> = report.files.iter().map(|f| f.check.clone()).collect();
    print_checks(&checks, d.json)?;
    Ok(())
}

/// The delivery options a preset sets: its rules, mastering targets and longest file.
fn preset_options(p: &crate::deliver::preset::Preset) -> crate::deliver::DeliveryOptions {
    crate::deliver::DeliveryOptions {
        rules: p.rules.clone(),
        targets: p.targets.clone(),
        max_file_s: p.max_file_s,
        ..crate::deliver::DeliveryOptions::default()
    }
}

/// Checks what a preset asks of the book before anything is written (the cover's size), and
/// says what the narrator must do outside the files: the store's listing notes, and whether
/// the store takes synthetic narration at all.
fn tell_preset(p: &crate::deliver::preset::Preset, meta: &crate::deliver::BookMeta) -> Result<()> {
    if let Some(cover) = &meta.cover {
        let bytes = std::fs::read(cover).with_context(|| format!("reading {}", cover.display()))?;
        p.check_cover(&bytes).map_err(|e| anyhow::anyhow!("{}: {e}", cover.display()))?;
    }
    if !p.accepts_synthetic {
        eprintln!(
            "warning: {} accepts human narration only; Lectern's files are synthetic speech and              say so in their tags (--preset google-play or findaway for stores that take it)",
            p.store
        );
    }
    for note in p.notes {
        eprintln!("note: {note}");
    }
    Ok(())
}

/// `--render`: renders the manuscript's missing takes into its project, as `lectern render`
/// would with the project's model, voice and reading options (the flags win; a first render
/// takes them from the flags and config.toml), writing no audio of its own.
fn render_first(cfg: &Config, args: &ExportArgs) -> Result<()> {
    anyhow::ensure!(
        args.project.is_file(),
        "--render renders the manuscript: give the manuscript ({} is a folder)",
        args.project.display()
    );
    let dir = store::Project::dir_for_manuscript(&args.project);
    let mut synth = args.synth.clone();
    let mut read = crate::reading::ReadOptions::default();
    if dir.join(store::DB_FILE).is_file() {
        let project = store::Project::open(&dir)?;
        read = project.book()?.read;
        if let Some(sources) = project.sources()? {
            synth.model = synth.model.or(Some(sources.model_dir));
            synth.voice = synth.voice.or(Some(sources.voice_dir.display().to_string()));
            synth.cross_lingual |= sources.cross_lingual;
        }
    }
    let eff = synth.effective(cfg, &super::ExtraFlags::default());
    let opts = crate::render::RenderOptions {
        manuscript: args.project.clone(),
        out: PathBuf::new(),
        split_chapters: false,
        synth: eff.synth_options(&synth)?,
        progress: true,
        project: crate::session::ProjectChoice::NextToManuscript,
        dry_run: false,
        rerender_settings: false,
        read,
        scope: crate::render::RenderScope { takes_only: true, ..Default::default() },
    };
    let rep = crate::render::render(&opts)?;
    eprintln!("--render: {} segment(s) rendered, {} already there", rep.rendered, rep.reused);
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
