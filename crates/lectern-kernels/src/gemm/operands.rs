//! The operands of a flow projection `x·Wᵀ` as the CPU's f32 products (OpenBLAS and the AVX2
//! GEMM) take them: a leaf both use.

use candle::{DType, Tensor};

/// Fewer rows than this stay with candle's matmul (decode steps, the AdaLN rows).
pub const MIN_ROWS: usize = 64;

/// The operands of a flow projection `x·Wᵀ` as the CPU products take them: `x` `(rows, in)`
/// and `weight` `(out, in)` contiguous, with `(rows, in, out)`; `None` where they are not both
/// f32 on the CPU, their inner widths differ, or there are fewer than [`MIN_ROWS`] rows.
pub(crate) fn projection_operands(
    x: &Tensor,
    weight: &Tensor,
) -> candle::Result<Option<ProjectionOperands>> {
    let (Ok((rows, k)), Ok((n, wk))) = (x.dims2(), weight.dims2()) else { return Ok(None) };
    let plain = |t: &Tensor| t.device().is_cpu() && t.dtype() == DType::F32;
    if rows < MIN_ROWS || k != wk || !plain(x) || !plain(weight) {
        return Ok(None);
    }
    Ok(Some(ProjectionOperands {
        x: x.contiguous()?,
        w: weight.contiguous()?,
        shape: (rows, k, n),
    }))
}

/// What [`projection_operands`] gives: both operands contiguous, and `(rows, in, out)`.
pub(crate) struct ProjectionOperands {
    pub x: Tensor,
    pub w: Tensor,
    pub shape: (usize, usize, usize),
}
