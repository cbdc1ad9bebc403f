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
    pub rms_db: f64,
    pub peak_db: f64,
    pub true_peak_db: f64,
    /// RMS of the quietest 0.5 s, dB.
    pub noise_floor_db: f64,
    /// Room tone before the first voiced 10 ms frame, and after the last, seconds.
    pub head_s: f64,
    pub tail_s: f64,
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
    const BITRATES: [u32; 15] = [0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320];
    const RATES: [u32; 3] = [44_100, 48_000, 32_000];
    let mut pos = id3v2_len(bytes);
    let mut out = Mp3Frames {
        mpeg1_layer3: true,
        frames: 0,
        bitrates_kbps: Vec::new(),
        sample_rate_hz: 0,
        mono: true,
    };
    while pos + 4 <= bytes.len() {
        if bytes[pos..].starts_with(b"TAG") {
            break; // ID3v1 at the end
        }
        let h = u32::from_be_bytes([bytes[pos], bytes[pos + 1], bytes[pos + 2], bytes[pos + 3]]);
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
        pos += (144_000 * kbps / rate + ((h >> 9) & 1)) as usize;
    }
    out.bitrates_kbps.sort_unstable();
    Ok(out)
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

/// Decoded audio: mono (channels averaged), its rate and its channel count.
pub struct Decoded {
    pub samples: Vec<f32>,
    pub sample_rate_hz: u32,
    pub channels: u32,
}

/// Decodes an MP3 with symphonia; an M4B/M4A (AAC) with the ffmpeg program, which wrote it
/// (symphonia's AAC and MP4 parts would add a minute to every build for this alone).
pub fn decode(path: &Path) -> Result<Decoded, String> {
    let is_mp4 = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("m4b") || e.eq_ignore_ascii_case("m4a"));
    if is_mp4 { decode_with_ffmpeg(path) } else { decode_mp3(path) }
}

/// Decodes with ffmpeg to a float WAV in a temp folder, then reads it.
fn decode_with_ffmpeg(path: &Path) -> Result<Decoded, String> {
    let program = super::ffmpeg::require_ffmpeg().map_err(|e| e.to_string())?;
    let work = tempfile::tempdir().map_err(|e| format!("temp folder: {e}"))?;
    let wav = work.path().join("decoded.wav");
    let out = std::process::Command::new(&program)
        .args(["-nostdin", "-hide_banner", "-loglevel", "error", "-i"])
        .arg(path)
        .args(["-c:a", "pcm_f32le"])
        .arg(&wav)
        .output()
        .map_err(|e| format!("running {}: {e}", program.display()))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(format!("ffmpeg could not decode it: {}", err.trim()));
    }
    let d = crate::audio::wav::read_any(&wav).map_err(|e| e.to_string())?;
    let ch = usize::from(d.channels.max(1));
    let samples = d.samples.chunks(ch).map(|f| f.iter().sum::<f32>() / ch as f32).collect();
    Ok(Decoded { samples, sample_rate_hz: d.sample_rate_hz, channels: u32::from(d.channels) })
}

fn decode_mp3(path: &Path) -> Result<Decoded, String> {
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
    let mut samples = Vec::new();
    let mut channels = params.channels.map_or(0, |c| c.count() as u32);
    let mut rate = params.sample_rate.unwrap_or(0);
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
        let ch = spec.channels.count().max(1);
        samples.extend(buf.samples().chunks(ch).map(|f| f.iter().sum::<f32>() / ch as f32));
    }
    Ok(Decoded { samples, sample_rate_hz: rate, channels })
}

/// Loudness figures of decoded audio: (RMS, sample peak, true peak, noise floor, head, tail).
pub struct Levels {
    pub rms_db: f64,
    pub peak_db: f64,
    pub true_peak_db: f64,
    pub noise_floor_db: f64,
    pub head_s: f64,
    pub tail_s: f64,
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
    })
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
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let is_mp3 = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("mp3"));
    let frames = if is_mp3 {
        Some(mp3_frames(&bytes).map_err(|e| format!("{}: {e}", path.display()))?)
    } else {
        None
    };
    let decoded = decode(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let bitrates_kbps = frames.as_ref().map(|f| f.bitrates_kbps.clone()).unwrap_or_default();
    let mut check = FileCheck::measure(
        path.to_path_buf(),
        &decoded.samples,
        decoded.sample_rate_hz,
        decoded.channels,
        bitrates_kbps,
    )
    .map_err(|e| format!("{}: {e}", path.display()))?;
    let is_sample = path.file_stem().is_some_and(|s| s.to_string_lossy().contains("sample"));
    check.failures = failures(&check, frames.as_ref(), is_sample);
    Ok(check)
}

/// ACX's check of mastered 44.1 kHz mono samples still in memory (not encoded: no bitrate
/// rule), as `name` — the workstation's chapter status.
pub fn check_samples(name: &str, x: &[f32], rate_hz: u32) -> Result<FileCheck, String> {
    let mut check = FileCheck::measure(PathBuf::from(name), x, rate_hz, 1, Vec::new())?;
    check.failures = failures(&check, None, false);
    Ok(check)
}

