//! The values of a contiguous f32 CPU tensor as a slice, for the CPU kernels that read candle's
//! storage directly (the flow's elementwise ops, OpenBLAS products, the window convs).

use candle::{Storage, Tensor};

/// Runs `f` on the f32 values of `x`, a contiguous CPU tensor (an error elsewhere, or for
/// another dtype).
pub(crate) fn with_f32_slice<T>(
    x: &Tensor,
    f: impl FnOnce(&[f32]) -> candle::Result<T>,
) -> candle::Result<T> {
    if !x.is_contiguous() {
        candle::bail!("a CPU kernel needs a contiguous tensor, got {:?}", x.layout());
    }
    let (g, l) = x.storage_and_layout();
    let Storage::Cpu(s) = &*g else { candle::bail!("a CPU kernel needs a CPU tensor") };
    f(&s.as_slice::<f32>()?[l.start_offset()..][..x.elem_count()])
}
