use gemm::{Parallelism, gemm};
use rayon::prelude::*;
use std::time::Instant;
use std::arch::x86_64::*;

const QB0: usize = 64;

#[inline(always)]
fn exp_nonpositive(x: f32) -> f32 {
    const ROUND: f32 = 12_582_912.0;
    let xc = x.max(-87.0);
    let n = (xc * std::f32::consts::LOG2_E + ROUND) - ROUND;
    let r = xc - n * 0.693_359_4 + n * 2.121_944_4e-4;
    let mut p = 1.987_569_1e-4f32;
    p = p * r + 1.398_199_9e-3;
    p = p * r + 8.333_452e-3;
    p = p * r + 4.166_579_6e-2;
    p = p * r + 1.666_666_5e-1;
    p = p * r + 0.5;
    let y = p * r * r + r + 1.0;
    let scaled = y * f32::from_bits(((n as i32 + 127) << 23) as u32);
    if x < -87.0 { 0.0 } else { scaled }
}
fn sum_f32(xs: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let mut chunks = xs.chunks_exact(8);
    for c in &mut chunks { for (a, x) in acc.iter_mut().zip(c) { *a += x; } }
    let tail: f32 = chunks.remainder().iter().sum();
    acc.iter().sum::<f32>() + tail
}
#[inline(always)]
fn exp_nonpositive2(x: f32) -> f32 {
    const ROUND: f32 = 12_582_912.0;
    let xc = x.max(-87.0);
    let shifted = xc * std::f32::consts::LOG2_E + ROUND;
    let n = shifted - ROUND;
    let r = xc - n * 0.693_359_4 + n * 2.121_944_4e-4;
    let mut p = 1.987_569_1e-4f32;
    p = p * r + 1.398_199_9e-3;
    p = p * r + 8.333_452e-3;
    p = p * r + 4.166_579_6e-2;
    p = p * r + 1.666_666_5e-1;
    p = p * r + 0.5;
    let y = p * r * r + r + 1.0;
    // n's integer value sits in the low mantissa bits of `shifted` (|n| < 2^22).
    let ni = (shifted.to_bits() as i32).wrapping_sub(ROUND.to_bits() as i32);
    let scaled = y * f32::from_bits((ni.wrapping_add(127) << 23) as u32);
    if x < -87.0 { 0.0 } else { scaled }
}
#[inline(always)]
fn softmax_in_place2(row: &mut [f32]) {
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    for x in row.iter_mut() { *x = exp_nonpositive2(*x - max); }
    let sum = sum_f32(row);
    for x in row.iter_mut() { *x /= sum; }
}
#[target_feature(enable = "avx512f")]
unsafe fn softmax_auto512(row: &mut [f32]) { softmax_in_place2(row) }
fn softmax_in_place(row: &mut [f32]) {
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    for x in row.iter_mut() { *x = exp_nonpositive(*x - max); }
    let sum = sum_f32(row);
    for x in row.iter_mut() { *x /= sum; }
}
#[target_feature(enable = "avx512f")]
unsafe fn exp16(x: __m512) -> __m512 {
    let xc = _mm512_max_ps(x, _mm512_set1_ps(-87.0));
    let round = _mm512_set1_ps(12_582_912.0);
    let n = _mm512_sub_ps(_mm512_add_ps(_mm512_mul_ps(xc, _mm512_set1_ps(std::f32::consts::LOG2_E)), round), round);
    let r = _mm512_add_ps(_mm512_sub_ps(xc, _mm512_mul_ps(n, _mm512_set1_ps(0.693_359_4))), _mm512_mul_ps(n, _mm512_set1_ps(2.121_944_4e-4)));
    let mut p = _mm512_set1_ps(1.987_569_1e-4);
    for c in [1.398_199_9e-3f32, 8.333_452e-3, 4.166_579_6e-2, 1.666_666_5e-1, 0.5] {
        p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(c));
    }
    let y = _mm512_add_ps(_mm512_add_ps(_mm512_mul_ps(_mm512_mul_ps(p, r), r), r), _mm512_set1_ps(1.0));
    let e = _mm512_slli_epi32::<23>(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)));
    let scaled = _mm512_mul_ps(y, _mm512_castsi512_ps(e));
    let tiny = _mm512_cmp_ps_mask::<_CMP_LT_OQ>(x, _mm512_set1_ps(-87.0));
    _mm512_mask_blend_ps(tiny, scaled, _mm512_setzero_ps())
}
#[target_feature(enable = "avx512f")]
unsafe fn softmax_in_place_512(row: &mut [f32]) {
    let n = row.len();
    let full = n / 16 * 16;
    let p = row.as_mut_ptr();
    unsafe {
        let mut m = _mm512_set1_ps(f32::NEG_INFINITY);
        for i in (0..full).step_by(16) { m = _mm512_max_ps(m, _mm512_loadu_ps(p.add(i))); }
        let mut max = _mm512_reduce_max_ps(m);
        for i in full..n { max = max.max(*p.add(i)); }
        let mv = _mm512_set1_ps(max);
        let mut acc = _mm512_setzero_ps();
        for i in (0..full).step_by(16) {
            let e = exp16(_mm512_sub_ps(_mm512_loadu_ps(p.add(i)), mv));
            _mm512_storeu_ps(p.add(i), e);
            acc = _mm512_add_ps(acc, e);
        }
        let mut tail = 0f32;
        for i in full..n { let e = exp_nonpositive(*p.add(i) - max); *p.add(i) = e; tail += e; }
        let sum = _mm512_reduce_add_ps(acc) + tail;
        let sv = _mm512_set1_ps(sum);
        for i in (0..full).step_by(16) { _mm512_storeu_ps(p.add(i), _mm512_div_ps(_mm512_loadu_ps(p.add(i)), sv)); }
        for i in full..n { *p.add(i) /= sum; }
    }
}

