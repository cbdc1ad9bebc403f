//! `lectern render`: a whole manuscript to WAV without a terminal UI.
//!
//! It drives the same session pipeline as the workstation ([`crate::session::Session`]): the
//! manuscript is synced into the project (`book.txt` → `book.lectern/`, or a scratch project
//! with `--no-project`), the engine renders the segments without a usable current chosen take
//! (missing, damaged — regenerated from its record when it can be —, or stale: made for other
//! text, voice or model), each flow group's takes are saved in one transaction the moment the
//! group is done, and the output is the master of the store's chosen takes
//! ([`crate::audio::master`]): exactly `lead-in + Σ (tokens × 960 + pause)` samples, each take
//! faded at its edges. Files are written to a temporary name and renamed, so an interrupted
//! render never leaves a file that looks complete, and a resumed render writes the same bytes
//! as an uninterrupted one.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use indicatif::{ProgressBar, ProgressStyle};

use crate::audio::master;
use crate::audio::wav::{self, WavFormat};
use crate::cast::Cast;
pub use crate::dry_run::SpokenBy;
use crate::dry_run::{DryRun, dry_run};
use crate::review::SegmentKey;
pub use crate::session::ProjectChoice;
use crate::session::{self, ModelChoice, PlannedSegment, Session, Work};
use crate::synth::SynthOptions;
use lectern_engine::protocol::{EngineEvent, Request, SegmentState, Take};
use lectern_engine::{ENGINE_VERSION, Engine};
use lectern_model::config::SAMPLE_RATE_HZ;
use lectern_text::Manuscript;
use lectern_text::reading_report::ReadingReport;
use lectern_voice::ModelSignature;

/// Options of one render.
#[derive(Debug, Clone)]
pub struct RenderOptions {
    pub manuscript: PathBuf,
    pub out: PathBuf,
    /// One file per chapter (`OUT-01.wav`, …) instead of one file.
    pub split_chapters: bool,
    /// Model, voice, device, engine parameters, flow matmul, base seed.
    pub synth: SynthOptions,
    pub progress: bool,
    pub project: ProjectChoice,
    /// Check the inputs and segment the manuscript; load no model, write nothing.
    pub dry_run: bool,
    /// Render again the chosen takes made with other settings (NFE, precision, backend, flow
    /// matmul, min-length rule) than this run's; approved takes are kept.
    pub rerender_settings: bool,
    /// What of the manuscript is read (an EPUB's front matter).
    pub read: crate::reading::ReadOptions,
    /// All of the book into the output (the default), one share of it, the shares gathered,
    /// or its takes alone.
    pub scope: RenderScope,
}

/// What a render covers and writes: by default the whole book and its output; a share of it
/// (`--shard K/N`), the shares of other processes gathered (`--gather DIR…`), or every missing
/// take with no output (`export --render`).
#[derive(Debug, Clone, Default)]
pub struct RenderScope {
    /// Render only this share of the plan's flow groups into the project; write no output.
    pub shard: Option<crate::session::plan::Shard>,
    /// Render every missing take into the project and write no output (`export --render`).
    pub takes_only: bool,
    /// Attach the takes of these shard projects, render nothing, write the output.
    pub gather: Vec<PathBuf>,
}

