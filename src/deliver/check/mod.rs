//! `lectern check`: ACX's audio submission requirements, measured on the delivered files as a
//! listener's player decodes them (so what an encoder changed is measured too).
//!
//! Per file: format (MPEG-1 Layer III), sample rate, channels, bitrate and whether it is
//! constant, duration, RMS, sample peak and true peak, noise floor, and the room tone at the
//! head and the tail. Across files: all mono or all stereo. Each figure is compared with its
//! rule; a failure names the figure and the rule.
//!
//! MP3s are decoded by symphonia (pure Rust), M4Bs by the ffmpeg program; the bitrate of every frame is read from the frame
//! headers by [`mp3_frames`], because a decoder only reports the stream's first.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::mastering::{gain_to_db, peak_db, rms_db, true_peak_db};

mod rules;
use rules::failures;
pub use rules::{Rules, book_failures, failures_of};

/// ACX's rules, in their units.
pub mod acx {
    /// RMS window, dB.
    pub const RMS_MIN_DB: f64 = -23.0;
    pub const RMS_MAX_DB: f64 = -18.0;
    /// Highest peak, dB.
    pub const PEAK_MAX_DB: f64 = -3.0;
    /// Highest noise floor, dB RMS.
    pub const NOISE_FLOOR_MAX_DB: f64 = -60.0;
    /// Room tone at the head, seconds.
    pub const HEAD_MIN_S: f64 = 0.5;
    pub const HEAD_MAX_S: f64 = 1.0;
    /// Room tone at the tail, seconds.
    pub const TAIL_MIN_S: f64 = 1.0;
    pub const TAIL_MAX_S: f64 = 5.0;
    /// Longest file, seconds (120 minutes).
    pub const MAX_DURATION_S: f64 = 120.0 * 60.0;
    /// Longest retail sample, seconds (5 minutes).
    pub const SAMPLE_MAX_S: f64 = 5.0 * 60.0;
    pub const SAMPLE_RATE_HZ: u32 = 44_100;
    pub const MIN_BITRATE_KBPS: u32 = 192;
}

/// Window over which the noise floor is measured, seconds: the quietest such stretch.
pub const NOISE_WINDOW_S: f64 = 0.5;
/// A 10 ms frame louder than this is voice (for the head and tail room tone), dBFS.
pub const VOICE_THRESHOLD_DB: f64 = -45.0;
/// A noise-floor window quieter than this is digital silence, not room tone, dBFS.
pub const DIGITAL_SILENCE_DB: f64 = -100.0;

/// One rule a file broke, with the figure that broke it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Failure {
    /// Short name of the rule (`rms`, `peak`, `noise_floor`, ...).
    pub rule: &'static str,
    /// What was measured and what the rule asks, in words.
    pub detail: String,
}

/// What `check` measured of one file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FileCheck {
    pub file: PathBuf,
    pub sample_rate_hz: u32,
    pub channels: u32,
    /// Bitrates seen in the frame headers, kbps (one value for a constant bitrate).
    pub bitrates_kbps: Vec<u32>,
    pub duration_s: f64,
    /// Its loudness figures; their fields sit beside the others in `check --json`.
    #[serde(flatten)]
    pub levels: Levels,
    pub failures: Vec<Failure>,
}

impl FileCheck {
    #[must_use]
    pub fn passes(&self) -> bool {
        self.failures.is_empty()
    }
}

/// What the frame headers of an MP3 file say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mp3Frames {
    /// MPEG-1 Layer III (the only kind Lectern writes and ACX's usual).
    pub mpeg1_layer3: bool,
    pub frames: usize,
    pub bitrates_kbps: Vec<u32>,
    pub sample_rate_hz: u32,
    pub mono: bool,
}

/// Walks the MPEG audio frames of `bytes` after any ID3v2 tag.
pub fn mp3_frames(bytes: &[u8]) -> Result<Mp3Frames, String> {
    mp3_frames_in(&mut std::io::Cursor::new(bytes))
}

