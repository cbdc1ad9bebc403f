// CUDA kernels for the DiT blocks' elementwise work (see kernels.rs), compiled at run time
// with NVRTC. Plain f32; each row's sums run in a fixed order.

#define THREADS 256

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// Sum over the block, the same value returned to every thread (fixed order).
__device__ __forceinline__ float block_sum(float v, float* red) {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    v = warp_sum(v);
    __syncthreads();  // red may still be read from a previous call
    if (lane == 0) red[warp] = v;
    __syncthreads();
    float t = 0.f;
    for (int w = 0; w < THREADS / 32; w++) t += red[w];
    return t;
}

// y = LN(x) * (1 + scale[b]) + shift[b] for each row of x (rows, dim), b = row / t (scale and
// shift rows `*_stride` floats apart: views into the modulation vector): the DiT's
// affine-free LayerNorm (two-pass: mean, then centred variance; eps inside the square root)
// and AdaLN modulation in one pass over the row, where candle's ops take nine.
extern "C" __global__ void modulate_f32(
    const float* __restrict__ x, const float* __restrict__ scale, int scale_stride,
    const float* __restrict__ shift, int shift_stride, float* __restrict__ y, int t, int dim,
    float eps) {
    __shared__ float red[THREADS / 32];
    const size_t row = blockIdx.x;
    const int b = (int)(row / t);
    const float* xr = x + row * dim;
    float* yr = y + row * dim;
    float s = 0.f;
    for (int i = threadIdx.x; i < dim; i += THREADS) s += xr[i];
    const float mean = block_sum(s, red) / (float)dim;
    float v = 0.f;
    for (int i = threadIdx.x; i < dim; i += THREADS) {
        const float c = xr[i] - mean;
        v = fmaf(c, c, v);
    }
    const float var = block_sum(v, red) / (float)dim;
    const float denom = sqrtf(var + eps);
    const float* sc = scale + (size_t)b * scale_stride;
    const float* sh = shift + (size_t)b * shift_stride;
    for (int i = threadIdx.x; i < dim; i += THREADS) {
        yr[i] = (xr[i] - mean) / denom * (sc[i] + 1.f) + sh[i];
    }
}

// out = x + (y + bias) * gate[b] for x, y (rows, dim), b = row / t (gate rows gate_stride
// floats apart; bias (dim) or null): a block's gated residual, with the bias of the
// projection that made y (the projection itself leaves it out).
extern "C" __global__ void gated_residual_f32(
    const float* __restrict__ x, const float* __restrict__ y, const float* __restrict__ bias,
    const float* __restrict__ gate, int gate_stride, float* __restrict__ out, int t, int dim,
    long long n) {
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        const long long row = i / dim;
        const int b = (int)(row / t), c = (int)(i % dim);
        const float yb = bias ? y[i] + bias[c] : y[i];
        out[i] = x[i] + yb * gate[(size_t)b * gate_stride + c];
    }
}

// y = GELU_tanh(x + bias) for x (rows, dim), bias (dim): the feed-forward's first projection
// (without its bias) to its activation in one pass. GELU as candle computes it.
extern "C" __global__ void bias_gelu_f32(const float* __restrict__ x,
                                         const float* __restrict__ bias, float* __restrict__ y,
                                         int dim, long long n) {
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        const float v = x[i] + bias[(int)(i % dim)];
        const float alpha = v + 0.044715f * (v * v * v);
        y[i] = 0.5f * v * (1.0f + tanhf(0.7978845608028654f * alpha));
    }
}

// The attention's fused q|k|v projection (b, t, 3, h, dh), without its bias, to q, k, v
// (3, b, h, t, dh): the bias added, and head 0 of q and k rotated by the interleaved-pair
// rotary tables cos, sin (t, dh / 2) — upstream rotates channels 0 … dh − 1 only. One thread
// per pair of channels.
extern "C" __global__ void qkv_bias_rope_f32(
    const float* __restrict__ qkv, const float* __restrict__ bias, const float* __restrict__ cos_t,
    const float* __restrict__ sin_t, float* __restrict__ out, int b, int t, int h, int dh) {
    const long long width = 3LL * h * dh;  // floats per frame
    const long long pairs = (long long)b * t * width / 2;
    for (long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x; p < pairs;
         p += (long long)gridDim.x * blockDim.x) {
        const long long row = p / (width / 2);
        const int col = (int)(p % (width / 2)) * 2;
        const int which = col / (h * dh), head = (col / dh) % h, d = col % dh;
        const int bb = (int)(row / t), tt = (int)(row % t);
        const float2 v = *reinterpret_cast<const float2*>(qkv + row * width + col);
        float x0 = v.x + bias[col], x1 = v.y + bias[col + 1];
        if (which < 2 && head == 0) {
            const float c = cos_t[(size_t)tt * (dh / 2) + d / 2];
            const float s = sin_t[(size_t)tt * (dh / 2) + d / 2];
            const float r0 = x0 * c - x1 * s, r1 = x0 * s + x1 * c;
            x0 = r0;
            x1 = r1;
        }
        const size_t dst = ((((size_t)which * b + bb) * h + head) * t + tt) * dh + d;
        *reinterpret_cast<float2*>(out + dst) = make_float2(x0, x1);
    }
}