/// One segment of the output.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RenderedSegment {
    pub id: usize,
    pub chapter: usize,
    /// Speech tokens of the take (from its record).
    pub tokens: usize,
    pub samples: usize,
    pub pause_samples: usize,
    /// The take came from the project store rather than this run's engine.
    pub reused: bool,
    /// The seed of the take.
    pub seed: u64,
    /// The take's quality figures against the book's (None in a dry run).
    pub quality: Option<crate::quality::TakeQuality>,
    /// Who speaks it and how.
    #[serde(flatten)]
    pub spoken_by: SpokenBy,
    /// The narrator's review of it (`unheard`, `heard`, `approved`, `pickup`, …); None in a dry
    /// run or without a project.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub review: Option<String>,
    /// The narrator's note on it, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// What a render produced.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RenderReport {
    pub model: String,
    pub bundled_tiny: bool,
    pub voice: String,
    pub engine_version: String,
    /// The project directory used, if any.
    pub project: Option<PathBuf>,
    pub lead_in_samples: usize,
    /// Segments of the manuscript (a dry run fills only ids, chapters and pauses).
    pub segments: Vec<RenderedSegment>,
    /// Segments whose take was reused from the project.
    pub reused: usize,
    /// Segments rendered (or regenerated) by this run.
    pub rendered: usize,
    /// Chosen takes made with other settings than this run's (kept unless
    /// `--rerender-settings`).
    pub other_settings: usize,
    /// Seconds from the engine's start (model loaded) to the first take of this run.
    pub first_audio_s: Option<f64>,
    pub dry_run: bool,
    /// Files written, with their lengths in samples.
    pub files: Vec<(PathBuf, usize)>,
    /// A dry run's answer (`lectern.dry-run/1`, [`crate::dry_run`]); None otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub listing: Option<DryRun>,
    /// A dry run's reading report (the listing's `reading`, beside it); None otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reading: Option<ReadingReport>,
    pub audio_s: f64,
    pub wall_s: f64,
}

/// Suspicious leftovers a dry run prints under its reading report's counts.
const SUMMARY_FLAGS: usize = 5;

/// A segment's chosen take, as the output and the report need it (its samples are read, and
/// checked against their hash, only while its stretch of the output is written).
struct ChosenTake {
    id: lectern_engine::protocol::TakeId,
    tokens: usize,
    /// Samples its record says it has (tokens at its pace).
    expected_samples: usize,
    seed: u64,
    num_samples: u64,
    reused: bool,
}

