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
//! Deterministic: the same project and options give the same bytes (no clocks, seeded noise,
//! synchronous resampling, LAME without its timestamped info frame).

pub mod check;
pub mod credits;
pub mod ffmpeg;
pub mod m4b;
pub mod mastering;
pub mod mp3;

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::store::export::{ChapterPlan, Piece, plan, write_atomically};
use crate::store::{Project, SAMPLE_RATE_HZ, SegmentRef, StoreError};
use check::{FileCheck, acx};
use mastering::{DELIVERY_RATE_HZ, RoomTone};

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

/// Container of the delivery files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DeliveryFormat {
    #[default]
    Mp3,
    M4b,
}

/// The book's metadata for tags and credits.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct BookMeta {
    pub title: String,
    pub author: String,
    pub narrator: String,
    /// Cover image (JPEG or PNG): the M4B's cover art and each MP3's front cover (ID3 APIC).
    pub cover: Option<PathBuf>,
}

/// Book metadata given on the command line (each one wins over every other source).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MetaFlags {
    pub title: Option<String>,
    pub author: Option<String>,
    pub narrator: Option<String>,
    pub cover: Option<PathBuf>,
}

impl BookMeta {
    /// Each field from the first source that gives it: the flags, then the manuscript as the
    /// project recorded it (EPUB metadata, Markdown front matter; its cover copied into the
    /// project directory `dir`), then the configuration's `[book]`; the title falls back to
    /// `fallback_title` (the manuscript's name), author and narrator to nothing.
    #[must_use]
    pub fn resolve(
        flags: &MetaFlags,
        book: &crate::store::BookRecord,
        dir: &Path,
        config: &crate::config::BookDefaults,
        fallback_title: &str,
    ) -> Self {
        let first = |sources: [Option<&String>; 3]| {
            sources.into_iter().flatten().find(|s| !s.trim().is_empty()).cloned()
        };
        let info = &book.info;
        Self {
            title: first([flags.title.as_ref(), info.title.as_ref(), None])
                .unwrap_or_else(|| fallback_title.to_string()),
            author: first([flags.author.as_ref(), info.author.as_ref(), config.author.as_ref()])
                .unwrap_or_default(),
            narrator: first([
                flags.narrator.as_ref(),
                info.narrator.as_ref(),
                config.narrator.as_ref(),
            ])
            .unwrap_or_default(),
            cover: flags.cover.clone().or_else(|| book.cover_file.as_ref().map(|f| dir.join(f))),
        }
    }
}

/// Where the room tone comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum RoomToneSource {
    /// Seeded noise at this RMS level, dBFS (−90 to −60 exclusive).
    Noise { level_db: f64 },
    /// The narrator's room-tone recording (WAV, any rate, mono or stereo).
    Recording(PathBuf),
}

impl Default for RoomToneSource {
    fn default() -> Self {
        Self::Noise { level_db: DEFAULT_ROOM_TONE_DB }
    }
}

/// Default room-tone level, dB RMS: well under ACX's −60 dB noise floor, well over silence.
pub const DEFAULT_ROOM_TONE_DB: f64 = -70.0;
/// Seed of the room-tone noise (fixed: the same export twice is the same bytes).
pub const ROOM_TONE_SEED: u64 = 0x001E_C7E2;
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

#[derive(Debug, Clone)]
pub struct DeliveryOptions {
    /// Output directory.
    pub out_dir: PathBuf,
    pub format: DeliveryFormat,
    /// One file per chapter (always for ACX).
    pub split_chapters: bool,
    pub meta: BookMeta,
    pub room_tone: RoomToneSource,
    /// Recordings (WAV) of the opening and closing credits, each delivered as its own file.
    pub opening_credits: Option<PathBuf>,
    pub closing_credits: Option<PathBuf>,
    /// Write `sample.mp3`: whole segments from a chosen start, at most 5 minutes.
    pub sample: Option<SampleSpan>,
    /// Longest file, seconds, head and tail included (ACX: 120 minutes).
    pub max_file_s: f64,
    /// Fail when a file breaks an ACX rule after mastering (the ACX preset).
    pub enforce_acx: bool,
    pub allow_stale: bool,
}

