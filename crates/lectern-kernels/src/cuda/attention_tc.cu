// The DiT's softmax attention on tensor cores (sm_80 and later; compiled for compute_80), flash
// style: q (pre-scaled), k, v (b·h, t, DH) each, contiguous → out (b, t, h·DH), the result of
// flow.cu's `flash_attention_f32_d*` with its two products on tensor cores.
//
// Both products are 3xTF32: every f32 operand is split into a TF32 head (`cvt.rna`) and the
// TF32 rounding of what the head leaves, and a·b is taken as a_lo·b_hi + a_hi·b_lo + a_hi·b_hi
// (the small terms first, into the f32 accumulator) — the dropped a_lo·b_lo is below f32's
// rounding, so the sums stay f32-accurate, as the flow's 3xTF32 projections are.
//
// One block of 4 warps per 64 queries of one (b, h); each warp owns 16 query rows and walks the
// keys in tiles of 64 with the online softmax (running max and sum per row). Per tile a warp
// computes S = Q·Kᵀ (16 × 64) as 8 m16n8k8 column tiles over DH / 8 steps, exponentiates it,
// parks P in shared memory (the accumulator's layout is not the A operand's) and adds P·V as
// DH / 8 column tiles over 8 steps. Fragment layouts (PTX ISA, mma.m16n8k8 .tf32), with
// g = lane / 4 and c = lane % 4: A a0 (g, c), a1 (g + 8, c), a2 (g, c + 4), a3 (g + 8, c + 4);
// B b0 (k = c, n = g), b1 (k = c + 4, n = g); C c0 (g, 2c), c1 (g, 2c + 1), c2 (g + 8, 2c),
// c3 (g + 8, 2c + 1). Shared memory (dynamic): the k tile (64, DH + 4), the v tile (64, DH + 8)
// and each warp's P (16, 64 + 4); the paddings put the fragment reads on 32 distinct banks.

#define TC_BR 64
#define TC_BC 64
#define TC_THREADS 128
#define TC_PSTRIDE (TC_BC + 4)
#define TC_INF __int_as_float(0x7f800000)

__device__ __forceinline__ unsigned tc_tf32(float x) {
    unsigned r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
    return r;
}

// x = hi + lo, both TF32: hi the nearest TF32, lo the nearest TF32 to the (exact) remainder.
__device__ __forceinline__ void tc_split(float x, unsigned& hi, unsigned& lo) {
    hi = tc_tf32(x);
    lo = tc_tf32(x - __uint_as_float(hi));
}

__device__ __forceinline__ void tc_mma(float (&d)[4], const unsigned (&a)[4],
                                       const unsigned (&b)[2]) {
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// d += a·b in 3xTF32.
__device__ __forceinline__ void tc_mma3(float (&d)[4], const unsigned (&ah)[4],
                                        const unsigned (&al)[4], const unsigned (&bh)[2],
                                        const unsigned (&bl)[2]) {
    tc_mma(d, al, bh);
    tc_mma(d, ah, bl);
    tc_mma(d, ah, bh);
}

// What both kernels do with a tile's scores, in the C fragment layout (rows r0 = g and
// r1 = g + 8 of the warp's 16; sc[n][0..2] row r0, sc[n][2..4] row r1, keys k0 + 8n + 2c …).

// Keys past t take no weight.
template <int NT>
__device__ __forceinline__ void tc_mask_past(float (&sc)[NT][4], int k0, int t, int c) {
    if (k0 + TC_BC > t) {
#pragma unroll
        for (int n = 0; n < NT; n++)
#pragma unroll
            for (int i = 0; i < 4; i++)
                if (k0 + n * 8 + 2 * c + (i & 1) >= t) sc[n][i] = -TC_INF;
    }
}

// Online softmax over one tile: the scores become exp(s − running max), the running max m and
// sum l of each row move on, and O's accumulators are rescaled to the new max. A row's 64
// scores are spread over the 4 threads of its group.
template <int NT, int ON>
__device__ __forceinline__ void tc_online_softmax(float (&sc)[NT][4], float (&o)[ON][4],
                                                  float& m0, float& m1, float& l0, float& l1) {
    float mx0 = m0, mx1 = m1;
#pragma unroll
    for (int n = 0; n < NT; n++) {
        mx0 = fmaxf(mx0, fmaxf(sc[n][0], sc[n][1]));
        mx1 = fmaxf(mx1, fmaxf(sc[n][2], sc[n][3]));
    }
#pragma unroll
    for (int o2 = 1; o2 < 4; o2 <<= 1) {
        mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, o2));
        mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, o2));
    }
    // mx0, mx1 finite: every tile has a key below t.
    const float alpha0 = expf(m0 - mx0), alpha1 = expf(m1 - mx1);
    float sum0 = 0.f, sum1 = 0.f;