/// Renders the manuscript; returns what was written.
pub fn render(opts: &RenderOptions) -> anyhow::Result<RenderReport> {
    let started = Instant::now();
    let read_version = file_version(&opts.manuscript);
    let model = ModelChoice::resolve(opts.synth.model.as_deref())?;
    let voice = session::resolve_voice(opts.synth.voice.as_deref(), &model)?;
    let signature = ModelSignature::from_model_dir(&model.dir)
        .with_context(|| format!("reading the model in {}", model.dir.display()))?;
    voice.check_model(&signature).with_context(|| format!("voice `{}`", voice.manifest.name))?;
    let tokenizer = session::tokenizer(&model)?;
    // A dry run lists text the model does not speak instead of refusing the book.
    let book = if opts.dry_run {
        crate::reading::load_for_listing(&opts.manuscript, &tokenizer, &opts.read)?
    } else {
        crate::reading::load(&opts.manuscript, &tokenizer, &opts.read)?
    };
    if opts.scope.shard.is_none() && !opts.scope.takes_only {
        check_output_dir(&opts.out)?;
    }
    let n_segments = book.segments().count();
    eprintln!(
        "lectern render: {} · voice {} · {n_segments} segments in {} chapters",
        model.describe(),
        voice.manifest.name,
        book.chapters.len()
    );
    let lead_in_samples = master::ms_to_samples(book.lead_in_ms);
    let mut report = RenderReport {
        model: model.describe(),
        bundled_tiny: model.bundled_tiny,
        voice: voice.manifest.name.clone(),
        engine_version: ENGINE_VERSION.to_string(),
        project: None,
        lead_in_samples,
        segments: Vec::new(),
        reused: 0,
        rendered: 0,
        other_settings: 0,
        first_audio_s: None,
        dry_run: opts.dry_run,
        files: Vec::new(),
        listing: None,
        reading: None,
        audio_s: 0.0,
        wall_s: 0.0,
    };
    let mut cast = opts.synth.cast(&opts.manuscript)?;
    cast.book_voice.clone_from(&voice.manifest.name);
    if opts.dry_run {
        report.segments = planned_segments(&book, &cast, &opts.manuscript)?;
        // The project this render would use: its casting choices are the plan's.
        let project = opts.project.dir(&opts.manuscript);
        let dry = dry_run(&book, &tokenizer, &cast, &opts.manuscript, project.as_deref())?;
        eprintln!("token counts: {}", tokenizer.describe());
        for w in &dry.warnings {
            eprintln!("warning: {w}");
        }
        for line in dry.reading.summary(SUMMARY_FLAGS) {
            eprintln!("{line}");
        }
        report.reading = Some(dry.reading.clone());
        report.listing = Some(dry);
        report.wall_s = started.elapsed().as_secs_f64();
        eprintln!("dry run: nothing rendered, nothing written");
        return Ok(report);
    }

    let mut session =
        Session::open(&opts.project, &opts.manuscript, &voice, &model.dir, opts.synth.base_seed)?;
    session.measure_with(crate::quality::QualityProbe::load(&model.dir, &voice)?)?;
    session.set_cast(cast)?;
    report_open_check(&session);
    session.sync_read(&book, &tokenizer, &opts.read)?;
    if let Some(line) = session.carry_summary() {
        eprintln!("{line}");
    }
    for line in session.left_behind() {
        eprintln!("{line}");
    }
    if session.reading_changed() > 0 {
        eprintln!(
            "the approved segment(s) edited since approval now read differently (the manuscript \
             or the reading rules changed): each is listed for a pickup, its note kept and the \
             approved reading added to it"
        );
    }
    report.project = session.project_dir().map(Path::to_path_buf);
    if !opts.scope.gather.is_empty() {
        let g =
            crate::shards::gather(&mut session, &opts.scope.gather, &opts.synth.take_settings())?;
        eprintln!(
            "gathered {} shard(s): {} take(s) attached, {} already here",
            g.shards, g.imported, g.already_present
        );
    }
    let other = session.other_settings(&opts.synth.take_settings())?;
    report.other_settings = other.len();
    let rerender: HashSet<SegmentKey> = if opts.rerender_settings {
        other.iter().filter(|(_, approved)| !approved).map(|(k, _)| *k).collect()
    } else {
        HashSet::new()
    };
    let mut work = session.work()?;
    for key in &rerender {
        work.render.push(session.rerender_spec(*key)?);
    }
    // The segments this run answers for: a shard's share, or the whole book.
    let mut answered = n_segments;
    if let Some(shard) = opts.scope.shard {
        let mine = crate::session::plan::shard_keys(session.segments(), shard);
        answered = mine.len();
        work.render.retain(|spec| mine.contains(&(spec.id as SegmentKey)));
        work.regenerate.retain(|r| mine.contains(&(r.segment_id as SegmentKey)));
        eprintln!(
            "shard {shard}: {} of the book's {n_segments} segments are this shard's",
            mine.len()
        );
    }
    if !opts.scope.gather.is_empty() && !work.is_empty() {
        bail!(missing_share_message(session.segments(), &work));
    }
    report.rendered = work.len();
    report.reused = answered - work.len() + rerender.len();
    if let Some(dir) = session.project_dir() {
        eprintln!(
            "project {}: {} of {answered} segments reused, {} to render",
            dir.display(),
            report.reused,
            report.rendered
        );
        if !other.is_empty() && !opts.rerender_settings {
            eprintln!(
                "{} chosen take(s) were made with other settings (NFE, precision, backend, \
                 flow matmul); they stay chosen — `--rerender-settings` renders them again",
                other.len()
            );
        }
    }

    let mut rendered_keys = HashSet::new();
    if !work.is_empty() {
        let backend = session::backend(
            &model,
            &session.voices(),
            &opts.synth.device,
            opts.synth.params.precision,
            opts.synth.flow_matmul,
        )?;
        let handle = Engine::spawn(backend, voice.manifest.name.clone(), opts.synth.params.clone());
        for record in &work.regenerate {
            handle
                .tx
                .send(Request::Regenerate(Box::new(record.clone())))
                .context("engine stopped")?;
        }
        handle.tx.send(Request::Enqueue(work.render.clone())).context("engine stopped")?;
        // A take with no speech is tried again with the next seeds of its own sequence
        // (deterministic, recorded in the take), so a book renders without the narrator.
        let retry = Retrying {
            tx: &handle.tx,
            retries: crate::session::retry::NoSpeechRetries::new(&work.render),
            numbers: session.segments().iter().map(|s| (s.key as u64, s.position + 1)).collect(),
        };
        let result = collect_takes(&handle.rx, work.len(), opts.progress, retry, |take, first| {
            report.first_audio_s.get_or_insert(first);
            if let Some(why) = session::implausible(&take.record.text, take.record.tokens.len()) {
                let id = take.record.segment_id;
                let n =
                    session.segments().iter().position(|s| s.key as u64 == id).map_or(0, |i| i + 1);
                eprintln!("warning: segment {n}: {why}");
            }
            for saved in session.accept(take.clone())? {
                rendered_keys.insert(saved.key);
                if rerender.contains(&saved.key) {
                    session.choose(saved.key, saved.id)?;
                }
            }
            Ok(())
        });
        handle.shutdown();
        let failed = result?;
        if !failed.is_empty() {
            let in_project = session.project_dir().is_some();
            bail!(failure_message(
                &opts.manuscript,
                session.segments(),
                &failed,
                work.len(),
                in_project
            ));
        }
        if let Some(s) = report.first_audio_s {
            eprintln!("first audio after {s:.2} s");
        }
    }

    if opts.scope.shard.is_some() || opts.scope.takes_only {
        // A shard's takes are its output (`--gather` writes the book's); `export --render`
        // exports them.
        report.wall_s = started.elapsed().as_secs_f64();
        return Ok(report);
    }
    // The output comes from the store's chosen takes, exactly what export would use.
    let takes = chosen_takes(&session, &rendered_keys)?;
    report.segments = joined_segments(session.segments(), &takes)?;
    add_reviews(&session, &mut report.segments)?;
    let qualities = take_qualities(&mut session, &takes)?;
    for (seg, q) in report.segments.iter_mut().zip(qualities) {
        if !q.flags.is_empty() {
            eprintln!(
                "note: segment {}: {} (loudness {:+.1} dB vs the book's median, {:.1} units/s{})",
                seg.id + 1,
                q.flags.join(", "),
                q.loudness_vs_median_db,
                q.rate_per_s,
                q.similarity.map_or(String::new(), |s| format!(", similarity {s:.2}"))
            );
        }
        seg.quality = Some(q);
    }
    let planned = session.segments().to_vec();
    let output = Output { rendered: &report.segments, planned: &planned, takes: &takes };
    report.files = write_outputs(opts, &book, &output, &mut session, lead_in_samples)?;
    if file_version(&opts.manuscript) != read_version {
        eprintln!(
            "warning: {} changed during the render; the output voices the text as it was \
             when the render started: render again to voice the changes",
            opts.manuscript.display()
        );
    }
    let total: usize = report.files.iter().map(|f| f.1).sum();
    report.audio_s = total as f64 / f64::from(SAMPLE_RATE_HZ);
    report.wall_s = started.elapsed().as_secs_f64();
    Ok(report)
}

