//! Fused softmax attention for the DiT on the CPU.
//!
//! Candle's CPU path materialises the scores of all heads (b × h × t × t floats: 322 MB for a
//! 1588-frame CFG pair) and runs each head's two matmuls one after another, each split over
//! the threads: products too small to keep the threads busy at flow sizes. Here
//! every (batch, head, block of [`QUERY_BLOCK`] queries) is one task on the rayon pool (the
//! pool candle's own kernels use): its scores (`QUERY_BLOCK × t`, under 1 MB at the longest
//! groups, so they stay in cache) come from one single-threaded gemm, the softmax runs in
//! place, and a second gemm writes the output rows straight into the `(b, t, h·dh)` layout
//! the output projection reads.
//!
//! On CPUs with AVX-512 the f32 core is `crate::attention::avx512` instead, on other CPUs with
//! AVX2 and FMA `crate::attention::avx2`: the same tasks, the keys packed once per head, on
//! one register-blocked core (`crate::attention::blocked`) written once over an
//! instruction-set trait (`crate::attention::lanes`) and built at the two widths. This
//! module's portable core serves the other CPUs, heads wider than 64 values, and the bf16
//! option's rounded products where the CPU has no bf16 kernel.
//!
//! Same arithmetic as the materialised path (q pre-scaled; max-subtracted exp; f32 sums;
//! divide by the sum), so the two agree to f32 rounding (tests below; every DiT, flow and
//! end-to-end fixture gate runs through the AVX-512 or the AVX2 core where the CPU has one,
//! and each core's tests compare it with this one).

// Raw views into candle CPU storage for the fused attention (each use has a SAFETY note).
#![allow(unsafe_code)]

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
#[cfg(target_arch = "x86_64")]
mod blocked;
#[cfg(all(test, target_arch = "x86_64"))]
mod golden;
#[cfg(target_arch = "x86_64")]
mod lanes;
#[cfg(target_arch = "x86_64")]
mod tasks;

use candle::{DType, Device, Storage, Tensor};
use gemm::{Parallelism, gemm};
use rayon::prelude::*;

use crate::gemm::bf16::{self as bf16_gemm, PackedB};
use crate::shared_out::OutPtr;

/// Query rows per task: 64 rows × 1588 frames × 4 B = 406 KB of scores at a typical group,
/// within a core's L2. (Other block sizes are no faster: docs/refutations.md.)
pub const QUERY_BLOCK: usize = 64;

/// Softmax attention over all frames on the CPU: q (pre-scaled), k, v `(b, h, t, dh)` f32 →
/// `(b, t, h·dh)`.
///
/// For heads of up to 64 values, `crate::attention::avx512` on AVX-512 CPUs and
/// `crate::attention::avx2` on the other CPUs with AVX2 and FMA; elsewhere
/// [`attend_portable`].
pub fn attend(q: &Tensor, k: &Tensor, v: &Tensor) -> candle::Result<Tensor> {
    let (_, core) = f32_core_for(q.dim(3)?);
    with_heads(q, k, v, core)
}

/// Which core [`attend`] runs for heads of `dh` values on this CPU: `"avx512"`, `"avx2"` or
/// `"portable"` (what `bench --stage flow` reports).
pub fn f32_core(dh: usize) -> &'static str {
    f32_core_for(dh).0
}

/// A core on contiguous values: q (pre-scaled), k, v `(b, h, t, dh)` → `(b, t, h·dh)`.
type Core = fn(Heads, &[f32], &[f32], &[f32]) -> Vec<f32>;

/// The f32 core for heads of `dh` values on this CPU, with its name: the widest
/// register-blocked core the CPU has, else the portable one.
fn f32_core_for(dh: usize) -> (&'static str, Core) {
    #[cfg(target_arch = "x86_64")]
    if crate::attention::avx512::supported(dh) {
        return ("avx512", crate::attention::avx512::attend);
    }
    #[cfg(target_arch = "x86_64")]
    if crate::attention::avx2::supported(dh) {
        return ("avx2", crate::attention::avx2::attend);
    }
    let _ = dh; // read by the x86 checks only
    ("portable", portable_core)
}

/// [`attend`] on the portable core (the `gemm` crate's products) whatever the CPU: the
/// reference for the AVX-512 core, in the tests and `bench --stage flow`.
pub fn attend_portable(q: &Tensor, k: &Tensor, v: &Tensor) -> candle::Result<Tensor> {
    with_heads(q, k, v, portable_core)
}

/// The portable core on contiguous `(b, h, t, dh)` values.
pub(super) fn portable_core(heads: Heads, qs: &[f32], ks: &[f32], vs: &[f32]) -> Vec<f32> {
    attend_f32_products(heads, qs, ks, vs, false)
}

/// [`attend`] for `--flow-matmul bf16`: q, k, v and the softmax's probabilities rounded to bf16,
/// both products accumulated in f32 (what PyTorch's bf16 autocast does to the attention). On
/// a bf16 micro-kernel ([`crate::gemm::bf16`]: AMX or AVX512-BF16) where the CPU has one;
/// elsewhere the same roundings through the f32 products, so that the option's deviation is
/// measured on any machine (the two differ in the order of the f32 sums only).
pub fn attend_bf16(q: &Tensor, k: &Tensor, v: &Tensor) -> candle::Result<Tensor> {
    if bf16_gemm::available() {
        return with_heads(q, k, v, attend_packed);
    }
    attend_bf16_rounded(q, k, v)
}

