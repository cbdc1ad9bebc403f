//! The host loops of speech-token sampling (`lectern_model::sampling`), vectorised, each giving
//! exactly what its plain loop gives: the softmax's maximum, exponentials and f64 sum, and a
//! multinomial draw over a whole vocabulary.
//!
//! With many lanes the host's sampling is a large part of an LM decode step, spent in a libm
//! `exp` call per vocabulary entry and in sequential f64 sums (each a dependency chain as long
//! as the vocabulary). The fast versions here are not approximations of those loops: each fast
//! result comes with a rigorous error bound, and where the bound leaves the plain loop's result
//! open (an exponential near an f32 rounding boundary, a sum near one, a draw's target near a
//! running sum) the plain loop's own arithmetic decides. So the results do not change, and the
//! tests below compare them with the plain loops bit for bit.

/// Values per [`exps_below`] chunk: the unit whose open entries are recomputed.
const EXP_CHUNK: usize = 64;

/// Below this, `exp` leaves f32's normal range (e^−87.3 = 2^−126); such entries take libm.
const FAST_EXP_MIN: f64 = -87.0;

/// `values.iter().fold(f32::NEG_INFINITY, f32::max)`, sixteen lanes at a time. The maximum of
/// the same values; only the sign of a zero maximum may differ (`f32::max` leaves it open),
/// which no `exp(s − max)` sees.
#[must_use]
pub fn max(values: &[f32]) -> f32 {
    let mut lanes = [f32::NEG_INFINITY; 16];
    max_lanes(values, &mut lanes);
    lanes.into_iter().fold(f32::NEG_INFINITY, f32::max)
}

crate::simd::multiversioned! {
    /// Folds `values` into sixteen running maxima (the tail into the first lanes).
    fn max_lanes(values: &[f32], lanes: &mut [f32; 16]) {
        let mut chunks = values.chunks_exact(16);
        for c in &mut chunks {
            for (l, &v) in lanes.iter_mut().zip(c) {
                *l = l.max(v);
            }
        }
        for (l, &v) in lanes.iter_mut().zip(chunks.remainder()) {
            *l = l.max(v);
        }
    }
}

/// `out[i] = ((scores[i] − max) as f64).exp() as f32`: the exponentials of a softmax, each the
/// f64 exponential rounded to f32, bit for bit.
///
/// The exponential is computed inline (range reduction by ln 2, a degree-11 Taylor polynomial,
/// relative error below 2^−46) for a vector of entries at once; it decides the f32 result
/// unless it lies within 2^10 f64 ulps of an f32 rounding boundary (libm's own error is under
/// one ulp, ours under 2^7), or the argument is outside [−87, 0]; those entries, about one in
/// 2^18, call libm's `exp` as the plain loop does.
///
/// # Panics
/// If `out` is not as long as `scores`.
pub fn exps_below(scores: &[f32], max: f32, out: &mut [f32]) {
    assert_eq!(scores.len(), out.len(), "exps_below: output length");
    let mut open = vec![false; scores.len().div_ceil(EXP_CHUNK)];
    exps_chunks(scores, max, out, &mut open);
    for (c, _) in open.iter().enumerate().filter(|(_, open)| **open) {
        let range = c * EXP_CHUNK..((c + 1) * EXP_CHUNK).min(scores.len());
        for (&s, o) in scores[range.clone()].iter().zip(&mut out[range]) {
            let x = f64::from(s - max);
            if exp_or_open(x).1 {
                *o = x.exp() as f32;
            }
        }
    }
}

crate::simd::multiversioned! {
    /// [`exps_below`]'s inline exponentials, chunk by chunk; `open[c]` says whether chunk `c`
    /// holds an entry they leave open.
    fn exps_chunks(scores: &[f32], max: f32, out: &mut [f32], open: &mut [bool]) {
        for ((s, o), open) in scores.chunks(EXP_CHUNK).zip(out.chunks_mut(EXP_CHUNK)).zip(open) {
            let mut any = 0u8;
            for (&s, o) in s.iter().zip(o.iter_mut()) {
                let (y, is_open) = exp_or_open(f64::from(s - max));
                *o = y as f32;
                any |= u8::from(is_open);
            }
            *open = any != 0;
        }
    }
}

