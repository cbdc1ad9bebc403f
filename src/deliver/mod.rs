//! Delivery: what a retailer or a listener's player takes, mastered from the 24 kHz master.
//!
//! `export --preset acx` writes one MP3 per chapter (44.1 kHz mono, 192 kbps CBR, ID3 tags),
//! chapters longer than [`DeliveryOptions::max_file_s`] split at segment boundaries, opening and
//! closing credits as their own files, an optional retail sample; `--format m4b` writes one
//! AAC file with chapter marks (see [`m4b`]). Each track is mastered by [`mastering`], encoded,
//! then decoded again and measured ([`check`]): if the encoder pushed a peak over ACX's limit
//! the limiter's ceiling is lowered by the overshoot and the track encoded again, so the figures
//! a narrator uploads are the figures measured.
//!
//! Nothing the length of a track is held in memory: the mastering streams (takes read one at
//! a time, passes over them, the samples fed to LAME or to ffmpeg's input as they come; see
//! the `stream` module) and the check decodes as it measures, with the bytes and figures the
//! whole-buffer pipeline gave.
//!
//! Deterministic: the same project and options give the same bytes (no clocks, seeded noise,
//! synchronous resampling, LAME without its timestamped info frame).

pub mod captions;
pub mod check;
pub mod credits;
pub mod ffmpeg;
pub mod m4b;
pub mod mastering;
pub mod mp3;
mod options;
pub mod preset;
pub mod read_along;
mod stream;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use lectern_engine::protocol::SegmentId;
use serde::Serialize;

use crate::store::export::{ChapterPlan, Piece, plan, write_atomically};
use crate::store::{Project, SAMPLE_RATE_HZ, SegmentRef, StoreError};
use check::{FileCheck, acx};
use mastering::{MasteringTargets, RoomTone};
pub use options::{
    BookMeta, DeliveryFormat, DeliveryOptions, MetaFlags, Publication, RoomToneSource, SampleSpan,
    SampleStart,
};

/// Errors of a delivery export; nothing is left half-written (files are renamed into place).
#[derive(Debug, thiserror::Error)]
pub enum DeliverError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("{0}")]
    Invalid(String),
    #[error("{path}: {detail}", path = .path.display())]
    File { path: PathBuf, detail: String },
    #[error("{0}")]
    Audio(String),
    #[error(
        "{file}: still fails after mastering ({detail}); nothing is wrong with the takes' files: \
         report this with the figures"
    )]
    Mastering { file: String, detail: String },
}

pub type Result<T> = std::result::Result<T, DeliverError>;

/// Adds the rules across files (channels, the book's length) to each file's check; with
/// [`DeliveryOptions::enforce_acx`], a broken one is an error that names it (no mastering can
/// fix a book that is too short).
fn apply_book_rules(files: &mut [DeliveredFile], opts: &DeliveryOptions) -> Result<()> {
    let mut checks: Vec<FileCheck> = files.iter().map(|f| f.check.clone()).collect();
    let before: Vec<usize> = checks.iter().map(|c| c.failures.len()).collect();
    check::book_failures(&mut checks, &opts.rules);
    let across: Vec<String> = checks
        .first()
        .map(|c| c.failures[before[0]..].iter().map(|f| f.detail.clone()).collect())
        .unwrap_or_default();
    for (f, c) in files.iter_mut().zip(checks) {
        f.check = c;
    }
    if opts.enforce_acx && !across.is_empty() {
        return Err(DeliverError::Invalid(format!(
            "the delivery breaks {} rules: {}",
            opts.rules.store,
            across.join("; ")
        )));
    }
    Ok(())
}

/// The names of the voices that speak the book's chosen takes, in the order they first speak
/// (for the disclosure and the spoken credits' `{voice}`).
pub fn book_voices(project: &Project, allow_stale: bool) -> Result<Vec<String>> {
    let chapters = plan(project, allow_stale)?.chapters;
    Ok(crate::store::export::voices_of(project, &chapters)?)
}

impl DeliveryOptions {
    /// These options with the disclosure's voices read from the takes the export plans
    /// (unless the caller named them), so no delivered file leaves without its voice.
    fn with_voices_of(&self, project: &Project) -> Result<Self> {
        let mut opts = self.clone();
        if opts.meta.disclosure.voices.is_empty() {
            opts.meta.disclosure.voices = book_voices(project, opts.allow_stale)?;
        }
        Ok(opts)
    }
}

/// Default room-tone level, dB RMS: well under ACX's −60 dB noise floor, well over silence.
pub const DEFAULT_ROOM_TONE_DB: f64 = -70.0;
/// Seed of the room-tone noise (fixed: the same export twice is the same bytes).
pub const ROOM_TONE_SEED: u64 = 0x001E_C7E2;
// ACX's figures; [`MasteringTargets::acx`] holds the same (a test checks), and the pipeline
// reads them from [`DeliveryOptions::targets`].
/// Room tone at the head and the tail of each file, seconds (ACX: 0.5–1 and 1–5).
pub const HEAD_S: f64 = 0.75;
pub const TAIL_S: f64 = 2.5;
/// RMS the mastering aims at, dB (the middle of ACX's −23…−18).
pub const TARGET_RMS_DB: f64 = -20.0;
/// The limiter's first ceiling, dBFS: under ACX's −3 dB with room for the encoder's overshoot.
pub const FIRST_CEILING_DB: f64 = -4.0;
/// Highest true peak the mastering accepts after encoding, dBTP.
pub const TRUE_PEAK_MAX_DB: f64 = -3.0;
/// Most gain-and-limit rounds of [`master`].
const MASTERING_ROUNDS: usize = 12;
/// Encodes tried per track before giving up.
const MASTERING_ATTEMPTS: usize = 5;

