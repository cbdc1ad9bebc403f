//! `lectern render`: a whole manuscript to WAV without a terminal UI.
//!
//! Segments → engine (LM lanes, flow groups, vocoder) → takes in manuscript order, joined with
//! the manuscript's pauses. Each take is exactly `tokens × 960` samples; a short fade at each
//! join prevents clicks without changing any length, so the output is exactly
//! `lead-in + Σ (tokens × 960 + pause)` samples. Files are written to a temporary name and
//! renamed, so an interrupted render never leaves a file that looks complete.
//!
//! With a project (the default: `book.txt` → `book.lectern/`), the manuscript's segments are
//! synced into the store and every take is saved atomically the moment it arrives, so a killed
//! render loses no finished take; the next run renders only the segments without a usable
//! chosen take (missing, or made with another voice, model, step count or precision) and
//! assembles the output from the store's chosen takes.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use candle::Device;
use indicatif::{ProgressBar, ProgressStyle};

use crate::audio::wav::{self, WavFormat};
use crate::engine::protocol::{
    EngineEvent, RenderParams, Request, SegmentSpec, SegmentState, Take, TakeRecord,
};
use crate::engine::{ENGINE_VERSION, Engine};
use crate::model::config::{ModelConfig, SAMPLE_RATE_HZ, SAMPLES_PER_TOKEN};
use crate::model::flow::FlowMatmul;
use crate::session::{self, ModelChoice};
use crate::store::{Project, StoredSegment, TakeStatus};
use crate::text::{Manuscript, ParseOptions};
use crate::voice::ModelSignature;

/// Samples of the fade-in/out applied at each join (2 ms at 24 kHz).
const JOIN_FADE_SAMPLES: usize = 48;

/// Where a render keeps its takes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ProjectChoice {
    /// The project next to the manuscript (`book.txt` → `book.lectern/`).
    #[default]
    NextToManuscript,
    /// `--project DIR`.
    Dir(PathBuf),
    /// `--no-project`: takes live in memory only.
    Off,
}

/// Options of one render.
#[derive(Debug, Clone)]
pub struct RenderOptions {
    pub manuscript: PathBuf,
    pub out: PathBuf,
    /// One file per chapter (`OUT-01.wav`, …) instead of one file.
    pub split_chapters: bool,
    pub model: Option<PathBuf>,
    pub voice: Option<String>,
    pub device: Device,
    pub params: RenderParams,
    /// How the flow's matmuls run; `None`: the device's default ([`FlowMatmul::default_for`]).
    pub flow_matmul: Option<FlowMatmul>,
    /// Segment k is sampled with seed `base_seed + k`.
    pub base_seed: u64,
    pub progress: bool,
    pub project: ProjectChoice,
    /// Check the inputs and segment the manuscript; load no model, write nothing.
    pub dry_run: bool,
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
    /// Segments rendered by this run.
    pub rendered: usize,
    pub dry_run: bool,
    /// Files written, with their lengths in samples.
    pub files: Vec<(PathBuf, usize)>,
    pub audio_s: f64,
    pub wall_s: f64,
}

/// A take's audio and token count, ready to join.
struct TakeAudio {
    tokens: usize,
    samples: Vec<f32>,
    reused: bool,
}

fn ms_to_samples(ms: u32) -> usize {
    ms as usize * SAMPLE_RATE_HZ as usize / 1000
}

/// What makes a stored take usable for this run: the audio-defining parts of its record.
struct TakeIdentity {
    voice_id: String,
    model_id: String,
    params: RenderParams,
}

impl TakeIdentity {
    /// Mirrors the model id `CosyVoiceBackend::load` records (`name (dir)`); a drift there only
    /// costs a re-render, never a wrong reuse.
    fn new(model: &ModelChoice, voice: &str, params: &RenderParams) -> anyhow::Result<Self> {
        let cfg = ModelConfig::from_dir(&model.dir)
            .with_context(|| format!("reading the model config in {}", model.dir.display()))?;
        Ok(Self {
            voice_id: voice.to_string(),
            model_id: format!("{} ({})", cfg.name, model.dir.display()),
            params: params.clone(),
        })
    }

    fn matches(&self, r: &TakeRecord) -> bool {
        r.voice_id == self.voice_id
            && r.model_id == self.model_id
            && r.nfe == self.params.nfe
            && r.precision == self.params.precision
            && r.min_len_rule == self.params.min_len_rule
    }
}