type Strided = (*const f32, isize, isize);
unsafe fn matmul(m: usize, n: usize, k: usize, dst: *mut f32, dst_rs: isize, lhs: Strided, rhs: Strided) {
    unsafe { gemm(m, n, k, dst, 1, dst_rs, false, lhs.0, lhs.2, lhs.1, rhs.0, rhs.2, rhs.1, 0.0, 1.0, false, false, false, Parallelism::None); }
}
#[derive(Clone, Copy)] struct P(*mut f32);
unsafe impl Send for P {} unsafe impl Sync for P {}
impl P { fn get(self) -> *mut f32 { self.0 } }

// phase: 0 all, 1 = S only, 2 = S+softmax
fn current(q: &[f32], k: &[f32], v: &[f32], b: usize, h: usize, t: usize, dh: usize, out: &mut [f32], phase: u8, phase_sm: u8) { current_qb(q,k,v,b,h,t,dh,out,phase,phase_sm,QB0) }
fn current_qb(q: &[f32], k: &[f32], v: &[f32], b: usize, h: usize, t: usize, dh: usize, out: &mut [f32], phase: u8, phase_sm: u8, qb: usize) {
    let qbv = qb;
    let out_ptr = P(out.as_mut_ptr());
    let blocks = t.div_ceil(qbv);
    let (t_i, dh_i, hdh_i) = (t as isize, dh as isize, (h * dh) as isize);
    (0..b * h * blocks).into_par_iter().for_each_init(|| vec![0f32; qbv * t], |scores, task| {
        let (bh, block) = (task / blocks, task % blocks);
        let (bi, hi) = (bh / h, bh % h);
        let r0 = block * qbv; let rows = qbv.min(t - r0);
        let head = bh * t * dh;
        let q_rows = &q[head + r0 * dh..head + (r0 + rows) * dh];
        let (k_head, v_head) = (&k[head..head + t * dh], &v[head..head + t * dh]);
        let s = &mut scores[..rows * t];
        let out_rows = (bi * t + r0) * h * dh + hi * dh;
        unsafe { matmul(rows, t, dh, s.as_mut_ptr(), t_i, (q_rows.as_ptr(), dh_i, 1), (k_head.as_ptr(), 1, dh_i)) };
        if phase == 1 { return; }
        for row in s.chunks_exact_mut(t) { match phase_sm { 0 => softmax_in_place(row), 1 => unsafe { softmax_in_place_512(row) }, 2 => softmax_in_place2(row), _ => unsafe { softmax_auto512(row) } } }
        if phase == 2 { return; }
        unsafe { matmul(rows, dh, t, out_ptr.get().add(out_rows), hdh_i, (s.as_ptr(), t_i, 1), (v_head.as_ptr(), dh_i, 1)) };
    });
}