// Softmax attention over all frames, flash style: q (pre-scaled), k, v (b·h, t, DH) each,
// contiguous → out (b, t, h·DH). One block of 128 threads per 64 queries of one (b, h): the
// block walks the keys in tiles of 64, keeps each query row's running max and sum (online
// softmax) and its output row in registers, so the (t, t) scores are never written out.
// Thread (tq, tk) owns query rows tq·8 … tq·8+7; for the scores it owns keys tk·4 … tk·4+3 of
// the tile, for the output the columns tk·DC … tk·DC+DC−1. Shared memory (dynamic):
// q tile transposed (DH, 64), k tile transposed (DH, 64), v tile (64, DH), probabilities
// transposed (64, 64 + 4).
#define FA_BR 64
#define FA_BC 64
#define FA_THREADS 128
#define FA_PSTRIDE (FA_BR + 4)
#define FA_INF __int_as_float(0x7f800000)

// `rows` rows of DH floats from `src` (row-major, rows `row0`… of `t`) into `dst` transposed
// (DH, FA_BR); rows past `t` are zeros. Consecutive threads take consecutive rows, so the
// shared-memory stores do not conflict.
template <int DH>
__device__ __forceinline__ void fa_load_transposed(const float* __restrict__ src, int row0, int t,
                                                   float* dst) {
    for (int i = threadIdx.x; i < FA_BR * DH / 4; i += FA_THREADS) {
        const int r = i % FA_BR, d4 = (i / FA_BR) * 4;
        float4 x = make_float4(0.f, 0.f, 0.f, 0.f);
        if (row0 + r < t) x = *reinterpret_cast<const float4*>(src + (size_t)(row0 + r) * DH + d4);
        dst[(d4 + 0) * FA_BR + r] = x.x;
        dst[(d4 + 1) * FA_BR + r] = x.y;
        dst[(d4 + 2) * FA_BR + r] = x.z;
        dst[(d4 + 3) * FA_BR + r] = x.w;
    }
}

