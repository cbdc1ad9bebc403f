//! Export: the chosen takes of the current manuscript, in order, with each segment's pause,
//! as one file or one file per chapter; WAV (16/24-bit integer or 32-bit float) or FLAC
//! (16/24-bit, pure-Rust `flacenc`), tagged with the book's metadata and (FLAC) its cover; the
//! cover beside; a chapter list as a cue sheet and as JSON; optional
//! loudness normalisation to a target integrated loudness (ITU-R BS.1770 / EBU R128, measured
//! by [`crate::audio::loudness`] with the `ebur128` crate: K-weighting, 400 ms blocks, absolute
//! −70 LUFS and relative −10 LU gates).
//!
//! Every take is read back and checked against its audio hash before it is exported. Output
//! files are written to a temp file and renamed. Integer formats are quantised without dither
//! by [`quantise`] (round to nearest, clamp), so a decoder returns exactly those values.
//!
//! Memory: WAV is streamed take by take (two passes when normalising); FLAC holds one output
//! file's samples in memory (i32), which for a whole 10-hour book at 24 kHz is ~3.5 GB: use
//! `--split chapters` for long books.

use std::fs::{self, File};
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::{Project, Result, SAMPLE_RATE_HZ, SAMPLES_PER_MS, SegmentRef, StoreError};
use crate::audio::loudness::Meter;
use crate::review::{TakeInfo, TakeStatus};
use lectern_engine::protocol::SegmentId;

/// Output container.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ExportFormat {
    #[default]
    Wav,
    Flac,
}

impl ExportFormat {
    pub fn extension(self) -> &'static str {
        match self {
            Self::Wav => "wav",
            Self::Flac => "flac",
        }
    }
}

/// Sample encoding of the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SampleFormat {
    #[default]
    Int16,
    Int24,
    /// WAV only.
    Float32,
}