/// What is heard in a delivered file, in order, on that file's own timeline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HeardSpan {
    /// First and one-past-last 44.1 kHz sample of the span's voice in this file (the head
    /// room tone, earlier tracks and credits of the same file counted); equal for a take
    /// whose voice trimmed to nothing (silence).
    pub start: u64,
    pub end: u64,
    pub what: Heard,
}

/// What a [`HeardSpan`] holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum Heard {
    /// A take of a segment: its id, 1-based chapter, and the segment's text as the store has it.
    Segment { id: SegmentId, chapter: u32, text: String },
    /// A credits recording (opening/closing): its title, and its text when Lectern spoke it.
    Credits { title: String, text: Option<String> },
}

impl HeardSpan {
    /// The span moved `by` samples later (a track placed after others in one file).
    fn shifted(mut self, by: u64) -> Self {
        self.start += by;
        self.end += by;
        self
    }
}

/// The segment each chosen take is of, by take id: the segment's id, 1-based chapter and text
/// as the store has them. From the plan, not the take's record: a record names the engine's
/// segment key, which is not the store's segment id.
type SegmentTexts = HashMap<lectern_engine::protocol::TakeId, (SegmentId, u32, String)>;

/// [`SegmentTexts`] of the export's chapters: the k-th take of a chapter is of its k-th
/// segment.
fn segment_texts(project: &Project, chapters: &[ChapterPlan]) -> Result<SegmentTexts> {
    let stored: HashMap<SegmentId, (u32, String)> =
        project.segments()?.into_iter().map(|s| (s.id, (s.chapter + 1, s.text))).collect();
    let mut texts = SegmentTexts::new();
    for ch in chapters {
        let takes = ch.pieces.iter().filter_map(|p| match p {
            Piece::Take(t) => Some(t.id),
            Piece::Silence(_) => None,
        });
        for (take, id) in takes.zip(&ch.segments) {
            let (chapter, text) = stored.get(id).cloned().unwrap_or_default();
            texts.insert(take, (*id, chapter, text));
        }
    }
    Ok(texts)
}

/// One delivered file.
#[derive(Debug, Clone, Serialize)]
pub struct DeliveredFile {
    pub path: PathBuf,
    pub title: String,
    /// Position in reading order (0 for the retail sample).
    pub track: u32,
    /// Samples at 44.1 kHz before encoding.
    pub samples: u64,
    /// Limiter ceiling of the encode that passed, dBFS.
    pub ceiling_db: f64,
    /// Chapter marks inside the file: (title, start seconds).
    pub chapters: Vec<(String, f64)>,
    /// What is heard where in the file, in order.
    pub spans: Vec<HeardSpan>,
    /// The figures measured on the encoded file.
    pub check: FileCheck,
}

#[derive(Debug, Clone, Serialize)]
pub struct DeliveryReport {
    pub files: Vec<DeliveredFile>,
    pub stale: Vec<SegmentRef>,
}

/// Where a track's audio comes from.
enum Source<'a> {
    /// Takes and pauses of the project (a chapter, part of one, or the sample's span).
    Pieces(Vec<&'a Piece>),
    /// A credits recording, with its text when Lectern spoke it.
    Recording { path: PathBuf, text: Option<String> },
}

struct Track<'a> {
    title: String,
    /// Base of the file name (no number, no extension).
    slug: String,
    source: Source<'a>,
}

