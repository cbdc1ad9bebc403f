//! The rules a delivery file is checked against ([`Rules`]: ACX's or a store preset's) and the
//! failures a file's figures give under them, file by file and across the book.

use serde::Serialize;

use super::{DIGITAL_SILENCE_DB, Failure, FileCheck, Mp3Frames, acx, is_sample_file, minutes};

/// The rules a delivery file is checked against: a store's published requirements (a preset's,
/// [`Rules::acx`] by default). `None` (or `false`): the store publishes no such rule, so none
/// is checked; Lectern never checks a figure a store did not publish.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rules {
    /// Whose rules they are (`ACX`), as failures name them.
    pub store: &'static str,
    /// MP3 files must be MPEG-1 Layer III.
    pub mp3_layer3: bool,
    /// MP3 files must have one bitrate throughout (CBR).
    pub cbr: bool,
    /// Lowest MP3 bitrate, kbps.
    pub min_bitrate_kbps: Option<u32>,
    /// The sample rate, exactly, Hz.
    pub sample_rate_hz: Option<u32>,
    /// The lowest sample rate, Hz.
    pub min_sample_rate_hz: Option<u32>,
    /// RMS window, dB (lowest, highest).
    pub rms_db: Option<(f64, f64)>,
    /// Highest sample peak, dB.
    pub peak_max_db: Option<f64>,
    /// Highest true peak, dBTP.
    pub true_peak_max_db: Option<f64>,
    /// Highest noise floor, dB RMS.
    pub noise_floor_max_db: Option<f64>,
    /// No stretch of digital silence (room tone instead).
    pub room_tone: bool,
    /// Room tone at the head and at the tail, seconds (shortest, longest).
    pub head_s: Option<(f64, f64)>,
    pub tail_s: Option<(f64, f64)>,
    /// Longest file, seconds.
    pub max_duration_s: Option<f64>,
    /// Longest retail sample (a file whose name holds `sample`), seconds.
    pub sample_max_s: Option<f64>,
    /// All files mono or all stereo.
    pub same_channels: bool,
    /// Shortest and longest book (all files but the sample), seconds.
    pub book_min_s: Option<f64>,
    pub book_max_s: Option<f64>,
}

impl Rules {
    /// ACX's audio submission requirements ([`acx`]).
    #[must_use]
    pub fn acx() -> Self {
        Self {
            store: "ACX",
            mp3_layer3: true,
            cbr: true,
            min_bitrate_kbps: Some(acx::MIN_BITRATE_KBPS),
            sample_rate_hz: Some(acx::SAMPLE_RATE_HZ),
            min_sample_rate_hz: None,
            rms_db: Some((acx::RMS_MIN_DB, acx::RMS_MAX_DB)),
            peak_max_db: Some(acx::PEAK_MAX_DB),
            true_peak_max_db: None,
            noise_floor_max_db: Some(acx::NOISE_FLOOR_MAX_DB),
            room_tone: true,
            head_s: Some((acx::HEAD_MIN_S, acx::HEAD_MAX_S)),
            tail_s: Some((acx::TAIL_MIN_S, acx::TAIL_MAX_S)),
            max_duration_s: Some(acx::MAX_DURATION_S),
            sample_max_s: Some(acx::SAMPLE_MAX_S),
            same_channels: true,
            book_min_s: None,
            book_max_s: None,
        }
    }
}

impl Default for Rules {
    fn default() -> Self {
        Self::acx()
    }
}

/// The rules `c` breaks (ACX's).
pub(super) fn failures(c: &FileCheck, frames: Option<&Mp3Frames>, is_sample: bool) -> Vec<Failure> {
    failures_of(c, frames, is_sample, &Rules::acx())
}

/// The rules of `rules` that `c` breaks.
#[must_use]
pub fn failures_of(
    c: &FileCheck,
    frames: Option<&Mp3Frames>,
    is_sample: bool,
    rules: &Rules,
) -> Vec<Failure> {
    let mut out = Vec::new();
    if let Some(f) = frames {
        format_failures(f, rules, &mut out);
    }
    level_failures(c, rules, &mut out);
    timing_failures(c, is_sample, rules, &mut out);
    out
}

/// The MP3 frames' format, bitrate and CBR rules.
fn format_failures(f: &Mp3Frames, rules: &Rules, out: &mut Vec<Failure>) {
    let mut fail = |rule, detail: String| out.push(Failure { rule, detail });
    if !f.mpeg1_layer3 {
        if rules.mp3_layer3 {
            fail("format", "not MPEG-1 Layer III audio".into());
        }
        return;
    }
    if rules.cbr && f.bitrates_kbps.len() > 1 {
        fail(
            "cbr",
            format!("variable bitrate {:?} kbps; {} asks for CBR", f.bitrates_kbps, rules.store),
        );
    }
    if let (Some(&low), Some(min)) = (f.bitrates_kbps.first(), rules.min_bitrate_kbps) {
        if low < min {
            fail("bitrate", format!("{low} kbps < {min} kbps"));
        }
    }
}