/// `exp(x)` for `x` in [[`FAST_EXP_MIN`], 0], and whether its f32 rounding is open (near a
/// rounding boundary, or `x` outside that range or NaN). Branch-free, so it vectorises.
#[inline(always)]
fn exp_or_open(x: f64) -> (f64, bool) {
    const SHIFTER: f64 = 6_755_399_441_055_744.0; // 1.5·2^52: adding it rounds to an integer
    const LN2_HI: f64 = f64::from_bits(0x3fe6_2e42_fee0_0000); // k·LN2_HI is exact for |k| < 2^11
    const LN2_LO: f64 = f64::from_bits(0x3dea_39ef_3579_3c76);
    // Bits of an f64 mantissa below f32's; an f32 rounding boundary (a midpoint) sits at HALF.
    const LOW: u64 = (1 << 29) - 1;
    const HALF: u64 = 1 << 28;
    // Ours is within 2^7 ulps of the true value and libm's within one: 2^10 leaves room.
    const MARGIN: u64 = 1 << 10;
    let inside = (FAST_EXP_MIN..=0.0).contains(&x);
    let x = if inside { x } else { 0.0 };
    let shifted = x * std::f64::consts::LOG2_E + SHIFTER;
    let k = shifted - SHIFTER;
    let k_bits = (shifted.to_bits() as i64).wrapping_sub(SHIFTER.to_bits() as i64);
    let r = (x - k * LN2_HI) - k * LN2_LO; // |r| ≤ ln 2 / 2
    let p = taylor_exp(r);
    let y = f64::from_bits((p.to_bits() as i64).wrapping_add(k_bits << 52) as u64);
    let low = y.to_bits() & LOW;
    let near = low.abs_diff(HALF) <= MARGIN;
    (y, !inside || near)
}

/// e^r for |r| ≤ ln 2 / 2: Taylor to degree 11 (truncation below 2^−46 relative).
#[inline(always)]
fn taylor_exp(r: f64) -> f64 {
    const C: [f64; 12] = [
        1.0,
        1.0,
        1.0 / 2.0,
        1.0 / 6.0,
        1.0 / 24.0,
        1.0 / 120.0,
        1.0 / 720.0,
        1.0 / 5040.0,
        1.0 / 40_320.0,
        1.0 / 362_880.0,
        1.0 / 3_628_800.0,
        1.0 / 39_916_800.0,
    ];
    C.iter().rev().fold(0.0, |acc, &c| acc * r + c)
}

/// `values.iter().map(|&v| v as f64).sum::<f64>() as f32`: the sum in order, in f64, rounded
/// to f32, bit for bit. Summed here in eight interleaved f64 lanes; two f64 sums of the same
/// n values differ by at most 2·γ(n)·Σ|v| (any order), so where that interval rounds to one
/// f32 the in-order sum does too; otherwise (a chance of about n·2^−27: once in some 20 000
/// sums of 6761) the in-order loop runs.
#[must_use]
pub fn f64_sum_as_f32(values: &[f32]) -> f32 {
    let mut sums = [0f64; 8];
    let mut abs = [0f64; 8];
    sum_lanes(values, &mut sums, &mut abs);
    let sum: f64 = sums.iter().sum();
    let slack = abs.iter().sum::<f64>() * sum_tolerance(values.len());
    let (lo, hi) = ((sum - slack) as f32, (sum + slack) as f32);
    if sum.is_finite() && sum != 0.0 && lo.to_bits() == hi.to_bits() {
        return lo;
    }
    values.iter().map(|&v| f64::from(v)).sum::<f64>() as f32
}

/// A relative bound on how far two f64 sums of `n` values can lie apart, both in units of the
/// values' absolute sum: 2·γ(n) = 2nu/(1 − nu) with u = 2^−53, doubled for the bound's own
/// rounding (n·2^−51 ≥ 4nu).
fn sum_tolerance(n: usize) -> f64 {
    n.max(1) as f64 * f64::powi(2.0, -51)
}

