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

// out = x + y * gate[b] for x, y (rows, dim), b = row / t (gate rows gate_stride floats
// apart): a block's gated residual.
extern "C" __global__ void gated_residual_f32(
    const float* __restrict__ x, const float* __restrict__ y, const float* __restrict__ gate,
    int gate_stride, float* __restrict__ out, int t, int dim, long long n) {
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        const long long row = i / dim;
        const int b = (int)(row / t);
        out[i] = x[i] + y[i] * gate[(size_t)b * gate_stride + (int)(i % dim)];
    }
}
