//! Reading the reference recording of a voice (`lectern voice add`): decode, downmix, validate.
//!
//! Mirrors upstream's `load_wav` (`torchaudio.load(backend='soundfile')`, channel mean) and its
//! asserts, but checks everything up front so a bad file fails once, with a message naming the
//! file, what is wrong, and what is accepted.
//!
//! Accepted: WAV (RIFF/WAVE, including WAVE_FORMAT_EXTENSIBLE) with integer PCM of 8, 16, 24 or
//! 32 bits, or 32-bit float; any channel count (averaged to mono); at least 16 kHz; between
//! [`MIN_REFERENCE_S`] and [`MAX_REFERENCE_S`] seconds; finite samples; not silent.
//! 8-bit PCM is unsigned in WAV; hound recentres it to −128…127, and it is scaled by 1/128 like
//! libsndfile does for soundfile.

use std::io::Read;
use std::path::{Path, PathBuf};

use super::dsp::resample::resample;
use lectern_wav::decode_samples;

/// Longest accepted reference, seconds: upstream's tokenizer asserts `N16 / 16000 ≤ 30`.
pub const MAX_REFERENCE_S: f64 = 30.0;

/// Shortest accepted reference, seconds.
///
/// 0.5 s keeps every feature well defined with margin: 8 000 samples at 16 kHz give 48 Kaldi
/// frames (≥ 400 samples needed for one) and 50 whisper frames; 12 000 samples at 24 kHz give
/// 25 prompt-mel frames (> 720 samples needed to reflect-pad), hence 12 aligned speech tokens
/// (25 tokens/s). Anything shorter gives CAM++ and the LLM too little speech to clone from.
pub const MIN_REFERENCE_S: f64 = 0.5;

/// Lowest accepted sample rate, Hz: upstream's `load_wav` asserts `rate ≥ 16000` whenever it
/// resamples, and every rate but 16 kHz is resampled for the tokenizer, 16 kHz itself for the
/// 24 kHz mel — so anything below is always refused upstream.
pub const MIN_SAMPLE_RATE_HZ: u32 = 16_000;

/// Peak magnitude below which a reference counts as silent (−80 dBFS).
pub const SILENCE_PEAK: f32 = 1e-4;

/// What is accepted, appended to format errors.
const ACCEPTED: &str =
    "accepted: WAV with 8/16/24/32-bit integer PCM or 32-bit float samples, any channel count";

/// Why a reference recording cannot be used. Every message names the file.
#[derive(Debug, thiserror::Error)]
pub enum ReferenceError {
    #[error("{path}: cannot read the reference recording: {reason}", path = path.display())]
    Io { path: PathBuf, reason: String },
    #[error("{path}: not a WAV file ({reason}); {ACCEPTED}", path = path.display())]
    NotWav { path: PathBuf, reason: String },
    #[error("{path}: WAV file is truncated ({reason}); re-export the recording", path = path.display())]
    Truncated { path: PathBuf, reason: String },
    #[error("{path}: unsupported sample format {format}; {ACCEPTED}", path = path.display())]
    UnsupportedFormat { path: PathBuf, format: String },
    #[error(
        "{path}: sample rate {rate_hz} Hz is too low; the reference must be at least \
         {MIN_SAMPLE_RATE_HZ} Hz (CosyVoice3 resamples to 16 kHz and 24 kHz and refuses to upsample \
         from below 16 kHz)",
        path = path.display()
    )]
    RateTooLow { path: PathBuf, rate_hz: u32 },
    #[error(
        "{path}: reference is {seconds:.2} s long; at most {MAX_REFERENCE_S} s is accepted (the \
         speech tokenizer's limit): trim it",
        path = path.display()
    )]
    TooLong { path: PathBuf, seconds: f64 },
    #[error(
        "{path}: reference is {seconds:.3} s long; at least {MIN_REFERENCE_S} s of speech is needed",
        path = path.display()
    )]
    TooShort { path: PathBuf, seconds: f64 },
    #[error("{path}: sample {index} is not finite (NaN or infinity); the audio is corrupt", path = path.display())]
    NonFinite { path: PathBuf, index: usize },
    #[error(
        "{path}: reference is silent (peak {peak:e}, below {SILENCE_PEAK:e}); record some speech",
        path = path.display()
    )]
    Silent { path: PathBuf, peak: f32 },
}