/// [`attend_bf16`] without a bf16 micro-kernel: the roundings, then the f32 products.
fn attend_bf16_rounded(q: &Tensor, k: &Tensor, v: &Tensor) -> candle::Result<Tensor> {
    let (q, k, v) = (
        crate::gemm::bf16_weight::round(q)?,
        crate::gemm::bf16_weight::round(k)?,
        crate::gemm::bf16_weight::round(v)?,
    );
    with_heads(&q, &k, &v, |heads, qs, ks, vs| attend_f32_products(heads, qs, ks, vs, true))
}

/// `(b, h, t, dh)`.
type Heads = (usize, usize, usize, usize);

/// Checks q, k, v `(b, h, t, dh)` alike and runs `f` on their contiguous f32 values.
fn with_heads(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    f: impl FnOnce(Heads, &[f32], &[f32], &[f32]) -> Vec<f32>,
) -> candle::Result<Tensor> {
    let (b, h, t, dh) = q.dims4()?;
    for x in [k, v] {
        if x.dims4()? != (b, h, t, dh) {
            candle::bail!("cpu attention: q {:?} but k/v {:?}", q.dims(), x.dims());
        }
    }
    let (q, k, v) = (q.contiguous()?, k.contiguous()?, v.contiguous()?);
    let (qg, ql) = q.storage_and_layout();
    let (kg, kl) = k.storage_and_layout();
    let (vg, vl) = v.storage_and_layout();
    let (Storage::Cpu(qs), Storage::Cpu(ks), Storage::Cpu(vs)) = (&*qg, &*kg, &*vg) else {
        candle::bail!("cpu attention needs CPU tensors");
    };
    let n = b * h * t * dh;
    let qs = &qs.as_slice::<f32>()?[ql.start_offset()..][..n];
    let ks = &ks.as_slice::<f32>()?[kl.start_offset()..][..n];
    let vs = &vs.as_slice::<f32>()?[vl.start_offset()..][..n];
    let out = f((b, h, t, dh), qs, ks, vs);
    drop((qg, kg, vg));
    Tensor::from_vec(out, (b, t, h * dh), &Device::Cpu)
}

/// Both products through the `gemm` crate. With `bf16_weights` the softmax's weights are
/// left unnormalised and rounded to bf16 ([`exp_row_rounded`]), and each output row is divided by its
/// sum after `P·V` (the inputs are already rounded, by the caller): what [`attend_packed`]
/// computes, in f32 products.
fn attend_f32_products(
    (b, h, t, dh): Heads,
    qs: &[f32],
    ks: &[f32],
    vs: &[f32],
    bf16_weights: bool,
) -> Vec<f32> {
    let mut out = vec![0f32; b * t * h * dh];
    let out_ptr = OutPtr::new(&mut out);
    let blocks = t.div_ceil(QUERY_BLOCK);
    let (t_i, dh_i, hdh_i) = (t as isize, dh as isize, (h * dh) as isize);
    (0..b * h * blocks).into_par_iter().for_each_init(
        || vec![0f32; QUERY_BLOCK * t],
        |scores, task| {
            let (bh, block) = (task / blocks, task % blocks);
            let (bi, hi) = (bh / h, bh % h);
            let r0 = block * QUERY_BLOCK;
            let rows = QUERY_BLOCK.min(t - r0);
            let head = bh * t * dh;
            let q_rows = &qs[head + r0 * dh..head + (r0 + rows) * dh];
            let (k_head, v_head) = (&ks[head..head + t * dh], &vs[head..head + t * dh]);
            let s = &mut scores[..rows * t];
            let out_rows = (bi * t + r0) * h * dh + hi * dh;
            // S = Q·Kᵀ: Kᵀ is K (t, dh) read with its strides swapped.
            let (q_m, k_t) = ((q_rows.as_ptr(), dh_i, 1), (k_head.as_ptr(), 1, dh_i));
            // SAFETY: the slices above bound every element addressed: Q is `q_rows` (rows × dh,
            // row stride dh), Kᵀ element (d, j) is `k_head[d + j·dh]` < t·dh, and S is `s`
            // (rows × t, row stride t), this task's own scratch, which the inputs do not alias.
            unsafe { matmul(rows, t, dh, s.as_mut_ptr(), t_i, q_m, k_t) };
            let mut sums = [1f32; QUERY_BLOCK];
            if bf16_weights {
                for (row, sum) in s.chunks_exact_mut(t).zip(&mut sums) {
                    *sum = exp_row_rounded(row);
                }
            } else {
                softmax_rows(s, t);
            }
            // O = P·V, straight into the (b, t, h·dh) output.
            let (p_m, v_m) = ((s.as_ptr(), t_i, 1), (v_head.as_ptr(), dh_i, 1));
            // SAFETY: P is `s` (rows × t) and V is `v_head` (t × dh). The destination is rows
            // r0..r0 + rows (row stride h·dh), columns hi·dh..(hi + 1)·dh of batch item bi of
            // `out` (b·t·h·dh elements): its last element, (bi·t + r0 + rows − 1)·h·dh + hi·dh +
            // dh − 1, is below (bi + 1)·t·h·dh. No other task writes that block (tasks differ in
            // (bi, hi) or in their query rows), and `out` lives until every task has ended.
            unsafe { matmul(rows, dh, t, out_ptr.get().add(out_rows), hdh_i, p_m, v_m) };
            if bf16_weights {
                for (r, sum) in sums.iter().take(rows).enumerate() {
                    // SAFETY: row r0 + r (r < rows), columns hi·dh..(hi + 1)·dh of batch item bi
                    // of `out`: dh initialised f32s inside the block this task alone writes (see
                    // the product above, which has returned, so no other reference to them
                    // exists while `row` lives).
                    let row = unsafe {
                        std::slice::from_raw_parts_mut(out_ptr.get().add(out_rows + r * h * dh), dh)
                    };
                    row.iter_mut().for_each(|o| *o /= sum);
                }
            }
        },
    );
    out
}