/// Exports the project for delivery; see the module docs.
pub fn export(project: &Project, opts: &DeliveryOptions) -> Result<DeliveryReport> {
    check_options(opts)?;
    let opts = &opts.with_voices_of(project)?;
    let export_plan = plan(project, opts.allow_stale)?;
    let room_tone = load_room_tone(&opts.room_tone, opts.targets.rate_hz)?;
    let texts = segment_texts(project, &export_plan.chapters)?;
    let ctx = Ctx { opts, room_tone: &room_tone, texts: &texts };
    std::fs::create_dir_all(&opts.out_dir).map_err(|e| DeliverError::File {
        path: opts.out_dir.clone(),
        detail: format!("creating the output directory: {e}"),
    })?;
    let content_max = content_max_samples(opts.max_file_s, &opts.targets)?;
    let mut tracks = Vec::new();
    if let Some(p) = &opts.opening_credits {
        tracks.push(recording_track("Opening Credits", p, &opts.opening_credits_text));
    }
    for (position, ch) in export_plan.chapters.iter().enumerate() {
        let number = position + 1;
        let parts = split_pieces(&ch.pieces, content_max, number)?;
        let n = parts.len();
        for (k, part) in parts.into_iter().enumerate() {
            let base =
                if ch.title.is_empty() { format!("Chapter {number}") } else { ch.title.clone() };
            let title = if n > 1 { format!("{base} (part {})", k + 1) } else { base };
            tracks.push(Track { slug: slug(&title), title, source: Source::Pieces(part) });
        }
    }
    if let Some(p) = &opts.closing_credits {
        tracks.push(recording_track("Closing Credits", p, &opts.closing_credits_text));
    }
    let mut files = match opts.format {
        DeliveryFormat::Mp3 => write_mp3s(&tracks, &ctx)?,
        DeliveryFormat::M4b => vec![write_m4b(&tracks, &ctx)?],
    };
    if let Some(span) = &opts.sample {
        let track = Track {
            title: "Retail Sample".into(),
            slug: "sample".into(),
            source: Source::Pieces(sample_pieces(&export_plan.chapters, span, &opts.targets)?),
        };
        let path = opts.out_dir.join("sample.mp3");
        files.push(write_mp3(&track, 0, 0, &path, &ctx)?);
    }
    apply_book_rules(&mut files, opts)?;
    if opts.enforce_acx {
        let failing: Vec<String> = files
            .iter()
            .flat_map(|f| {
                f.check.failures.iter().map(move |x| format!("{}: {}", f.path.display(), x.detail))
            })
            .collect();
        if !failing.is_empty() {
            return Err(DeliverError::Mastering {
                file: failing.join("; "),
                detail: format!("{} rules", opts.rules.store),
            });
        }
    }
    Ok(DeliveryReport { files, stale: export_plan.stale })
}

fn check_options(opts: &DeliveryOptions) -> Result<()> {
    if let RoomToneSource::Noise { level_db } = opts.room_tone {
        if !(level_db > -90.0 && level_db < acx::NOISE_FLOOR_MAX_DB) {
            return Err(DeliverError::Invalid(format!(
                "room tone level {level_db} dB: use a level under ACX's {} dB noise floor and over −90 dB (e.g. {DEFAULT_ROOM_TONE_DB})",
                acx::NOISE_FLOOR_MAX_DB
            )));
        }
    }
    for p in [&opts.opening_credits, &opts.closing_credits].into_iter().flatten() {
        if !p.is_file() {
            return Err(DeliverError::File {
                path: p.clone(),
                detail: "no such credits recording".into(),
            });
        }
    }
    load_cover(&opts.meta)?;
    if let Some(span) = &opts.sample {
        let (head_s, tail_s) = (opts.targets.head_s, opts.targets.tail_s);
        if !(span.length_s > head_s + tail_s && span.length_s <= acx::SAMPLE_MAX_S) {
            return Err(DeliverError::Invalid(format!(
                "a retail sample of {}: ACX takes at most {}, and it must be longer than its \
                 {head_s} s head and {tail_s} s tail of room tone",
                clock(span.length_s),
                clock(acx::SAMPLE_MAX_S)
            )));
        }
    }
    if opts.sample.is_some() && opts.format != DeliveryFormat::Mp3 {
        return Err(DeliverError::Invalid(
            "--sample writes an MP3 retail sample: use it with --format mp3 or --preset acx".into(),
        ));
    }
    Ok(())
}

/// The cover image's bytes and type (`image/jpeg` or `image/png`, by its signature).
fn load_cover(meta: &BookMeta) -> Result<Option<mp3::Picture>> {
    let Some(path) = &meta.cover else { return Ok(None) };
    let picture = mp3::Picture::read(path, "the cover image")
        .map_err(|e| DeliverError::File { path: path.clone(), detail: e.to_string() })?;
    Ok(Some(picture))
}

fn recording_track<'a>(title: &str, path: &Path, text: &Option<String>) -> Track<'a> {
    Track {
        title: title.into(),
        slug: slug(title),
        source: Source::Recording { path: path.to_path_buf(), text: text.clone() },
    }
}

/// Most 24 kHz samples of takes and pauses in a file of `max_s` seconds with its head and tail.
fn content_max_samples(max_s: f64, targets: &MasteringTargets) -> Result<u64> {
    let content_s = max_s - targets.head_s - targets.tail_s;
    if content_s <= 0.0 {
        return Err(DeliverError::Invalid(format!(
            "a file of {max_s} s cannot hold its room tone"
        )));
    }
    Ok((content_s * f64::from(SAMPLE_RATE_HZ)) as u64)
}

/// Splits a chapter's pieces into parts of at most `max` samples, at take boundaries (a pause
/// goes with the take before it). A single take longer than `max` is an error.
fn split_pieces(pieces: &[Piece], max: u64, chapter: usize) -> Result<Vec<Vec<&Piece>>> {
    let mut parts: Vec<Vec<&Piece>> = vec![Vec::new()];
    let mut len = 0u64;
    for p in pieces {
        let is_take = matches!(p, Piece::Take(_));
        let current = parts.last().map_or(0, Vec::len);
        if is_take && current > 0 && len + p.len() > max {
            parts.push(Vec::new());
            len = 0;
        }
        if is_take && p.len() > max {
            return Err(DeliverError::Invalid(format!(
                "chapter {chapter}: one take is longer than a whole file may be"
            )));
        }
        len += p.len();
        if let Some(part) = parts.last_mut() {
            part.push(p);
        }
    }
    Ok(parts)
}