impl ReferenceError {
    /// The file the error is about.
    pub fn path(&self) -> &Path {
        match self {
            Self::Io { path, .. }
            | Self::NotWav { path, .. }
            | Self::Truncated { path, .. }
            | Self::UnsupportedFormat { path, .. }
            | Self::RateTooLow { path, .. }
            | Self::TooLong { path, .. }
            | Self::TooShort { path, .. }
            | Self::NonFinite { path, .. }
            | Self::Silent { path, .. } => path,
        }
    }
}

/// A validated reference recording, downmixed to mono at its own rate.
#[derive(Debug, Clone, PartialEq)]
pub struct Reference {
    /// The file's sample rate, Hz (≥ [`MIN_SAMPLE_RATE_HZ`]).
    pub sample_rate_hz: u32,
    /// Channels in the file (before the downmix).
    pub channels: u16,
    /// Mono samples in [−1, 1]: the mean over channels, like upstream's `load_wav`.
    pub samples: Vec<f32>,
    /// The file it came from.
    pub source: PathBuf,
}

impl Reference {
    /// Duration, seconds.
    pub fn seconds(&self) -> f64 {
        self.samples.len() as f64 / f64::from(self.sample_rate_hz)
    }

    /// The samples at `to_hz` (torchaudio's `Resample`; a copy at the file's own rate), as
    /// upstream's `load_wav(path, to_hz)` returns them.
    pub fn resampled(&self, to_hz: u32) -> Vec<f32> {
        resample(&self.samples, self.sample_rate_hz, to_hz)
    }
}

/// Reads, downmixes and validates the reference recording at `path`.
pub fn load_reference(path: &Path) -> Result<Reference, ReferenceError> {
    let source = path.to_path_buf();
    let file = std::fs::File::open(path)
        .map_err(|e| ReferenceError::Io { path: source.clone(), reason: e.to_string() })?;
    let mut file = std::io::BufReader::new(file);
    check_riff_magic(&source, &mut file)?;
    let reader = hound::WavReader::new(file).map_err(|e| wav_error(&source, e, "header"))?;
    let spec = reader.spec();
    if spec.channels == 0 {
        return Err(ReferenceError::NotWav { path: source, reason: "zero channels".into() });
    }
    if !supported(spec) {
        let kind = match spec.sample_format {
            hound::SampleFormat::Float => "float",
            hound::SampleFormat::Int => "integer PCM",
        };
        let format = format!("{}-bit {kind}", spec.bits_per_sample);
        return Err(ReferenceError::UnsupportedFormat { path: source, format });
    }
    let interleaved = decode_samples(reader).map_err(|e| wav_error(&source, e, "sample data"))?;
    let samples = downmix(&interleaved, usize::from(spec.channels));
    let reference =
        Reference { sample_rate_hz: spec.sample_rate, channels: spec.channels, samples, source };
    validate(&reference)?;
    Ok(reference)
}

/// Tells a non-WAV file from a truncated WAV before hound parses it: the first 12 bytes must be
/// `RIFF····WAVE`. A file that agrees with that as far as it goes but stops early is truncated.
fn check_riff_magic<R: std::io::Read + std::io::Seek>(
    path: &Path,
    file: &mut R,
) -> Result<(), ReferenceError> {
    let mut head = Vec::with_capacity(12);
    let io = |e: std::io::Error| ReferenceError::Io { path: path.into(), reason: e.to_string() };
    file.by_ref().take(12).read_to_end(&mut head).map_err(io)?;
    file.seek(std::io::SeekFrom::Start(0)).map_err(io)?;
    let riff_ok = head.iter().zip(b"RIFF").all(|(a, b)| a == b);
    let wave_ok = head.iter().skip(8).zip(b"WAVE").all(|(a, b)| a == b);
    if !riff_ok || !wave_ok {
        let reason = "no RIFF/WAVE header".to_string();
        return Err(ReferenceError::NotWav { path: path.into(), reason });
    }
    if head.len() < 12 {
        let reason = format!("{} bytes, shorter than a RIFF header", head.len());
        return Err(ReferenceError::Truncated { path: path.into(), reason });
    }
    Ok(())
}