/// A query block's buffers for bf16 products: its q rows and probabilities in bf16 (rows
/// [`PackedB::a_stride`] apart), its scores and output.
struct PackedScratch {
    q: Vec<u16>,
    scores: Vec<f32>,
    probs: Vec<u16>,
    o: Vec<f32>,
}

/// Both products on the bf16 micro-kernel: each head's `Kᵀ` and `V` packed once (tiles,
/// [`bf16_gemm::PackedB`]), then per query block `S = Q·Kᵀ` (f32); the softmax's weights
/// `exp(s − max)` go to bf16 straight from the exponential, unnormalised (one pass instead of
/// exp, sum, divide and convert), and each row of `O = P·V` is divided by its f32 sum (as flash
/// attention does).
fn attend_packed((b, h, t, dh): Heads, qs: &[f32], ks: &[f32], vs: &[f32]) -> Vec<f32> {
    if b * h * t * dh == 0 {
        return vec![0.0; b * t * h * dh];
    }
    let packed: Vec<(PackedB, PackedB)> = (0..b * h)
        .into_par_iter()
        .map(|bh| {
            let (k_head, v_head) = (&ks[bh * t * dh..][..t * dh], &vs[bh * t * dh..][..t * dh]);
            // Kᵀ (dh, t): element (i, j) is K[j, i]; V (t, dh) row-major.
            (PackedB::new(k_head, dh, t, 1, dh), PackedB::new(v_head, t, dh, dh, 1))
        })
        .collect();
    let (kt0, v0) = &packed[0];
    let (dh_pad, t_pad, o_pad) = (kt0.k_pad(), kt0.n_pad(), v0.n_pad());
    let (q_stride, p_stride) = (kt0.a_stride(), v0.a_stride());
    debug_assert_eq!(v0.k_pad(), t_pad);
    let mut out = vec![0f32; b * t * h * dh];
    let out_ptr = OutPtr::new(&mut out);
    let blocks = t.div_ceil(QUERY_BLOCK);
    (0..b * h * blocks).into_par_iter().for_each_init(
        || PackedScratch {
            q: vec![0; QUERY_BLOCK * q_stride],
            scores: vec![0.0; QUERY_BLOCK * t_pad],
            probs: vec![0; QUERY_BLOCK * p_stride],
            o: vec![0.0; QUERY_BLOCK * o_pad],
        },
        |sc, task| {
            let (bh, block) = (task / blocks, task % blocks);
            let (bi, hi) = (bh / h, bh % h);
            let r0 = block * QUERY_BLOCK;
            let rows = QUERY_BLOCK.min(t - r0);
            let (kt, v) = &packed[bh];
            let q_rows = &qs[bh * t * dh + r0 * dh..][..rows * dh];
            bf16_gemm::rows_to_bf16_serial(&mut sc.q, q_rows, (rows, dh), dh, dh_pad);
            kt.product_serial(&sc.q, &mut sc.scores);
            let mut sums = [1f32; QUERY_BLOCK];
            let rows_in =
                sc.scores.chunks_exact_mut(t_pad).zip(sc.probs.chunks_exact_mut(p_stride));
            for ((row, probs), sum) in rows_in.take(rows).zip(&mut sums) {
                *sum = exp_row_to_bf16(&mut row[..t], probs);
            }
            sc.probs[rows * p_stride..].fill(0);
            v.product_serial(&sc.probs, &mut sc.o);
            for (r, (o, sum)) in sc.o.chunks_exact(o_pad).zip(sums).take(rows).enumerate() {
                // SAFETY: this task alone writes row r0 + r, columns hi·dh..(hi+1)·dh of batch
                // item bi of `out` (b·t·h·dh elements, alive until after the loop).
                let dst = unsafe {
                    let at = out_ptr.get().add((bi * t + r0 + r) * h * dh + hi * dh);
                    std::slice::from_raw_parts_mut(at, dh)
                };
                for (d, &v) in dst.iter_mut().zip(o) {
                    *d = v / sum;
                }
            }
        },
    );
    out
}

/// A strided f32 matrix for gemm: (pointer, row stride, column stride), in elements.
type Strided = (*const f32, isize, isize);