/// `m:ss` (or `h:mm:ss`) of whole seconds.
fn clock(seconds: f64) -> String {
    let s = seconds.round() as u64;
    if s >= 3600 {
        format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
    } else {
        format!("{}:{:02}", s / 60, s % 60)
    }
}

/// The retail sample's pieces: from the take where `span` starts, the whole takes (with the
/// pauses between them) that fit its length, across chapter ends if it reaches them.
fn sample_pieces<'a>(
    chapters: &'a [ChapterPlan],
    span: &SampleSpan,
    targets: &MasteringTargets,
) -> Result<Vec<&'a Piece>> {
    let all: Vec<&Piece> = chapters.iter().flat_map(|c| c.pieces.iter()).collect();
    let start = sample_start(chapters, &all, span.start)?;
    let max = content_max_samples(span.length_s, targets)?;
    let mut out: Vec<&Piece> = Vec::new();
    let mut len = 0u64;
    for p in &all[start..] {
        let is_take = matches!(p, Piece::Take(_));
        if is_take && len + p.len() > max {
            break;
        }
        len += p.len();
        out.push(p);
    }
    if !out.iter().any(|p| matches!(p, Piece::Take(_))) {
        return Err(DeliverError::Invalid(format!(
            "the retail sample's first segment is longer than the sample ({}) may be",
            clock(span.length_s)
        )));
    }
    Ok(out)
}

/// Index into `all` (the book's pieces in reading order) of the take where a sample starts.
fn sample_start(chapters: &[ChapterPlan], all: &[&Piece], start: SampleStart) -> Result<usize> {
    let takes = |c: &ChapterPlan| c.pieces.iter().filter(|p| matches!(p, Piece::Take(_))).count();
    match start {
        SampleStart::Segment { chapter, segment } => {
            let count = chapters.len();
            let index = chapter.checked_sub(1).map(|i| i as usize).filter(|&i| i < count);
            let Some(index) = index else {
                return Err(DeliverError::Invalid(format!(
                    "retail sample: the manuscript has no chapter {chapter} (it has {count}, \
                     numbered from 1)"
                )));
            };
            let in_chapter = takes(&chapters[index]);
            if segment == 0 || segment as usize > in_chapter {
                return Err(DeliverError::Invalid(format!(
                    "retail sample: chapter {chapter} has no segment {segment} (it has \
                     {in_chapter}, numbered from 1)"
                )));
            }
            let before: usize = chapters[..index].iter().map(takes).sum();
            Ok(nth_take(all, before + segment as usize - 1))
        }
        SampleStart::Time { seconds } => {
            let at = (seconds.max(0.0) * f64::from(SAMPLE_RATE_HZ)) as u64;
            let mut end = 0u64;
            for (i, p) in all.iter().enumerate() {
                end += p.len();
                if matches!(p, Piece::Take(_)) && end > at {
                    return Ok(i);
                }
            }
            Err(DeliverError::Invalid(format!(
                "retail sample: {} is past the book's last segment (the master is {} long)",
                clock(seconds),
                clock(end as f64 / f64::from(SAMPLE_RATE_HZ))
            )))
        }
    }
}

/// Index of the `n`-th (0-based) take among `all`.
fn nth_take(all: &[&Piece], n: usize) -> usize {
    all.iter()
        .enumerate()
        .filter(|(_, p)| matches!(p, Piece::Take(_)))
        .nth(n)
        .map_or(all.len(), |(i, _)| i)
}

/// A short ASCII file-name base: lower-case words joined by '-', at most 40 characters.
#[must_use]
pub fn slug(title: &str) -> String {
    let words: Vec<String> = title
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| w.chars().filter(char::is_ascii_alphanumeric).collect::<String>().to_lowercase())
        .filter(|w| !w.is_empty())
        .collect();
    let mut s = String::new();
    for w in words {
        if s.len() + w.len() + 1 > 40 {
            break;
        }
        if !s.is_empty() {
            s.push('-');
        }
        s.push_str(&w);
    }
    if s.is_empty() { "track".into() } else { s }
}

fn load_room_tone(src: &RoomToneSource, rate_hz: u32) -> Result<RoomTone> {
    match src {
        RoomToneSource::Noise { level_db } => {
            Ok(RoomTone::Noise { level_db: *level_db, seed: ROOM_TONE_SEED })
        }
        RoomToneSource::Recording(path) => {
            let tone = read_recording(path, rate_hz)?;
            let file_err = |detail: String| DeliverError::File { path: path.clone(), detail };
            if tone.len() < rate_hz as usize / 2 {
                return Err(file_err("room tone shorter than 0.5 s".into()));
            }
            let level = mastering::rms_db(&tone);
            if level > acx::NOISE_FLOOR_MAX_DB {
                return Err(file_err(format!(
                    "room tone at {level:.1} dB RMS is over ACX's {} dB noise floor",
                    acx::NOISE_FLOOR_MAX_DB
                )));
            }
            if check::noise_floor_db(&tone, rate_hz) < check::DIGITAL_SILENCE_DB {
                return Err(file_err("the room-tone recording holds digital silence".into()));
            }
            Ok(RoomTone::Recording(tone))
        }
    }
}

