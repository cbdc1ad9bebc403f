//! Convolution as a sum of per-tap matmuls on shifted views: candle's products only, no
//! im2col buffer. The vocoder's stride-1 convolutions off the CPU, and the reference the CPU's
//! direct convolutions are checked against.

use candle::Tensor;

/// Convolution as a sum over taps of `(out, in) @ (in, t)` matmuls on shifted views of the
/// (already padded) input, without an im2col buffer. `x` (1, in, t + (k−1)·d), `w_taps`
/// (k, out, in) → (1, out, t).
pub fn conv1d_tap_major(x: &Tensor, w_taps: &Tensor, dilation: usize) -> candle::Result<Tensor> {
    let (k, _c_out, _c_in) = w_taps.dims3()?;
    let t_out = x.dim(2)? - (k - 1) * dilation;
    let x = x.squeeze(0)?;
    // CPU gemm reads the shifted views in place; cuBLAS/Metal matmuls in candle need a
    // contiguous right-hand side, so other devices copy each tap's window.
    let on_cpu = x.device().is_cpu();
    let tap = |j: usize| -> candle::Result<Tensor> {
        let view = x.narrow(1, j * dilation, t_out)?;
        if on_cpu { Ok(view) } else { view.contiguous() }
    };
    let mut y = w_taps.get(0)?.matmul(&tap(0)?)?;
    for j in 1..k {
        y = (y + w_taps.get(j)?.matmul(&tap(j)?)?)?;
    }
    y.unsqueeze(0)
}