/// `dst (m × n, row stride dst_rs) = lhs (m × k) · rhs (k × n)`, single-threaded (the tasks
/// are the parallelism).
///
/// # Safety
/// Every element addressed through the pointers and strides must be in bounds.
unsafe fn matmul(
    m: usize,
    n: usize,
    k: usize,
    dst: *mut f32,
    dst_rs: isize,
    lhs: Strided,
    rhs: Strided,
) {
    // SAFETY: forwarded from the caller.
    unsafe {
        gemm(
            m,
            n,
            k,
            dst,
            1,
            dst_rs,
            false,
            lhs.0,
            lhs.2,
            lhs.1,
            rhs.0,
            rhs.2,
            rhs.1,
            0.0,
            1.0,
            false,
            false,
            false,
            Parallelism::None,
        );
    }
}

/// The softmax's unnormalised weights `exp(s − max)` of one row of scores, in place; returns
/// their sum ([`sum_f32`]). Separate passes, each of which vectorises (one pass that also
/// rounds to bf16 and sums per element stays scalar: docs/refutations.md).
#[inline(always)]
fn exp_in_place(row: &mut [f32]) -> f32 {
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    for x in row.iter_mut() {
        *x = exp_fast(*x - max);
    }
    sum_f32(row)
}

crate::simd::multiversioned! {
    /// [`exp_in_place`], then the weights rounded to bf16 into `probs` (its padding after the
    /// row zeroed); the sum in `sum[0]`.
    fn exp_row_to_bf16_into(row: &mut [f32], probs: &mut [u16], sum: &mut [f32]) {
        sum[0] = exp_in_place(row);
        let (head, pad) = probs.split_at_mut(row.len());
        for (p, &e) in head.iter_mut().zip(row.iter()) {
            *p = bf16_gemm::bf16_bits(e);
        }
        pad.fill(0);
    }
}

crate::simd::multiversioned! {
    /// [`exp_in_place`], the weights rounded to bf16 and widened back in place; the sum in
    /// `sum[0]`.
    fn exp_row_rounded_into(row: &mut [f32], sum: &mut [f32]) {
        sum[0] = exp_in_place(row);
        for x in row.iter_mut() {
            *x = f32::from_bits(u32::from(bf16_gemm::bf16_bits(*x)) << 16);
        }
    }
}

/// [`exp_row_to_bf16_into`]: returns the sum. On AVX512-BF16 (every CPU with AMX has it) the
/// same weights to within one bf16 step ([`avx512_weights::exp_row_to_bf16`]).
fn exp_row_to_bf16(row: &mut [f32], probs: &mut [u16]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if avx512_weights::supported() {
        // SAFETY: the CPU has the features the function is compiled for (just checked).
        return unsafe { avx512_weights::exp_row_to_bf16(row, probs) };
    }
    let mut sum = [0f32];
    exp_row_to_bf16_into(row, probs, &mut sum);
    sum[0]
}

/// The bf16 softmax weights of a row in AVX-512 code: each weight `exp(s − max)` is computed,
/// added to the sum and stored as bf16 (`VCVTNEPS2BF16`) while in a register, where the
/// portable loop makes separate passes for the exponentials, the sum and the rounding, the last
/// in integer operations, and finds the maximum one element at a time (a reduction the
/// vectoriser leaves scalar).
///
/// The portable pass would be the largest part of the bf16 attention core, for two reasons
/// the code below removes:
/// * the maximum and the sum were each one chain of dependent vector operations (a maximum, or
///   two additions, per 16 weights, each waiting for the last): four chains now;
/// * the exponential was the f32 core's [`crate::attention::blocked::exp`], which repeats the
///   portable [`exp_fast`]'s separate multiplies and adds and its integer scaling so that the
///   f32 core stays bit for bit the portable one. The weights are rounded to bf16 (2⁻⁹
///   relative) anyway, so here [`exp16_fma`]: the same reduction and polynomial in fused
///   multiply-adds, scaled by `VSCALEFPS`; a few f32 ulps from `exp_fast`, which can move a
///   weight's bf16 rounding by one bf16 step (tested against f64 below).
#[cfg(target_arch = "x86_64")]
mod avx512_weights {
    use std::arch::x86_64::{
        __m256bh, __m256i, __m512, _mm256_storeu_si256, _mm512_add_ps, _mm512_cvtneps_pbh,
        _mm512_fmadd_ps, _mm512_loadu_ps, _mm512_mask_add_ps, _mm512_mask_max_ps,
        _mm512_maskz_loadu_ps, _mm512_max_ps, _mm512_mul_ps, _mm512_reduce_add_ps,
        _mm512_reduce_max_ps, _mm512_roundscale_ps, _mm512_scalef_ps, _mm512_set1_ps,
        _mm512_setzero_ps, _mm512_sub_ps,
    };

    use super::{EXP_POLY, LN2_HI, LN2_LO};

    pub(super) fn supported() -> bool {
        crate::simd::has_avx512_bf16()
    }

    /// 16 bf16 values as plain bits.
    fn bits(v: __m256bh) -> __m256i {
        // SAFETY: both are 32 plain bytes.
        unsafe { std::mem::transmute::<__m256bh, __m256i>(v) }
    }