/// [`mp3_frames`] of a file read as it goes (a frame header at a time, seeking over the
/// frames' audio), so the file is never whole in memory.
pub fn mp3_frames_in<R: std::io::Read + std::io::Seek>(r: &mut R) -> Result<Mp3Frames, String> {
    const BITRATES: [u32; 15] = [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320];
    const RATES: [u32; 3] = [44_100, 48_000, 32_000];
    let io = |e: std::io::Error| format!("reading: {e}");
    let len = r.seek(std::io::SeekFrom::End(0)).map_err(io)?;
    let mut head = [0u8; 10];
    r.seek(std::io::SeekFrom::Start(0)).map_err(io)?;
    let got = read_up_to(r, &mut head).map_err(io)?;
    let mut pos = id3v2_len(&head[..got]) as u64;
    let mut out = Mp3Frames {
        mpeg1_layer3: true,
        frames: 0,
        bitrates_kbps: Vec::new(),
        sample_rate_hz: 0,
        mono: true,
    };
    while pos + 4 <= len {
        let mut b = [0u8; 4];
        r.seek(std::io::SeekFrom::Start(pos)).map_err(io)?;
        r.read_exact(&mut b).map_err(io)?;
        if b.starts_with(b"TAG") {
            break; // ID3v1 at the end
        }
        let h = u32::from_be_bytes(b);
        if h >> 21 != 0x7FF {
            return Err(format!("no MPEG audio frame header at byte {pos}"));
        }
        let (version, layer) = ((h >> 19) & 3, (h >> 17) & 3);
        let (br_idx, sr_idx) = (((h >> 12) & 0xF) as usize, ((h >> 10) & 3) as usize);
        if version != 3 || layer != 1 || br_idx == 0 || br_idx == 15 || sr_idx == 3 {
            out.mpeg1_layer3 = false;
            break;
        }
        let (kbps, rate) = (BITRATES[br_idx], RATES[sr_idx]);
        if !out.bitrates_kbps.contains(&kbps) {
            out.bitrates_kbps.push(kbps);
        }
        out.sample_rate_hz = rate;
        out.mono &= (h >> 6) & 3 == 3;
        out.frames += 1;
        pos += u64::from(144_000 * kbps / rate + ((h >> 9) & 1));
    }
    out.bitrates_kbps.sort_unstable();
    Ok(out)
}

/// Reads into `buf` until it is full or the input ends; returns the bytes read.
fn read_up_to(r: &mut impl std::io::Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..])? {
            0 => break,
            n => got += n,
        }
    }
    Ok(got)
}

/// Length of an ID3v2 tag at the start of `bytes` (0 when there is none).
fn id3v2_len(bytes: &[u8]) -> usize {
    if bytes.len() < 10 || &bytes[..3] != b"ID3" {
        return 0;
    }
    let size = bytes[6..10].iter().fold(0usize, |n, &b| (n << 7) | usize::from(b & 0x7F));
    let footer = if bytes[5] & 0x10 != 0 { 10 } else { 0 };
    10 + size + footer
}

/// Where decoded mono samples go, block by block, with their rate.
pub type DecodeSink<'s> = dyn FnMut(u32, &[f32]) -> Result<(), String> + 's;

/// Decodes a delivery file as it goes — an MP3 with symphonia, an M4B/M4A (AAC) with the ffmpeg
/// program, which wrote it (symphonia's AAC and MP4 parts would add a minute to every build for
/// this alone) — each block of mono samples (channels averaged) to `sink`; returns the rate and
/// the channel count.
pub fn decode_into(path: &Path, sink: &mut DecodeSink) -> Result<(u32, u32), String> {
    let is_mp4 = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("m4b") || e.eq_ignore_ascii_case("m4a"));
    if is_mp4 { decode_with_ffmpeg(path, sink) } else { decode_mp3(path, sink) }
}