/// Classifies a hound error. The file is open and starts like a WAV, so a failed read means it
/// ends early (hound reports that as an I/O error, not always `UnexpectedEof`).
fn wav_error(path: &Path, e: hound::Error, part: &str) -> ReferenceError {
    let path = path.to_path_buf();
    match e {
        hound::Error::IoError(io) => {
            ReferenceError::Truncated { path, reason: format!("the {part} ends early: {io}") }
        }
        hound::Error::FormatError(what) => ReferenceError::NotWav { path, reason: what.into() },
        hound::Error::Unsupported => ReferenceError::UnsupportedFormat {
            path,
            format: "(neither integer PCM nor 32-bit IEEE float)".into(),
        },
        other => ReferenceError::NotWav { path, reason: other.to_string() },
    }
}

/// Integer PCM of 8, 16, 24 or 32 bits, or 32-bit float: what hound decodes and soundfile
/// would scale the same way.
fn supported(spec: hound::WavSpec) -> bool {
    matches!(
        (spec.sample_format, spec.bits_per_sample),
        (hound::SampleFormat::Float, 32) | (hound::SampleFormat::Int, 8 | 16 | 24 | 32)
    )
}

/// Mean over channels of interleaved frames (`torch.mean(dim=0)`); mono is returned as is.
fn downmix(interleaved: &[f32], channels: usize) -> Vec<f32> {
    if channels == 1 {
        return interleaved.to_vec();
    }
    interleaved
        .chunks_exact(channels)
        .map(|f| (f.iter().map(|&x| f64::from(x)).sum::<f64>() / channels as f64) as f32)
        .collect()
}

/// Rate, duration, finiteness and silence checks, in that order.
fn validate(r: &Reference) -> Result<(), ReferenceError> {
    let path = || r.source.clone();
    if r.sample_rate_hz < MIN_SAMPLE_RATE_HZ {
        return Err(ReferenceError::RateTooLow { path: path(), rate_hz: r.sample_rate_hz });
    }
    let seconds = r.seconds();
    if seconds > MAX_REFERENCE_S {
        return Err(ReferenceError::TooLong { path: path(), seconds });
    }
    if seconds < MIN_REFERENCE_S {
        return Err(ReferenceError::TooShort { path: path(), seconds });
    }
    if let Some(index) = r.samples.iter().position(|x| !x.is_finite()) {
        return Err(ReferenceError::NonFinite { path: path(), index });
    }
    let peak = r.samples.iter().fold(0f32, |m, &x| m.max(x.abs()));
    if peak < SILENCE_PEAK {
        return Err(ReferenceError::Silent { path: path(), peak });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn downmix_averages_channels() {
        assert_eq!(downmix(&[1.0, 0.0, 0.5, 0.5], 2), vec![0.5, 0.5]);
        assert_eq!(downmix(&[0.25, -1.0], 1), vec![0.25, -1.0]);
    }

    #[test]
    fn validation_order_and_limits() {
        let mk = |rate: u32, n: usize, v: f32| Reference {
            sample_rate_hz: rate,
            channels: 1,
            samples: vec![v; n],
            source: "x.wav".into(),
        };
        assert!(validate(&mk(16_000, 8_000, 0.1)).is_ok());
        assert!(matches!(validate(&mk(8_000, 8_000, 0.1)), Err(ReferenceError::RateTooLow { .. })));
        assert!(matches!(validate(&mk(16_000, 7_999, 0.1)), Err(ReferenceError::TooShort { .. })));
        assert!(validate(&mk(16_000, 480_000, 0.1)).is_ok());
        assert!(matches!(validate(&mk(16_000, 480_001, 0.1)), Err(ReferenceError::TooLong { .. })));
        assert!(matches!(validate(&mk(16_000, 8_000, 0.0)), Err(ReferenceError::Silent { .. })));
        let mut r = mk(16_000, 8_000, 0.1);
        r.samples[3] = f32::INFINITY;
        assert!(matches!(validate(&r), Err(ReferenceError::NonFinite { index: 3, .. })));
    }
}