/// A WAV recording as mono at `rate_hz` (the delivery rate).
fn read_recording(path: &Path, rate_hz: u32) -> Result<Vec<f32>> {
    let file_err = |detail: String| DeliverError::File { path: path.to_path_buf(), detail };
    let d = crate::audio::wav::read_any(path).map_err(|e| file_err(e.to_string()))?;
    let ch = usize::from(d.channels.max(1));
    let mono: Vec<f32> = d.samples.chunks(ch).map(|f| f.iter().sum::<f32>() / ch as f32).collect();
    mastering::resample(&mono, d.sample_rate_hz, rate_hz).map_err(file_err)
}

/// Where a block of mastered samples goes (the MP3 encoder, ffmpeg's input, a meter).
pub type Sink<'s> = dyn FnMut(&[f32]) -> Result<()> + 's;

/// What every track of one export shares.
struct Ctx<'a> {
    opts: &'a DeliveryOptions,
    room_tone: &'a RoomTone,
    texts: &'a SegmentTexts,
}

/// The delivery-rate sample where 24 kHz sample `n` of a track's voice lands: the resampler
/// gives `ceil(n · rate / 24 000)` samples for `n` and no delay, so this is where the
/// resampled voice of the first `n` samples ends.
fn at_delivery_rate(n: u64, rate_hz: u32) -> u64 {
    (n * u64::from(rate_hz)).div_ceil(u64::from(SAMPLE_RATE_HZ))
}

/// The span of take `take`'s segment (voiced 24 kHz samples `start..end` of a track's voice).
fn segment_span(
    take: &crate::review::TakeInfo,
    start: u64,
    end: u64,
    texts: &SegmentTexts,
    rate: u32,
) -> HeardSpan {
    // Outside an export (the workstation's chapter check) no spans are read.
    let (id, chapter, text) =
        texts.get(&take.id).cloned().unwrap_or((take.record.segment_id, 0, String::new()));
    HeardSpan {
        start: at_delivery_rate(start, rate),
        end: at_delivery_rate(end, rate),
        what: Heard::Segment { id, chapter, text },
    }
}

/// A chapter's ACX check as the workstation shows it: its chosen takes (each with the pause
/// after it, 24 kHz samples) mastered exactly as `export --preset acx` masters the chapter's
/// file (trimmed takes, 44.1 kHz, RMS −20 dB, limiter, default room tone, head and tail), then
/// measured as it streams. The MP3 encoding is not run, so the bitrate is not checked and the
/// peaks are the limiter's (the export re-checks them after encoding).
pub fn chapter_check(
    takes: &[(crate::review::TakeInfo, u64)],
    chapter: usize,
) -> Result<check::FileCheck> {
    let pieces: Vec<Piece> = takes
        .iter()
        .flat_map(|(t, pause)| [Piece::Take(Box::new(t.clone())), Piece::Silence(*pause)])
        .collect();
    let track = Track {
        title: format!("Chapter {chapter}"),
        slug: String::new(),
        source: Source::Pieces(pieces.iter().collect()),
    };
    let opts = DeliveryOptions::default();
    let rate = opts.targets.rate_hz;
    let room_tone = load_room_tone(&RoomToneSource::default(), rate)?;
    let ctx = Ctx { opts: &opts, room_tone: &room_tone, texts: &SegmentTexts::new() };
    let plan = stream::plan(&track, &ctx, opts.targets.first_ceiling_db, chapter as u64)?;
    let mut meter = check::LevelMeter::new(rate).map_err(DeliverError::Audio)?;
    stream::master(&track, &ctx, &plan, &mut |x| meter.add(x).map_err(DeliverError::Audio))?;
    let levels = meter.finish().map_err(DeliverError::Audio)?;
    Ok(check::check_levels(&track.title, &levels, rate))
}

fn number_width(total: usize) -> usize {
    total.to_string().len().max(2)
}

fn write_mp3s(tracks: &[Track], ctx: &Ctx) -> Result<Vec<DeliveredFile>> {
    let opts = ctx.opts;
    let total = tracks.len() as u32;
    let width = number_width(tracks.len());
    let mut files = Vec::new();
    if opts.split_chapters {
        for (i, t) in tracks.iter().enumerate() {
            let n = i as u32 + 1;
            let path = opts.out_dir.join(format!("{n:0width$}-{}.mp3", t.slug));
            files.push(write_mp3(t, n, total, &path, ctx)?);
        }
    } else {
        // One MP3 for the whole book: the tracks' mastered audio joined.
        let (audio, plans) = book_audio(tracks, ctx)?;
        let name =
            if opts.meta.title.is_empty() { "book".to_string() } else { slug(&opts.meta.title) };
        let path = opts.out_dir.join(format!("{name}.mp3"));
        let title = &opts.meta.title;
        let mut feed = |sink: &mut Sink| stream_book(tracks, &plans, ctx, sink);
        files.push(encode_checked(&audio, title, 1, 1, &path, opts, &mut feed)?);
    }
    Ok(files)
}