template <int DH>
__device__ __forceinline__ void flash_attention(const float* __restrict__ q,
                                                const float* __restrict__ k,
                                                const float* __restrict__ v,
                                                float* __restrict__ out, int t, int heads) {
    constexpr int DC = DH / 16;  // output columns per thread
    extern __shared__ float4 fa_smem[];
    float* qs = reinterpret_cast<float*>(fa_smem);  // (DH, BR)
    float* ks = qs + DH * FA_BR;                    // (DH, BC)
    float* vs = ks + DH * FA_BC;                    // (BC, DH)
    float* ps = vs + FA_BC * DH;                    // (BC, PSTRIDE)
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int tk = lane & 15, tq = warp * 2 + (lane >> 4);
    const int h = blockIdx.y, b = blockIdx.z;
    const size_t head = ((size_t)b * heads + h) * (size_t)t * DH;
    const int q0 = blockIdx.x * FA_BR;
    fa_load_transposed<DH>(q + head, q0, t, qs);

    float o[8][DC], m[8], l[8];
#pragma unroll
    for (int i = 0; i < 8; i++) {
        m[i] = -FA_INF;
        l[i] = 0.f;
#pragma unroll
        for (int c = 0; c < DC; c++) o[i][c] = 0.f;
    }
    for (int k0 = 0; k0 < t; k0 += FA_BC) {
        __syncthreads();  // the previous tile's ks, vs and ps are read
        fa_load_transposed<DH>(k + head, k0, t, ks);
        for (int i = threadIdx.x; i < FA_BC * DH / 4; i += FA_THREADS) {
            const int r = i / (DH / 4), d4 = (i % (DH / 4)) * 4;
            float4 x = make_float4(0.f, 0.f, 0.f, 0.f);
            if (k0 + r < t) x = *reinterpret_cast<const float4*>(v + head + (size_t)(k0 + r) * DH + d4);
            *reinterpret_cast<float4*>(vs + r * DH + d4) = x;
        }
        __syncthreads();

        float s[8][4];
#pragma unroll
        for (int i = 0; i < 8; i++)
#pragma unroll
            for (int j = 0; j < 4; j++) s[i][j] = 0.f;
#pragma unroll 8
        for (int d = 0; d < DH; d++) {
            const float4 qa = *reinterpret_cast<const float4*>(qs + d * FA_BR + tq * 8);
            const float4 qb = *reinterpret_cast<const float4*>(qs + d * FA_BR + tq * 8 + 4);
            const float4 kk = *reinterpret_cast<const float4*>(ks + d * FA_BC + tk * 4);
            const float qr[8] = {qa.x, qa.y, qa.z, qa.w, qb.x, qb.y, qb.z, qb.w};
            const float kr[4] = {kk.x, kk.y, kk.z, kk.w};
#pragma unroll
            for (int i = 0; i < 8; i++)
#pragma unroll
                for (int j = 0; j < 4; j++) s[i][j] = fmaf(qr[i], kr[j], s[i][j]);
        }
        if (k0 + FA_BC > t) {
#pragma unroll
            for (int j = 0; j < 4; j++)
                if (k0 + tk * 4 + j >= t)
#pragma unroll
                    for (int i = 0; i < 8; i++) s[i][j] = -FA_INF;
        }

        // Online softmax: each row's max and sum over the 16 threads that share it.
#pragma unroll
        for (int i = 0; i < 8; i++) {
            float mx = fmaxf(fmaxf(s[i][0], s[i][1]), fmaxf(s[i][2], s[i][3]));
#pragma unroll
            for (int o2 = 8; o2 > 0; o2 >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o2));
            const float m_new = fmaxf(m[i], mx);  // finite: every tile has a key below t
            const float alpha = expf(m[i] - m_new);
            float sum = 0.f;
#pragma unroll
            for (int j = 0; j < 4; j++) {
                s[i][j] = expf(s[i][j] - m_new);
                sum += s[i][j];
            }
#pragma unroll
            for (int o2 = 8; o2 > 0; o2 >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o2);
            l[i] = fmaf(l[i], alpha, sum);
            m[i] = m_new;
#pragma unroll
            for (int c = 0; c < DC; c++) o[i][c] *= alpha;
        }
#pragma unroll
        for (int j = 0; j < 4; j++) {
            float* p = ps + (tk * 4 + j) * FA_PSTRIDE + tq * 8;
            *reinterpret_cast<float4*>(p) = make_float4(s[0][j], s[1][j], s[2][j], s[3][j]);
            *reinterpret_cast<float4*>(p + 4) = make_float4(s[4][j], s[5][j], s[6][j], s[7][j]);
        }
        __syncthreads();

#pragma unroll 8
        for (int c = 0; c < FA_BC; c++) {
            const float4 pa = *reinterpret_cast<const float4*>(ps + c * FA_PSTRIDE + tq * 8);
            const float4 pb = *reinterpret_cast<const float4*>(ps + c * FA_PSTRIDE + tq * 8 + 4);
            const float pr[8] = {pa.x, pa.y, pa.z, pa.w, pb.x, pb.y, pb.z, pb.w};
            float vr[DC];
#pragma unroll
            for (int e = 0; e < DC; e++) vr[e] = vs[c * DH + tk * DC + e];
#pragma unroll
            for (int i = 0; i < 8; i++)
#pragma unroll
                for (int e = 0; e < DC; e++) o[i][e] = fmaf(pr[i], vr[e], o[i][e]);
        }
    }

    const size_t row_stride = (size_t)heads * DH;
#pragma unroll
    for (int i = 0; i < 8; i++) {
        const int row = q0 + tq * 8 + i;
        if (row >= t) continue;
        float* dst = out + ((size_t)b * t + row) * row_stride + h * DH + tk * DC;
        const float inv = 1.f / l[i];
#pragma unroll
        for (int e = 0; e < DC; e++) dst[e] = o[i][e] * inv;
    }
}

#define FLASH_ATTENTION(DH)                                                                   \
    extern "C" __global__ void __launch_bounds__(FA_THREADS) flash_attention_f32_d##DH(      \
        const float* __restrict__ q, const float* __restrict__ k, const float* __restrict__ v, \
        float* __restrict__ out, int t, int heads) {                                          \
        flash_attention<DH>(q, k, v, out, t, heads);                                          \
    }
FLASH_ATTENTION(16)
FLASH_ATTENTION(32)
FLASH_ATTENTION(64)

// The DiT's causal grouped convolution of the position embedding (kernel 31, left padding
// 30), channel-last: x (b, t, dim) → y (b, t, dim), y = Mish(conv(x) + bias) (+ residual).
// w is tap-major (cg, 31, dim): w[ci][j][co] is torch's weight[co][ci][j], cg = dim / groups
// input channels per group. One block of 128 threads per 64 output channels × 64 frames;
// a thread computes one channel over 32 consecutive frames, so it reads one weight and one
// new input value per 32 multiply-adds (the input window slides through registers).
// Shared memory (dynamic): the input (64 channels, 64 + 30 frames) and the weights of
// CV_CI input channels at a time (CV_CI, 31, 64).
#define CV_K 31
#define CV_CO 64
#define CV_T 64
#define CV_TT 32
#define CV_CI 4
#define CV_THREADS 128
#define CV_SPAN (CV_T + CV_K - 1)

