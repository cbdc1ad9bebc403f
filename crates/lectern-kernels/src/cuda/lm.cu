// CUDA kernels for the LM's decode steps (a few rows at a time), compiled at run time with
// NVRTC (see kernels.rs). f32 arithmetic (weights f32 or bf16); every sum runs in a fixed order, so a step gives
// the same bits every time it runs.

#define WARPS 8

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// How a weight is stored: `load` turns the i-th 16-byte chunk of a weight row into PER floats.
// f32 weights give 4 per chunk; bf16 weights (the LM's `--precision bf16`) give 8, so a decode
// step reads half the bytes. bf16 is the upper half of an f32: widening is a shift.
struct F32Weights {
    static constexpr int PER = 4;
    __device__ static __forceinline__ void load(const void* w, size_t i, float* out) {
        const float4 v = __ldg(reinterpret_cast<const float4*>(w) + i);
        out[0] = v.x; out[1] = v.y; out[2] = v.z; out[3] = v.w;
    }
};
struct Bf16Weights {
    static constexpr int PER = 8;
    __device__ static __forceinline__ void load(const void* w, size_t i, float* out) {
        const uint4 v = __ldg(reinterpret_cast<const uint4*>(w) + i);
        const unsigned int u[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
        for (int j = 0; j < 4; j++) {
            out[2 * j] = __uint_as_float(u[j] << 16);          // element 2j: the low half
            out[2 * j + 1] = __uint_as_float(u[j] & 0xffff0000u);  // element 2j+1: the high half
        }
    }
};

// Where rows_matmul's input rows come from: `load(r, i, out)` gives the PER values of row r
// at chunk i (columns i·PER …), `prepare` runs first with every thread of the block. Each
// fused input computes exactly what the separate kernels it replaces would have written (the
// same operations in the same order), so a fused step gives the same bits as an unfused one.

// The rows as they are: x (rows, k).
template <int ROWS, int PER>
struct PlainRows {
    const float* __restrict__ x;
    int k;
    __device__ __forceinline__ void prepare() {}
    __device__ __forceinline__ void load(int r, int i, float* out) const {
        const float4* xs = reinterpret_cast<const float4*>(x + (size_t)r * k) + i * (PER / 4);
#pragma unroll
        for (int q = 0; q < PER / 4; q++) {
            const float4 v = __ldg(xs + q);
            out[4 * q] = v.x; out[4 * q + 1] = v.y; out[4 * q + 2] = v.z; out[4 * q + 3] = v.w;
        }
    }
};

// RMSNorm of x (rows, k) by alpha (k), as rms_norm_f32 computes it: each row's sum of squares
// reduced by the block's 256 threads in rms_norm_f32's order, then x · scale · alpha.
template <int ROWS, int PER>
struct NormRows {
    const float* __restrict__ x;
    const float* __restrict__ alpha;
    int k;
    float eps;
    float* scale;  // shared, ROWS entries
    __device__ __forceinline__ void prepare() {
        __shared__ float sums[8];
        const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
        for (int r = 0; r < ROWS; r++) {
            const float* row = x + (size_t)r * k;
            float s = 0.f;
            for (int i = threadIdx.x; i < k; i += blockDim.x) s = fmaf(row[i], row[i], s);
            s = warp_sum(s);
            if (lane == 0) sums[warp] = s;
            __syncthreads();
            if (warp == 0) {
                float t = lane < (int)(blockDim.x / 32) ? sums[lane] : 0.f;
                t = warp_sum(t);
                if (lane == 0) scale[r] = rsqrtf(t / (float)k + eps);
            }
            __syncthreads();
        }
    }
    __device__ __forceinline__ void load(int r, int i, float* out) const {
        const float4* xs = reinterpret_cast<const float4*>(x + (size_t)r * k) + i * (PER / 4);
        const float4* as = reinterpret_cast<const float4*>(alpha) + i * (PER / 4);
        const float sc = scale[r];
#pragma unroll
        for (int q = 0; q < PER / 4; q++) {
            const float4 v = __ldg(xs + q), a = __ldg(as + q);
            out[4 * q] = v.x * sc * a.x; out[4 * q + 1] = v.y * sc * a.y;
            out[4 * q + 2] = v.z * sc * a.z; out[4 * q + 3] = v.w * sc * a.w;
        }
    }
};

// The MLP's SwiGLU of gate_up (rows, 2k) = [gate | up]: silu(gate) · up, with candle's silu
// (x / (1 + exp(−x))) and then its product, as the unfused step computes them.
template <int ROWS, int PER>
struct SwigluRows {
    const float* __restrict__ gate_up;
    int k;
    __device__ __forceinline__ void prepare() {}
    __device__ __forceinline__ void load(int r, int i, float* out) const {
        const float* row = gate_up + (size_t)r * 2 * k;
        const float4* gs = reinterpret_cast<const float4*>(row) + i * (PER / 4);
        const float4* us = reinterpret_cast<const float4*>(row + k) + i * (PER / 4);
#pragma unroll
        for (int q = 0; q < PER / 4; q++) {
            const float4 g = __ldg(gs + q), u = __ldg(us + q);
            const float gv[4] = {g.x, g.y, g.z, g.w}, uv[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
            for (int e = 0; e < 4; e++) out[4 * q + e] = gv[e] / (1.0f + expf(-gv[e])) * uv[e];
        }
    }
};

// y[r][n] = sum_k x[r][k] * w[n][k] (+ bias[n]) (+ residual[r][n]) for r < ROWS <= 8 (MAX_ROWS
// in lm.rs): the product of a few rows with a weight stored (out, in), as a decode step's
// projections need it, the rows from `In` (plain, RMS-normed, or SwiGLU of gate|up). Reading
// the weight once at full bandwidth is all that matters: each warp streams COLS weight rows (or
// a 1/ksplit share of them, for layers with few output columns) with 16-byte loads, holding
// the matching slice of every input row in registers, so each x load serves COLS weight
// loads; the ksplit partial sums are added in a fixed order.
// Block: WARPS warps = (WARPS / ksplit) column groups x ksplit shares. k % W::PER == 0, aligned.
#define COLS 4
template <int ROWS, typename W, typename In>
__device__ void rows_matmul(
    In in, const void* __restrict__ w, const float* __restrict__ bias,
    const float* __restrict__ residual, float* __restrict__ y, int n, int k, int ksplit) {
    constexpr int PER = W::PER;
    __shared__ float partial[WARPS][COLS][ROWS];
    in.prepare();
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int groups_per_block = WARPS / ksplit;
    const int col0 = (blockIdx.x * groups_per_block + warp / ksplit) * COLS;
    const int share = warp % ksplit;
    const int chunks = k / PER;
    const int per_share = (chunks + ksplit - 1) / ksplit;
    const int begin = share * per_share;
    const int end = min(chunks, begin + per_share);
    float acc[COLS][ROWS];
#pragma unroll
    for (int c = 0; c < COLS; c++)
#pragma unroll
        for (int r = 0; r < ROWS; r++) acc[c][r] = 0.f;
    for (int i = begin + lane; i < end; i += 32) {
        float xv[ROWS][PER];
#pragma unroll
        for (int r = 0; r < ROWS; r++) in.load(r, i, xv[r]);
        float wv[COLS][PER];
#pragma unroll
        for (int c = 0; c < COLS; c++) {
            if (col0 + c < n) {
                W::load(w, (size_t)(col0 + c) * chunks + i, wv[c]);
            } else {
#pragma unroll
                for (int e = 0; e < PER; e++) wv[c][e] = 0.f;
            }
        }
#pragma unroll
        for (int c = 0; c < COLS; c++)
#pragma unroll
            for (int r = 0; r < ROWS; r++)
#pragma unroll
                for (int e = 0; e < PER; e++) acc[c][r] = fmaf(wv[c][e], xv[r][e], acc[c][r]);
    }
#pragma unroll
    for (int c = 0; c < COLS; c++)
#pragma unroll
        for (int r = 0; r < ROWS; r++) {
            const float s = warp_sum(acc[c][r]);
            if (lane == 0) partial[warp][c][r] = s;
        }
    __syncthreads();
    // One thread per (column of this block, row): the shares summed in order.
    const int t = threadIdx.x;
    if (t < groups_per_block * COLS * ROWS) {
        const int g = t / (COLS * ROWS), c = (t / ROWS) % COLS, r = t % ROWS;
        const int col = (blockIdx.x * groups_per_block + g) * COLS + c;
        if (col < n) {
            float s = 0.f;
            for (int j = 0; j < ksplit; j++) s += partial[g * ksplit + j][c][r];
            if (bias != nullptr) s += bias[col];
            if (residual != nullptr) s = residual[(size_t)r * n + col] + s;
            y[(size_t)r * n + col] = s;
        }
    }
}

// Per row count R and weight type T (f32: float, bf16: unsigned short):
//   rows_matmul_T_R(x, w, bias, y, n, k, ksplit)                      x·Wᵀ (+ bias)
//   rows_matmul_norm_T_R(x, w, alpha_bias, has_bias, y, n, k, ksplit, eps)
//       RMSNorm(x)·Wᵀ (+ bias); alpha_bias = [alpha (k) | bias (n) when has_bias]
//   rows_matmul_swiglu_T_R(gate_up, w, residual, y, n, k, ksplit)     residual + SwiGLU·Wᵀ
//   rows_matmul_residual_T_R(x, w, residual, y, n, k, ksplit)         residual + x·Wᵀ
#define ROWS_MATMUL_OF(R, T, WT)                                                              \
    extern "C" __global__ void rows_matmul_##T##_##R(                                         \
        const float* __restrict__ x, const WT* __restrict__ w,                                \
        const float* __restrict__ bias, float* __restrict__ y, int n, int k, int ksplit) {    \
        rows_matmul<R, T##_W>(PlainRows<R, T##_W::PER>{x, k}, w, bias, nullptr, y, n, k, ksplit); \
    }                                                                                         \
    extern "C" __global__ void rows_matmul_norm_##T##_##R(                                    \
        const float* __restrict__ x, const WT* __restrict__ w,                                \
        const float* __restrict__ alpha_bias, int has_bias, float* __restrict__ y, int n,     \
        int k, int ksplit, float eps) {                                                       \
        __shared__ float scale[R];                                                            \
        rows_matmul<R, T##_W>(NormRows<R, T##_W::PER>{x, alpha_bias, k, eps, scale}, w,       \
                              has_bias ? alpha_bias + k : nullptr, nullptr, y, n, k, ksplit); \
    }                                                                                         \
    extern "C" __global__ void rows_matmul_swiglu_##T##_##R(                                  \
        const float* __restrict__ gate_up, const WT* __restrict__ w,                          \
        const float* __restrict__ residual, float* __restrict__ y, int n, int k, int ksplit) { \
        rows_matmul<R, T##_W>(SwigluRows<R, T##_W::PER>{gate_up, k}, w, nullptr, residual, y, \
                              n, k, ksplit);                                                  \
    }                                                                                         \
    extern "C" __global__ void rows_matmul_residual_##T##_##R(                                \
        const float* __restrict__ x, const WT* __restrict__ w,                                \
        const float* __restrict__ residual, float* __restrict__ y, int n, int k, int ksplit) { \
        rows_matmul<R, T##_W>(PlainRows<R, T##_W::PER>{x, k}, w, nullptr, residual, y, n, k,  \
                              ksplit);                                                        \
    }