/// Masters, encodes and checks one track, lowering the limiter's ceiling until the encoded
/// file's peaks pass.
fn write_mp3(t: &Track, n: u32, total: u32, path: &Path, ctx: &Ctx) -> Result<DeliveredFile> {
    let targets = &ctx.opts.targets;
    let mut ceiling_db = targets.first_ceiling_db;
    let mut last = String::new();
    for _ in 0..MASTERING_ATTEMPTS {
        let plan = stream::plan(t, ctx, ceiling_db, u64::from(n))?;
        let audio = TrackAudio {
            title: t.title.clone(),
            total_samples: plan.total,
            ceiling_db,
            chapters: vec![(t.title.clone(), 0.0)],
            spans: plan.spans.clone(),
        };
        let mut feed = |sink: &mut Sink| stream::master(t, ctx, &plan, sink);
        let file = encode_checked(&audio, &t.title, n, total, path, ctx.opts, &mut feed)?;
        let overshoot = (file.check.levels.peak_db - targets.peak_max_db)
            .max(file.check.levels.true_peak_db - targets.true_peak_max_db);
        if overshoot <= 0.0 {
            return Ok(file);
        }
        last = format!(
            "peak {:.2} dB, true peak {:.2} dBTP at ceiling {ceiling_db:.2} dB",
            file.check.levels.peak_db, file.check.levels.true_peak_db
        );
        ceiling_db -= overshoot + 0.25;
    }
    let _ = std::fs::remove_file(path);
    Err(DeliverError::Mastering { file: path.display().to_string(), detail: last })
}

/// What a mastered stretch of audio is: its length, chapter marks and spans (the samples
/// themselves stream to the encoder).
pub struct TrackAudio {
    pub title: String,
    /// Samples at the delivery rate, head and tail included.
    pub total_samples: u64,
    pub ceiling_db: f64,
    /// (title, start seconds) of each chapter in it.
    pub chapters: Vec<(String, f64)>,
    /// What is heard where, on this audio's timeline.
    pub spans: Vec<HeardSpan>,
}

/// All tracks planned for one file (one-file MP3, M4B): chapter marks at each track's start,
/// spans moved to where their track starts. Each track keeps its own head and tail room tone,
/// so a chapter starts after a breath.
fn book_audio(tracks: &[Track], ctx: &Ctx) -> Result<(TrackAudio, Vec<stream::MasterPlan>)> {
    let targets = &ctx.opts.targets;
    // A lower first ceiling than per-file MP3s: a joined file has one chance to pass.
    let ceiling_db = targets.first_ceiling_db - 0.5;
    let rate = f64::from(targets.rate_hz);
    let mut at = 0u64;
    let mut chapters = Vec::new();
    let mut spans = Vec::new();
    let mut plans = Vec::new();
    for (i, t) in tracks.iter().enumerate() {
        chapters.push((t.title.clone(), at as f64 / rate));
        let plan = stream::plan(t, ctx, ceiling_db, i as u64 + 1)?;
        spans.extend(plan.spans.iter().map(|s| s.clone().shifted(at)));
        at += plan.total;
        plans.push(plan);
    }
    let audio = TrackAudio { title: String::new(), total_samples: at, ceiling_db, chapters, spans };
    Ok((audio, plans))
}

/// The mastered tracks of `plans`, one after the other, to `sink`.
fn stream_book(
    tracks: &[Track],
    plans: &[stream::MasterPlan],
    ctx: &Ctx,
    sink: &mut Sink,
) -> Result<()> {
    for (t, plan) in tracks.iter().zip(plans) {
        stream::master(t, ctx, plan, sink)?;
    }
    Ok(())
}

/// The whole book as one M4B: planned, then mastered track by track into ffmpeg's input.
fn write_m4b(tracks: &[Track], ctx: &Ctx) -> Result<DeliveredFile> {
    let (audio, plans) = book_audio(tracks, ctx)?;
    let mut feed = |sink: &mut Sink| stream_book(tracks, &plans, ctx, sink);
    m4b::write(&audio, ctx.opts, &mut feed)
}

/// Streams the mastered audio `feed` gives into an MP3 at `path` (atomically: written under
/// a temporary name, renamed when complete), after `tag`.
fn write_mp3_file(
    path: &Path,
    tag: &[u8],
    targets: &MasteringTargets,
    feed: &mut dyn FnMut(&mut Sink) -> Result<()>,
) -> Result<()> {
    use std::io::Write;
    // The store's writer speaks `StoreError`; the pipeline's own error is carried past it.
    let mut failure = None;
    let written = write_atomically(path, |tmp| {
        let io = |e| StoreError::io("writing delivery file", tmp, e);
        let mut file = std::io::BufWriter::new(std::fs::File::create(tmp).map_err(io)?);
        file.write_all(tag).map_err(io)?;
        let mut frames = Vec::new();
        let encoded = (|| {
            let mut enc = mp3::Encoder::new(targets.rate_hz, targets.mp3_kbps)
                .map_err(DeliverError::Audio)?;
            let mut pcm = Vec::new();
            feed(&mut |x| {
                pcm.clear();
                pcm.extend(x.iter().map(|&s| mp3::sample_to_i16(s)));
                enc.push(&pcm, &mut frames).map_err(DeliverError::Audio)?;
                // A full disk is named as the store names it for every export.
                file.write_all(&frames).map_err(io)?;
                frames.clear();
                Ok(())
            })?;
            enc.finish(&mut frames).map_err(DeliverError::Audio)
        })();
        if let Err(e) = encoded {
            failure = Some(e);
            return Err(StoreError::Export("the delivery file was not written".into()));
        }
        file.write_all(&frames).map_err(io)?;
        file.flush().map_err(io)
    });
    match failure {
        Some(e) => Err(e),
        None => Ok(written?),
    }
}

