// CUDA kernels for the vocoder's elementwise work around its convolutions (see kernels.rs),
// compiled at run time with NVRTC. Plain f32, every sum in the order candle's ops take.

// Snake z + inv_alpha[c] · sin(alpha[c] · z)² over x (channels, t): one pass where candle's
// ops take five.
extern "C" __global__ void snake_f32(const float* __restrict__ x, const float* __restrict__ alpha,
                                     const float* __restrict__ inv_alpha, float* __restrict__ y,
                                     int t, long long n) {
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        const int c = (int)(i / t);
        const float z = x[i];
        const float s = sinf(z * alpha[c]);
        y[i] = z + (s * s) * inv_alpha[c];
    }
}

// The taps of a stride-1 convolution summed: taps (k, out, t_in) holds W_j · x for every tap j
// (one GEMM of the stacked weights), so
//   y[o][t] = Σ_j taps[j][o][t + j·dilation − pad_left] + bias[o] (+ residual[o][t]),
// the positions outside 0 … t_in − 1 being the zero padding. The taps are added in order,
// then the bias, then the residual, as the per-tap matmuls and candle's adds did.
extern "C" __global__ void tap_sum_f32(const float* __restrict__ taps,
                                       const float* __restrict__ bias,
                                       const float* __restrict__ residual, float* __restrict__ y,
                                       int k, int out, int t_in, int t_out, int dilation,
                                       int pad_left, int has_residual) {
    const long long n = (long long)out * t_out;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        const int o = (int)(i / t_out), t = (int)(i % t_out);
        float acc = 0.f;
        bool first = true;
        for (int j = 0; j < k; j++) {
            const int src = t + j * dilation - pad_left;
            const float v = (src >= 0 && src < t_in)
                                ? taps[((size_t)j * out + o) * t_in + src]
                                : 0.f;
            acc = first ? v : acc + v;
            first = false;
        }
        float r = acc + bias[o];
        if (has_residual) r = residual[i] + r;
        y[i] = r;
    }
}