#pragma unroll
    for (int n = 0; n < NT; n++) {
        sc[n][0] = expf(sc[n][0] - mx0);
        sc[n][1] = expf(sc[n][1] - mx0);
        sc[n][2] = expf(sc[n][2] - mx1);
        sc[n][3] = expf(sc[n][3] - mx1);
        sum0 += sc[n][0] + sc[n][1];
        sum1 += sc[n][2] + sc[n][3];
    }
#pragma unroll
    for (int o2 = 1; o2 < 4; o2 <<= 1) {
        sum0 += __shfl_xor_sync(0xffffffffu, sum0, o2);
        sum1 += __shfl_xor_sync(0xffffffffu, sum1, o2);
    }
    l0 = fmaf(l0, alpha0, sum0);
    l1 = fmaf(l1, alpha1, sum1);
    m0 = mx0;
    m1 = mx1;
#pragma unroll
    for (int n = 0; n < ON; n++) {
        o[n][0] *= alpha0;
        o[n][1] *= alpha0;
        o[n][2] *= alpha1;
        o[n][3] *= alpha1;
    }
}

// O / l into out (b, t, h·DH) for the thread's rows r0, r1 (rows past t: not written).
template <int DH, int ON>
__device__ __forceinline__ void tc_store(const float (&o)[ON][4], float l0, float l1,
                                         float* __restrict__ out, int b, int h, int heads, int t,
                                         int r0, int r1, int c) {
    const size_t row_stride = (size_t)heads * DH;
    const float inv0 = 1.f / l0, inv1 = 1.f / l1;
#pragma unroll
    for (int n = 0; n < ON; n++) {
        const int d = h * DH + n * 8 + 2 * c;
        if (r0 < t)
            *reinterpret_cast<float2*>(out + ((size_t)b * t + r0) * row_stride + d) =
                make_float2(o[n][0] * inv0, o[n][1] * inv0);
        if (r1 < t)
            *reinterpret_cast<float2*>(out + ((size_t)b * t + r1) * row_stride + d) =
                make_float2(o[n][2] * inv1, o[n][3] * inv1);
    }
}