extern "C" __global__ void __launch_bounds__(CV_THREADS) causal_group_conv_mish_f32(
    const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ bias,
    const float* __restrict__ residual, float* __restrict__ y, int t, int dim, int cg,
    int has_residual) {
    extern __shared__ float4 cv_smem[];
    float* xs = reinterpret_cast<float*>(cv_smem);  // (CV_CO, CV_SPAN)
    float* ws = xs + CV_CO * CV_SPAN;                // (CV_CI, CV_K, CV_CO)
    const int co_local = threadIdx.x % CV_CO, tt = threadIdx.x / CV_CO;
    const int t0 = blockIdx.x * CV_T, co0 = blockIdx.y * CV_CO, b = blockIdx.z;
    const float* xb = x + (size_t)b * t * dim;
    // The input: frames t0 − 30 … t0 + 63 of channels co0 … co0 + 63 (the block's groups
    // read exactly its own channel range); zeros before frame 0 and after the last.
    for (int i = threadIdx.x; i < CV_CO * CV_SPAN; i += CV_THREADS) {
        const int c = i % CV_CO, p = i / CV_CO, pos = t0 - (CV_K - 1) + p;
        xs[c * CV_SPAN + p] = (pos >= 0 && pos < t) ? xb[(size_t)pos * dim + co0 + c] : 0.f;
    }
    // This thread's input channels: its group's, within the block's range.
    const float* xrow = xs + (co_local / cg) * cg * CV_SPAN + tt * CV_TT;
    float acc[CV_TT];
#pragma unroll
    for (int e = 0; e < CV_TT; e++) acc[e] = 0.f;
    const int ci_step = cg < CV_CI ? cg : CV_CI;
    for (int ci0 = 0; ci0 < cg; ci0 += ci_step) {
        __syncthreads();  // xs written / the previous weights read
        for (int i = threadIdx.x; i < ci_step * CV_K * CV_CO; i += CV_THREADS) {
            const int co = i % CV_CO, r = i / CV_CO;  // r = ci·31 + j
            ws[i] = w[((size_t)ci0 * CV_K + r) * dim + co0 + co];
        }
        __syncthreads();
        for (int ci = 0; ci < ci_step; ci++) {
            const float* xr = xrow + (ci0 + ci) * CV_SPAN;
            const float* wr = ws + ci * CV_K * CV_CO + co_local;
            float win[CV_TT + CV_K - 1];
#pragma unroll
            for (int e = 0; e < CV_TT; e++) win[e] = xr[e];
#pragma unroll
            for (int j = 0; j < CV_K; j++) {
                if (j > 0) win[CV_TT + j - 1] = xr[CV_TT + j - 1];
                const float wj = wr[j * CV_CO];
#pragma unroll
                for (int e = 0; e < CV_TT; e++) acc[e] = fmaf(wj, win[e + j], acc[e]);
            }
        }
    }
    const int co = co0 + co_local;
    const float bco = bias[co];
#pragma unroll
    for (int e = 0; e < CV_TT; e++) {
        const int pos = t0 + tt * CV_TT + e;
        if (pos >= t) break;
        const float z = acc[e] + bco;
        float out = z * tanhf(logf(expf(z) + 1.f));  // Mish, as dit.rs computes it
        const size_t idx = ((size_t)b * t + pos) * dim + co;
        if (has_residual) out += residual[idx];
        y[idx] = out;
    }
}

// The left operand of a 3xTF32 product (tf32x3.rs): x (rows, k) → [hi | hi | lo] (rows, 3k),
// x = hi + lo by Veltkamp's split (c = x·8193, hi = c − (c − x), lo = x − hi), in one pass
// where candle's ops take seven. The _rn intrinsics keep the compiler from contracting the
// split into fused multiply-adds, which would break it.
extern "C" __global__ void tf32x3_lhs_f32(const float* __restrict__ x, float* __restrict__ out,
                                          int k, long long n) {
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        const long long row = i / k;
        const int col = (int)(i % k);
        const float v = x[i];
        const float c = __fmul_rn(v, 8193.0f);
        const float hi = __fsub_rn(c, __fsub_rn(c, v));
        const float lo = __fsub_rn(v, hi);
        float* o = out + row * 3 * k + col;
        o[0] = hi;
        o[k] = hi;
        o[2 * k] = lo;
    }
}