impl FileCheck {
    /// The figures of mono samples `x` at `rate_hz` (from a file of `channels` channels and
    /// these frame bitrates), before any rule is applied.
    fn measure(
        file: PathBuf,
        x: &[f32],
        rate_hz: u32,
        channels: u32,
        bitrates_kbps: Vec<u32>,
    ) -> Result<Self, String> {
        let rate = rate_hz.max(1);
        let l = levels(x, rate)?;
        Ok(Self {
            file,
            sample_rate_hz: rate_hz,
            channels,
            bitrates_kbps,
            duration_s: x.len() as f64 / f64::from(rate),
            rms_db: l.rms_db,
            peak_db: l.peak_db,
            true_peak_db: l.true_peak_db,
            noise_floor_db: l.noise_floor_db,
            head_s: l.head_s,
            tail_s: l.tail_s,
            failures: Vec::new(),
        })
    }
}

/// The rules `c` breaks.
fn failures(c: &FileCheck, frames: Option<&Mp3Frames>, is_sample: bool) -> Vec<Failure> {
    let mut out = Vec::new();
    let mut fail = |rule, detail: String| out.push(Failure { rule, detail });
    match frames {
        Some(f) if !f.mpeg1_layer3 => fail("format", "not MPEG-1 Layer III audio".into()),
        Some(f) => {
            if f.bitrates_kbps.len() > 1 {
                fail(
                    "cbr",
                    format!("variable bitrate {:?} kbps; ACX asks for CBR", f.bitrates_kbps),
                );
            }
            if let Some(&low) = f.bitrates_kbps.first() {
                if low < acx::MIN_BITRATE_KBPS {
                    fail("bitrate", format!("{low} kbps < {} kbps", acx::MIN_BITRATE_KBPS));
                }
            }
        }
        None => {}
    }
    if c.sample_rate_hz != acx::SAMPLE_RATE_HZ {
        fail("sample_rate", format!("{} Hz, not {} Hz", c.sample_rate_hz, acx::SAMPLE_RATE_HZ));
    }
    if !(acx::RMS_MIN_DB..=acx::RMS_MAX_DB).contains(&c.rms_db) {
        let (lo, hi) = (acx::RMS_MIN_DB, acx::RMS_MAX_DB);
        fail("rms", format!("RMS {:.1} dB outside {lo}…{hi} dB", c.rms_db));
    }
    if c.peak_db > acx::PEAK_MAX_DB {
        fail("peak", format!("peak {:.2} dB > {} dB", c.peak_db, acx::PEAK_MAX_DB));
    }
    if c.noise_floor_db > acx::NOISE_FLOOR_MAX_DB {
        let max = acx::NOISE_FLOOR_MAX_DB;
        fail("noise_floor", format!("noise floor {:.1} dB > {max} dB", c.noise_floor_db));
    }
    if c.noise_floor_db < DIGITAL_SILENCE_DB {
        fail(
            "room_tone",
            format!(
                "digital silence (a 0.5 s stretch at {:.0} dB): use room tone",
                c.noise_floor_db
            ),
        );
    }
    if !(acx::HEAD_MIN_S..=acx::HEAD_MAX_S).contains(&c.head_s) {
        let (lo, hi) = (acx::HEAD_MIN_S, acx::HEAD_MAX_S);
        fail("head", format!("{:.2} s of room tone at the head, not {lo}–{hi} s", c.head_s));
    }
    if !(acx::TAIL_MIN_S..=acx::TAIL_MAX_S).contains(&c.tail_s) {
        let (lo, hi) = (acx::TAIL_MIN_S, acx::TAIL_MAX_S);
        fail("tail", format!("{:.2} s of room tone at the tail, not {lo}–{hi} s", c.tail_s));
    }
    let max_s = if is_sample { acx::SAMPLE_MAX_S } else { acx::MAX_DURATION_S };
    if c.duration_s > max_s {
        fail("duration", format!("{:.1} min > {:.0} min", c.duration_s / 60.0, max_s / 60.0));
    }
    out
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

/// Checks every delivery file of `dir`, then the rule across files (all mono or all stereo).
pub fn check_dir(dir: &Path) -> Result<Vec<FileCheck>, String> {
    let mut checks =
        delivery_files(dir)?.iter().map(|p| check_file(p)).collect::<Result<Vec<_>, _>>()?;
    let mono = checks.iter().filter(|c| c.channels == 1).count();
    let total = checks.len();
    if mono != 0 && mono != total {
        for c in &mut checks {
            c.failures.push(Failure {
                rule: "channels",
                detail: format!("{mono} of {total} files are mono: all mono or all stereo"),
            });
        }
    }
    Ok(checks)
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
            c.rms_db,
            c.peak_db,
            c.true_peak_db,
            c.noise_floor_db,
            c.head_s,
            c.tail_s,
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
            rms_db: -20.0,
            peak_db: -4.0,
            true_peak_db: -3.8,
            noise_floor_db: -70.0,
            head_s: 0.75,
            tail_s: 2.5,
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

    #[test]
    fn the_noise_floor_is_the_quietest_half_second() {
        let mut x = vec![0.1f32; 44_100 * 2];
        x[44_100..44_100 + 22_050].fill(0.001);
        assert!((noise_floor_db(&x, 44_100) + 60.0).abs() < 1e-6);
    }
}