template <int DH>
__device__ __forceinline__ void flash_attention_tc(const float* __restrict__ q,
                                                   const float* __restrict__ k,
                                                   const float* __restrict__ v,
                                                   float* __restrict__ out, int t, int heads) {
    constexpr int KS = DH / 8;     // steps over the head width for S; column tiles of O
    constexpr int NT = TC_BC / 8;  // column tiles of S; steps over the keys for O
    constexpr int KSTRIDE = DH + 4, VSTRIDE = DH + 8;
    extern __shared__ float4 tc_smem[];
    float* ks = reinterpret_cast<float*>(tc_smem);  // (BC, KSTRIDE)
    float* vs = ks + TC_BC * KSTRIDE;               // (BC, VSTRIDE)
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int g = lane >> 2, c = lane & 3;
    float* ps = vs + TC_BC * VSTRIDE + warp * 16 * TC_PSTRIDE;  // this warp's (16, PSTRIDE)
    const int h = blockIdx.y, b = blockIdx.z;
    const size_t head = ((size_t)b * heads + h) * (size_t)t * DH;
    const int r0 = blockIdx.x * TC_BR + warp * 16 + g, r1 = r0 + 8;  // this thread's rows

    // The warp's query rows as A fragments, split once for every tile (rows past t: zeros).
    unsigned qh[KS][4], ql[KS][4];
#pragma unroll
    for (int s = 0; s < KS; s++) {
        const int d = s * 8 + c;
        const float a0 = r0 < t ? q[head + (size_t)r0 * DH + d] : 0.f;
        const float a1 = r1 < t ? q[head + (size_t)r1 * DH + d] : 0.f;
        const float a2 = r0 < t ? q[head + (size_t)r0 * DH + d + 4] : 0.f;
        const float a3 = r1 < t ? q[head + (size_t)r1 * DH + d + 4] : 0.f;
        tc_split(a0, qh[s][0], ql[s][0]);
        tc_split(a1, qh[s][1], ql[s][1]);
        tc_split(a2, qh[s][2], ql[s][2]);
        tc_split(a3, qh[s][3], ql[s][3]);
    }

    float o[KS][4];
#pragma unroll
    for (int n = 0; n < KS; n++)
#pragma unroll
        for (int i = 0; i < 4; i++) o[n][i] = 0.f;
    float m0 = -TC_INF, m1 = -TC_INF, l0 = 0.f, l1 = 0.f;  // rows r0 and r1

    for (int k0 = 0; k0 < t; k0 += TC_BC) {
        __syncthreads();  // every warp is done with the previous tile's k and v
        for (int i = threadIdx.x; i < TC_BC * DH / 4; i += TC_THREADS) {
            const int r = i / (DH / 4), d4 = (i % (DH / 4)) * 4;
            float4 kx = make_float4(0.f, 0.f, 0.f, 0.f), vx = kx;
            if (k0 + r < t) {
                kx = *reinterpret_cast<const float4*>(k + head + (size_t)(k0 + r) * DH + d4);
                vx = *reinterpret_cast<const float4*>(v + head + (size_t)(k0 + r) * DH + d4);
            }
            *reinterpret_cast<float4*>(ks + r * KSTRIDE + d4) = kx;
            *reinterpret_cast<float4*>(vs + r * VSTRIDE + d4) = vx;
        }
        __syncthreads();

        // S = Q·Kᵀ: column tile n holds keys k0 + 8n …; B is Kᵀ, b0 = K[key g][d c].
        float sc[NT][4];
#pragma unroll
        for (int n = 0; n < NT; n++) {
#pragma unroll
            for (int i = 0; i < 4; i++) sc[n][i] = 0.f;
            const float* kr = ks + (n * 8 + g) * KSTRIDE + c;
#pragma unroll
            for (int s = 0; s < KS; s++) {
                unsigned bh[2], bl[2];
                tc_split(kr[s * 8], bh[0], bl[0]);
                tc_split(kr[s * 8 + 4], bh[1], bl[1]);
                tc_mma3(sc[n], qh[s], ql[s], bh, bl);
            }
        }
        tc_mask_past(sc, k0, t, c);
        tc_online_softmax(sc, o, m0, m1, l0, l1);

        // P from the accumulator layout into the A operand's, through this warp's shared rows.
        __syncwarp();  // the warp's reads of the previous tile's P are done
#pragma unroll
        for (int n = 0; n < NT; n++) {
            *reinterpret_cast<float2*>(ps + g * TC_PSTRIDE + n * 8 + 2 * c) =
                make_float2(sc[n][0], sc[n][1]);
            *reinterpret_cast<float2*>(ps + (g + 8) * TC_PSTRIDE + n * 8 + 2 * c) =
                make_float2(sc[n][2], sc[n][3]);
        }
        __syncwarp();

        // O += P·V: step s covers keys k0 + 8s …; b0 = V[key c][column g].
#pragma unroll
        for (int s = 0; s < NT; s++) {
            unsigned ah[4], al[4];
            tc_split(ps[g * TC_PSTRIDE + s * 8 + c], ah[0], al[0]);
            tc_split(ps[(g + 8) * TC_PSTRIDE + s * 8 + c], ah[1], al[1]);
            tc_split(ps[g * TC_PSTRIDE + s * 8 + c + 4], ah[2], al[2]);
            tc_split(ps[(g + 8) * TC_PSTRIDE + s * 8 + c + 4], ah[3], al[3]);
            const float* vr = vs + (s * 8 + c) * VSTRIDE + g;
#pragma unroll
            for (int n = 0; n < KS; n++) {
                unsigned bh[2], bl[2];
                tc_split(vr[n * 8], bh[0], bl[0]);
                tc_split(vr[4 * VSTRIDE + n * 8], bh[1], bl[1]);
                tc_mma3(o[n], ah, al, bh, bl);
            }
        }
    }

    tc_store<DH>(o, l0, l1, out, b, h, heads, t, r0, r1, c);
}