    /// `eˣ` for `x ≤ 0` on 16 lanes: [`super::exp_fast`]'s reduction `x = n·ln2 + r` and
    /// polynomial, in fused multiply-adds, and `p · 2ⁿ` in one `VSCALEFPS`, which also takes
    /// the results below f32's normal range smoothly to 0 (the input is clamped at −100, where
    /// `eˣ` is 0 in f32 and in bf16).
    #[inline]
    #[target_feature(enable = "avx512f")]
    pub(super) fn exp16_fma(x: __m512) -> __m512 {
        let c = _mm512_set1_ps;
        let xc = _mm512_max_ps(x, c(-100.0));
        // Round to nearest (imm 0: nearest even, integer; bit 3: no inexact exception).
        let n = _mm512_roundscale_ps::<0x08>(_mm512_mul_ps(xc, c(std::f32::consts::LOG2_E)));
        let r = _mm512_fmadd_ps(n, c(-LN2_HI), xc);
        let r = _mm512_fmadd_ps(n, c(LN2_LO), r);
        let mut p = c(EXP_POLY[0]);
        // The polynomial, then 1 + r + r²·p as two more steps of Horner's rule.
        for &k in EXP_POLY[1..].iter().chain(&[1.0, 1.0]) {
            p = _mm512_fmadd_ps(p, r, c(k));
        }
        _mm512_scalef_ps(p, n)
    }

    /// The weights `exp(s − max)` of `row` rounded to bf16 into `probs` (its padding after the
    /// row zeroed); returns their f32 sum.
    ///
    /// # Safety
    /// The CPU has AVX512F and AVX512-BF16 ([`supported`]).
    #[target_feature(enable = "avx512f,avx512bf16")]
    pub(super) unsafe fn exp_row_to_bf16(row: &[f32], probs: &mut [u16]) -> f32 {
        let n = row.len();
        assert!(probs.len() >= n, "bf16 weights: {} slots for {n} weights", probs.len());
        let (body, tail) = (n - n % 16, n % 16);
        let tail_mask = ((1u32 << tail) - 1) as u16;
        let (src, dst) = (row.as_ptr(), probs.as_mut_ptr());
        // SAFETY: every call below passes a multiple of 16 with i + 16 ≤ body ≤ n (the loops
        // stop at `body`, n rounded down to a multiple of 16), so lanes i..i + 16 lie in `row`;
        // `loadu` needs no alignment.
        let load = |i: usize| unsafe { _mm512_loadu_ps(src.add(i)) };
        // SAFETY: `tail_mask` has the low n − body bits set, so only lanes body..n of `row` are
        // read; masked-off lanes are not accessed and cannot fault, so with tail = 0 nothing is
        // read (and `src.add(body)` is at most one past the end).
        let last = unsafe { _mm512_maskz_loadu_ps(tail_mask, src.add(body)) };
        let mut m = [_mm512_set1_ps(f32::NEG_INFINITY); 4];
        let mut i = 0;
        while i + 64 <= body {
            for (j, m) in m.iter_mut().enumerate() {
                *m = _mm512_max_ps(*m, load(i + 16 * j));
            }
            i += 64;
        }
        while i < body {
            m[0] = _mm512_max_ps(m[0], load(i));
            i += 16;
        }
        m[1] = _mm512_mask_max_ps(m[1], tail_mask, m[1], last);
        let max = _mm512_max_ps(_mm512_max_ps(m[0], m[1]), _mm512_max_ps(m[2], m[3]));
        let vm = _mm512_set1_ps(_mm512_reduce_max_ps(max));
        let weights = |x: __m512| exp16_fma(_mm512_sub_ps(x, vm));
        // SAFETY: called with the offsets `load` takes (multiples of 16, i + 16 ≤ body ≤ n ≤
        // probs.len(), asserted above): the 16 bf16 values (32 bytes, an unaligned store) go
        // to probs[i..i + 16], written only through `dst` until the last call.
        let store = |i: usize, e: __m512| unsafe {
            _mm256_storeu_si256(dst.add(i).cast(), bits(_mm512_cvtneps_pbh(e)))
        };
        let mut acc = [_mm512_setzero_ps(); 4];
        let mut i = 0;
        while i + 64 <= body {
            for (j, acc) in acc.iter_mut().enumerate() {
                let e = weights(load(i + 16 * j));
                *acc = _mm512_add_ps(*acc, e);
                store(i + 16 * j, e);
            }
            i += 64;
        }
        while i < body {
            let e = weights(load(i));
            acc[0] = _mm512_add_ps(acc[0], e);
            store(i, e);
            i += 16;
        }
        if tail > 0 {
            let e = weights(last);
            acc[1] = _mm512_mask_add_ps(acc[1], tail_mask, acc[1], e);
            let mut lanes = [0u16; 16];
            // SAFETY: 16 bf16 values into a 16-value array.
            unsafe { _mm256_storeu_si256(lanes.as_mut_ptr().cast(), bits(_mm512_cvtneps_pbh(e))) };
            probs[body..n].copy_from_slice(&lanes[..tail]);
        }
        probs[n..].fill(0);
        let total = _mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), _mm512_add_ps(acc[2], acc[3]));
        _mm512_reduce_add_ps(total)
    }
}

/// [`exp_row_rounded_into`]: returns the sum.
fn exp_row_rounded(row: &mut [f32]) -> f32 {
    let mut sum = [0f32];
    exp_row_rounded_into(row, &mut sum);
    sum[0]
}