/// Why a gather cannot write the book: segments no shard rendered, the first few named.
fn missing_share_message(segments: &[PlannedSegment], work: &Work) -> String {
    let missing: std::collections::HashSet<u64> = work
        .render
        .iter()
        .map(|s| s.id)
        .chain(work.regenerate.iter().map(|r| r.segment_id))
        .collect();
    let named: Vec<String> = segments
        .iter()
        .enumerate()
        .filter(|(_, s)| missing.contains(&(s.key as u64)))
        .take(3)
        .map(|(i, s)| format!("{} (\u{201c}{}\u{201d})", i + 1, s.source))
        .collect();
    format!(
        "{} segment(s) have no take in the gathered shards — segment {}{}: a share is missing; \
         render it (`--shard K/N`) and gather again (a gather renders nothing)",
        missing.len(),
        named.join(", "),
        if missing.len() > named.len() { ", …" } else { "" }
    )
}

/// Each segment's review state and note, as the narrator left them (for `--report`).
fn add_reviews(session: &Session, segments: &mut [RenderedSegment]) -> anyhow::Result<()> {
    if session.project_dir().is_none() {
        return Ok(());
    }
    let proofed: HashMap<SegmentKey, (crate::review::Review, String)> = session
        .project()
        .proofed_segments()?
        .into_iter()
        .map(|p| (p.key, (p.review, p.note)))
        .collect();
    for (seg, planned) in segments.iter_mut().zip(session.segments()) {
        if let Some((review, note)) = proofed.get(&planned.key) {
            seg.review = Some(review.as_str().to_string());
            seg.note = (!note.is_empty()).then(|| note.clone());
        }
    }
    Ok(())
}

