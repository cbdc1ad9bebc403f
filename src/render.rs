//! `lectern render`: a whole manuscript to WAV without a terminal UI.
//!
//! Segments → engine (LM lanes, flow groups, vocoder) → takes in manuscript order, joined with
//! the manuscript's pauses. Each take is exactly `tokens × 960` samples; a short fade at each
//! join prevents clicks without changing any length, so the output is exactly
//! `lead-in + Σ (tokens × 960 + pause)` samples. Files are written to a temporary name and
//! renamed, so an interrupted render never leaves a file that looks complete.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use candle::Device;
use indicatif::{ProgressBar, ProgressStyle};

use crate::audio::wav::{self, WavFormat};
use crate::engine::protocol::{EngineEvent, RenderParams, Request, SegmentSpec, SegmentState};
use crate::engine::{ENGINE_VERSION, Engine};
use crate::model::config::SAMPLE_RATE_HZ;
use crate::session::{self, ModelChoice};
use crate::text::{Manuscript, ParseOptions};

/// Samples of the fade-in/out applied at each join (2 ms at 24 kHz).
const JOIN_FADE_SAMPLES: usize = 48;

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
    /// Segment k is sampled with seed `base_seed + k`.
    pub base_seed: u64,
    pub progress: bool,
}

/// One rendered segment.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RenderedSegment {
    pub id: usize,
    pub chapter: usize,
    pub tokens: usize,
    pub samples: usize,
    pub pause_samples: usize,
}

/// What a render produced.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RenderReport {
    pub model: String,
    pub bundled_tiny: bool,
    pub voice: String,
    pub engine_version: String,
    pub lead_in_samples: usize,
    pub segments: Vec<RenderedSegment>,
    /// Files written, with their lengths in samples.
    pub files: Vec<(PathBuf, usize)>,
    pub audio_s: f64,
    pub wall_s: f64,
}

fn ms_to_samples(ms: u32) -> usize {
    ms as usize * SAMPLE_RATE_HZ as usize / 1000
}

/// Renders the manuscript; returns what was written.
pub fn render(opts: &RenderOptions) -> anyhow::Result<RenderReport> {
    let started = Instant::now();
    let model = ModelChoice::resolve(opts.model.as_deref())?;
    let voice = session::resolve_voice(opts.voice.as_deref(), &model)?;
    let tokenizer = session::tokenizer(&model)?;
    let book =
        Manuscript::load(&opts.manuscript, &ParseOptions::default().with_tokenizer(&tokenizer))
            .with_context(|| format!("reading {}", opts.manuscript.display()))?;
    eprintln!("lectern render: {} · voice {}", model.describe(), voice.manifest.name);

    let backend = session::backend(&model, &voice, &opts.device, opts.params.precision)?;
    let specs: Vec<SegmentSpec> = book
        .segments()
        .map(|s| SegmentSpec {
            id: s.id as u64,
            text: s.text.clone(),
            seed: opts.base_seed + s.id as u64,
        })
        .collect();
    let handle = Engine::spawn(backend, voice.manifest.name.clone(), opts.params.clone());
    handle.tx.send(Request::Enqueue(specs.clone())).context("engine stopped")?;
    let takes = collect_takes(&handle.rx, specs.len(), opts.progress)?;
    handle.shutdown();

    let mut segments = Vec::new();
    for (chapter, ch) in book.chapters.iter().enumerate() {
        for s in &ch.segments {
            let samples = takes[&(s.id as u64)].len();
            segments.push(RenderedSegment {
                id: s.id,
                chapter,
                tokens: samples / crate::model::config::SAMPLES_PER_TOKEN,
                samples,
                pause_samples: ms_to_samples(s.pause_after_ms),
            });
        }
    }
    let lead_in_samples = ms_to_samples(book.lead_in_ms);
    let files = write_outputs(opts, &book, &segments, &takes, lead_in_samples)?;
    let total: usize = files.iter().map(|f| f.1).sum();
    Ok(RenderReport {
        model: model.describe(),
        bundled_tiny: model.bundled_tiny,
        voice: voice.manifest.name.clone(),
        engine_version: ENGINE_VERSION.to_string(),
        lead_in_samples,
        segments,
        files,
        audio_s: total as f64 / f64::from(SAMPLE_RATE_HZ),
        wall_s: started.elapsed().as_secs_f64(),
    })
}

/// Waits for one take per segment; fails on the first failed segment.
fn collect_takes(
    rx: &std::sync::mpsc::Receiver<EngineEvent>,
    n_segments: usize,
    progress: bool,
) -> anyhow::Result<HashMap<u64, Vec<f32>>> {
    let bar = if progress { ProgressBar::new(n_segments as u64) } else { ProgressBar::hidden() };
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} segments · {msg} · ETA {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let started = Instant::now();
    let mut takes = HashMap::new();
    let mut audio_s = 0.0;
    while takes.len() < n_segments {
        let event = match rx.recv_timeout(Duration::from_secs(3600)) {
            Ok(e) => e,
            Err(_) => bail!("the engine stopped before every segment was rendered"),
        };
        match event {
            EngineEvent::TakeReady(take) => {
                audio_s += take.samples.len() as f64 / f64::from(SAMPLE_RATE_HZ);
                takes.insert(take.record.segment_id, take.samples.to_vec());
                let rtf = started.elapsed().as_secs_f64() / audio_s.max(1e-9);
                bar.set_message(format!("{audio_s:.1} s audio · RTF {rtf:.2}"));
                bar.set_position(takes.len() as u64);
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
    Ok(takes)
}

/// Joins takes and pauses into one signal per output file and writes them atomically.
fn write_outputs(
    opts: &RenderOptions,
    book: &Manuscript,
    segments: &[RenderedSegment],
    takes: &HashMap<u64, Vec<f32>>,
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
fn join(members: &[&RenderedSegment], takes: &HashMap<u64, Vec<f32>>, lead_in: usize) -> Vec<f32> {
    let total = lead_in + members.iter().map(|s| s.samples + s.pause_samples).sum::<usize>();
    let mut out = Vec::with_capacity(total);
    out.resize(lead_in, 0.0);
    for s in members {
        let start = out.len();
        out.extend_from_slice(&takes[&(s.id as u64)]);
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