/// Encodes the audio `feed` gives (which `audio` describes) as a tagged MP3 at `path`
/// (atomically) and checks the written file.
fn encode_checked(
    audio: &TrackAudio,
    title: &str,
    n: u32,
    total: u32,
    path: &Path,
    opts: &DeliveryOptions,
    feed: &mut dyn FnMut(&mut Sink) -> Result<()>,
) -> Result<DeliveredFile> {
    let tags = mp3::Tags {
        book: opts.meta.title.clone(),
        author: opts.meta.author.clone(),
        narrator: opts.meta.narrator.clone(),
        title: title.to_string(),
        track: n,
        total_tracks: total,
        cover: load_cover(&opts.meta)?,
        publication: opts.meta.publication.clone(),
        disclosure: opts.meta.disclosure.clone(),
    };
    let tag = mp3::id3_tag(&tags).map_err(DeliverError::Audio)?;
    write_mp3_file(path, &tag, &opts.targets, feed)?;
    let check = check::check_file_with(path, &opts.rules).map_err(DeliverError::Audio)?;
    Ok(DeliveredFile {
        path: path.to_path_buf(),
        title: title.to_string(),
        track: n,
        samples: audio.total_samples,
        ceiling_db: audio.ceiling_db,
        chapters: audio.chapters.clone(),
        spans: audio.spans.clone(),
        check,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn publication_fields_come_from_flags_then_the_book_then_the_config() {
        let info = lectern_text::BookInfo {
            publisher: Some("Book Press".into()),
            isbn: Some("9780306406157".into()),
            date: Some("2024".into()),
            ..Default::default()
        };
        let config = crate::config::BookDefaults {
            publisher: Some("Config Press".into()),
            rights: Some("© Config".into()),
            ..Default::default()
        };
        let flags = MetaFlags { date: Some(" 2026 ".into()), ..MetaFlags::default() };
        let p = Publication::resolve(&flags, &info, &config);
        assert_eq!(p.publisher, "Book Press", "the book beats the config");
        assert_eq!(p.rights, "© Config", "the config fills what the book lacks");
        assert_eq!(p.date, "2026", "a flag wins, trimmed");
        assert_eq!(p.isbn, "9780306406157");
        assert_eq!(p.description, "");
    }

    #[test]
    fn slugs_are_short_ascii_words() {
        assert_eq!(slug("Chapter One: The Storm!"), "chapter-one-the-storm");
        assert_eq!(slug("¿Qué?"), "qu");
        assert_eq!(slug("…"), "track");
        assert!(slug(&"word ".repeat(30)).len() <= 40);
    }

    pub(super) fn record() -> lectern_engine::protocol::TakeRecord {
        lectern_engine::protocol::TakeRecord {
            segment_id: 0,
            text: String::new(),
            voice_id: String::new(),
            model_id: String::new(),
            seed: 0,
            nfe: 10,
            cfg_rate: 0.7,
            precision: lectern_engine::protocol::Precision::default(),
            min_len_rule: lectern_engine::protocol::MinLenRule::default(),
            backend: String::new(),
            flow_matmul: String::new(),
            group: lectern_engine::protocol::GroupInfo {
                segment_ids: Vec::new(),
                token_counts: Vec::new(),
                tokens: Vec::new(),
                index: 0,
            },
            noise_source: String::new(),
            engine_version: String::new(),
            tokens: Vec::new(),
            timings: lectern_engine::protocol::StageTimings::default(),
            content: lectern_engine::protocol::TakeContent::default(),
        }
    }

    /// A take of `secs` seconds (only its length matters to the plan).
    fn take(secs: f64) -> Piece {
        let n = (secs * f64::from(SAMPLE_RATE_HZ)) as u64;
        Piece::Take(Box::new(crate::review::TakeInfo {
            id: 0,
            engine_take_id: 0,
            record: record(),
            audio_hash: String::new(),
            wav_path: PathBuf::new(),
            num_samples: n,
            status: crate::review::TakeStatus::Ok,
            segment_hash: 0,
            content_key: String::new(),
            figures: None,
        }))
    }

    fn pause(secs: f64) -> Piece {
        Piece::Silence((secs * f64::from(SAMPLE_RATE_HZ)) as u64)
    }

    /// Two chapters of takes of 10, 20 | 30, 40, 50 s, each followed by a 1 s pause.
    fn book() -> Vec<ChapterPlan> {
        let chapter = |n: u32, secs: &[f64]| ChapterPlan {
            chapter: n,
            title: String::new(),
            segments: Vec::new(),
            pieces: secs.iter().flat_map(|&s| [take(s), pause(1.0)]).collect(),
            segment_starts: Vec::new(),
        };
        vec![chapter(0, &[10.0, 20.0]), chapter(1, &[30.0, 40.0, 50.0])]
    }

    fn take_lengths_s(pieces: &[&Piece]) -> Vec<u64> {
        pieces
            .iter()
            .filter(|p| matches!(p, Piece::Take(_)))
            .map(|p| p.len() / u64::from(SAMPLE_RATE_HZ))
            .collect()
    }

    #[test]
    fn a_sample_starts_at_a_chosen_segment_or_time_and_keeps_whole_segments() {
        let book = book();
        let targets = MasteringTargets::acx();
        let from =
            |start, length_s| sample_pieces(&book, &SampleSpan { start, length_s }, &targets);
        let seg = |chapter, segment| SampleStart::Segment { chapter, segment };
        // Chapter 2, segment 2: the 40 s take; 50 s more would pass 90 s with head and tail.
        let got = from(seg(2, 2), 90.0).unwrap();
        assert_eq!(take_lengths_s(&got), [40]);
        // Across a chapter end when the length allows.
        assert_eq!(take_lengths_s(&from(seg(1, 2), 300.0).unwrap()), [20, 30, 40, 50]);
        // Times on the master: inside the second take (10 s + 1 s pause + 20 s), or inside a
        // pause (the take after it).
        let at = |seconds| SampleStart::Time { seconds };
        assert_eq!(take_lengths_s(&from(at(15.0), 60.0).unwrap()), [20, 30]);
        assert_eq!(take_lengths_s(&from(at(31.5), 60.0).unwrap()), [30]);
        assert_eq!(take_lengths_s(&from(at(0.0), 60.0).unwrap()), [10, 20]);
        // What does not exist is named.
        let err = |r: Result<Vec<&Piece>>| r.unwrap_err().to_string();
        assert!(err(from(seg(3, 1), 60.0)).contains("no chapter 3 (it has 2"));
        assert!(err(from(seg(2, 4), 60.0)).contains("chapter 2 has no segment 4 (it has 3"));
        assert!(err(from(seg(1, 0), 60.0)).contains("no segment 0"));
        assert!(err(from(at(160.0), 60.0)).contains("2:40 is past the book's last segment"));
        assert!(err(from(seg(2, 3), 40.0)).contains("first segment is longer"));
    }

    #[test]
    fn a_sample_over_five_minutes_is_refused() {
        let span = |length_s| DeliveryOptions {
            sample: Some(SampleSpan { start: SampleStart::Time { seconds: 0.0 }, length_s }),
            ..DeliveryOptions::default()
        };
        let err = check_options(&span(301.0)).unwrap_err().to_string();
        assert!(err.contains("a retail sample of 5:01: ACX takes at most 5:00"), "{err}");
        assert!(check_options(&span(2.0)).is_err());
        assert!(check_options(&span(300.0)).is_ok());
    }

    #[test]
    fn acx_targets_are_the_acx_constants() {
        let t = MasteringTargets::acx();
        assert_eq!((t.head_s, t.tail_s), (HEAD_S, TAIL_S));
        assert_eq!((t.rms_db, t.first_ceiling_db), (TARGET_RMS_DB, FIRST_CEILING_DB));
        assert_eq!((t.true_peak_max_db, t.peak_max_db), (TRUE_PEAK_MAX_DB, acx::PEAK_MAX_DB));
        assert_eq!((t.rate_hz, t.mp3_kbps), (acx::SAMPLE_RATE_HZ, mp3::BITRATE_KBPS));
        assert_eq!(DeliveryOptions::default().targets, t);
    }

    #[test]
    fn spans_land_where_the_resampled_voice_does() {
        // 24 kHz sample n of the voice is delivery sample ceil(n * 44100 / 24000): the
        // resampled voice of n samples is that long.
        assert_eq!(at_delivery_rate(0, 44_100), 0);
        assert_eq!(at_delivery_rate(80, 44_100), 147);
        assert_eq!(at_delivery_rate(81, 44_100), 149);
        let x: Vec<f32> = (0..1000).map(|i| (i as f32 * 0.01).sin()).collect();
        let y = mastering::resample(&x[..81], SAMPLE_RATE_HZ, 44_100).unwrap();
        assert_eq!(y.len() as u64, at_delivery_rate(81, 44_100));
        let Piece::Take(t) = take(1.0) else { unreachable!() };
        let texts: SegmentTexts = [(t.id, (7, 2, "Hello.".to_string()))].into_iter().collect();
        let span = segment_span(&t, 80, 160, &texts, 44_100).shifted(10);
        assert_eq!((span.start, span.end), (157, 304));
        assert_eq!(span.what, Heard::Segment { id: 7, chapter: 2, text: "Hello.".into() });
    }

    #[test]
    fn pieces_split_at_takes_with_their_pauses() {
        let pieces = vec![Piece::Silence(10), Piece::Silence(5)];
        assert_eq!(split_pieces(&pieces, 100, 1).unwrap().len(), 1);
    }
}