crate::simd::multiversioned! {
    /// [`softmax_in_place`] over rows of `t` scores, compiled for this CPU's vector extension:
    /// with SSE2 alone the softmax dominates the attention core's time.
    fn softmax_rows(scores: &mut [f32], t: usize) {
        for row in scores.chunks_exact_mut(t) {
            softmax_in_place(row);
        }
    }
}

/// `exp(x − max) / Σ` over one row of scores.
#[inline(always)]
fn softmax_in_place(row: &mut [f32]) {
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    for x in row.iter_mut() {
        *x = exp_fast(*x - max);
    }
    let sum = sum_f32(row);
    for x in row.iter_mut() {
        *x /= sum;
    }
}

/// Eight interleaved partial sums (vectorisable; the order differs from a sequential sum by
/// rounding only).
#[inline(always)]
fn sum_f32(xs: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let mut chunks = xs.chunks_exact(8);
    for c in &mut chunks {
        for (a, x) in acc.iter_mut().zip(c) {
            *a += x;
        }
    }
    let tail: f32 = chunks.remainder().iter().sum();
    acc.iter().sum::<f32>() + tail
}

/// `ln 2 = LN2_HI − LN2_LO` (Cody–Waite): `n · LN2_HI` is exact for every `n` of f32's
/// exponent range, so `x − n·LN2_HI + n·LN2_LO` loses nothing to the reduction.
pub(crate) const LN2_HI: f32 = 0.693_359_4;
pub(crate) const LN2_LO: f32 = 2.121_944_4e-4;
/// Cephes' polynomial `p(r)` with `eʳ ≈ 1 + r + r²·p(r)` for |r| ≤ ln2/2, highest degree
/// first: [`exp_fast`] and its vector forms evaluate it by Horner's rule.
pub(crate) const EXP_POLY: [f32; 6] =
    [1.987_569_1e-4, 1.398_199_9e-3, 8.333_452e-3, 4.166_579_6e-2, 1.666_666_5e-1, 0.5];

/// `eˣ` for `x ≤ 88` (max-subtracted scores, Mish's clamped input), branch-free so the loops
/// using it vectorise;
/// libm's `expf` is a call per element, which keeps the loops scalar. Cody–Waite
/// reduction `x = n·ln2 + r`, |r| ≤ ln2/2, Cephes' degree-6 polynomial for `eʳ`, then `2ⁿ`
/// through the exponent bits: within 2 ulp of `expf` (tested below). Below −87 (where `eˣ`
/// leaves the normal range) it returns 0. `n` is read back as an integer from the bits of the
/// rounding sum, not with `as i32` (a saturating conversion that kept the loop scalar).
#[inline(always)]
pub(crate) fn exp_fast(x: f32) -> f32 {
    const ROUND: f32 = 12_582_912.0; // 1.5·2²³: adding and subtracting rounds to an integer
    let xc = x.max(-87.0);
    let shifted = xc * std::f32::consts::LOG2_E + ROUND;
    let n = shifted - ROUND;
    let r = xc - n * LN2_HI + n * LN2_LO;
    let mut p = EXP_POLY[0];
    for c in &EXP_POLY[1..] {
        p = p * r + c;
    }
    let y = p * r * r + r + 1.0;
    // n (−126 ≤ n ≤ 127) in the low mantissa bits of `shifted`: its bits minus ROUND's.
    let n_int = (shifted.to_bits() as i32).wrapping_sub(ROUND.to_bits() as i32);
    let scaled = y * f32::from_bits((n_int.wrapping_add(127) << 23) as u32);
    if x < -87.0 { 0.0 } else { scaled }
}

/// Whether [`attend`] serves these tensors (CPU, f32).
pub fn applies(q: &Tensor) -> bool {
    q.device().is_cpu() && q.dtype() == DType::F32
}

/// The checks every register-blocked f32 core passes against the portable one
/// ([`crate::attention::avx512`], [`crate::attention::avx2`]).
#[cfg(test)]
pub(super) mod core_checks {
    use super::{Core, portable_core};

    /// `len` values uniform in [−scale, scale), reproducible from `seed`.
    pub fn seeded(len: usize, seed: u64, scale: f32) -> Vec<f32> {
        let values = lectern_test_support::tensors::seeded(&[len], seed).to_vec1::<f32>().unwrap();
        values.into_iter().map(|x| x * scale).collect()
    }

    /// Against the portable core (the `gemm` crate's products, the weights divided): the same
    /// values to f32 rounding, on every head width the cores serve and on lengths that are not
    /// whole panels, kernel blocks or query blocks.
    pub fn matches_the_portable_core(core: Core) {
        for &(b, h, t, dh) in &[
            (2, 3, 77, 16),
            (1, 2, 5, 64),
            (2, 2, 65, 32),
            (1, 2, 300, 48),
            (2, 2, 131, 64),
            (1, 1, 49, 64),
        ] {
            for (scale, tol) in [(1.0 / (dh as f32).sqrt(), 2e-6), (1.5, 1e-5)] {
                let n = b * h * t * dh;
                let (q, k, v) = (seeded(n, 1, scale), seeded(n, 2, 1.0), seeded(n, 3, 1.0));
                let ours = core((b, h, t, dh), &q, &k, &v);
                let portable = portable_core((b, h, t, dh), &q, &k, &v);
                let worst =
                    ours.iter().zip(&portable).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
                assert!(worst < tol, "({b}, {h}, {t}, {dh}) scale {scale}: max |Δ| {worst:e}");
                assert!(ours.iter().any(|&x| x != 0.0));
            }
        }
    }