crate::simd::multiversioned! {
    /// Eight interleaved f64 partial sums of `values` and of their magnitudes.
    fn sum_lanes(values: &[f32], sums: &mut [f64; 8], abs: &mut [f64; 8]) {
        let mut chunks = values.chunks_exact(8);
        for c in &mut chunks {
            for j in 0..8 {
                let v = f64::from(c[j]);
                sums[j] += v;
                abs[j] += v.abs();
            }
        }
        for (j, &v) in chunks.remainder().iter().enumerate() {
            sums[j] += f64::from(v);
            abs[j] += f64::from(v).abs();
        }
    }
}

/// Weights per [`draw_at`] block.
const DRAW_BLOCK: usize = 64;

/// The index a multinomial draw with uniform `u` ∈ [0, 1) picks from `weights`, as
/// [`draw_at_in_order`] computes it, bit for bit: the target `u·Σw` and the running sums in
/// order, in f64, the first index with a positive weight whose running sum exceeds the target.
///
/// For non-negative finite weights the running sums are known in blocks (block sums in f64
/// lanes, added in order), and only the block holding the target is walked; the choice is
/// taken where every comparison it rests on clears the bound on how far those sums lie from
/// the in-order ones. Otherwise the in-order loop decides.
#[must_use]
pub fn draw_at(weights: &[f32], u: f64) -> usize {
    draw_in_blocks(weights, u).unwrap_or_else(|| draw_at_in_order(weights, u))
}

/// The plain draw: `total = Σ w` (in order, f64), `target = u·total`, then the first index
/// with `w > 0` whose running sum of positive weights exceeds `target`; the last positive
/// index if none does (0 if there is none).
#[must_use]
pub fn draw_at_in_order(weights: &[f32], u: f64) -> usize {
    let total: f64 = weights.iter().map(|&w| f64::from(w)).sum();
    let target = u * total;
    let mut cum = 0f64;
    let mut last_positive = 0;
    for (i, &w) in weights.iter().enumerate() {
        if w <= 0.0 {
            continue;
        }
        cum += f64::from(w);
        last_positive = i;
        if target < cum {
            return i;
        }
    }
    last_positive
}

/// [`draw_at`]'s blocked walk; `None` where the in-order loop must decide (few, negative or
/// non-finite weights, or a comparison within the bound).
fn draw_in_blocks(weights: &[f32], u: f64) -> Option<usize> {
    if weights.len() <= 2 * DRAW_BLOCK {
        return None;
    }
    let mut blocks = vec![0f64; weights.len().div_ceil(DRAW_BLOCK)];
    let mut fit = true;
    block_sums(weights, &mut blocks, &mut fit);
    let total: f64 = blocks.iter().sum();
    if !fit || !total.is_finite() || total <= 0.0 {
        return None;
    }
    // Every sum here and every in-order sum of the same weights lies within `tol` (relative)
    // of their exact sum; twice that covers the distance between the two.
    let tol = 2.0 * sum_tolerance(weights.len());
    let target = u * total;
    let (target_lo, target_hi) = (target * (1.0 - 2.0 * tol), target * (1.0 + 2.0 * tol));
    let mut before = 0f64; // running sum through the previous block
    let block = blocks.iter().position(|&s| {
        let found = target < before + s;
        if !found {
            before += s;
        }
        found
    })?;
    let mut cum = before;
    let mut previous = before; // running sum through the previous positive weight
    let start = block * DRAW_BLOCK;
    let end = (start + DRAW_BLOCK).min(weights.len());
    for (i, &w) in weights[start..end].iter().enumerate() {
        if w <= 0.0 {
            continue;
        }
        cum += f64::from(w);
        if target < cum {
            // Certain: the target is below this running sum and not below the previous one.
            let decided =
                target_hi < cum * (1.0 - 2.0 * tol) && target_lo >= previous * (1.0 + 2.0 * tol);
            return decided.then_some(start + i);
        }
        previous = cum;
    }
    None
}

