//! WAV files at 24 kHz mono, as f32 or 16-bit PCM (hound).

use std::path::Path;

use super::{AudioError, Result, SAMPLE_RATE_HZ};

/// Sample encoding of a written WAV file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WavFormat {
    /// 32-bit IEEE float: lossless for engine output.
    #[default]
    F32,
    /// 16-bit PCM, for players that do not read float WAV.
    I16,
}

/// The header of a 24 kHz mono WAV in `format`.
#[must_use]
pub fn spec(format: WavFormat) -> hound::WavSpec {
    match format {
        WavFormat::F32 => hound::WavSpec {
            channels: 1,
            sample_rate: SAMPLE_RATE_HZ,
            bits_per_sample: 32,
            sample_format: hound::SampleFormat::Float,
        },
        WavFormat::I16 => hound::WavSpec {
            channels: 1,
            sample_rate: SAMPLE_RATE_HZ,
            bits_per_sample: 16,
            sample_format: hound::SampleFormat::Int,
        },
    }
}

/// Converts one f32 sample in [-1, 1] to 16-bit PCM (clamped, rounded).
#[must_use]
pub fn f32_to_i16(x: f32) -> i16 {
    (x.clamp(-1.0, 1.0) * f32::from(i16::MAX)).round() as i16
}

/// Writes 24 kHz mono samples to `path`.
pub fn write(path: &Path, samples: &[f32], format: WavFormat) -> Result<()> {
    let mut w = hound::WavWriter::create(path, spec(format))?;
    match format {
        WavFormat::F32 => {
            for &s in samples {
                w.write_sample(s)?;
            }
        }
        WavFormat::I16 => {
            for &s in samples {
                w.write_sample(f32_to_i16(s))?;
            }
        }
    }
    w.finalize()?;
    Ok(())
}

/// A decoded WAV: interleaved samples scaled to [-1, 1].
#[derive(Debug, Clone, PartialEq)]
pub struct Decoded {
    pub sample_rate_hz: u32,
    pub channels: u16,
    pub samples: Vec<f32>,
}

/// Reads any 8/16/24/32-bit PCM or 32-bit float WAV.
pub fn read_any(path: &Path) -> Result<Decoded> {
    let r = hound::WavReader::open(path)?;
    let s = r.spec();
    let samples = decode_samples(r).map_err(|e| match e {
        hound::Error::Unsupported => AudioError::Unsupported(format!(
            "{:?} with {} bits per sample",
            s.sample_format, s.bits_per_sample
        )),
        e => e.into(),
    })?;
    Ok(Decoded { sample_rate_hz: s.sample_rate, channels: s.channels, samples })
}

// One WAV sample decoding for the player, the store and the voice maker.
pub use lectern_wav::decode_samples;

/// Reads a 24 kHz mono WAV; any other rate or channel count is an error.
pub fn read(path: &Path) -> Result<Vec<f32>> {
    let d = read_any(path)?;
    if d.sample_rate_hz != SAMPLE_RATE_HZ || d.channels != 1 {
        return Err(AudioError::Unsupported(format!(
            "{}: {} Hz, {} channels (want {SAMPLE_RATE_HZ} Hz mono)",
            path.display(),
            d.sample_rate_hz,
            d.channels
        )));
    }
    Ok(d.samples)
}