    /// A query block's values come from one task whatever the threads: the same bits on 1, 2
    /// and 3 threads (a take does not depend on `--threads`). `t` should span query blocks.
    pub fn the_same_bits_on_any_thread_count(core: Core, t: usize) {
        let (b, h, dh) = (2, 3, 64);
        let n = b * h * t * dh;
        let (q, k, v) = (seeded(n, 4, 0.125), seeded(n, 5, 1.0), seeded(n, 6, 1.0));
        let on = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            let out = pool.install(|| core((b, h, t, dh), &q, &k, &v));
            out.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
        };
        let one = on(1);
        assert_eq!(one, on(2));
        assert_eq!(one, on(3));
    }

    /// A core's weights pass against [`super::exp_fast`] per value, and its sum against the
    /// plain sum, on rows around its vector width.
    pub fn weights_follow_exp_fast(weights_in_place: impl Fn(&mut [f32]) -> f32) {
        for len in [1usize, 7, 8, 9, 15, 16, 17, 33, 1208] {
            let row: Vec<f32> =
                (0..len).map(|i| ((i * 7919) % 1000) as f32 / 9.0 - 100.0).collect();
            let mut ours = row.clone();
            let sum = weights_in_place(&mut ours);
            let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let want: Vec<f32> = row.iter().map(|&x| super::exp_fast(x - max)).collect();
            assert_eq!(ours, want, "row of {len}: the weights differ from exp_fast");
            let plain: f32 = want.iter().sum();
            assert!((sum - plain).abs() <= 1e-5 * plain, "row of {len}: sum {sum} vs {plain}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lectern_test_support::optional::cpu_or_skip;
    use lectern_test_support::tensors::max_abs_diff;

    /// Seeded unit-variance values (uniform on ±√3), times `scale`, for `(b, h, t, dh)` heads.
    fn seeded(shape: (usize, usize, usize, usize), seed: u64, scale: f32) -> Tensor {
        let dims = [shape.0, shape.1, shape.2, shape.3];
        lectern_test_support::tensors::seeded_unit(&dims, seed, scale)
    }

    /// `attend` runs `core` (its bits, not the portable core's: they differ in the last bits,
    /// the division comes after `P·V`).
    #[cfg(target_arch = "x86_64")]
    fn assert_attend_runs(core: Core) {
        let shape = (2, 4, QUERY_BLOCK + 9, 64);
        let q = seeded(shape, 7, 0.125);
        let (k, v) = (seeded(shape, 8, 1.0), seeded(shape, 9, 1.0));
        let bits = |t: &Tensor| -> Vec<u32> {
            t.flatten_all().unwrap().to_vec1::<f32>().unwrap().iter().map(|x| x.to_bits()).collect()
        };
        let values = |t: &Tensor| t.flatten_all().unwrap().to_vec1::<f32>().unwrap();
        let direct = core(shape, &values(&q), &values(&k), &values(&v));
        let routed = bits(&attend(&q, &k, &v).unwrap());
        assert_eq!(routed, direct.iter().map(|x| x.to_bits()).collect::<Vec<_>>());
        assert_ne!(
            routed,
            bits(&attend_portable(&q, &k, &v).unwrap()),
            "the same bits as the portable core"
        );
    }

    /// On a CPU with AVX-512, the AVX-512 core.
    #[test]
    #[cfg(target_arch = "x86_64")]
    fn attend_runs_the_avx512_core_where_the_cpu_has_it() {
        use crate::attention::avx512 as attention_avx512;
        if !cpu_or_skip(&["avx512f"], attention_avx512::supported(64)) {
            return;
        }
        assert_attend_runs(attention_avx512::attend);
    }

    /// On a CPU with AVX2 and FMA but not AVX-512, the AVX2 core.
    #[test]
    #[cfg(target_arch = "x86_64")]
    fn attend_runs_the_avx2_core_where_the_cpu_has_it_and_no_avx512() {
        use crate::attention::{avx2 as attention_avx2, avx512 as attention_avx512};
        if !cpu_or_skip(&["avx2", "fma"], attention_avx2::supported(64)) {
            return;
        }
        if attention_avx512::supported(64) {
            eprintln!("not routed here: this CPU has AVX-512, whose core `attend` runs");
            return;
        }
        assert_attend_runs(attention_avx2::attend);
    }

    /// The bf16 core (a bf16 kernel where the CPU has one) near the f32 one, and near the same
    /// roundings through the f32 products (they differ in the order of the sums, which can
    /// flip a probability's rounding: one bf16 step, 2⁻⁸ relative, of one weight).
    #[test]
    fn bf16_core_stays_near_f32_and_near_its_rounded_reference() {
        let shapes = [(2, 3, 77, 16), (1, 2, 5, 64), (2, 4, QUERY_BLOCK + 1, 64), (1, 2, 300, 64)];
        for &(b, h, t, dh) in &shapes {
            let q = seeded((b, h, t, dh), 40, 1.0 / (dh as f32).sqrt());
            let (k, v) = (seeded((b, h, t, dh), 41, 1.0), seeded((b, h, t, dh), 42, 1.0));
            let exact = attend(&q, &k, &v).unwrap();
            let bf16 = attend_bf16(&q, &k, &v).unwrap();
            let rounded = attend_bf16_rounded(&q, &k, &v).unwrap();
            let (to_f32, to_rounded) = (max_abs_diff(&bf16, &exact), max_abs_diff(&bf16, &rounded));
            eprintln!(
                "({b}, {h}, {t}, {dh}): bf16 − f32 {to_f32:e}, bf16 − rounded {to_rounded:e}"
            );
            assert!(to_f32 < 2e-2, "({b}, {h}, {t}, {dh}): bf16 − f32 {to_f32:e}");
            assert!(to_rounded < 2e-3, "({b}, {h}, {t}, {dh}): bf16 − rounded {to_rounded:e}");
            assert!(to_f32 > 0.0, "the bf16 core rounded nothing");
        }
    }

    /// Checks bf16 weights and their sum against `exp(s − max)` in f64: each weight the exact
    /// one rounded to bf16 (at most half a bf16 step, 2⁻⁹ relative, plus the exponential's few
    /// f32 ulps: one step at most where the two roundings differ), near f32's normal range 0
    /// or tiny, the padding zeroed, the sum to f32 rounding.
    fn check_weights(row: &[f32], probs: &[u16], sum: f32, what: &str) {
        let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let exact: Vec<f64> = row.iter().map(|&x| (f64::from(x) - f64::from(max)).exp()).collect();
        for (i, (&p, &e)) in probs.iter().zip(&exact).enumerate() {
            let w = f64::from(f32::from_bits(u32::from(p) << 16));
            let bound = e * (2f64.powi(-8) + 1e-6) + 2f64.powi(-124);
            assert!((w - e).abs() <= bound, "{what}, weight {i} of {}: {w:e} for {e:e}", row.len());
        }
        assert!(probs[row.len()..].iter().all(|&p| p == 0), "{what}: padding not zeroed");
        let want: f64 = exact.iter().sum();
        let rel = (f64::from(sum) - want).abs() / want;
        assert!(rel < 2e-6, "{what}: sum {sum} for {want} (relative {rel:e})");
    }

    /// Rows of every length around the 16-lane vectors and the four-vector steps (and the
    /// Xeon's 1208 frames), whose scores span 110 (some weights below the exponential's
    /// range): through the portable passes and, where the CPU has AVX512-BF16, the AVX-512
    /// pass.
    #[test]
    fn weights_are_exp_rounded_to_bf16() {
        let lengths = [1usize, 7, 8, 9, 15, 16, 17, 24, 31, 63, 64, 65, 80, 127, 1208, 1213];
        #[cfg(target_arch = "x86_64")]
        let native = avx512_weights::supported();
        #[cfg(not(target_arch = "x86_64"))]
        let native = false;
        if !native {
            eprintln!("this CPU has no AVX512-BF16: the portable passes only");
        }
        for len in lengths {
            let row: Vec<f32> =
                (0..len).map(|i| ((i * 7919) % 1000) as f32 / 9.0 - 100.0).collect();
            let mut probs = vec![7u16; len + 5];
            let mut sum = [0f32];
            exp_row_to_bf16_into(&mut row.clone(), &mut probs, &mut sum);
            check_weights(&row, &probs, sum[0], "portable");
            assert!(len < 16 || probs.contains(&0), "some weights underflow to 0");
            #[cfg(target_arch = "x86_64")]
            if native {
                let mut probs = vec![7u16; len + 5];
                // SAFETY: the CPU has AVX512-BF16 (checked above).
                let sum = unsafe { avx512_weights::exp_row_to_bf16(&row, &mut probs) };
                check_weights(&row, &probs, sum, "avx512");
                assert!(len < 16 || probs.contains(&0), "some weights underflow to 0");
            }
        }
    }

    #[test]
    fn fast_exp_is_within_two_ulp_of_expf() {
        let mut worst = 0f32;
        for i in -500_000..=2_000_000 {
            let x = -87.0 * i as f32 / 2_000_000.0; // −87 … 21.75
            let (got, want) = (exp_fast(x), x.exp());
            worst = worst.max((got - want).abs() / want);
        }
        assert!(worst <= 2.0 * f32::EPSILON, "worst relative error {worst:e}");
        assert_eq!(exp_fast(0.0), 1.0);
        assert_eq!(exp_fast(-100.0), 0.0);
        assert_eq!(exp_fast(f32::NEG_INFINITY), 0.0);
    }

    /// The softmax compiled for this CPU's vector extension gives the scalar loop's bits: the
    /// same operations in the same order per lane.
    #[test]
    fn vectorized_softmax_is_bit_identical_to_the_scalar_loop() {
        for len in [1usize, 7, 16, 17, 1208] {
            let row: Vec<f32> =
                (0..len).map(|i| ((i * 7919) % 1000) as f32 / 37.0 - 13.0).collect();
            let (mut plain, mut wide) = (row.clone(), row);
            softmax_in_place(&mut plain);
            softmax_rows(&mut wide, len);
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&plain), bits(&wide), "row of {len}");
            assert!((plain.iter().sum::<f32>() - 1.0).abs() < 1e-5);
        }
    }
}