/// The store's view of the manuscript's segments.
fn stored_segments(book: &Manuscript) -> Vec<StoredSegment> {
    let mut out = Vec::new();
    for (chapter, ch) in book.chapters.iter().enumerate() {
        for s in &ch.segments {
            out.push(StoredSegment {
                id: s.id as u64,
                chapter: chapter as u32,
                ordinal: s.id as u32,
                text: s.text.clone(),
                span: (s.span.start.line as u32, s.span.start.column as u32),
                hash: s.hash,
                pause_after_ms: s.pause_after_ms,
            });
        }
    }
    out
}

/// Renders the manuscript; returns what was written.
pub fn render(opts: &RenderOptions) -> anyhow::Result<RenderReport> {
    let started = Instant::now();
    let model = ModelChoice::resolve(opts.model.as_deref())?;
    let voice = session::resolve_voice(opts.voice.as_deref(), &model)?;
    let signature = ModelSignature::from_model_dir(&model.dir)
        .with_context(|| format!("reading the model in {}", model.dir.display()))?;
    voice.check_model(&signature).with_context(|| format!("voice `{}`", voice.manifest.name))?;
    let tokenizer = session::tokenizer(&model)?;
    let book =
        Manuscript::load(&opts.manuscript, &ParseOptions::default().with_tokenizer(&tokenizer))
            .with_context(|| format!("reading {}", opts.manuscript.display()))?;
    let n_segments = book.segments().count();
    eprintln!(
        "lectern render: {} · voice {} · {n_segments} segments in {} chapters",
        model.describe(),
        voice.manifest.name,
        book.chapters.len()
    );
    let lead_in_samples = ms_to_samples(book.lead_in_ms);
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
        dry_run: opts.dry_run,
        files: Vec::new(),
        audio_s: 0.0,
        wall_s: 0.0,
    };
    if opts.dry_run {
        report.segments = planned_segments(&book);
        report.wall_s = started.elapsed().as_secs_f64();
        eprintln!("dry run: nothing rendered, nothing written");
        return Ok(report);
    }

    let identity = TakeIdentity::new(&model, &voice.manifest.name, &opts.params)?;
    let mut project = open_project(opts)?;
    if let Some(p) = project.as_mut() {
        p.sync_manuscript(&stored_segments(&book))
            .with_context(|| format!("recording the manuscript in {}", p.dir().display()))?;
        p.set_settings(&opts.params)?;
        report.project = Some(p.dir().to_path_buf());
    }
    let mut takes = match &project {
        Some(p) => reusable_takes(p, &identity)?,
        None => HashMap::new(),
    };
    let specs: Vec<SegmentSpec> = book
        .segments()
        .filter(|s| !takes.contains_key(&(s.id as u64)))
        .map(|s| SegmentSpec {
            id: s.id as u64,
            text: s.text.clone(),
            seed: opts.base_seed + s.id as u64,
        })
        .collect();
    report.reused = takes.len();
    report.rendered = specs.len();
    if let Some(p) = &project {
        eprintln!(
            "project {}: {} of {n_segments} segments reused, {} to render",
            p.dir().display(),
            report.reused,
            report.rendered
        );
    }

    if !specs.is_empty() {
        let backend = session::backend(
            &model,
            &voice,
            &opts.device,
            opts.params.precision,
            opts.flow_matmul,
        )?;
        let handle = Engine::spawn(backend, voice.manifest.name.clone(), opts.params.clone());
        handle.tx.send(Request::Enqueue(specs.clone())).context("engine stopped")?;
        // With a project the output is assembled from the store, so only keep samples without.
        let keep_samples = project.is_none();
        let result = collect_takes(&handle.rx, specs.len(), opts.progress, |take| {
            let audio = TakeAudio {
                tokens: take.record.tokens.len(),
                samples: if keep_samples { take.samples.to_vec() } else { Vec::new() },
                reused: false,
            };
            if let Some(p) = project.as_mut() {
                save_and_choose(p, take)?;
            }
            takes.insert(take.record.segment_id, audio);
            Ok(())
        });
        handle.shutdown();
        result?;
    }
    if let Some(p) = &project {
        // The output comes from the store's chosen takes, exactly what export would use.
        takes = chosen_audio(p, &takes)?;
    }

    report.segments = joined_segments(&book, &takes)?;
    report.files = write_outputs(opts, &book, &report.segments, &takes, lead_in_samples)?;
    let total: usize = report.files.iter().map(|f| f.1).sum();
    report.audio_s = total as f64 / f64::from(SAMPLE_RATE_HZ);
    report.wall_s = started.elapsed().as_secs_f64();
    Ok(report)
}

