//! What every family of Lectern's own CUDA kernels (the LM's, the DiT's, the vocoder's) shares
//! outside CUDA builds too: a process-wide switch, so benchmarks can compare them with candle's
//! ops, and the checks their callers make before handing tensors over.

use std::sync::atomic::{AtomicBool, Ordering};

use candle::Tensor;

/// On or off for the whole process; on by default.
pub struct KernelSwitch(AtomicBool);

impl KernelSwitch {
    pub const fn on() -> Self {
        Self(AtomicBool::new(true))
    }

    pub fn set(&self, on: bool) {
        self.0.store(on, Ordering::Relaxed);
    }

    pub fn enabled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// Runs `f` with the kernels switched off (`on` false) or left as they are, then restores
    /// the switch.
    pub fn with<T>(&self, on: bool, f: impl FnOnce() -> T) -> T {
        let was = self.enabled();
        self.set(on && was);
        let out = f();
        self.set(was);
        out
    }

    /// Switched on, and `x` an f32 tensor on CUDA.
    pub fn applies_to(&self, x: &Tensor) -> bool {
        self.enabled() && x.device().is_cuda() && x.dtype() == candle::DType::F32
    }
}

/// `v` is a contiguous f32 vector of `n`.
pub fn is_f32_vector(v: &Tensor, n: usize) -> bool {
    v.dims() == [n] && v.dtype() == candle::DType::F32 && v.is_contiguous()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn with_restores_the_switch_and_never_turns_it_on() {
        let s = KernelSwitch::on();
        assert!(s.with(false, || !s.enabled()));
        assert!(s.enabled());
        s.set(false);
        assert!(!s.with(true, || s.enabled()), "`with(true)` leaves an off switch off");
        assert!(!s.enabled());
    }
}