// New: K transposed per head once; own AVX-512 micro-kernels.
const R1: usize = 8; // rows of the S kernel
const R2: usize = 6; // rows of the PV kernel

/// S[r][j] for r in 0..R1 (q rows with stride dh), j in j0..j0+32, kt (dh × tp) d-major.
#[target_feature(enable = "avx512f")]
unsafe fn s_tile(q: *const f32, dh: usize, kt: *const f32, tp: usize, s: *mut f32, ts: usize, rows: usize) {
    unsafe {
        let mut acc = [[_mm512_setzero_ps(); 2]; R1];
        for d in 0..dh {
            let k0 = _mm512_loadu_ps(kt.add(d * tp));
            let k1 = _mm512_loadu_ps(kt.add(d * tp + 16));
            for r in 0..R1 {
                let qv = _mm512_set1_ps(*q.add(r.min(rows - 1) * dh + d));
                acc[r][0] = _mm512_fmadd_ps(qv, k0, acc[r][0]);
                acc[r][1] = _mm512_fmadd_ps(qv, k1, acc[r][1]);
            }
        }
        for r in 0..rows.min(R1) {
            _mm512_storeu_ps(s.add(r * ts), acc[r][0]);
            _mm512_storeu_ps(s.add(r * ts + 16), acc[r][1]);
        }
    }
}

/// O[r][0..64] = sum_j P[r][j] V[j][0..64], r in 0..R2.
#[target_feature(enable = "avx512f")]
unsafe fn pv_tile(p: *const f32, ps: usize, t: usize, v: *const f32, o: *mut f32, os: usize, rows: usize) {
    unsafe {
        let mut acc = [[_mm512_setzero_ps(); 4]; R2];
        for j in 0..t {
            let vr = v.add(j * 64);
            let v0 = _mm512_loadu_ps(vr); let v1 = _mm512_loadu_ps(vr.add(16));
            let v2 = _mm512_loadu_ps(vr.add(32)); let v3 = _mm512_loadu_ps(vr.add(48));
            for r in 0..R2 {
                let pv = _mm512_set1_ps(*p.add(r.min(rows - 1) * ps + j));
                acc[r][0] = _mm512_fmadd_ps(pv, v0, acc[r][0]);
                acc[r][1] = _mm512_fmadd_ps(pv, v1, acc[r][1]);
                acc[r][2] = _mm512_fmadd_ps(pv, v2, acc[r][2]);
                acc[r][3] = _mm512_fmadd_ps(pv, v3, acc[r][3]);
            }
        }
        for r in 0..rows.min(R2) {
            for c in 0..4 { _mm512_storeu_ps(o.add(r * os + 16 * c), acc[r][c]); }
        }
    }
}