/// The mono mix of interleaved `frames` of `ch` channels (their mean).
fn mono(frames: &[f32], ch: usize, out: &mut Vec<f32>) {
    out.clear();
    out.extend(frames.chunks(ch).map(|f| f.iter().sum::<f32>() / ch as f32));
}

/// Decodes with ffmpeg to a float WAV on its standard output, read as it comes.
fn decode_with_ffmpeg(path: &Path, sink: &mut DecodeSink) -> Result<(u32, u32), String> {
    use std::process::{Command, Stdio};
    let program = super::ffmpeg::require_ffmpeg().map_err(|e| e.to_string())?;
    let mut child = Command::new(&program)
        .args(["-nostdin", "-hide_banner", "-loglevel", "error", "-i"])
        .arg(path)
        .args(["-c:a", "pcm_f32le", "-f", "wav", "-"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("running {}: {e}", program.display()))?;
    // Its error output is read on a thread, so a chatty ffmpeg never blocks on a full pipe.
    let stderr = child.stderr.take().map(|mut e| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = std::io::Read::read_to_string(&mut e, &mut text);
            text
        })
    });
    let stdout = child.stdout.take().ok_or("ffmpeg gave no output")?;
    let read = read_float_wav(std::io::BufReader::new(stdout), sink);
    let status = child.wait().map_err(|e| format!("waiting for ffmpeg: {e}"))?;
    let err = stderr.and_then(|t| t.join().ok()).unwrap_or_default();
    if !status.success() {
        return Err(format!("ffmpeg could not decode it: {}", err.trim()));
    }
    read
}

/// Reads the 32-bit float WAV ffmpeg writes to a pipe (its sizes unknown: the data runs to
/// the end), mono-mixed, block by block to `sink`; returns the rate and the channel count.
fn read_float_wav(mut r: impl std::io::Read, sink: &mut DecodeSink) -> Result<(u32, u32), String> {
    let io = |e: std::io::Error| format!("reading ffmpeg's output: {e}");
    let mut riff = [0u8; 12];
    r.read_exact(&mut riff).map_err(io)?;
    if &riff[..4] != b"RIFF" || &riff[8..] != b"WAVE" {
        return Err("ffmpeg's output is not a WAV".into());
    }
    let (mut channels, mut rate, mut float32) = (0u16, 0u32, false);
    loop {
        let mut h = [0u8; 8];
        r.read_exact(&mut h).map_err(io)?;
        let size = u32::from_le_bytes([h[4], h[5], h[6], h[7]]);
        if &h[..4] == b"data" {
            break;
        }
        let mut body = vec![0u8; (size as usize + 1) & !1];
        r.read_exact(&mut body).map_err(io)?;
        if &h[..4] == b"fmt " && body.len() >= 16 {
            let tag = u16::from_le_bytes([body[0], body[1]]);
            // WAVE_FORMAT_EXTENSIBLE: the format is the sub-format's first two bytes.
            let tag = if tag == 0xFFFE && body.len() >= 26 {
                u16::from_le_bytes([body[24], body[25]])
            } else {
                tag
            };
            channels = u16::from_le_bytes([body[2], body[3]]);
            rate = u32::from_le_bytes([body[4], body[5], body[6], body[7]]);
            float32 = tag == 3 && u16::from_le_bytes([body[14], body[15]]) == 32;
        }
    }
    if !float32 || channels == 0 {
        return Err("ffmpeg's output is not 32-bit float audio".into());
    }
    let ch = usize::from(channels);
    let frame_bytes = 4 * ch;
    let mut buf = vec![0u8; frame_bytes * 4096];
    let (mut floats, mut out) = (Vec::new(), Vec::new());
    loop {
        let got = read_up_to(&mut r, &mut buf).map_err(io)?;
        let whole = got - got % frame_bytes;
        floats.clear();
        floats.extend(
            buf[..whole].chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        );
        mono(&floats, ch, &mut out);
        sink(rate, &out)?;
        if got < buf.len() {
            return Ok((rate, u32::from(channels)));
        }
    }
}

