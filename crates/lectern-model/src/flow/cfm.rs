//! The conditional-flow-matching solver (`CausalConditionalCFM.solve_euler`, spec §7.5):
//! cosine time grid, Euler steps, classifier-free guidance over a batch of two.
//!
//! The solver only sees an [`Estimator`], so tests can swap the DiT for a stub. Every scalar
//! follows upstream's f32 arithmetic: the grid is torch's `linspace` then `1 − cos(s·0.5·π)`,
//! and `t` advances by the recurrence `t += dt; dt = t_{k+1} − t`, not by reading the grid.

use candle::Tensor;

use super::dit::DiT;
use crate::error::{ModelError, Result};

/// The CFG batch's conditioning, channel-first. Row 0 conditional, row 1 unconditional (zeros).
#[derive(Debug, Clone)]
pub struct FlowCond {
    pub mu: Tensor,   // (2, 80, t)
    pub spks: Tensor, // (2, 80)
    pub cond: Tensor, // (2, 80, t)
}

impl FlowCond {
    /// Builds the CFG batch from the conditional row: `mu`, `cond` (1, 80, t), `spks` (1, 80).
    pub fn cfg_batch(mu: &Tensor, spks: &Tensor, cond: &Tensor) -> candle::Result<Self> {
        let with_zero_row = |x: &Tensor| Tensor::cat(&[x, &x.zeros_like()?], 0);
        Ok(Self { mu: with_zero_row(mu)?, spks: with_zero_row(spks)?, cond: with_zero_row(cond)? })
    }
}

/// Anything that yields the velocity field of the flow.
pub trait Estimator {
    /// Velocity at time `t` (shared by every row); `x` is (b, 80, frames).
    fn velocity(&self, x: &Tensor, t: f32, cond: &FlowCond) -> candle::Result<Tensor>;
}

impl Estimator for DiT {
    fn velocity(&self, x: &Tensor, t: f32, cond: &FlowCond) -> candle::Result<Tensor> {
        let t = Tensor::full(t, 1, x.device())?; // one time for every row
        self.forward(x, &cond.mu, &t, &cond.spks, &cond.cond)
    }
}

/// torch's CPU `linspace(0, 1, n + 1)` in f32: the first half counts up from 0, the second
/// half counts down from 1 (`ATen/native/cpu/RangeFactoriesKernel.cpp`).
pub fn linspace_f32(n: usize) -> Vec<f32> {
    let steps = n + 1;
    let step = 1.0f32 / n as f32;
    let halfway = steps / 2;
    (0..steps)
        .map(|i| if i < halfway { step * i as f32 } else { 1.0 - step * (steps - i - 1) as f32 })
        .collect()
}

/// The cosine schedule `t_k = 1 − cos(k/n · π/2)`, k = 0..=n, in f32 as upstream computes it.
pub fn cosine_schedule(n: usize) -> Result<Vec<f32>> {
    if n == 0 {
        return Err(ModelError::InvalidInput(
            "the flow needs at least one Euler step (NFE ≥ 1), got 0".into(),
        ));
    }
    let pi = std::f32::consts::PI;
    Ok(linspace_f32(n).into_iter().map(|s| 1.0 - (s * 0.5 * pi).cos()).collect())
}

/// The times the estimator is evaluated at, by upstream's recurrence (`t_k` up to rounding).
pub fn euler_times(ts: &[f32]) -> Vec<f32> {
    let mut out = Vec::with_capacity(ts.len().saturating_sub(1));
    let (mut t, mut dt) = (ts[0], ts[1] - ts[0]);
    for step in 1..ts.len() {
        out.push(t);
        t += dt;
        if step < ts.len() - 1 {
            dt = ts[step + 1] - t;
        }
    }
    out
}

/// Euler integration from `x0` (1, 80, t) over the grid `ts` with guidance
/// `v = (1 + rate)·v_cond − rate·v_uncond`.
pub fn solve_euler(
    est: &impl Estimator,
    x0: Tensor,
    ts: &[f32],
    cond: &FlowCond,
    cfg_rate: f64,
) -> Result<Tensor> {
    if ts.len() < 2 {
        return Err(ModelError::InvalidInput("the time grid needs at least two points".into()));
    }
    let mut x = x0;
    let (mut t, mut dt) = (ts[0], ts[1] - ts[0]);
    for step in 1..ts.len() {
        let x_in = Tensor::cat(&[&x, &x], 0)?; // (2, 80, t): both rows share x and t
        let v = est.velocity(&x_in, t, cond)?;
        let v_cond = (v.narrow(0, 0, 1)? * (1.0 + cfg_rate))?;
        let v_uncond = (v.narrow(0, 1, 1)? * cfg_rate)?;
        x = (x + ((v_cond - v_uncond)? * f64::from(dt))?)?;
        t += dt;
        if step < ts.len() - 1 {
            dt = ts[step + 1] - t;
        }
    }
    Ok(x)
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle::Device;

    #[test]
    fn cosine_grid_of_ten_steps() {
        let ts = cosine_schedule(10).unwrap();
        let want = [
            0.0,
            0.01231164,
            0.04894346,
            0.10899347,
            0.190983,
            0.29289323,
            0.41221482,
            0.546_009_5,
            0.69098306,
            0.843_565_5,
            1.0,
        ];
        for (a, b) in ts.iter().zip(want) {
            assert!((a - b).abs() < 1e-7, "{a} vs {b}");
        }
    }

    #[test]
    fn zero_steps_is_an_error() {
        assert!(cosine_schedule(0).unwrap_err().to_string().contains("NFE"));
    }

    /// v = 1 everywhere in the conditional row and 0 in the unconditional one: x(1) = x0 + 1.7.
    struct Constant;
    impl Estimator for Constant {
        fn velocity(&self, x: &Tensor, _t: f32, _c: &FlowCond) -> candle::Result<Tensor> {
            Tensor::cat(&[&x.narrow(0, 0, 1)?.ones_like()?, &x.narrow(0, 1, 1)?.zeros_like()?], 0)
        }
    }

    #[test]
    fn euler_with_guidance_integrates_a_constant_field() {
        let dev = Device::Cpu;
        let x0 = Tensor::zeros((1, 2, 3), candle::DType::F32, &dev).unwrap();
        let c = FlowCond::cfg_batch(
            &x0,
            &Tensor::zeros((1, 2), candle::DType::F32, &dev).unwrap(),
            &x0,
        )
        .unwrap();
        let ts = cosine_schedule(4).unwrap();
        let x = solve_euler(&Constant, x0, &ts, &c, 0.7).unwrap();
        for v in x.flatten_all().unwrap().to_vec1::<f32>().unwrap() {
            assert!((v - 1.7).abs() < 1e-6, "{v}");
        }
    }
}