/// A file's size and modification time: what changes when an editor saves it.
fn file_version(path: &Path) -> Option<(u64, std::time::SystemTime)> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.len(), meta.modified().ok()?))
}

/// Refuses an output directory that does not exist or cannot be written, before any work.
fn check_output_dir(out: &Path) -> anyhow::Result<()> {
    let dir = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !dir.is_dir() {
        bail!("the output directory {} does not exist", dir.display());
    }
    let probe = dir.join(format!(".lectern-write-check-{}", std::process::id()));
    std::fs::write(&probe, b"")
        .with_context(|| format!("the output directory {} is not writable", dir.display()))?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

/// Says what the project's opening check found, if anything.
fn report_open_check(session: &Session) {
    let check = session.open_report();
    if !check.is_clean() {
        eprintln!(
            "project: {} take files missing (regenerated or re-rendered), {} damaged (moved to \
             takes/quarantine/), {} interrupted writes removed, {} orphan files quarantined, {} \
             leftovers cleaned",
            check.missing_files.len(),
            check.damaged_quarantined.len(),
            check.temp_files_removed.len(),
            check.orphans_quarantined.len(),
            check.auto_cleaned.len()
        );
    }
    if let Some(rebuild) = &check.resumed_rebuild {
        eprintln!(
            "project: an interrupted `--rebuild` was finished: {} take(s) of {} segment(s) \
             re-attached",
            rebuild.takes, rebuild.segments
        );
    }
}

/// The segments as a dry run reports them: no takes yet.
fn planned_segments(
    book: &Manuscript,
    cast: &Cast,
    manuscript: &Path,
) -> anyhow::Result<Vec<RenderedSegment>> {
    let mut out = Vec::new();
    for (chapter, ch) in book.chapters.iter().enumerate() {
        for s in &ch.segments {
            let role = cast.resolve(s, manuscript)?;
            out.push(RenderedSegment {
                id: s.id,
                chapter,
                tokens: 0,
                samples: 0,
                pause_samples: master::ms_to_samples(s.pause_after_ms),
                reused: false,
                seed: 0,
                quality: None,
                spoken_by: SpokenBy::of_role(&role, s.voicing.character.clone()),
                review: None,
                note: None,
            });
        }
    }
    Ok(out)
}

/// Every segment's chosen take (records only; no samples are read here).
fn chosen_takes(
    session: &Session,
    rendered: &HashSet<SegmentKey>,
) -> anyhow::Result<HashMap<SegmentKey, ChosenTake>> {
    let mut out = HashMap::new();
    for s in session.segments() {
        let info = session
            .project()
            .chosen_of_key(s.key)?
            .with_context(|| format!("segment {} has no chosen take", s.position + 1))?;
        out.insert(
            s.key,
            ChosenTake {
                id: info.id,
                tokens: info.record.tokens.len(),
                expected_samples: info.record.sample_count(),
                seed: info.record.seed,
                num_samples: info.num_samples,
                reused: !rendered.contains(&s.key),
            },
        );
    }
    Ok(out)
}

/// What the report says of each segment; checks each take's length against its tokens.
fn joined_segments(
    segments: &[PlannedSegment],
    takes: &HashMap<SegmentKey, ChosenTake>,
) -> anyhow::Result<Vec<RenderedSegment>> {
    let mut out = Vec::new();
    for s in segments {
        let take =
            takes.get(&s.key).with_context(|| format!("no take for segment {}", s.position))?;
        let samples = take.num_samples as usize;
        if samples != take.expected_samples {
            bail!(
                "the take of segment {} has {samples} samples for {} tokens (expected {})",
                s.position,
                take.tokens,
                take.expected_samples
            );
        }
        out.push(RenderedSegment {
            id: s.position,
            chapter: s.chapter,
            tokens: take.tokens,
            samples,
            pause_samples: master::ms_to_samples(s.pause_after_ms),
            reused: take.reused,
            seed: take.seed,
            quality: None,
            spoken_by: SpokenBy::new(
                &s.casting.voice,
                s.character.clone(),
                &s.casting.mode,
                s.casting.pace,
            ),
            review: None,
            note: None,
        });
    }
    Ok(out)
}

/// The chosen takes' quality figures against the book's, in manuscript order
/// ([`crate::quality`]). Each take's own figures are stored with it when it is saved; a take
/// saved without them (by an older Lectern) is measured now and its figures stored.
fn take_qualities(
    session: &mut Session,
    takes: &HashMap<SegmentKey, ChosenTake>,
) -> anyhow::Result<Vec<crate::quality::TakeQuality>> {
    let keys: Vec<SegmentKey> = session.segments().iter().map(|s| s.key).collect();
    let mut figures = Vec::with_capacity(keys.len());
    for key in keys {
        figures.push(session.figures_of(takes[&key].id)?);
    }
    Ok(crate::quality::assess(&figures))
}

/// What a render says when segments failed: which (number, line, text) and why, and whether
/// the other takes are kept (only a project keeps them).
fn failure_message(
    manuscript: &Path,
    segments: &[PlannedSegment],
    failed: &[(u64, String)],
    asked: usize,
    in_project: bool,
) -> String {
    let kept = if in_project {
        format!(
            "The {} other take(s) are saved in the project: render again to retry only the \
             failed ones",
            asked - failed.len()
        )
    } else {
        "Without a project no take is kept.".to_string()
    };
    let mut lines =
        vec![format!("{} of {asked} segment(s) failed; no output written. {kept}", failed.len())];
    for (id, why) in failed {
        match segments.iter().find(|s| s.key as u64 == *id) {
            Some(s) => {
                let n = s.position + 1;
                lines.push(format!("  segment {n} at line {}: {why}", s.span.0));
                let fix = crate::session::retry::failure_fix(manuscript, n, why);
                lines.push(format!("  segment {n}: {fix}"));
            }
            None => lines.push(format!("  segment key {id}: {why}")),
        }
    }
    lines.join("\n")
}

/// How `collect_takes` answers a take with no speech: the engine to send the next try to, the
/// tries so far, and each segment's number for the message.
struct Retrying<'a> {
    tx: &'a std::sync::mpsc::Sender<Request>,
    retries: crate::session::retry::NoSpeechRetries,
    numbers: HashMap<u64, usize>,
}