/// The sample rate, loudness, peak and noise rules.
fn level_failures(c: &FileCheck, rules: &Rules, out: &mut Vec<Failure>) {
    let mut fail = |rule, detail: String| out.push(Failure { rule, detail });
    let l = &c.levels;
    if let Some(rate) = rules.sample_rate_hz.filter(|&r| r != c.sample_rate_hz) {
        fail("sample_rate", format!("{} Hz, not {rate} Hz", c.sample_rate_hz));
    }
    if let Some(min) = rules.min_sample_rate_hz.filter(|&m| c.sample_rate_hz < m) {
        fail("sample_rate", format!("{} Hz < {min} Hz", c.sample_rate_hz));
    }
    if let Some((lo, hi)) = rules.rms_db.filter(|(lo, hi)| !(*lo..=*hi).contains(&l.rms_db)) {
        fail("rms", format!("RMS {:.1} dB outside {lo}…{hi} dB", l.rms_db));
    }
    if let Some(max) = rules.peak_max_db.filter(|&m| l.peak_db > m) {
        fail("peak", format!("peak {:.2} dB > {max} dB", l.peak_db));
    }
    if let Some(max) = rules.true_peak_max_db.filter(|&m| l.true_peak_db > m) {
        fail("true_peak", format!("true peak {:.2} dBTP > {max} dBTP", l.true_peak_db));
    }
    if let Some(max) = rules.noise_floor_max_db.filter(|&m| l.noise_floor_db > m) {
        fail("noise_floor", format!("noise floor {:.1} dB > {max} dB", l.noise_floor_db));
    }
    if rules.room_tone && l.noise_floor_db < DIGITAL_SILENCE_DB {
        fail(
            "room_tone",
            format!(
                "digital silence (a 0.5 s stretch at {:.0} dB): use room tone",
                l.noise_floor_db
            ),
        );
    }
}

/// The head, tail and length rules.
fn timing_failures(c: &FileCheck, is_sample: bool, rules: &Rules, out: &mut Vec<Failure>) {
    let mut fail = |rule, detail: String| out.push(Failure { rule, detail });
    let (head_s, tail_s) = (c.levels.head_s, c.levels.tail_s);
    if let Some((lo, hi)) = rules.head_s.filter(|(lo, hi)| !(*lo..=*hi).contains(&head_s)) {
        fail("head", format!("{head_s:.2} s of room tone at the head, not {lo}–{hi} s"));
    }
    if let Some((lo, hi)) = rules.tail_s.filter(|(lo, hi)| !(*lo..=*hi).contains(&tail_s)) {
        fail("tail", format!("{tail_s:.2} s of room tone at the tail, not {lo}–{hi} s"));
    }
    let max_s =
        if is_sample { rules.sample_max_s.or(rules.max_duration_s) } else { rules.max_duration_s };
    if let Some(max_s) = max_s.filter(|&m| c.duration_s > m) {
        fail("duration", format!("{:.1} min > {:.0} min", c.duration_s / 60.0, max_s / 60.0));
    }
}

/// The rules across a delivery's files, added to every file's failures: all mono or all
/// stereo; the book (every file but the sample) within its length limits.
pub fn book_failures(checks: &mut [FileCheck], rules: &Rules) {
    let mono = checks.iter().filter(|c| c.channels == 1).count();
    let total = checks.len();
    let mut across = Vec::new();
    if rules.same_channels && mono != 0 && mono != total {
        across.push(Failure {
            rule: "channels",
            detail: format!("{mono} of {total} files are mono: all mono or all stereo"),
        });
    }
    let book_s: f64 =
        checks.iter().filter(|c| !is_sample_file(&c.file)).map(|c| c.duration_s).sum();
    if let Some(min) = rules.book_min_s.filter(|&m| book_s < m) {
        across.push(Failure {
            rule: "book_length",
            detail: format!(
                "the book is {}; {} asks for at least {}",
                minutes(book_s),
                rules.store,
                minutes(min)
            ),
        });
    }
    if let Some(max) = rules.book_max_s.filter(|&m| book_s > m) {
        across.push(Failure {
            rule: "book_length",
            detail: format!(
                "the book is {}; {} takes at most {}",
                minutes(book_s),
                rules.store,
                minutes(max)
            ),
        });
    }
    for c in checks.iter_mut() {
        c.failures.extend(across.iter().cloned());
    }
}