typedef F32Weights f32_W;
typedef Bf16Weights bf16_W;
#define ROWS_MATMUL(R) ROWS_MATMUL_OF(R, f32, float) ROWS_MATMUL_OF(R, bf16, unsigned short)
ROWS_MATMUL(1)
ROWS_MATMUL(2)
ROWS_MATMUL(3)
ROWS_MATMUL(4)
ROWS_MATMUL(5)
ROWS_MATMUL(6)
ROWS_MATMUL(7)
ROWS_MATMUL(8)

// RMSNorm of each row: y = x / sqrt(mean(x^2) + eps) * alpha, one block of 256 threads per row
// (candle's kernel gives a row of 896 one warp).
extern "C" __global__ void rms_norm_f32(
    const float* __restrict__ x, const float* __restrict__ alpha, float* __restrict__ y,
    int cols, float eps) {
    __shared__ float sums[8];
    const float* row = x + (size_t)blockIdx.x * cols;
    float* out = y + (size_t)blockIdx.x * cols;
    float s = 0.f;
    for (int i = threadIdx.x; i < cols; i += blockDim.x) s = fmaf(row[i], row[i], s);
    s = warp_sum(s);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) sums[warp] = s;
    __syncthreads();
    if (warp == 0) {
        float t = lane < (int)(blockDim.x / 32) ? sums[lane] : 0.f;
        t = warp_sum(t);
        if (lane == 0) sums[0] = t;
    }
    __syncthreads();
    const float scale = rsqrtf(sums[0] / (float)cols + eps);
    for (int i = threadIdx.x; i < cols; i += blockDim.x) out[i] = row[i] * scale * alpha[i];
}

