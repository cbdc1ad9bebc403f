//! Products of a few rows (an LM decode step's 1–16 lanes) against a weight: one dot product
//! per (weight row, input row), compiled for the CPU's vector extension.

crate::simd::multiversioned! {
    /// `y[o·r + i] = W[o]·x[i]` for the rows `o` of `w` and the rows `i` of `x` (each `width`
    /// wide).
    pub fn dot_rows(y: &mut [f32], w: &[f32], x: &[f32], width: usize) {
        let rows = x.len() / width;
        for (y, w_row) in y.chunks_exact_mut(rows).zip(w.chunks_exact(width)) {
            for (y, x_row) in y.iter_mut().zip(x.chunks_exact(width)) {
                *y = dot(w_row, x_row);
            }
        }
    }
}

/// A dot product with 32 interleaved partial sums (two 16-float vectors: independent adds).
#[inline(always)]
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; 32];
    let (ca, cb) = (a.chunks_exact(32), b.chunks_exact(32));
    let tail: f32 = ca.remainder().iter().zip(cb.remainder()).map(|(x, y)| x * y).sum();
    for (pa, pb) in ca.zip(cb) {
        for ((acc, x), y) in acc.iter_mut().zip(pa).zip(pb) {
            *acc += x * y;
        }
    }
    acc.iter().sum::<f32>() + tail
}