/// The segments as a dry run reports them: no takes yet.
fn planned_segments(book: &Manuscript) -> Vec<RenderedSegment> {
    let mut out = Vec::new();
    for (chapter, ch) in book.chapters.iter().enumerate() {
        for s in &ch.segments {
            out.push(RenderedSegment {
                id: s.id,
                chapter,
                tokens: 0,
                samples: 0,
                pause_samples: ms_to_samples(s.pause_after_ms),
                reused: false,
            });
        }
    }
    out
}

/// Opens the project the options name (none with `--no-project`).
fn open_project(opts: &RenderOptions) -> anyhow::Result<Option<Project>> {
    let dir = match &opts.project {
        ProjectChoice::Off => return Ok(None),
        ProjectChoice::Dir(d) => d.clone(),
        ProjectChoice::NextToManuscript => Project::dir_for_manuscript(&opts.manuscript),
    };
    let project =
        Project::open(&dir).with_context(|| format!("opening the project {}", dir.display()))?;
    let check = project.open_report();
    if !check.is_clean() {
        eprintln!(
            "project {}: {} take files missing (re-rendered), {} interrupted writes removed, \
             {} orphan files quarantined",
            dir.display(),
            check.missing_files.len(),
            check.temp_files_removed.len(),
            check.orphans_quarantined.len()
        );
    }
    Ok(Some(project))
}

/// Chosen takes that are usable for this run, by segment id (samples not loaded yet).
fn reusable_takes(p: &Project, identity: &TakeIdentity) -> anyhow::Result<HashMap<u64, TakeAudio>> {
    let needing: std::collections::HashSet<u64> =
        p.segments_needing_takes()?.iter().map(|s| s.id).collect();
    let mut out = HashMap::new();
    for s in p.segments()? {
        if needing.contains(&s.id) {
            continue;
        }
        let Some(info) = p.chosen_take(s.id)? else { continue };
        if info.status == TakeStatus::Ok && identity.matches(&info.record) {
            out.insert(
                s.id,
                TakeAudio { tokens: info.record.tokens.len(), samples: Vec::new(), reused: true },
            );
        }
    }
    Ok(out)
}

/// Saves a fresh take and makes it the segment's chosen take (render uses what it rendered).
fn save_and_choose(p: &mut Project, take: &Take) -> anyhow::Result<()> {
    let segment = take.record.segment_id;
    let id = p.save_take(take).with_context(|| {
        format!("saving the take of segment {segment} in {}", p.dir().display())
    })?;
    p.choose_take(segment, id)?;
    Ok(())
}

/// Loads every segment's chosen take from the store (checked against its audio hash).
fn chosen_audio(
    p: &Project,
    rendered: &HashMap<u64, TakeAudio>,
) -> anyhow::Result<HashMap<u64, TakeAudio>> {
    let mut out = HashMap::new();
    for s in p.segments()? {
        let info =
            p.chosen_take(s.id)?.with_context(|| format!("segment {} has no chosen take", s.id))?;
        let samples = p.load_samples(info.id)?;
        let reused = rendered.get(&s.id).is_none_or(|t| t.reused);
        out.insert(s.id, TakeAudio { tokens: info.record.tokens.len(), samples, reused });
    }
    Ok(out)
}

/// The output's segments in manuscript order; checks each take is exactly tokens × 960.
fn joined_segments(
    book: &Manuscript,
    takes: &HashMap<u64, TakeAudio>,
) -> anyhow::Result<Vec<RenderedSegment>> {
    let mut segments = Vec::new();
    for (chapter, ch) in book.chapters.iter().enumerate() {
        for s in &ch.segments {
            let take = takes
                .get(&(s.id as u64))
                .with_context(|| format!("no take for segment {}", s.id))?;
            if take.samples.len() != take.tokens * SAMPLES_PER_TOKEN {
                bail!(
                    "the take of segment {} has {} samples for {} tokens (expected {})",
                    s.id,
                    take.samples.len(),
                    take.tokens,
                    take.tokens * SAMPLES_PER_TOKEN
                );
            }
            segments.push(RenderedSegment {
                id: s.id,
                chapter,
                tokens: take.tokens,
                samples: take.samples.len(),
                pause_samples: ms_to_samples(s.pause_after_ms),
                reused: take.reused,
            });
        }
    }
    Ok(segments)
}