// Softmax and probabilities x values of one decode step's attention for a joined batch
// (SpeechLm::attend_joined): one block per (lane, kv head, query head of the group).
// scores: (batch, groups, len) post-mask (-inf = not attended), values: the kv head's cached
// values (batch, cap, 64) at `values`, out: (batch, groups, 64).
// cuBLAS runs probs x values for this shape (7 x len by len x 64 per kv head) as one 32x32
// tile per head looping over len, after a separate softmax kernel.
#define HEAD_DIM 64
#define NEG_INF __int_as_float(0xff800000)
#define PARTS 16
#define SV_THREADS (PARTS * HEAD_DIM)
extern "C" __global__ void softmax_values_f32(
    const float* __restrict__ scores, const float* __restrict__ values,
    float* __restrict__ out, int groups, int len, int cap) {
    __shared__ float red[SV_THREADS / 32];
    __shared__ float part_acc[PARTS][HEAD_DIM];
    const int row = blockIdx.x;  // (kv batch entry, group)
    const int b = row / groups;
    const float* s = scores + (size_t)row * len;
    const float* v = values + (size_t)b * cap * HEAD_DIM;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    // max
    float mx = NEG_INF;
    for (int p = threadIdx.x; p < len; p += blockDim.x) mx = fmaxf(mx, s[p]);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
    if (lane == 0) red[warp] = mx;
    __syncthreads();
    mx = red[0];
    for (int w = 1; w < SV_THREADS / 32; w++) mx = fmaxf(mx, red[w]);
    __syncthreads();
    // sum of exp
    float sum = 0.f;
    for (int p = threadIdx.x; p < len; p += blockDim.x) sum += expf(s[p] - mx);
    sum = warp_sum(sum);
    if (lane == 0) red[warp] = sum;
    __syncthreads();
    sum = 0.f;
    for (int w = 0; w < SV_THREADS / 32; w++) sum += red[w];
    // probabilities x values: thread = (part, dim), parts summed in order
    const int dim = threadIdx.x % HEAD_DIM, part = threadIdx.x / HEAD_DIM;
    // Four independent sums per thread (positions p, p + 16, p + 32, p + 48 of its part), so the
    // loads and exps of one step do not wait on the previous step's sum; added in order.
    float acc[4] = {0.f, 0.f, 0.f, 0.f};
    int p = part;
    for (; p + 3 * PARTS < len; p += 4 * PARTS) {
#pragma unroll
        for (int u = 0; u < 4; u++) {
            const int q = p + u * PARTS;
            acc[u] = fmaf(expf(s[q] - mx), v[(size_t)q * HEAD_DIM + dim], acc[u]);
        }
    }
    for (int u = 0; p < len; p += PARTS, u++) {
        acc[u] = fmaf(expf(s[p] - mx), v[(size_t)p * HEAD_DIM + dim], acc[u]);
    }
    part_acc[part][dim] = (acc[0] + acc[1]) + (acc[2] + acc[3]);
    __syncthreads();
    if (threadIdx.x < HEAD_DIM) {
        float t = 0.f;
        for (int q = 0; q < PARTS; q++) t += part_acc[q][threadIdx.x];
        out[(size_t)row * HEAD_DIM + threadIdx.x] = t / sum;
    }
}