fn new(q: &[f32], k: &[f32], v: &[f32], b: usize, h: usize, t: usize, dh: usize, out: &mut [f32], phase: u8) {
    assert_eq!(dh, 64);
    let tp = t.div_ceil(32) * 32;
    // K transposed per head: (bh, dh, tp), zero padded.
    let mut kt = vec![0f32; b * h * dh * tp];
    kt.par_chunks_mut(dh * tp).enumerate().for_each(|(bh, dst)| {
        let src = &k[bh * t * dh..(bh + 1) * t * dh];
        for j in 0..t { for d in 0..dh { dst[d * tp + j] = src[j * dh + d]; } }
    });
    let out_ptr = P(out.as_mut_ptr());
    let blocks = t.div_ceil(QB0);
    (0..b * h * blocks).into_par_iter().for_each_init(|| vec![0f32; QB0 * tp], |scores, task| {
        let (bh, block) = (task / blocks, task % blocks);
        let (bi, hi) = (bh / h, bh % h);
        let r0 = block * QB0; let rows = QB0.min(t - r0);
        let head = bh * t * dh;
        let q_rows = &q[head + r0 * dh..head + (r0 + rows) * dh];
        let kt_h = &kt[bh * dh * tp..(bh + 1) * dh * tp];
        let v_head = &v[head..head + t * dh];
        let s = &mut scores[..rows * tp];
        unsafe {
            for i0 in (0..rows).step_by(R1) {
                for j0 in (0..tp).step_by(32) {
                    s_tile(q_rows.as_ptr().add(i0 * dh), dh, kt_h.as_ptr().add(j0), tp, s.as_mut_ptr().add(i0 * tp + j0), tp, rows - i0);
                }
            }
        }
        if phase == 1 { return; }
        for row in s.chunks_exact_mut(tp) { unsafe { softmax_in_place_512(&mut row[..t]) } }
        if phase == 2 { return; }
        let out_rows = (bi * t + r0) * h * dh + hi * dh;
        unsafe {
            for i0 in (0..rows).step_by(R2) {
                pv_tile(s.as_ptr().add(i0 * tp), tp, t, v_head.as_ptr(), out_ptr.get().add(out_rows + i0 * h * dh), h * dh, rows - i0);
            }
        }
    });
}

fn main() {
    let args: Vec<usize> = std::env::args().skip(1).map(|a| a.parse().unwrap()).collect();
    let t = *args.first().unwrap_or(&1208);
    let (b, h, dh) = (2, 16, 64);
    let n = b * h * t * dh;
    let mut s = 12345u64;
    let mut rnd = || { s ^= s << 13; s ^= s >> 7; s ^= s << 17; ((s >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 3.4 };
    let q: Vec<f32> = (0..n).map(|_| rnd() * 0.125).collect();
    let k: Vec<f32> = (0..n).map(|_| rnd()).collect();
    let v: Vec<f32> = (0..n).map(|_| rnd()).collect();
    let flops = 4.0 * (b * h) as f64 * (t * t * dh) as f64;
    let mut o1 = vec![0f32; n]; let mut o2 = vec![0f32; n];
    for rep in 0..3 {
        for (name, f) in [
            ("cur all", &(|o: &mut [f32]| current(&q, &k, &v, b, h, t, dh, o, 0, 0)) as &dyn Fn(&mut [f32])),
            ("cur S", &|o: &mut [f32]| current(&q, &k, &v, b, h, t, dh, o, 1, 0)),
            ("cur S+sm", &|o: &mut [f32]| current(&q, &k, &v, b, h, t, dh, o, 2, 0)),
            ("cur all sm512", &|o: &mut [f32]| current(&q, &k, &v, b, h, t, dh, o, 0, 1)),
            ("cur all sm2", &|o: &mut [f32]| current(&q, &k, &v, b, h, t, dh, o, 0, 2)),
            ("cur all smauto", &|o: &mut [f32]| current(&q, &k, &v, b, h, t, dh, o, 0, 3)),
            ("cur qb128 sm512", &|o: &mut [f32]| current_qb(&q, &k, &v, b, h, t, dh, o, 0, 1, 128)),
            ("cur qb32 sm512", &|o: &mut [f32]| current_qb(&q, &k, &v, b, h, t, dh, o, 0, 1, 32)),
            ("cur qb256 sm512", &|o: &mut [f32]| current_qb(&q, &k, &v, b, h, t, dh, o, 0, 1, 256)),
            ("new all", &|o: &mut [f32]| new(&q, &k, &v, b, h, t, dh, o, 0)),
            ("new S", &|o: &mut [f32]| new(&q, &k, &v, b, h, t, dh, o, 1)),
            ("new S+sm", &|o: &mut [f32]| new(&q, &k, &v, b, h, t, dh, o, 2)),
        ] {
            let out = if name.starts_with("new") { &mut o2 } else { &mut o1 };
            let t0 = Instant::now();
            f(out);
            let s = t0.elapsed().as_secs_f64();
            if rep > 0 { println!("t={t} {name:<14} {:7.2} ms  {:6.1} GFLOP/s(all)", s * 1e3, flops / s / 1e9); }
        }
    }
    let d = o1.iter().zip(&o2).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
    println!("max |cur - new| = {d:e}");
}