impl Default for DeliveryOptions {
    fn default() -> Self {
        Self {
            out_dir: PathBuf::from("."),
            format: DeliveryFormat::Mp3,
            split_chapters: true,
            meta: BookMeta::default(),
            room_tone: RoomToneSource::default(),
            opening_credits: None,
            closing_credits: None,
            sample: None,
            max_file_s: acx::MAX_DURATION_S,
            enforce_acx: true,
            allow_stale: false,
        }
    }
}

/// Where a retail sample starts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SampleStart {
    /// Segment `segment` of chapter `chapter`, both 1-based in reading order (credits not
    /// counted).
    Segment { chapter: u32, segment: u32 },
    /// The segment playing at this time of the 24 kHz master (the next one in a pause).
    Time { seconds: f64 },
}

/// A retail sample: whole segments from `start`, in a file of at most `length_s` seconds
/// (head and tail room tone included; ACX: 5 minutes at most).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SampleSpan {
    pub start: SampleStart,
    pub length_s: f64,
}

impl SampleSpan {
    /// The start of chapter `chapter` (1-based), as long as ACX allows.
    #[must_use]
    pub fn chapter(chapter: u32) -> Self {
        Self { start: SampleStart::Segment { chapter, segment: 1 }, length_s: acx::SAMPLE_MAX_S }
    }
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
    /// A recording the narrator supplies (credits).
    Recording(PathBuf),
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
    let export_plan = plan(project, opts.allow_stale)?;
    let room_tone = load_room_tone(&opts.room_tone)?;
    std::fs::create_dir_all(&opts.out_dir).map_err(|e| DeliverError::File {
        path: opts.out_dir.clone(),
        detail: format!("creating the output directory: {e}"),
    })?;
    let content_max = content_max_samples(opts.max_file_s)?;
    let mut tracks = Vec::new();
    if let Some(p) = &opts.opening_credits {
        tracks.push(recording_track("Opening Credits", p));
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
        tracks.push(recording_track("Closing Credits", p));
    }
    let mut files = match opts.format {
        DeliveryFormat::Mp3 => write_mp3s(&tracks, opts, &room_tone)?,
        DeliveryFormat::M4b => vec![m4b::write(&tracks_audio(&tracks, &room_tone)?, opts)?],
    };
    if let Some(span) = &opts.sample {
        let track = Track {
            title: "Retail Sample".into(),
            slug: "sample".into(),
            source: Source::Pieces(sample_pieces(&export_plan.chapters, span)?),
        };
        let path = opts.out_dir.join("sample.mp3");
        files.push(write_mp3(&track, 0, 0, &path, opts, &room_tone)?);
    }
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
                detail: "ACX rules".into(),
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
        if !(span.length_s > HEAD_S + TAIL_S && span.length_s <= acx::SAMPLE_MAX_S) {
            return Err(DeliverError::Invalid(format!(
                "a retail sample of {}: ACX takes at most {}, and it must be longer than its \
                 {HEAD_S} s head and {TAIL_S} s tail of room tone",
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
    let file_err = |detail: String| DeliverError::File { path: path.clone(), detail };
    // Bounded and checked as a book's own cover is: a JPEG or PNG of sane size.
    let limits = lectern_text::InputLimits::from_env();
    let data = limits.read_image(path).map_err(|e| file_err(format!("the cover image: {e}")))?;
    limits.check_image(&data, "the cover image").map_err(|e| file_err(e.to_string()))?;
    let mime_type = crate::reading::image_type(&data).unwrap_or("image/jpeg");
    Ok(Some(mp3::Picture { mime_type: mime_type.to_string(), data }))
}

fn recording_track<'a>(title: &str, path: &Path) -> Track<'a> {
    Track { title: title.into(), slug: slug(title), source: Source::Recording(path.to_path_buf()) }
}

/// Most 24 kHz samples of takes and pauses in a file of `max_s` seconds with its head and tail.
fn content_max_samples(max_s: f64) -> Result<u64> {
    let content_s = max_s - HEAD_S - TAIL_S;
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
fn sample_pieces<'a>(chapters: &'a [ChapterPlan], span: &SampleSpan) -> Result<Vec<&'a Piece>> {
    let all: Vec<&Piece> = chapters.iter().flat_map(|c| c.pieces.iter()).collect();
    let start = sample_start(chapters, &all, span.start)?;
    let max = content_max_samples(span.length_s)?;
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

fn load_room_tone(src: &RoomToneSource) -> Result<RoomTone> {
    match src {
        RoomToneSource::Noise { level_db } => {
            Ok(RoomTone::Noise { level_db: *level_db, seed: ROOM_TONE_SEED })
        }
        RoomToneSource::Recording(path) => {
            let tone = read_recording(path)?;
            let file_err = |detail: String| DeliverError::File { path: path.clone(), detail };
            if tone.len() < DELIVERY_RATE_HZ as usize / 2 {
                return Err(file_err("room tone shorter than 0.5 s".into()));
            }
            let level = mastering::rms_db(&tone);
            if level > acx::NOISE_FLOOR_MAX_DB {
                return Err(file_err(format!(
                    "room tone at {level:.1} dB RMS is over ACX's {} dB noise floor",
                    acx::NOISE_FLOOR_MAX_DB
                )));
            }
            if check::noise_floor_db(&tone, DELIVERY_RATE_HZ) < check::DIGITAL_SILENCE_DB {
                return Err(file_err("the room-tone recording holds digital silence".into()));
            }
            Ok(RoomTone::Recording(tone))
        }
    }
}

/// A WAV recording as 44.1 kHz mono.
fn read_recording(path: &Path) -> Result<Vec<f32>> {
    let file_err = |detail: String| DeliverError::File { path: path.to_path_buf(), detail };
    let d = crate::audio::wav::read_any(path).map_err(|e| file_err(e.to_string()))?;
    let ch = usize::from(d.channels.max(1));
    let mono: Vec<f32> = d.samples.chunks(ch).map(|f| f.iter().sum::<f32>() / ch as f32).collect();
    mastering::resample(&mono, d.sample_rate_hz, DELIVERY_RATE_HZ).map_err(file_err)
}

/// The voice of a track at 44.1 kHz, without head or tail: takes trimmed to their voiced part
/// and faded at the joins, pauses as silence (room tone goes under everything later); leading
/// and trailing pauses dropped (the head and tail replace them).
fn track_voice(track: &Track) -> Result<Vec<f32>> {
    let voice_24k = match &track.source {
        Source::Recording(path) => {
            let x = read_recording(path)?;
            let r = mastering::voiced_range(&x, DELIVERY_RATE_HZ);
            if r.is_empty() {
                return Err(DeliverError::File {
                    path: path.clone(),
                    detail: "nothing but silence".into(),
                });
            }
            return Ok(x[r].to_vec());
        }
        Source::Pieces(pieces) => {
            let mut out = Vec::new();
            for piece in pieces {
                match piece {
                    Piece::Take(t) => {
                        let samples = crate::store::takes::read_for_export(t)?;
                        let mut voiced =
                            samples[mastering::voiced_range(&samples, SAMPLE_RATE_HZ)].to_vec();
                        crate::audio::master::fade_edges(&mut voiced);
                        out.extend_from_slice(&voiced);
                    }
                    Piece::Silence(n) if !out.is_empty() => {
                        out.resize(out.len() + *n as usize, 0.0)
                    }
                    Piece::Silence(_) => {}
                }
            }
            let last_voice = pieces.iter().rposition(|p| matches!(p, Piece::Take(_)));
            let trailing: u64 =
                last_voice.map_or(0, |i| pieces[i + 1..].iter().map(|p| p.len()).sum());
            out.truncate(out.len() - trailing as usize);
            out
        }
    };
    mastering::resample(&voice_24k, SAMPLE_RATE_HZ, DELIVERY_RATE_HZ).map_err(DeliverError::Audio)
}

/// The mastered track: head, voice, tail; RMS to the target, peaks under `ceiling_db`, room
/// tone under all of it.
fn master(voice: &[f32], ceiling_db: f64, room_tone: &RoomTone, track: u64) -> Vec<f32> {
    let head = (HEAD_S * f64::from(DELIVERY_RATE_HZ)) as usize;
    let tail = (TAIL_S * f64::from(DELIVERY_RATE_HZ)) as usize;
    let mut x = vec![0f32; head];
    x.extend_from_slice(voice);
    x.resize(x.len() + tail, 0.0);
    let ceiling = mastering::db_to_gain(ceiling_db) as f32;
    // Limiting lowers the RMS; gain and limit again until the RMS settles within 0.1 dB of the
    // target (speech takes one or two rounds, very dynamic audio more; the limiter has the
    // last word, so the ceiling always holds).
    for _ in 0..MASTERING_ROUNDS {
        mastering::gain_to_rms(&mut x, TARGET_RMS_DB);
        mastering::limit(&mut x, ceiling, DELIVERY_RATE_HZ);
        if mastering::rms_db(&x) > TARGET_RMS_DB - 0.1 {
            break;
        }
    }
    room_tone.add_under(&mut x, track);
    x
}

/// A chapter's ACX check as the workstation shows it: its chosen takes (each with the pause
/// after it, 24 kHz samples) mastered exactly as `export --preset acx` masters the chapter's
/// file (trimmed takes, 44.1 kHz, RMS −20 dB, limiter, default room tone, head and tail), then
/// measured in memory. The MP3 encoding is not run, so the bitrate is not checked and the peaks
/// are the limiter's (the export re-checks them after encoding).
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
    let voice = track_voice(&track)?;
    let room_tone = load_room_tone(&RoomToneSource::default())?;
    let x = master(&voice, FIRST_CEILING_DB, &room_tone, chapter as u64);
    check::check_samples(&track.title, &x, DELIVERY_RATE_HZ).map_err(DeliverError::Audio)
}

fn number_width(total: usize) -> usize {
    total.to_string().len().max(2)
}

fn write_mp3s(
    tracks: &[Track],
    opts: &DeliveryOptions,
    room_tone: &RoomTone,
) -> Result<Vec<DeliveredFile>> {
    let total = tracks.len() as u32;
    let width = number_width(tracks.len());
    let mut files = Vec::new();
    if opts.split_chapters {
        for (i, t) in tracks.iter().enumerate() {
            let n = i as u32 + 1;
            let path = opts.out_dir.join(format!("{n:0width$}-{}.mp3", t.slug));
            files.push(write_mp3(t, n, total, &path, opts, room_tone)?);
        }
    } else {
        // One MP3 for the whole book: the tracks' mastered audio joined.
        let audio = tracks_audio(tracks, room_tone)?;
        let name =
            if opts.meta.title.is_empty() { "book".to_string() } else { slug(&opts.meta.title) };
        let path = opts.out_dir.join(format!("{name}.mp3"));
        files.push(encode_checked(&audio, &opts.meta.title, 1, 1, &path, opts)?);
    }
    Ok(files)
}

/// Masters, encodes and checks one track, lowering the limiter's ceiling until the encoded
/// file's peaks pass.
fn write_mp3(
    t: &Track,
    n: u32,
    total: u32,
    path: &Path,
    opts: &DeliveryOptions,
    room_tone: &RoomTone,
) -> Result<DeliveredFile> {
    let voice = track_voice(t)?;
    let mut ceiling_db = FIRST_CEILING_DB;
    let mut last = String::new();
    for _ in 0..MASTERING_ATTEMPTS {
        let x = master(&voice, ceiling_db, room_tone, u64::from(n));
        let audio = TrackAudio {
            title: t.title.clone(),
            samples: x,
            ceiling_db,
            chapters: vec![(t.title.clone(), 0.0)],
        };
        let file = encode_checked(&audio, &t.title, n, total, path, opts)?;
        let overshoot =
            (file.check.peak_db - acx::PEAK_MAX_DB).max(file.check.true_peak_db - TRUE_PEAK_MAX_DB);
        if overshoot <= 0.0 {
            return Ok(file);
        }
        last = format!(
            "peak {:.2} dB, true peak {:.2} dBTP at ceiling {ceiling_db:.2} dB",
            file.check.peak_db, file.check.true_peak_db
        );
        ceiling_db -= overshoot + 0.25;
    }
    let _ = std::fs::remove_file(path);
    Err(DeliverError::Mastering { file: path.display().to_string(), detail: last })
}

/// A mastered stretch of audio with its chapter marks.
pub struct TrackAudio {
    pub title: String,
    pub samples: Vec<f32>,
    pub ceiling_db: f64,
    /// (title, start seconds) of each chapter in it.
    pub chapters: Vec<(String, f64)>,
}

/// All tracks mastered and joined (for one-file outputs): chapter marks at each track's start.
/// Each track keeps its own head and tail room tone, so a chapter starts after a breath.
fn tracks_audio(tracks: &[Track], room_tone: &RoomTone) -> Result<TrackAudio> {
    let mut samples = Vec::new();
    let mut chapters = Vec::new();
    for (i, t) in tracks.iter().enumerate() {
        chapters.push((t.title.clone(), samples.len() as f64 / f64::from(DELIVERY_RATE_HZ)));
        // A lower first ceiling than per-file MP3s: a joined file has one chance to pass.
        samples.extend(master(&track_voice(t)?, FIRST_CEILING_DB - 0.5, room_tone, i as u64 + 1));
    }
    Ok(TrackAudio { title: String::new(), samples, ceiling_db: FIRST_CEILING_DB - 0.5, chapters })
}

/// Encodes `audio` as a tagged MP3 at `path` (atomically) and checks the written file.
fn encode_checked(
    audio: &TrackAudio,
    title: &str,
    n: u32,
    total: u32,
    path: &Path,
    opts: &DeliveryOptions,
) -> Result<DeliveredFile> {
    let tags = mp3::Tags {
        book: opts.meta.title.clone(),
        author: opts.meta.author.clone(),
        narrator: opts.meta.narrator.clone(),
        title: title.to_string(),
        track: n,
        total_tracks: total,
        cover: load_cover(&opts.meta)?,
    };
    let mut bytes = mp3::id3_tag(&tags).map_err(DeliverError::Audio)?;
    bytes.extend(mp3::encode(&mp3::to_i16(&audio.samples)).map_err(DeliverError::Audio)?);
    write_atomically(path, |tmp| {
        std::fs::write(tmp, &bytes).map_err(|e| StoreError::io("writing delivery file", tmp, e))
    })?;
    let check = check::check_file(path).map_err(DeliverError::Audio)?;
    Ok(DeliveredFile {
        path: path.to_path_buf(),
        title: title.to_string(),
        track: n,
        samples: audio.samples.len() as u64,
        ceiling_db: audio.ceiling_db,
        chapters: audio.chapters.clone(),
        check,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_short_ascii_words() {
        assert_eq!(slug("Chapter One: The Storm!"), "chapter-one-the-storm");
        assert_eq!(slug("¿Qué?"), "qu");
        assert_eq!(slug("…"), "track");
        assert!(slug(&"word ".repeat(30)).len() <= 40);
    }

    fn record() -> lectern_engine::protocol::TakeRecord {
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
        let from = |start, length_s| sample_pieces(&book, &SampleSpan { start, length_s });
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
    fn pieces_split_at_takes_with_their_pauses() {
        let pieces = vec![Piece::Silence(10), Piece::Silence(5)];
        assert_eq!(split_pieces(&pieces, 100, 1).unwrap().len(), 1);
    }
}