/// Waits for one take per segment, handing each to `on_take` as it arrives; fails on the first
/// failed segment (takes handed over before stay handed over).
fn collect_takes(
    rx: &std::sync::mpsc::Receiver<EngineEvent>,
    n_segments: usize,
    progress: bool,
    mut on_take: impl FnMut(&Take) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let bar = if progress { ProgressBar::new(n_segments as u64) } else { ProgressBar::hidden() };
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} segments · {msg} · ETA {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let started = Instant::now();
    let mut done = std::collections::HashSet::new();
    let mut audio_s = 0.0;
    while done.len() < n_segments {
        let event = match rx.recv_timeout(Duration::from_secs(3600)) {
            Ok(e) => e,
            Err(_) => bail!("the engine stopped before every segment was rendered"),
        };
        match event {
            EngineEvent::TakeReady(take) => {
                audio_s += take.samples.len() as f64 / f64::from(SAMPLE_RATE_HZ);
                if let Err(e) = on_take(&take) {
                    bar.abandon();
                    return Err(e);
                }
                done.insert(take.record.segment_id);
                let rtf = started.elapsed().as_secs_f64() / audio_s.max(1e-9);
                bar.set_message(format!("{audio_s:.1} s audio · RTF {rtf:.2}"));
                bar.set_position(done.len() as u64);
            }
            EngineEvent::SegmentState { id, state: SegmentState::Failed(why) } => {
                bar.abandon();
                bail!("segment {id} failed: {why}");
            }
            EngineEvent::Log(line) => bar.println(line),
            _ => {}
        }
    }
    bar.finish();
    Ok(())
}

/// Joins takes and pauses into one signal per output file and writes them atomically.
fn write_outputs(
    opts: &RenderOptions,
    book: &Manuscript,
    segments: &[RenderedSegment],
    takes: &HashMap<u64, TakeAudio>,
    lead_in_samples: usize,
) -> anyhow::Result<Vec<(PathBuf, usize)>> {
    let mut outputs: Vec<(PathBuf, Vec<f32>)> = Vec::new();
    if opts.split_chapters {
        for chapter in 0..book.chapters.len() {
            let members: Vec<&RenderedSegment> =
                segments.iter().filter(|s| s.chapter == chapter).collect();
            let lead = if chapter == 0 { lead_in_samples } else { 0 };
            outputs.push((chapter_path(&opts.out, chapter + 1), join(&members, takes, lead)));
        }
    } else {
        let all: Vec<&RenderedSegment> = segments.iter().collect();
        outputs.push((opts.out.clone(), join(&all, takes, lead_in_samples)));
    }
    let mut written = Vec::new();
    for (path, samples) in outputs {
        write_atomically(&path, &samples)?;
        written.push((path, samples.len()));
    }
    Ok(written)
}

/// `book.wav` → `book-01.wav`.
pub fn chapter_path(out: &Path, chapter: usize) -> PathBuf {
    let stem = out.file_stem().and_then(|s| s.to_str()).unwrap_or("chapter");
    let ext = out.extension().and_then(|s| s.to_str()).unwrap_or("wav");
    out.with_file_name(format!("{stem}-{chapter:02}.{ext}"))
}

/// Lead-in silence, then each take (faded at its edges) followed by its pause.
fn join(members: &[&RenderedSegment], takes: &HashMap<u64, TakeAudio>, lead_in: usize) -> Vec<f32> {
    let total = lead_in + members.iter().map(|s| s.samples + s.pause_samples).sum::<usize>();
    let mut out = Vec::with_capacity(total);
    out.resize(lead_in, 0.0);
    for s in members {
        let start = out.len();
        out.extend_from_slice(&takes[&(s.id as u64)].samples);
        fade_edges(&mut out[start..]);
        out.resize(out.len() + s.pause_samples, 0.0);
    }
    out
}

/// Linear fade-in and fade-out over [`JOIN_FADE_SAMPLES`] at the take's edges.
fn fade_edges(take: &mut [f32]) {
    let n = JOIN_FADE_SAMPLES.min(take.len() / 2);
    let len = take.len();
    for i in 0..n {
        let gain = i as f32 / n as f32;
        take[i] *= gain;
        take[len - 1 - i] *= gain;
    }
}

/// Writes `samples` to `path.partial`, then renames it over `path`.
fn write_atomically(path: &Path, samples: &[f32]) -> anyhow::Result<()> {
    let tmp = path.with_extension("partial.wav");
    let result = wav::write(&tmp, samples, WavFormat::F32)
        .with_context(|| format!("writing {}", tmp.display()))
        .and_then(|()| {
            std::fs::rename(&tmp, path).with_context(|| format!("renaming to {}", path.display()))
        });
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}