#define FLASH_ATTENTION_TC(DH)                                                                \
    extern "C" __global__ void __launch_bounds__(TC_THREADS) flash_attention_tc_f32_d##DH(    \
        const float* __restrict__ q, const float* __restrict__ k, const float* __restrict__ v, \
        float* __restrict__ out, int t, int heads) {                                          \
        flash_attention_tc<DH>(q, k, v, out, t, heads);                                       \
    }
FLASH_ATTENTION_TC(16)
FLASH_ATTENTION_TC(32)
FLASH_ATTENTION_TC(64)

// The same attention with bf16 operands (the flow's `--flow-matmul bf16`, a recorded reduced
// precision): q, k, v rounded to bf16 (round to nearest even), S = Q·Kᵀ and O = P·V as
// mma.sync m16n8k16 bf16 with f32 accumulators, the softmax in f32 and P rounded to bf16 for
// its product. Fragment layouts (PTX ISA, m16n8k16 .bf16; a register holds two consecutive k):
// A r0 (g, 2c…2c+1), r1 (g + 8, 2c…), r2 (g, 2c + 8…), r3 (g + 8, 2c + 8…); B r0 (k 2c…2c+1,
// n g), r1 (k 2c + 8…, n g); C as above. The S accumulators of two neighbouring column tiles
// are exactly P's A fragment for 16 keys, so P stays in registers. Shared memory (dynamic): the
// k tile (64, DH + 8) and the v tile transposed (DH, 64 + 8), bf16, so that each B register is
// one 32-bit load on its own bank.

// Two floats rounded to bf16 (nearest even) in one register, `lo` in the lower half (the lower
// address, the first of a fragment's pair). cvt's first source goes to the upper half.
__device__ __forceinline__ unsigned tc_pack_bf16(float lo, float hi) {
    unsigned r;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}

__device__ __forceinline__ unsigned short tc_bf16(float x) {
    unsigned short r;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(x));
    return r;
}

__device__ __forceinline__ void tc_mma_bf16(float (&d)[4], const unsigned (&a)[4],
                                            const unsigned (&b)[2]) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

