//! Sample-rate conversion of whole takes (non-real-time, on the player thread).
//!
//! Linear interpolation: the output sample k sits at input position k × from / to. Narration
//! monitoring does not need a polyphase filter, and the conversion only happens when the
//! device cannot run at 24 kHz. When `to` is a multiple of `from`, every (to/from)-th output
//! sample equals an input sample exactly.

/// Resamples mono `input` from `from_hz` to `to_hz`; `input` unchanged when the rates match.
#[must_use]
pub fn linear(input: &[f32], from_hz: u32, to_hz: u32) -> Vec<f32> {
    if from_hz == to_hz || input.is_empty() || from_hz == 0 || to_hz == 0 {
        return input.to_vec();
    }
    let out_len = output_len(input.len(), from_hz, to_hz);
    let (from, to) = (u64::from(from_hz), u64::from(to_hz));
    (0..out_len as u64)
        .map(|k| {
            // Exact integer position: index i plus fraction num/to.
            let num = k * from;
            let i = (num / to) as usize;
            let frac = (num % to) as f32 / to as f32;
            let a = input[i.min(input.len() - 1)];
            let b = input[(i + 1).min(input.len() - 1)];
            a + (b - a) * frac
        })
        .collect()
}

/// Output length for `n` input samples: ceil(n × to / from).
#[must_use]
pub fn output_len(n: usize, from_hz: u32, to_hz: u32) -> usize {
    if from_hz == 0 {
        return 0;
    }
    (n as u64 * u64::from(to_hz)).div_ceil(u64::from(from_hz)) as usize
}
