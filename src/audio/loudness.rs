//! Integrated loudness (ITU-R BS.1770 / EBU R128, measured with the `ebur128` crate) of 24 kHz
//! mono samples: one meter for export's loudness normalisation and for the takes' quality
//! figures. A leaf: it knows samples only, so the store and `quality` both measure with it and
//! neither reaches into the other for it.

use super::SAMPLE_RATE_HZ;

/// The meter failed (in `ebur128`'s words).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("loudness meter: {0}")]
pub struct MeterError(String);

pub type Result<T> = std::result::Result<T, MeterError>;

/// Integrated loudness of 24 kHz mono samples, LUFS (−∞ for silence).
pub fn integrated_lufs(samples: &[f32]) -> Result<f64> {
    let mut meter = Meter::new()?;
    meter.add(samples)?;
    meter.integrated()
}

/// A meter fed piece by piece (a whole export file, take by take).
pub struct Meter(ebur128::EbuR128);

impl Meter {
    pub fn new() -> Result<Self> {
        ebur128::EbuR128::new(1, SAMPLE_RATE_HZ, ebur128::Mode::I)
            .map(Self)
            .map_err(|e| MeterError(e.to_string()))
    }

    pub fn add(&mut self, samples: &[f32]) -> Result<()> {
        self.0.add_frames_f32(samples).map_err(|e| MeterError(e.to_string()))
    }

    /// The integrated loudness of everything added so far, LUFS (−∞ for silence).
    pub fn integrated(&self) -> Result<f64> {
        self.0.loudness_global().map_err(|e| MeterError(e.to_string()))
    }
}