impl SampleFormat {
    pub fn bits(self) -> u32 {
        match self {
            Self::Int16 => 16,
            Self::Int24 => 24,
            Self::Float32 => 32,
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct ExportOptions {
    /// Output path; with `split_chapters`, files are named `STEM-NN.EXT` beside it.
    pub out: PathBuf,
    pub format: ExportFormat,
    pub sample_format: SampleFormat,
    pub split_chapters: bool,
    /// Target integrated loudness, LUFS (e.g. −18); each output file is gained to it.
    pub loudness_lufs: Option<f64>,
    /// Export chosen takes made for other content (stale) instead of refusing; the report
    /// lists them.
    pub allow_stale: bool,
    /// The book's metadata for the tags, cue sheet and chapter list, as the caller resolved
    /// it (flags, manuscript, config); `None`: the manuscript's own.
    pub book: Option<crate::audio::tags::BookFields>,
    /// A cover image (JPEG or PNG) instead of the book's own: written beside the export and
    /// embedded in a FLAC as its front cover.
    pub cover: Option<PathBuf>,
}

/// One chapter's place in the export.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChapterMark {
    pub chapter: u32,
    /// The chapter's first segment's text, shortened.
    pub title: String,
    /// File name (no directory) the chapter is in.
    pub file: String,
    /// Start within that file, samples at 24 kHz.
    pub start_samples: u64,
    pub start_s: f64,
    pub duration_samples: u64,
    pub duration_s: f64,
    /// The chapter's segments, in order.
    pub segments: Vec<SegmentId>,
    /// Its sub-chapters (an EPUB's nested contents entries), each where its segment starts.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub marks: Vec<SubChapterMark>,
}

/// A sub-chapter in the export's chapter list.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SubChapterMark {
    pub title: String,
    /// 0: a part that opens the chapter; 1: a section of it; …
    pub depth: usize,
    /// Start within the chapter's file, samples at 24 kHz.
    pub start_samples: u64,
    pub start_s: f64,
}

/// One written audio file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExportedFile {
    pub path: PathBuf,
    pub samples: u64,
    /// Integrated loudness before gain, LUFS (measured only when normalising).
    pub measured_lufs: Option<f64>,
    /// Gain applied, dB (0 when not normalising).
    pub gain_db: f64,
    /// Linear gain applied to every sample (f32, as used).
    pub gain: f32,
    /// Samples that clipped when quantising.
    pub clipped_samples: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExportReport {
    pub files: Vec<ExportedFile>,
    /// Segments exported with a stale take (only with `allow_stale`).
    pub stale: Vec<SegmentRef>,
    pub chapters: Vec<ChapterMark>,
    pub cue_path: PathBuf,
    pub json_path: PathBuf,
    pub total_samples: u64,
    /// What the reader of the report should know that is not an error (a cover too large to
    /// embed).
    pub notes: Vec<String>,
}

/// A stretch of one output file.
#[derive(Debug, Clone)]
pub(crate) enum Piece {
    Take(Box<TakeInfo>),
    Silence(u64),
}

impl Piece {
    pub(crate) fn len(&self) -> u64 {
        match self {
            Self::Take(t) => t.num_samples,
            Self::Silence(n) => *n,
        }
    }
}

pub(crate) struct ChapterPlan {
    pub(crate) chapter: u32,
    pub(crate) title: String,
    pub(crate) segments: Vec<SegmentId>,
    pub(crate) pieces: Vec<Piece>,
    /// Where each segment's take starts, samples from the chapter's start.
    pub(crate) segment_starts: Vec<u64>,
}

/// A chapter's title as the manuscript gives it (a heading, an EPUB's contents), else its
/// first segment's text, shortened.
fn chapter_title(titles: &[Option<String>], first: &super::StoredSegment) -> String {
    match titles.get(first.chapter as usize) {
        Some(Some(t)) => t.clone(),
        _ => first.text.chars().take(60).collect::<String>().trim().to_string(),
    }
}

/// Round to nearest and clamp to the signed range of `bits`; the scale is 2^(bits−1).
pub fn quantise(x: f32, bits: u32) -> i32 {
    let scale = (1i64 << (bits - 1)) as f64;
    (f64::from(x) * scale).round().clamp(-scale, scale - 1.0) as i32
}

fn clips(x: f32, bits: u32) -> bool {
    let scale = (1i64 << (bits - 1)) as f64;
    let v = (f64::from(x) * scale).round();
    v < -scale || v > scale - 1.0
}

/// A cue sheet time `MM:SS:FF` (75 frames per second) for a sample position, rounded.
pub fn cue_time(samples: u64) -> String {
    let frames = (samples * 75 + u64::from(SAMPLE_RATE_HZ) / 2) / u64::from(SAMPLE_RATE_HZ);
    format!("{:02}:{:02}:{:02}", frames / (75 * 60), (frames / 75) % 60, frames % 75)
}

/// The export's chapters, and the stale takes it uses (only when allowed).
pub(crate) struct ExportPlan {
    pub(crate) chapters: Vec<ChapterPlan>,
    pub(crate) stale: Vec<SegmentRef>,
}

/// Plans the export: chapters of pieces. Fails when a segment has no usable chosen take, or
/// a stale one (made for other content) unless `allow_stale`.
pub(crate) fn plan(project: &Project, allow_stale: bool) -> Result<ExportPlan> {
    let segments = project.segments()?;
    if segments.is_empty() {
        return Err(StoreError::Export("the manuscript has no segments".into()));
    }
    let mut missing = Vec::new();
    let mut stale = Vec::new();
    let mut chapters: Vec<ChapterPlan> = Vec::new();
    let lead_in = project.lead_in_ms()?;
    let titles = project.book()?.chapter_titles;
    for s in &segments {
        let take = project.chosen_take(s.id)?.filter(|t| t.status == TakeStatus::Ok);
        let Some(take) = take else {
            missing.push(SegmentRef::of(s));
            continue;
        };
        if take.content_key != s.content_key {
            stale.push(SegmentRef::of(s));
            if !allow_stale {
                continue;
            }
        }
        if chapters.last().is_none_or(|c| c.chapter != s.chapter) {
            chapters.push(ChapterPlan {
                chapter: s.chapter,
                title: chapter_title(&titles, s),
                segments: Vec::new(),
                pieces: Vec::new(),
                segment_starts: Vec::new(),
            });
        }
        let first_chapter = chapters.len() == 1;
        let Some(ch) = chapters.last_mut() else { continue };
        if first_chapter && ch.pieces.is_empty() && lead_in > 0 {
            ch.pieces.push(Piece::Silence(u64::from(lead_in) * SAMPLES_PER_MS));
        }
        ch.segments.push(s.id);
        ch.segment_starts.push(ch.pieces.iter().map(Piece::len).sum());
        ch.pieces.push(Piece::Take(Box::new(take)));
        if s.pause_after_ms > 0 {
            ch.pieces.push(Piece::Silence(u64::from(s.pause_after_ms) * SAMPLES_PER_MS));
        }
    }
    if !missing.is_empty() {
        return Err(StoreError::MissingTakes {
            count: missing.len(),
            first: missing.into_iter().take(SegmentRef::LISTED).collect(),
        });
    }
    if !stale.is_empty() && !allow_stale {
        return Err(StoreError::StaleTakes {
            count: stale.len(),
            first: stale.into_iter().take(SegmentRef::LISTED).collect(),
        });
    }
    Ok(ExportPlan { chapters, stale })
}

/// Feeds the pieces' samples, verified against their hashes, to `f` in order.
fn for_each_chunk(pieces: &[&Piece], mut f: impl FnMut(&[f32]) -> Result<()>) -> Result<()> {
    const SILENCE: [f32; 4096] = [0.0; 4096];
    for piece in pieces {
        match piece {
            Piece::Take(t) => {
                let mut samples = super::takes::read_for_export(t)?;
                crate::audio::master::fade_edges(&mut samples);
                f(&samples)?;
            }
            Piece::Silence(n) => {
                let mut left = *n as usize;
                while left > 0 {
                    let k = left.min(SILENCE.len());
                    f(&SILENCE[..k])?;
                    left -= k;
                }
            }
        }
    }
    Ok(())
}

pub(crate) fn write_atomically(path: &Path, write: impl FnOnce(&Path) -> Result<()>) -> Result<()> {
    let tmp = crate::output::partial_path(path);
    if let Err(e) = write(&tmp) {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    fs::rename(&tmp, path).map_err(|e| export_io("renaming export", path, e))?;
    crate::output::ledger::record(path);
    Ok(())
}

/// What a master file's tags say: the book's metadata and the synthetic speech disclosure
/// (a WAV's `LIST`/`INFO` chunk, a FLAC's Vorbis comments).
pub(crate) struct MasterTags {
    book: crate::audio::tags::BookFields,
    disclosure: crate::audio::tags::Disclosure,
    /// The cover as a FLAC `PICTURE` block's body (none: no cover, a WAV, or one too large).
    flac_picture: Option<Vec<u8>>,
}

impl MasterTags {
    fn of(
        project: &Project,
        book: crate::audio::tags::BookFields,
        cover: Option<&crate::audio::tags::Picture>,
        chapters: &[ChapterPlan],
    ) -> Result<Self> {
        let voices = voices_of(project, chapters)?;
        Ok(Self {
            book,
            disclosure: crate::audio::tags::Disclosure::lectern(voices),
            flac_picture: cover.and_then(crate::audio::tags::flac_picture),
        })
    }

    fn vorbis_comment(&self) -> Vec<u8> {
        let fields = crate::audio::tags::vorbis_fields(&self.book, &self.disclosure);
        crate::audio::tags::vorbis_comment(&crate::audio::tags::engine_name(), &fields)
    }
}

/// The book's metadata as the manuscript gives it (EPUB, front matter), for tags.
#[must_use]
pub fn book_fields(info: &lectern_text::BookInfo) -> crate::audio::tags::BookFields {
    let text = |v: &Option<String>| v.clone().unwrap_or_default();
    crate::audio::tags::BookFields {
        title: text(&info.title),
        author: text(&info.author),
        narrator: text(&info.narrator),
        publication: crate::audio::tags::Publication {
            publisher: text(&info.publisher),
            rights: text(&info.rights),
            isbn: text(&info.isbn),
            description: text(&info.description),
            date: text(&info.date),
            language: text(&info.language),
        },
    }
}

/// The names of the voices that speak the planned takes, in the order they first speak: a
/// take's recorded voice, or (none recorded: the engine's default) the voice the project was
/// rendered with, by its folder's name.
pub(crate) fn voices_of(project: &Project, chapters: &[ChapterPlan]) -> Result<Vec<String>> {
    let default_voice = project
        .sources()?
        .and_then(|s| s.voice_dir.file_name().map(|n| n.to_string_lossy().into_owned()));
    let mut voices: Vec<String> = Vec::new();
    for piece in chapters.iter().flat_map(|c| c.pieces.iter()) {
        let Piece::Take(t) = piece else { continue };
        let name = match t.record.voice_id.trim() {
            "" => default_voice.clone(),
            id => Some(id.to_string()),
        };
        if let Some(name) = name.filter(|n| !voices.contains(n)) {
            voices.push(name);
        }
    }
    Ok(voices)
}

/// Writes one output file from `pieces`.
fn write_file(
    path: &Path,
    pieces: &[&Piece],
    opts: &ExportOptions,
    tags: &MasterTags,
) -> Result<ExportedFile> {
    let samples: u64 = pieces.iter().map(|p| p.len()).sum();
    let (measured_lufs, gain_db) = match opts.loudness_lufs {
        None => (None, 0.0),
        Some(target) => {
            let mut meter = Meter::new()?;
            for_each_chunk(pieces, |c| Ok(meter.add(c)?))?;
            let lufs = meter.integrated()?;
            // Silence has no loudness: leave it alone rather than amplify by infinity.
            let gain = if lufs.is_finite() { target - lufs } else { 0.0 };
            (Some(lufs), gain)
        }
    };
    let gain = 10f64.powf(gain_db / 20.0) as f32;
    let bits = opts.sample_format.bits();
    let mut clipped = 0u64;
    match opts.format {
        ExportFormat::Wav => write_atomically(path, |tmp| {
            let spec = hound::WavSpec {
                channels: 1,
                sample_rate: SAMPLE_RATE_HZ,
                bits_per_sample: bits as u16,
                sample_format: if opts.sample_format == SampleFormat::Float32 {
                    hound::SampleFormat::Float
                } else {
                    hound::SampleFormat::Int
                },
            };
            let file = File::create(tmp).map_err(|e| export_io("creating export", tmp, e))?;
            let wav_err = |e: hound::Error| match e {
                hound::Error::IoError(e) => export_io("writing export", path, e),
                other => StoreError::Export(format!("{}: {other}", path.display())),
            };
            let mut wav = hound::WavWriter::new(BufWriter::new(file), spec).map_err(wav_err)?;
            for_each_chunk(pieces, |chunk| {
                for &x in chunk {
                    let y = x * gain;
                    if opts.sample_format == SampleFormat::Float32 {
                        wav.write_sample(y).map_err(wav_err)?;
                    } else {
                        clipped += u64::from(clips(y, bits));
                        wav.write_sample(quantise(y, bits)).map_err(wav_err)?;
                    }
                }
                Ok(())
            })?;
            wav.finalize().map_err(wav_err)?;
            // The tags go after the audio, so the samples' bytes are those of an untagged file.
            let mut file = fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(tmp)
                .map_err(|e| export_io("tagging export", tmp, e))?;
            let info = crate::audio::tags::wav_info_chunk(&tags.book, &tags.disclosure);
            crate::audio::tags::append_wav_chunk(&mut file, &info)
                .map_err(|e| export_io("tagging export", tmp, e))
        })?,
        ExportFormat::Flac => {
            if opts.sample_format == SampleFormat::Float32 {
                return Err(StoreError::InvalidInput("FLAC holds 16- or 24-bit integers".into()));
            }
            // Streamed: one take's samples and one FLAC block in memory, whatever the length.
            write_atomically(path, |tmp| {
                let file = File::create(tmp).map_err(|e| export_io("creating export", tmp, e))?;
                let flac_err = |e: crate::audio::flac::FlacError| match e {
                    crate::audio::flac::FlacError::Io(e) => export_io("writing export", path, e),
                    other => StoreError::Export(format!("{}: {other}", path.display())),
                };
                use crate::audio::flac::{FlacWriter, Metadata};
                let comment = tags.vorbis_comment();
                let mut metadata = vec![Metadata::VorbisComment(&comment)];
                metadata.extend(tags.flac_picture.as_deref().map(Metadata::Picture));
                let mut flac = FlacWriter::with_metadata(
                    BufWriter::new(file),
                    SAMPLE_RATE_HZ,
                    bits,
                    &metadata,
                )
                .map_err(flac_err)?;
                let mut ints = Vec::new();
                for_each_chunk(pieces, |chunk| {
                    ints.clear();
                    for &x in chunk {
                        let y = x * gain;
                        clipped += u64::from(clips(y, bits));
                        ints.push(quantise(y, bits));
                    }
                    flac.write(&ints).map_err(flac_err)
                })?;
                let out = flac.finish().map_err(flac_err)?;
                out.into_inner()
                    .map_err(|e| export_io("writing export", tmp, e.into_error()))?
                    .sync_all()
                    .map_err(|e| export_io("writing export", tmp, e))
            })?;
        }
    }
    Ok(ExportedFile {
        path: path.to_path_buf(),
        samples,
        measured_lufs,
        gain_db,
        gain,
        clipped_samples: clipped,
    })
}

/// Encodes mono 24 kHz integer samples as a FLAC stream, in memory (short audio: credits,
/// tests; exports stream through [`crate::audio::flac::FlacWriter`]).
pub fn encode_flac(samples: &[i32], bits: u32) -> Result<Vec<u8>> {
    let mut flac =
        crate::audio::flac::FlacWriter::new(std::io::Cursor::new(Vec::new()), SAMPLE_RATE_HZ, bits)
            .map_err(|e| StoreError::Export(e.to_string()))?;
    flac.write(samples).map_err(|e| StoreError::Export(e.to_string()))?;
    Ok(flac.finish().map_err(|e| StoreError::Export(e.to_string()))?.into_inner())
}

fn stem_and_dir(out: &Path) -> (String, PathBuf) {
    let stem = out.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or("book".into());
    let dir = out.parent().map(Path::to_path_buf).unwrap_or_default();
    (stem, dir)
}

/// A chapter's sub-chapters placed in its file: at their segments' starts.
fn sub_chapter_marks(
    subs: Option<&Vec<super::SubChapter>>,
    ch: &ChapterPlan,
    chapter_start: u64,
) -> Vec<SubChapterMark> {
    let Some(subs) = subs else { return Vec::new() };
    subs.iter()
        .filter_map(|m| {
            let at = chapter_start + ch.segment_starts.get(m.segment)?;
            Some(SubChapterMark {
                title: m.title.clone(),
                depth: m.depth,
                start_samples: at,
                start_s: at as f64 / f64::from(SAMPLE_RATE_HZ),
            })
        })
        .collect()
}

fn file_name(path: &Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// Exports the project's current manuscript; see the module docs.
pub fn export(project: &Project, opts: &ExportOptions) -> Result<ExportReport> {
    let ExportPlan { chapters, stale } = plan(project, opts.allow_stale)?;
    let book = project.book()?;
    let (stem, dir) = stem_and_dir(&opts.out);
    if !dir.as_os_str().is_empty() {
        fs::create_dir_all(&dir).map_err(|e| export_io("creating output directory", &dir, e))?;
    }
    let ext = opts.format.extension();
    let mut files = Vec::new();
    let mut marks = Vec::new();
    let mut book_start = 0u64;
    let whole = opts.out.with_extension(ext);
    let all: Vec<&Piece> = chapters.iter().flat_map(|c| c.pieces.iter()).collect();
    let sub_chapters = book.chapter_marks.clone();
    let fields = opts.book.clone().unwrap_or_else(|| book_fields(&book.info));
    // Read before any audio is written: a bad cover is refused with nothing written.
    let cover = cover_of(project, &book, opts.cover.as_deref())?;
    // Only a FLAC embeds the cover; a WAV's tags have no picture to build.
    let embedded = cover.as_ref().filter(|_| opts.format == ExportFormat::Flac);
    let tags = MasterTags::of(project, fields, embedded, &chapters)?;
    let mut notes = Vec::new();
    if embedded.is_some() && tags.flac_picture.is_none() {
        notes.push(format!(
            "the cover is larger than a FLAC metadata block holds ({} MiB): it is beside the \
             export, not embedded",
            (crate::audio::tags::FLAC_BLOCK_MAX_BYTES + 1) >> 20
        ));
    }
    if !opts.split_chapters {
        files.push(write_file(&whole, &all, opts, &tags)?);
    }
    for (position, ch) in chapters.iter().enumerate() {
        let duration: u64 = ch.pieces.iter().map(Piece::len).sum();
        let (file, start) = if opts.split_chapters {
            // Numbered from 1 in reading order, as `render --split chapters` names its files.
            let path = dir.join(format!("{stem}-{:02}.{ext}", position + 1));
            let pieces: Vec<&Piece> = ch.pieces.iter().collect();
            files.push(write_file(&path, &pieces, opts, &tags)?);
            (file_name(&path), 0)
        } else {
            (file_name(&whole), book_start)
        };
        marks.push(ChapterMark {
            chapter: ch.chapter,
            title: ch.title.clone(),
            file,
            start_samples: start,
            start_s: start as f64 / f64::from(SAMPLE_RATE_HZ),
            duration_samples: duration,
            duration_s: duration as f64 / f64::from(SAMPLE_RATE_HZ),
            segments: ch.segments.clone(),
            marks: sub_chapter_marks(sub_chapters.get(ch.chapter as usize), ch, start),
        });
        book_start += duration;
    }
    // Named after the format too, so a FLAC export beside a WAV export of the same name keeps
    // the WAV's chapter list (each lists its own files).
    let cue_path = dir.join(format!("{stem}.{ext}.cue"));
    let json_path = dir.join(format!("{stem}.{ext}.chapters.json"));
    write_atomically(&cue_path, |tmp| {
        fs::write(tmp, cue_sheet_of_book(&tags.book, &marks))
            .map_err(|e| export_io("writing cue sheet", tmp, e))
    })?;
    let cover = cover.map(|c| write_cover(&c, &dir, &stem)).transpose()?;
    let json = serde_json::json!({
        "book": {
            "title": known(&tags.book.title),
            "author": known(&tags.book.author),
            "narrator": known(&tags.book.narrator),
            "language": known(&tags.book.publication.language),
            "cover": cover.as_deref().map(file_name),
        },
        "sample_rate_hz": SAMPLE_RATE_HZ,
        "format": opts.format,
        "sample_format": opts.sample_format,
        "total_samples": book_start,
        "files": files,
        "chapters": marks,
    });
    let text = serde_json::to_string_pretty(&json)
        .map_err(|e| StoreError::Export(format!("chapter list: {e}")))?;
    write_atomically(&json_path, |tmp| {
        fs::write(tmp, text).map_err(|e| export_io("writing chapter list", tmp, e))
    })?;
    Ok(ExportReport {
        files,
        stale,
        chapters: marks,
        cue_path,
        json_path,
        total_samples: book_start,
        notes,
    })
}

/// The export's cover: `flag`'s image, else the book's own (the project's copy), each
/// bounded and checked as a JPEG or PNG of sane size.
fn cover_of(
    project: &Project,
    book: &super::BookRecord,
    flag: Option<&Path>,
) -> Result<Option<crate::audio::tags::Picture>> {
    let (path, what) = match (flag, &book.cover_file) {
        (Some(path), _) => (path.to_path_buf(), "the cover image"),
        // The project's copy was checked when the book was read; a file swapped in since is
        // bounded all the same.
        (None, Some(name)) => (project.dir().join(name), "the book's cover"),
        (None, None) => return Ok(None),
    };
    crate::audio::tags::Picture::read(&path, what)
        .map(Some)
        .map_err(|e| StoreError::Export(format!("{}: {e}", path.display())))
}

/// Writes the cover beside the export as `STEM.cover.EXT`.
fn write_cover(cover: &crate::audio::tags::Picture, dir: &Path, stem: &str) -> Result<PathBuf> {
    let to = dir.join(format!("{stem}.cover.{}", cover.extension()));
    write_atomically(&to, |tmp| {
        fs::write(tmp, &cover.data).map_err(|e| export_io("writing the cover", tmp, e))
    })?;
    Ok(to)
}

/// A cue sheet with the book's title and author (`TITLE`, `PERFORMER` before the first file).
pub fn cue_sheet_of_book(book: &crate::audio::tags::BookFields, marks: &[ChapterMark]) -> String {
    let mut head = String::new();
    if let Some(t) = known(&book.title) {
        head.push_str(&format!("TITLE \"{}\"\n", t.replace('"', "'")));
    }
    if let Some(a) = known(&book.author) {
        head.push_str(&format!("PERFORMER \"{}\"\n", a.replace('"', "'")));
    }
    let sheet = cue_sheet(marks);
    let (generator, rest) = sheet.split_at(sheet.find('\n').map_or(0, |k| k + 1));
    format!("{generator}{head}{rest}")
}

/// A field's text, `None` where it is empty (not known).
fn known(field: &str) -> Option<&str> {
    Some(field.trim()).filter(|f| !f.is_empty())
}

/// A cue sheet: one track per chapter; consecutive chapters in one file share its FILE line.
pub fn cue_sheet(marks: &[ChapterMark]) -> String {
    let mut out = String::from("REM GENERATOR \"Lectern\"\n");
    let mut current_file: Option<&str> = None;
    for (i, m) in marks.iter().enumerate() {
        if current_file != Some(m.file.as_str()) {
            let kind = if m.file.ends_with(".wav") { "WAVE" } else { "FLAC" };
            out.push_str(&format!("FILE \"{}\" {kind}\n", m.file.replace('"', "'")));
            current_file = Some(m.file.as_str());
        }
        out.push_str(&format!("  TRACK {:02} AUDIO\n", i + 1));
        out.push_str(&format!("    TITLE \"{}\"\n", m.title.replace('"', "'")));
        out.push_str(&format!("    INDEX 01 {}\n", cue_time(m.start_samples)));
    }
    out
}

/// An I/O error of an export, classified as the store classifies them, except that a full disk
/// speaks of the export, not of a take.
fn export_io(context: &'static str, path: &Path, e: std::io::Error) -> StoreError {
    match StoreError::io(context, path, e) {
        StoreError::DiskFull { path } => StoreError::Export(format!(
            "no space left on the device holding {}: the export was not written (a previous \
             export of that name is untouched; the project's takes are intact)",
            path.display()
        )),
        other => other,
    }
}