/// Decodes an MP3 with symphonia, packet by packet.
fn decode_mp3(path: &Path, sink: &mut DecodeSink) -> Result<(u32, u32), String> {
    use symphonia::core::{
        audio::SampleBuffer, codecs::DecoderOptions, errors::Error, formats::FormatOptions,
        io::MediaSourceStream, meta::MetadataOptions, probe::Hint,
    };
    let file = std::fs::File::open(path).map_err(|e| format!("opening: {e}"))?;
    let mss = MediaSourceStream::new(Box::new(file), Default::default());
    let mut hint = Hint::new();
    if let Some(ext) = path.extension().and_then(|e| e.to_str()) {
        hint.with_extension(ext);
    }
    let probed = symphonia::default::get_probe()
        .format(&hint, mss, &FormatOptions::default(), &MetadataOptions::default())
        .map_err(|e| format!("not a readable MP3 file: {e}"))?;
    let mut format = probed.format;
    let track = format.default_track().ok_or("no audio track")?;
    let track_id = track.id;
    let params = track.codec_params.clone();
    let mut decoder = symphonia::default::get_codecs()
        .make(&params, &DecoderOptions::default())
        .map_err(|e| format!("no decoder: {e}"))?;
    let mut channels = params.channels.map_or(0, |c| c.count() as u32);
    let mut rate = params.sample_rate.unwrap_or(0);
    let mut out = Vec::new();
    loop {
        let packet = match format.next_packet() {
            Ok(p) => p,
            Err(Error::IoError(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof => break,
            Err(e) => return Err(format!("reading: {e}")),
        };
        if packet.track_id() != track_id {
            continue;
        }
        let audio = decoder.decode(&packet).map_err(|e| format!("decoding: {e}"))?;
        let spec = *audio.spec();
        (channels, rate) = (spec.channels.count() as u32, spec.rate);
        let mut buf = SampleBuffer::<f32>::new(audio.capacity() as u64, spec);
        buf.copy_interleaved_ref(audio);
        mono(buf.samples(), spec.channels.count().max(1), &mut out);
        sink(rate, &out)?;
    }
    Ok((rate, channels))
}

/// Loudness figures of decoded audio: (RMS, sample peak, true peak, noise floor, head, tail).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Levels {
    pub rms_db: f64,
    pub peak_db: f64,
    pub true_peak_db: f64,
    /// RMS of the quietest 0.5 s, dB.
    pub noise_floor_db: f64,
    /// Room tone before the first voiced 10 ms frame, and after the last, seconds.
    pub head_s: f64,
    pub tail_s: f64,
    /// Samples measured (a file's check says its duration instead).
    #[serde(skip)]
    pub samples: u64,
}

/// Measures `x` at `rate_hz`.
pub fn levels(x: &[f32], rate_hz: u32) -> Result<Levels, String> {
    let frame = (rate_hz / 100) as usize;
    let voiced = |c: &[f32]| rms_db(c) > VOICE_THRESHOLD_DB;
    let frames: Vec<&[f32]> = x.chunks(frame.max(1)).collect();
    let seconds = |n: usize| n as f64 / f64::from(rate_hz);
    let (head_s, tail_s) = match frames.iter().position(|c| voiced(c)) {
        None => (seconds(x.len()), seconds(x.len())),
        Some(first) => {
            let last = frames.iter().rposition(|c| voiced(c)).unwrap_or(first);
            (seconds(first * frame), seconds(x.len().saturating_sub((last + 1) * frame)))
        }
    };
    Ok(Levels {
        rms_db: rms_db(x),
        peak_db: peak_db(x),
        true_peak_db: true_peak_db(x, rate_hz)?,
        noise_floor_db: noise_floor_db(x, rate_hz),
        head_s,
        tail_s,
        samples: x.len() as u64,
    })
}

/// The figures of [`levels`], measured as samples stream in: what it holds is one 10 ms
/// frame's sum, the last noise window and the true-peak meter's state, never the audio.
/// Each figure is the same sum or comparison, in the same order, as [`levels`] makes.
pub struct LevelMeter {
    rate_hz: u32,
    /// 10 ms, samples; the current frame's sum of squares and length; frames closed.
    frame: usize,
    frame_sum: f64,
    frame_len: usize,
    frames: u64,
    /// The first and last frame louder than [`VOICE_THRESHOLD_DB`].
    first_voiced: Option<u64>,
    last_voiced: Option<u64>,
    /// Sum of squares, samples and largest magnitude so far.
    sum: f64,
    n: u64,
    peak: f32,
    true_peak: ebur128::EbuR128,
    /// The noise window, samples; the last window of samples; the quietest window's sum.
    window: usize,
    recent: std::collections::VecDeque<f32>,
    quietest: f64,
}

impl LevelMeter {
    pub fn new(rate_hz: u32) -> Result<Self, String> {
        let true_peak = ebur128::EbuR128::new(1, rate_hz, ebur128::Mode::TRUE_PEAK)
            .map_err(|e| format!("true-peak meter: {e}"))?;
        let window = (f64::from(rate_hz) * NOISE_WINDOW_S) as usize;
        Ok(Self {
            rate_hz,
            frame: (rate_hz / 100) as usize,
            frame_sum: 0.0,
            frame_len: 0,
            frames: 0,
            first_voiced: None,
            last_voiced: None,
            sum: 0.0,
            n: 0,
            peak: 0.0,
            true_peak,
            window,
            recent: std::collections::VecDeque::with_capacity(window + 1),
            quietest: f64::INFINITY,
        })
    }

    /// Measures the next samples.
    pub fn add(&mut self, x: &[f32]) -> Result<(), String> {
        if x.is_empty() {
            return Ok(());
        }
        self.true_peak.add_frames_f32(x).map_err(|e| format!("true-peak meter: {e}"))?;
        let hop = (self.window / 2).max(1) as u64;
        for &s in x {
            let sq = f64::from(s) * f64::from(s);
            self.sum += sq;
            self.n += 1;
            self.peak = self.peak.max(s.abs());
            self.frame_sum += sq;
            self.frame_len += 1;
            if self.frame_len == self.frame.max(1) {
                self.close_frame();
            }
            self.recent.push_back(s);
            if self.recent.len() > self.window {
                self.recent.pop_front();
            }
            let n = self.n;
            if n >= self.window as u64 && (n - self.window as u64).is_multiple_of(hop) {
                let sum: f64 = self.recent.iter().map(|&s| f64::from(s).powi(2)).sum();
                self.quietest = self.quietest.min(sum);
            }
        }
        Ok(())
    }

    /// Ends a 10 ms frame (or the last, shorter one): is it voice?
    fn close_frame(&mut self) {
        let level = gain_to_db((self.frame_sum / self.frame_len as f64).sqrt());
        if level > VOICE_THRESHOLD_DB {
            self.first_voiced.get_or_insert(self.frames);
            self.last_voiced = Some(self.frames);
        }
        self.frames += 1;
        self.frame_sum = 0.0;
        self.frame_len = 0;
    }

    /// The figures of everything added.
    pub fn finish(mut self) -> Result<Levels, String> {
        if self.frame_len > 0 {
            self.close_frame();
        }
        let seconds = |n: u64| n as f64 / f64::from(self.rate_hz);
        let frame = self.frame as u64;
        let (head_s, tail_s) = match (self.first_voiced, self.last_voiced) {
            (Some(first), Some(last)) => {
                (seconds(first * frame), seconds(self.n.saturating_sub((last + 1) * frame)))
            }
            _ => (seconds(self.n), seconds(self.n)),
        };
        let rms_db = if self.n == 0 {
            f64::NEG_INFINITY
        } else {
            gain_to_db((self.sum / self.n as f64).sqrt())
        };
        let noise_floor_db = if self.n <= self.window as u64 {
            rms_db
        } else {
            gain_to_db((self.quietest / self.window as f64).sqrt())
        };
        let true_peak = self.true_peak.true_peak(0).map_err(|e| format!("true-peak meter: {e}"))?;
        Ok(Levels {
            rms_db,
            peak_db: gain_to_db(f64::from(self.peak)),
            true_peak_db: gain_to_db(true_peak),
            noise_floor_db,
            head_s,
            tail_s,
            samples: self.n,
        })
    }
}

/// RMS of the quietest [`NOISE_WINDOW_S`] window (hop of half a window), dB; the whole file's
/// RMS when it is shorter than a window.
#[must_use]
pub fn noise_floor_db(x: &[f32], rate_hz: u32) -> f64 {
    let window = (f64::from(rate_hz) * NOISE_WINDOW_S) as usize;
    if x.len() <= window {
        return rms_db(x);
    }
    let mut sums = Vec::with_capacity(x.len() / (window / 2) + 1);
    let mut start = 0;
    while start + window <= x.len() {
        let sum: f64 = x[start..start + window].iter().map(|&s| f64::from(s).powi(2)).sum();
        sums.push(sum);
        start += window / 2;
    }
    let quietest = sums.into_iter().fold(f64::INFINITY, f64::min);
    gain_to_db((quietest / window as f64).sqrt())
}

/// Checks one delivery file against ACX's rules. `sample` files get the 5-minute limit.
pub fn check_file(path: &Path) -> Result<FileCheck, String> {
    check_file_with(path, &Rules::acx())
}

/// Checks one delivery file against `rules` (a preset's).
pub fn check_file_with(path: &Path, rules: &Rules) -> Result<FileCheck, String> {
    let named = |e: String| format!("{}: {e}", path.display());
    let is_mp3 = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("mp3"));
    let frames = if is_mp3 {
        let file = std::fs::File::open(path).map_err(|e| named(e.to_string()))?;
        Some(mp3_frames_in(&mut std::io::BufReader::new(file)).map_err(named)?)
    } else {
        None
    };
    let (levels, rate_hz, channels) = measure_file(path).map_err(named)?;
    let bitrates_kbps = frames.as_ref().map(|f| f.bitrates_kbps.clone()).unwrap_or_default();
    let mut check =
        FileCheck::from_levels(path.to_path_buf(), &levels, rate_hz, channels, bitrates_kbps);
    check.failures = failures_of(&check, frames.as_ref(), is_sample_file(path), rules);
    Ok(check)
}

