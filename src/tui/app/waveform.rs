//! Each take's level envelope, computed once from its 24 kHz samples when they arrive (saved
//! or read from the project) and kept by take after the samples are unloaded, so drawing a
//! frame never walks the audio.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use lectern_engine::protocol::TakeId;

/// Bins of an envelope: finer than any panel is wide, coarse enough to keep by the thousand.
pub const ENVELOPE_BINS: usize = 512;
/// Envelopes kept; the least recently made go first.
pub const ENVELOPES_MAX: usize = 2048;

/// A take's peak level over equal stretches of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Envelope {
    /// Peak absolute sample of each stretch, in order.
    pub peaks: Vec<f32>,
    /// The take's length, 24 kHz samples.
    pub len_samples: usize,
}

impl Envelope {
    /// The envelope of `samples` in at most [`ENVELOPE_BINS`] stretches.
    #[must_use]
    pub fn of(samples: &[f32]) -> Self {
        let per_bin = samples.len().div_ceil(ENVELOPE_BINS).max(1);
        let peaks =
            samples.chunks(per_bin).map(|c| c.iter().fold(0.0f32, |m, s| m.max(s.abs()))).collect();
        Self { peaks, len_samples: samples.len() }
    }

    /// The envelope over `width` columns: each column the peak of its stretches, scaled to
    /// 0..=`scale` against the take's own loudest peak.
    #[must_use]
    pub fn columns(&self, width: usize, scale: u64) -> Vec<u64> {
        let n = self.peaks.len();
        if n == 0 || width == 0 {
            return vec![0; width];
        }
        let top = self.peaks.iter().fold(0.0f32, |m, p| m.max(*p)).max(f32::EPSILON);
        (0..width)
            .map(|c| {
                let (from, to) = (c * n / width, ((c + 1) * n / width).max(c * n / width + 1));
                let peak =
                    self.peaks[from.min(n - 1)..to.min(n)].iter().fold(0.0f32, |m, p| m.max(*p));
                (f64::from(peak / top) * scale as f64).round() as u64
            })
            .collect()
    }
}

/// Envelopes by take, bounded by [`ENVELOPES_MAX`].
#[derive(Debug, Clone, Default)]
pub struct Envelopes {
    by_take: HashMap<TakeId, Arc<Envelope>>,
    order: VecDeque<TakeId>,
}

impl Envelopes {
    /// Makes a take's envelope unless it has one.
    pub fn remember(&mut self, take: TakeId, samples: &[f32]) {
        if self.by_take.contains_key(&take) {
            return;
        }
        self.by_take.insert(take, Arc::new(Envelope::of(samples)));
        self.order.push_back(take);
        while self.order.len() > ENVELOPES_MAX {
            if let Some(old) = self.order.pop_front() {
                self.by_take.remove(&old);
            }
        }
    }

    /// A take's envelope, if its samples were seen.
    #[must_use]
    pub fn get(&self, take: TakeId) -> Option<&Arc<Envelope>> {
        self.by_take.get(&take)
    }

    /// Envelopes made so far (each take's once).
    #[must_use]
    pub fn len(&self) -> usize {
        self.by_take.len()
    }

    /// No envelope made yet.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.by_take.is_empty()
    }
}