template <int DH>
__device__ __forceinline__ void flash_attention_bf16(const float* __restrict__ q,
                                                     const float* __restrict__ k,
                                                     const float* __restrict__ v,
                                                     float* __restrict__ out, int t, int heads) {
    constexpr int KS = DH / 16;    // k16 steps over the head width for S
    constexpr int NT = TC_BC / 8;  // column tiles of S (8 keys each)
    constexpr int ON = DH / 8;     // column tiles of O
    constexpr int KSTRIDE = DH + 8, VSTRIDE = TC_BC + 8;  // in bf16 elements
    extern __shared__ float4 tc_smem[];
    unsigned short* ks = reinterpret_cast<unsigned short*>(tc_smem);  // (BC, KSTRIDE)
    unsigned short* vt = ks + TC_BC * KSTRIDE;                         // (DH, VSTRIDE)
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int g = lane >> 2, c = lane & 3;
    const int h = blockIdx.y, b = blockIdx.z;
    const size_t head = ((size_t)b * heads + h) * (size_t)t * DH;
    const int r0 = blockIdx.x * TC_BR + warp * 16 + g, r1 = r0 + 8;

    unsigned qa[KS][4];
#pragma unroll
    for (int s = 0; s < KS; s++) {
        const int d = s * 16 + 2 * c;
        const float* q0 = q + head + (size_t)r0 * DH + d;
        const float* q1 = q + head + (size_t)r1 * DH + d;
        const bool in0 = r0 < t, in1 = r1 < t;
        qa[s][0] = tc_pack_bf16(in0 ? q0[0] : 0.f, in0 ? q0[1] : 0.f);
        qa[s][1] = tc_pack_bf16(in1 ? q1[0] : 0.f, in1 ? q1[1] : 0.f);
        qa[s][2] = tc_pack_bf16(in0 ? q0[8] : 0.f, in0 ? q0[9] : 0.f);
        qa[s][3] = tc_pack_bf16(in1 ? q1[8] : 0.f, in1 ? q1[9] : 0.f);
    }

    float o[ON][4];
#pragma unroll
    for (int n = 0; n < ON; n++)
#pragma unroll
        for (int i = 0; i < 4; i++) o[n][i] = 0.f;
    float m0 = -TC_INF, m1 = -TC_INF, l0 = 0.f, l1 = 0.f;

    for (int k0 = 0; k0 < t; k0 += TC_BC) {
        __syncthreads();  // every warp is done with the previous tile
        for (int i = threadIdx.x; i < TC_BC * DH / 4; i += TC_THREADS) {
            const int r = i / (DH / 4), d4 = (i % (DH / 4)) * 4;
            float4 kx = make_float4(0.f, 0.f, 0.f, 0.f), vx = kx;
            if (k0 + r < t) {
                kx = *reinterpret_cast<const float4*>(k + head + (size_t)(k0 + r) * DH + d4);
                vx = *reinterpret_cast<const float4*>(v + head + (size_t)(k0 + r) * DH + d4);
            }
            unsigned* kd = reinterpret_cast<unsigned*>(ks + r * KSTRIDE + d4);
            kd[0] = tc_pack_bf16(kx.x, kx.y);
            kd[1] = tc_pack_bf16(kx.z, kx.w);
            vt[(d4 + 0) * VSTRIDE + r] = tc_bf16(vx.x);
            vt[(d4 + 1) * VSTRIDE + r] = tc_bf16(vx.y);
            vt[(d4 + 2) * VSTRIDE + r] = tc_bf16(vx.z);
            vt[(d4 + 3) * VSTRIDE + r] = tc_bf16(vx.w);
        }
        __syncthreads();

        float sc[NT][4];
#pragma unroll
        for (int n = 0; n < NT; n++) {
#pragma unroll
            for (int i = 0; i < 4; i++) sc[n][i] = 0.f;
            const unsigned short* kr = ks + (n * 8 + g) * KSTRIDE + 2 * c;
#pragma unroll
            for (int s = 0; s < KS; s++) {
                const unsigned bk[2] = {*reinterpret_cast<const unsigned*>(kr + s * 16),
                                        *reinterpret_cast<const unsigned*>(kr + s * 16 + 8)};
                tc_mma_bf16(sc[n], qa[s], bk);
            }
        }
        tc_mask_past(sc, k0, t, c);
        tc_online_softmax(sc, o, m0, m1, l0, l1);

        // O += P·V over 16 keys a step: P's A fragment from the tiles 2j and 2j + 1.
#pragma unroll
        for (int j = 0; j < NT / 2; j++) {
            const unsigned pa[4] = {tc_pack_bf16(sc[2 * j][0], sc[2 * j][1]),
                                    tc_pack_bf16(sc[2 * j][2], sc[2 * j][3]),
                                    tc_pack_bf16(sc[2 * j + 1][0], sc[2 * j + 1][1]),
                                    tc_pack_bf16(sc[2 * j + 1][2], sc[2 * j + 1][3])};
#pragma unroll
            for (int n = 0; n < ON; n++) {
                const unsigned short* vr = vt + (n * 8 + g) * VSTRIDE + j * 16 + 2 * c;
                const unsigned bv[2] = {*reinterpret_cast<const unsigned*>(vr),
                                        *reinterpret_cast<const unsigned*>(vr + 8)};
                tc_mma_bf16(o[n], pa, bv);
            }
        }
    }

    tc_store<DH>(o, l0, l1, out, b, h, heads, t, r0, r1, c);
}

#define FLASH_ATTENTION_BF16(DH)                                                              \
    extern "C" __global__ void __launch_bounds__(TC_THREADS) flash_attention_tc_bf16_d##DH(   \
        const float* __restrict__ q, const float* __restrict__ k, const float* __restrict__ v, \
        float* __restrict__ out, int t, int heads) {                                          \
        flash_attention_bf16<DH>(q, k, v, out, t, heads);                                     \
    }
FLASH_ATTENTION_BF16(16)
FLASH_ATTENTION_BF16(32)
FLASH_ATTENTION_BF16(64)