/// The figures of a delivery file, decoded and measured as it streams (never whole in
/// memory), with its rate and channel count.
fn measure_file(path: &Path) -> Result<(Levels, u32, u32), String> {
    let mut meter: Option<LevelMeter> = None;
    let (rate_hz, channels) = decode_into(path, &mut |rate, x| {
        if meter.is_none() {
            meter = Some(LevelMeter::new(rate.max(1))?);
        }
        meter.as_mut().map_or(Ok(()), |m| m.add(x))
    })?;
    let meter = match meter {
        Some(m) => m,
        None => LevelMeter::new(rate_hz.max(1))?,
    };
    Ok((meter.finish()?, rate_hz, channels))
}

/// ACX's check of mastered mono audio measured by a [`LevelMeter`] (not encoded: no bitrate
/// rule), as `name` — the workstation's chapter status.
#[must_use]
pub fn check_levels(name: &str, levels: &Levels, rate_hz: u32) -> FileCheck {
    let mut check = FileCheck::from_levels(PathBuf::from(name), levels, rate_hz, 1, Vec::new());
    check.failures = failures(&check, None, false);
    check
}

impl FileCheck {
    /// The figures of [`Levels`] measured at `rate_hz`, before any rule is applied.
    fn from_levels(
        file: PathBuf,
        l: &Levels,
        rate_hz: u32,
        channels: u32,
        bitrates_kbps: Vec<u32>,
    ) -> Self {
        let rate = rate_hz.max(1);
        Self {
            file,
            sample_rate_hz: rate_hz,
            channels,
            bitrates_kbps,
            duration_s: l.samples as f64 / f64::from(rate),
            levels: *l,
            failures: Vec::new(),
        }
    }
}