/// A line above the progress bar, or on stderr when there is none (`--quiet`).
fn say(bar: &ProgressBar, line: String) {
    if bar.is_hidden() { eprintln!("{line}") } else { bar.println(line) }
}

/// Waits for one take or failure per segment, handing each take to `on_take` as it arrives
/// with the seconds since the wait began. A failed segment does not stop the others: the
/// failures are returned, with why, once every segment is done or failed.
fn collect_takes(
    rx: &std::sync::mpsc::Receiver<EngineEvent>,
    n_segments: usize,
    progress: bool,
    mut retry: Retrying<'_>,
    mut on_take: impl FnMut(&Take, f64) -> anyhow::Result<()>,
) -> anyhow::Result<Vec<(u64, String)>> {
    let bar = if progress { ProgressBar::new(n_segments as u64) } else { ProgressBar::hidden() };
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} segments · {msg} · ETA {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let started = Instant::now();
    let mut done = std::collections::HashSet::new();
    let mut failed = Vec::new();
    let mut audio_s = 0.0;
    while done.len() + failed.len() < n_segments {
        let event = match rx.recv_timeout(Duration::from_secs(3600)) {
            Ok(e) => e,
            Err(_) => bail!("the engine stopped before every segment was rendered"),
        };
        match event {
            EngineEvent::TakeReady(take) => {
                audio_s += take.samples.len() as f64 / f64::from(SAMPLE_RATE_HZ);
                if let Err(e) = on_take(&take, started.elapsed().as_secs_f64()) {
                    bar.abandon();
                    return Err(e);
                }
                done.insert(take.record.segment_id);
                let rtf = started.elapsed().as_secs_f64() / audio_s.max(1e-9);
                bar.set_message(format!("{audio_s:.1} s audio · RTF {rtf:.2}"));
                bar.set_position(done.len() as u64);
            }
            EngineEvent::SegmentState { id, state: SegmentState::Failed(why) } => {
                if let Some(next) = retry.retries.next(id, &why) {
                    // Said even with `--quiet`: the take made is not the first seed's.
                    say(
                        &bar,
                        format!(
                            "segment {}: no speech with seed {}; trying seed {} (try {} of {})",
                            retry.numbers.get(&id).copied().unwrap_or(0),
                            next.failed_seed,
                            next.spec.seed,
                            next.try_number,
                            crate::session::retry::NO_SPEECH_TRIES
                        ),
                    );
                    retry
                        .tx
                        .send(Request::Reseed(Box::new(next.spec)))
                        .context("engine stopped")?;
                    continue;
                }
                bar.println(format!("a segment failed: {why}"));
                failed.push((id, why));
            }
            EngineEvent::Log(line) => bar.println(line),
            _ => {}
        }
    }
    bar.finish();
    Ok(failed)
}