crate::simd::multiversioned! {
    /// Each block's f64 sum of its weights (eight interleaved lanes); `fit` is false where a
    /// weight is negative or not finite.
    fn block_sums(weights: &[f32], blocks: &mut [f64], fit: &mut bool) {
        // A NaN or infinite weight makes its block's sum non-finite; negative ones show in
        // the least weight.
        let mut least = [f32::INFINITY; 8];
        for (w, b) in weights.chunks(DRAW_BLOCK).zip(blocks.iter_mut()) {
            let mut lanes = [0f64; 8];
            let mut eights = w.chunks_exact(8);
            for c in &mut eights {
                for j in 0..8 {
                    lanes[j] += f64::from(c[j]);
                    least[j] = least[j].min(c[j]);
                }
            }
            for (j, &v) in eights.remainder().iter().enumerate() {
                lanes[j] += f64::from(v);
                least[j] = least[j].min(v);
            }
            *b = lanes.iter().sum();
        }
        *fit = least.iter().all(|&l| l >= 0.0) && blocks.iter().all(|b| b.is_finite());
    }
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    use super::*;

    fn seeded(seed: u64) -> ChaCha8Rng {
        ChaCha8Rng::seed_from_u64(seed)
    }

    fn plain_exps(scores: &[f32], max: f32) -> Vec<f32> {
        scores.iter().map(|&s| (f64::from(s - max)).exp() as f32).collect()
    }

    fn bits(v: &[f32]) -> Vec<u32> {
        v.iter().map(|x| x.to_bits()).collect()
    }

    /// Log-prob-like rows: spreads from narrow to wider than f32's exponent range, with −∞
    /// (masked ids), ties and exact zeros.
    fn rows(rng: &mut ChaCha8Rng) -> Vec<Vec<f32>> {
        (0..120)
            .map(|case| {
                let spread = [4.0, 20.0, 60.0, 95.0, 110.0, 300.0][case % 6];
                let n = [6761, 200, 65, 7, 1][case % 5];
                let mut row: Vec<f32> =
                    (0..n).map(|_| (-rng.r#gen::<f64>() * spread) as f32).collect();
                if case % 4 == 0 {
                    row[rng.gen_range(0..n)] = f32::NEG_INFINITY;
                }
                if case % 7 == 0 {
                    row.iter_mut().for_each(|s| *s = s.round());
                }
                row
            })
            .collect()
    }

    #[test]
    fn max_is_the_plain_fold() {
        let mut rng = seeded(3);
        for row in rows(&mut rng) {
            let plain = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            assert_eq!(max(&row).to_bits(), plain.to_bits());
        }
        assert_eq!(max(&[]), f32::NEG_INFINITY);
        assert_eq!(max(&[f32::NAN, -1.0]), -1.0);
    }

    #[test]
    fn exps_are_libms_rounded_bit_for_bit() {
        let mut rng = seeded(5);
        for row in rows(&mut rng) {
            let m = max(&row);
            let mut out = vec![0f32; row.len()];
            exps_below(&row, m, &mut out);
            assert_eq!(bits(&out), bits(&plain_exps(&row, m)), "{} entries", row.len());
        }
    }

    /// Every f32 argument in [−90, 0] at a stride that visits all exponents and many
    /// mantissas ([`exps_agree_everywhere`] runs all of them).
    #[test]
    fn exps_agree_over_the_whole_fast_range() {
        let (lo, hi) = ((-90f32).to_bits(), (-0f32).to_bits());
        let args: Vec<f32> = (hi..=lo).step_by(4099).map(f32::from_bits).collect();
        let mut out = vec![0f32; args.len()];
        exps_below(&args, 0.0, &mut out);
        assert_eq!(bits(&out), bits(&plain_exps(&args, 0.0)));
        assert!(args.len() > 200_000);
    }

    /// Every f32 argument in [−90, 0] (about 1.1e9): minutes in a release build, so run by hand
    /// (`cargo test --release -p lectern-kernels -- --ignored exps_agree_everywhere`).
    #[test]
    #[ignore = "1.1e9 arguments; run by hand in a release build"]
    fn exps_agree_everywhere() {
        let (lo, hi) = ((-90f32).to_bits(), (-0f32).to_bits());
        let mut args = Vec::with_capacity(1 << 20);
        let mut out = vec![0f32; 1 << 20];
        let mut start = hi;
        while start <= lo {
            let end = (start + (1 << 20) - 1).min(lo);
            args.clear();
            args.extend((start..=end).map(f32::from_bits));
            exps_below(&args, 0.0, &mut out[..args.len()]);
            for (&x, &y) in args.iter().zip(&out) {
                assert_eq!(y.to_bits(), (f64::from(x).exp() as f32).to_bits(), "exp({x})");
            }
            start = end + 1;
        }
    }

    /// The open check fires near rounding boundaries (so libm decides there), rarely elsewhere.
    #[test]
    fn exps_open_rarely() {
        let args: Vec<f64> = (0..1_000_000).map(|i| -87.0 * f64::from(i) / 1e6).collect();
        let open = args.iter().filter(|&&x| exp_or_open(x).1).count();
        assert!(open < 100, "{open} open of a million");
        assert!(exp_or_open(-88.0).1 && exp_or_open(f64::NAN).1 && exp_or_open(0.5).1);
    }

    #[test]
    fn sums_are_the_in_order_sum_bit_for_bit() {
        let mut rng = seeded(7);
        for row in rows(&mut rng) {
            let m = max(&row);
            let exps = plain_exps(&row, m);
            let plain = exps.iter().map(|&v| f64::from(v)).sum::<f64>() as f32;
            assert_eq!(f64_sum_as_f32(&exps).to_bits(), plain.to_bits());
        }
        // Cancellation, signed zeros, an empty slice, NaN: the in-order loop decides.
        for v in [&[1e8, 1.0, -1e8][..], &[-0.0, -0.0], &[], &[f32::NAN, 1.0], &[0.1; 3]] {
            let plain = v.iter().map(|&x| f64::from(x)).sum::<f64>() as f32;
            assert_eq!(f64_sum_as_f32(v).to_bits(), plain.to_bits(), "{v:?}");
        }
    }

    /// Draws over vocabulary-sized weights choose what the in-order loop chooses, including
    /// targets placed on a running sum's rounding edge, zero and negative weights.
    #[test]
    fn draws_choose_what_the_in_order_loop_chooses() {
        let mut rng = seeded(11);
        let mut decided = 0;
        for (case, row) in rows(&mut rng).into_iter().enumerate() {
            let m = max(&row);
            let mut weights = plain_exps(&row, m);
            let sum = weights.iter().map(|&v| f64::from(v)).sum::<f64>() as f32;
            weights.iter_mut().for_each(|w| *w /= sum);
            if case % 9 == 0 && weights.len() > 3 {
                weights[2] = -0.25;
            }
            // Uniform draws, and ones that put the target on a running sum.
            let total: f64 = weights.iter().map(|&w| f64::from(w)).sum();
            let mut cum = 0.0;
            let mut us: Vec<f64> = (0..50).map(|_| rng.r#gen::<f64>()).collect();
            for &w in weights.iter().take(300) {
                cum += f64::from(w.max(0.0));
                us.push((cum / total).min(0.999_999_999));
            }
            us.extend([0.0, 0.999_999_999_999]);
            for u in us {
                assert_eq!(draw_at(&weights, u), draw_at_in_order(&weights, u), "case {case}");
                decided += usize::from(draw_in_blocks(&weights, u).is_some());
            }
        }
        // The blocked walk serves the large rows without a negative weight (the others, and
        // targets put on a running sum, go to the in-order loop).
        assert!(decided > 2000, "the blocked walk decided {decided} draws");
    }

    #[test]
    fn draws_never_pick_a_zero_weight() {
        let mut weights = vec![0f32; 1000];
        weights[10] = 0.5;
        weights[900] = 0.5;
        for i in 0..100 {
            let pick = draw_at(&weights, f64::from(i) / 100.0);
            assert!(pick == 10 || pick == 900);
        }
    }
}