/// Whether `path` is a retail sample (its name holds `sample`): it gets the sample's length
/// limit and does not count towards the book's length.
fn is_sample_file(path: &Path) -> bool {
    path.file_stem().is_some_and(|s| s.to_string_lossy().contains("sample"))
}

/// The delivery files of `dir` (`.mp3`, `.m4b`), in name order; or `dir` itself if a file.
pub fn delivery_files(dir: &Path) -> Result<Vec<PathBuf>, String> {
    if dir.is_file() {
        return Ok(vec![dir.to_path_buf()]);
    }
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension()
                .is_some_and(|e| e.eq_ignore_ascii_case("mp3") || e.eq_ignore_ascii_case("m4b"))
        })
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(format!("{}: no .mp3 or .m4b files to check", dir.display()));
    }
    Ok(files)
}

/// Checks every delivery file of `dir` against ACX's rules, then the rule across files (all
/// mono or all stereo).
pub fn check_dir(dir: &Path) -> Result<Vec<FileCheck>, String> {
    check_dir_with(dir, &Rules::acx())
}

/// Checks every delivery file of `dir` against `rules`, then the rules across files (channels,
/// the book's length).
pub fn check_dir_with(dir: &Path, rules: &Rules) -> Result<Vec<FileCheck>, String> {
    let files = delivery_files(dir)?;
    let mut checks =
        files.iter().map(|p| check_file_with(p, rules)).collect::<Result<Vec<_>, _>>()?;
    book_failures(&mut checks, rules);
    Ok(checks)
}