/// The output's segments: what the report says of them, the plan, and their chosen takes.
struct Output<'a> {
    rendered: &'a [RenderedSegment],
    planned: &'a [PlannedSegment],
    takes: &'a HashMap<SegmentKey, ChosenTake>,
}

impl Output<'_> {
    /// The segments of one chapter (all of them for `None`).
    fn members(&self, chapter: Option<usize>) -> Vec<(&RenderedSegment, &PlannedSegment)> {
        self.rendered
            .iter()
            .zip(self.planned)
            .filter(|(r, _)| chapter.is_none_or(|c| r.chapter == c))
            .collect()
    }
}

/// Writes the output file(s), streaming: one take's samples in memory at a time, so a long
/// book renders in bounded memory.
fn write_outputs(
    opts: &RenderOptions,
    book: &Manuscript,
    output: &Output<'_>,
    session: &mut Session,
    lead_in_samples: usize,
) -> anyhow::Result<Vec<(PathBuf, usize)>> {
    let files: Vec<(PathBuf, Option<usize>, usize)> = if opts.split_chapters {
        (0..book.chapters.len())
            .map(|c| {
                (chapter_path(&opts.out, c + 1), Some(c), if c == 0 { lead_in_samples } else { 0 })
            })
            .collect()
    } else {
        vec![(opts.out.clone(), None, lead_in_samples)]
    };
    let mut written = Vec::new();
    for (path, chapter, lead_in) in files {
        let members = output.members(chapter);
        let n =
            write_atomically(&path, |w| write_master(w, &members, output.takes, session, lead_in))?;
        written.push((path, n));
    }
    Ok(written)
}

