//! The 24 kHz master: how a manuscript's takes and pauses join into one signal. One definition
//! for `render`, `export` and the workstation's playback, so what the narrator hears is what
//! ships, sample for sample.
//!
//! A segment's stretch of the master is its take with a short linear fade at both edges (no
//! click at a join, no change of length) followed by its pause in digital silence; the first
//! segment is preceded by the manuscript's lead-in. So the master is exactly
//! `lead-in + Σ (tokens × 960 + pause)` samples long.

use super::SAMPLE_RATE_HZ;

/// Samples of the fade-in/out applied at each take's edges (2 ms at 24 kHz).
pub const JOIN_FADE_SAMPLES: usize = 48;

/// Whole milliseconds of silence as samples at 24 kHz.
#[must_use]
pub fn ms_to_samples(ms: u32) -> usize {
    ms as usize * SAMPLE_RATE_HZ as usize / 1000
}

/// Linear fade-in and fade-out over [`JOIN_FADE_SAMPLES`] at the take's edges.
pub fn fade_edges(take: &mut [f32]) {
    let n = JOIN_FADE_SAMPLES.min(take.len() / 2);
    let len = take.len();
    for i in 0..n {
        let gain = i as f32 / n as f32;
        take[i] *= gain;
        take[len - 1 - i] *= gain;
    }
}

/// One segment's stretch of the master: `lead_in` samples of silence, the faded take, then
/// `pause` samples of silence.
#[must_use]
pub fn segment_master(take: &[f32], lead_in: usize, pause: usize) -> Vec<f32> {
    let mut out = Vec::with_capacity(lead_in + take.len() + pause);
    out.resize(lead_in, 0.0);
    out.extend_from_slice(take);
    fade_edges(&mut out[lead_in..]);
    out.resize(out.len() + pause, 0.0);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_segment_is_lead_in_faded_take_and_pause() {
        let take = vec![1.0f32; 200];
        let m = segment_master(&take, 3, 5);
        assert_eq!(m.len(), 208);
        assert_eq!(&m[..3], &[0.0; 3]);
        assert_eq!(m[3], 0.0); // the fade starts at zero
        assert_eq!(m[3 + 100], 1.0); // the middle is untouched
        assert_eq!(m[3 + 199], 0.0);
        assert_eq!(&m[203..], &[0.0; 5]);
        assert_eq!(ms_to_samples(1500), 36_000);
        // A take shorter than two fades fades over half its length each way.
        let short = segment_master(&[1.0; 4], 0, 0);
        assert_eq!(short, vec![0.0, 0.5, 0.5, 0.0]);
    }
}