/// `N.N min` of seconds.
fn minutes(seconds: f64) -> String {
    format!("{:.1} min", seconds / 60.0)
}

/// A plain-text table of `checks`, one row per file, then each failure on its own line.
#[must_use]
pub fn table(checks: &[FileCheck]) -> String {
    let mut out = format!(
        "{:<32} {:>6} {:>3} {:>5} {:>8} {:>6} {:>6} {:>6} {:>6} {:>5} {:>5}  result\n",
        "file", "Hz", "ch", "kbps", "length", "RMS", "peak", "TP", "floor", "head", "tail"
    );
    for c in checks {
        let name = c.file.file_name().map_or(String::new(), |n| n.to_string_lossy().into_owned());
        let kbps = match c.bitrates_kbps.as_slice() {
            [one] => one.to_string(),
            [] => "-".into(),
            _ => "VBR".into(),
        };
        let minutes = c.duration_s / 60.0;
        out.push_str(&format!(
            "{:<32} {:>6} {:>3} {:>5} {:>4}:{:02.0} {:>6.1} {:>6.1} {:>6.1} {:>6.1} {:>5.2} {:>5.2}  {}\n",
            truncate(&name, 32),
            c.sample_rate_hz,
            c.channels,
            kbps,
            minutes.floor() as u64,
            (c.duration_s - minutes.floor() * 60.0).floor(),
            c.levels.rms_db,
            c.levels.peak_db,
            c.levels.true_peak_db,
            c.levels.noise_floor_db,
            c.levels.head_s,
            c.levels.tail_s,
            if c.passes() { "pass" } else { "FAIL" }
        ));
        for f in &c.failures {
            out.push_str(&format!("    {name}: {}: {}\n", f.rule, f.detail));
        }
    }
    out
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        return s.to_string();
    }
    let mut t: String = s.chars().take(n - 1).collect();
    t.push('…');
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id3v2_length_is_synchsafe() {
        let mut b = b"ID3\x03\x00\x00\x00\x00\x02\x01".to_vec();
        b.resize(400, 0);
        assert_eq!(id3v2_len(&b), 10 + 257);
        assert_eq!(id3v2_len(b"\xFF\xFB\x90\x00"), 0);
    }

    fn passing() -> FileCheck {
        FileCheck {
            file: PathBuf::from("01-x.mp3"),
            sample_rate_hz: 44_100,
            channels: 1,
            bitrates_kbps: vec![192],
            duration_s: 600.0,
            levels: Levels {
                rms_db: -20.0,
                peak_db: -4.0,
                true_peak_db: -3.8,
                noise_floor_db: -70.0,
                head_s: 0.75,
                tail_s: 2.5,
                samples: 600 * 44_100,
            },
            failures: Vec::new(),
        }
    }

    #[test]
    fn files_and_samples_have_their_length_limits() {
        assert!(failures(&passing(), None, false).is_empty());
        let long = FileCheck { duration_s: 121.0 * 60.0, ..passing() };
        let f = failures(&long, None, false);
        assert_eq!(f[0].rule, "duration");
        assert_eq!(f[0].detail, "121.0 min > 120 min");
        let sample = FileCheck { duration_s: 5.5 * 60.0, ..passing() };
        assert!(failures(&sample, None, false).is_empty());
        assert_eq!(failures(&sample, None, true)[0].detail, "5.5 min > 5 min");
    }

    /// Speech-like audio: bursts of a tone over room tone, quiet at the edges.
    fn generated(n: usize, rate: u32) -> Vec<f32> {
        let mut next = lectern_test_support::signals::xorshift_noise(0x1234_5678);
        (0..n)
            .map(|i| {
                let bed = next() * 0.0008;
                let t = i as f32 / rate as f32;
                let voiced = t > 0.6 && (n - i) as f32 / rate as f32 > 1.8 && (t * 3.0) % 1.0 < 0.7;
                bed + if voiced { 0.3 * (t * 1800.0).sin() } else { 0.0 }
            })
            .collect()
    }

    #[test]
    fn the_streaming_meter_gives_the_whole_buffer_figures() {
        for (n, rate) in
            [(0, 44_100), (300, 44_100), (22_050, 44_100), (200_001, 44_100), (96_000, 48_000)]
        {
            let x = generated(n, rate);
            let whole = levels(&x, rate).unwrap();
            let mut meter = LevelMeter::new(rate).unwrap();
            for block in x.chunks(1_153) {
                meter.add(block).unwrap();
            }
            let got = meter.finish().unwrap();
            let figures = |l: &Levels| {
                [l.rms_db, l.peak_db, l.true_peak_db, l.noise_floor_db, l.head_s, l.tail_s]
                    .map(f64::to_bits)
            };
            assert_eq!(figures(&got), figures(&whole), "{n} samples at {rate} Hz");
            assert_eq!(got.samples, n as u64);
        }
    }

    #[test]
    fn mp3_frames_are_walked_from_a_reader_as_from_bytes() {
        let pcm: Vec<i16> =
            (0..50_000).map(|i| ((i as f32 * 0.05).sin() * 8000.0) as i16).collect();
        let mut bytes = b"ID3\x03\x00\x00\x00\x00\x00\x05hello".to_vec();
        bytes.extend(super::super::mp3::encode(&pcm).unwrap());
        bytes.extend_from_slice(b"TAG");
        bytes.resize(bytes.len() + 125, 0);
        let frames = mp3_frames(&bytes).unwrap();
        assert!(frames.frames > 10 && frames.mpeg1_layer3 && frames.mono);
        assert_eq!(frames.bitrates_kbps, [192]);
        let mut file = tempfile::tempfile().unwrap();
        std::io::Write::write_all(&mut file, &bytes).unwrap();
        assert_eq!(mp3_frames_in(&mut std::io::BufReader::new(file)).unwrap(), frames);
    }

    #[test]
    fn the_noise_floor_is_the_quietest_half_second() {
        let mut x = vec![0.1f32; 44_100 * 2];
        x[44_100..44_100 + 22_050].fill(0.001);
        assert!((noise_floor_db(&x, 44_100) + 60.0).abs() < 1e-6);
    }
}