/// `book.wav` → `book-01.wav`.
pub fn chapter_path(out: &Path, chapter: usize) -> PathBuf {
    let stem = out.file_stem().and_then(|s| s.to_str()).unwrap_or("chapter");
    let ext = out.extension().and_then(|s| s.to_str()).unwrap_or("wav");
    out.with_file_name(format!("{stem}-{chapter:02}.{ext}"))
}

/// Writes the master of these segments: the lead-in, then each take with its pause
/// ([`master::segment_master`]). Returns the samples written.
fn write_master<W: std::io::Write + std::io::Seek>(
    w: &mut hound::WavWriter<W>,
    members: &[(&RenderedSegment, &PlannedSegment)],
    takes: &HashMap<SegmentKey, ChosenTake>,
    session: &mut Session,
    lead_in: usize,
) -> anyhow::Result<usize> {
    let mut n = 0;
    if members.is_empty() {
        for _ in 0..lead_in {
            w.write_sample(0.0f32)?;
        }
        return Ok(lead_in);
    }
    for (i, (r, p)) in members.iter().enumerate() {
        let lead = if i == 0 { lead_in } else { 0 };
        let samples = session.load_samples(takes[&p.key].id)?;
        for x in master::segment_master(&samples, lead, r.pause_samples) {
            w.write_sample(x)?;
            n += 1;
        }
    }
    Ok(n)
}

/// Writes a 24 kHz f32 WAV to `path.partial.wav` through `write`, then renames it over
/// `path`. Returns what `write` returns.
fn write_atomically(
    path: &Path,
    write: impl FnOnce(
        &mut hound::WavWriter<std::io::BufWriter<std::fs::File>>,
    ) -> anyhow::Result<usize>,
) -> anyhow::Result<usize> {
    let tmp = path.with_extension("partial.wav");
    let result = (|| {
        let mut w = hound::WavWriter::create(&tmp, wav::spec(WavFormat::F32))
            .with_context(|| format!("writing {}", tmp.display()))?;
        let n = write(&mut w).with_context(|| format!("writing {}", tmp.display()))?;
        w.finalize().with_context(|| format!("writing {}", tmp.display()))?;
        std::fs::rename(&tmp, path).with_context(|| format!("renaming to {}", path.display()))?;
        crate::output::ledger::record(path);
        Ok(n)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use lectern_engine::protocol::{Casting, TakeContent};

    fn planned(position: usize, line: usize) -> PlannedSegment {
        PlannedSegment {
            key: position as SegmentKey + 10,
            position,
            chapter: 0,
            text: format!("text {position}"),
            source: format!("Text {position}."),
            span: (line, 1),
            pause_after_ms: 0,
            ends_paragraph: true,
            default_seed: 0,
            content: TakeContent::default(),
            casting: Casting::default(),
            character: None,
            recast: crate::review::CastingOverride::default(),
        }
    }

    #[test]
    fn a_failure_names_each_segment_its_line_and_what_fixes_it() {
        let segments = [planned(0, 1), planned(1, 3)];
        let failed = [(11, lectern_engine::thread::NO_SPEECH.to_string())];
        let book = Path::new("book.md");
        let kept = failure_message(book, &segments, &failed, 2, true);
        assert!(kept.starts_with("1 of 2 segment(s) failed; no output written."), "{kept}");
        assert!(kept.contains("The 1 other take(s) are saved in the project"), "{kept}");
        assert!(kept.contains("segment 2 at line 3: the model produced no speech"), "{kept}");
        assert!(kept.contains("segment 2: 3 seeds in a row gave no speech"), "{kept}");
        assert!(kept.contains("`lectern reseed book.md 2 --seed 2`"), "{kept}");
        let other = failure_message(book, &segments, &[(10, "a device error".into())], 2, true);
        assert!(other.contains("segment 1: a device error: `lectern render book.md`"), "{other}");
        let scratch = failure_message(book, &segments, &failed, 2, false);
        assert!(scratch.contains("Without a project no take is kept"), "{scratch}");
    }
}
