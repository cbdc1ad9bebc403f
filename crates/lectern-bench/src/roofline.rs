//! How far a workload run is from what the GPU could do at best: the LM's decode steps at the
//! memory bandwidth limit (every step reads every decode weight once) and the flow's arithmetic
//! at the tensor cores' peak. Published peaks of the GPUs Lectern is measured on, the model's
//! shapes, and the run's own counts (decode steps, flow groups) give the lower bounds
//! `lectern bench --workload` reports beside each stage's measured time.
//!
//! These are bounds, not predictions: a decode step also reads its KV cache and launches
//! kernels, and the flow also runs its convolutions, norms and softmaxes. The point is the gap.

use candle::Device;
use lectern_model::config::ModelConfig;
use lectern_model::lm::LmPrecision;

/// A GPU's published peaks (dense, no sparsity), per second.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DevicePeaks {
    pub name: &'static str,
    /// HBM bandwidth, bytes/s.
    pub memory_bytes_per_s: f64,
    /// Dense bf16 tensor-core FLOP/s.
    pub bf16_flops: f64,
    /// Dense TF32 tensor-core FLOP/s.
    pub tf32_flops: f64,
    /// f32 FLOP/s on the CUDA cores.
    pub f32_flops: f64,
}

/// NVIDIA's data-sheet figures for the SXM parts (H200: 4.8 TB/s; H100: 3.35 TB/s; A100 80 GB:
/// 2.039 TB/s), matched on the driver's device name.
const KNOWN: [DevicePeaks; 3] = [
    DevicePeaks {
        name: "H200",
        memory_bytes_per_s: 4.8e12,
        bf16_flops: 989.4e12,
        tf32_flops: 494.7e12,
        f32_flops: 66.9e12,
    },
    DevicePeaks {
        name: "H100",
        memory_bytes_per_s: 3.35e12,
        bf16_flops: 989.4e12,
        tf32_flops: 494.7e12,
        f32_flops: 66.9e12,
    },
    DevicePeaks {
        name: "A100",
        memory_bytes_per_s: 2.039e12,
        bf16_flops: 312e12,
        tf32_flops: 156e12,
        f32_flops: 19.5e12,
    },
];

/// The peaks of a GPU named `device_name` (as the driver names it, e.g. "NVIDIA H200"), if
/// known.
#[must_use]
pub fn peaks_for(device_name: &str) -> Option<DevicePeaks> {
    KNOWN.iter().copied().find(|p| device_name.contains(p.name))
}

/// The driver's name of `device`'s GPU; `None` off CUDA.
#[must_use]
pub fn device_name(device: &Device) -> Option<String> {
    #[cfg(feature = "cuda")]
    if let Device::Cuda(dev) = device {
        return dev.cuda_stream().context().name().ok();
    }
    let _ = device;
    None
}

/// Bytes of weights one decode step reads at `precision`: every layer's projections and the
/// speech head (the embedding tables are read a row per token, which is nothing beside them).
#[must_use]
pub fn lm_step_weight_bytes(cfg: &ModelConfig, precision: LmPrecision) -> f64 {
    let q = &cfg.lm.qwen;
    let h = q.hidden_size as f64;
    let kv = (q.num_key_value_heads * q.head_dim()) as f64;
    let per_layer = h * h * 2.0 + h * kv * 2.0 + 3.0 * h * q.intermediate_size as f64;
    let params = per_layer * q.num_hidden_layers as f64 + h * cfg.lm.speech_vocab() as f64;
    params * bytes_per_weight(precision)
}

fn bytes_per_weight(precision: LmPrecision) -> f64 {
    match precision {
        LmPrecision::F32 => 4.0,
        LmPrecision::F16 | LmPrecision::Bf16 => 2.0,
        // 32 int8 weights and one f16 scale per block.
        LmPrecision::Q8_0 => 34.0 / 32.0,
    }
}

/// FLOPs of one estimator call over a sequence of `frames` mel frames (the voice prompt's and
/// the group's): the DiT blocks' projections and attention products, both CFG halves.
#[must_use]
pub fn dit_call_flops(cfg: &ModelConfig, frames: usize) -> f64 {
    let d = &cfg.flow.dit;
    let (dim, t) = (d.dim as f64, frames as f64);
    let inner = (d.heads * d.dim_head) as f64;
    let ff = dim * d.ff_mult as f64;
    // qkv, out, two feed-forward products: 2 FLOPs per multiply-add.
    let projections = 2.0 * t * (dim * 3.0 * inner + inner * dim + 2.0 * dim * ff);
    // Q·Kᵀ and P·V over the whole sequence.
    let attention = 2.0 * 2.0 * t * t * inner;
    const CFG_HALVES: f64 = 2.0;
    CFG_HALVES * d.depth as f64 * (projections + attention)
}

/// The run's lower bounds and how its measured stage times compare.
#[derive(Debug, Clone, PartialEq)]
pub struct Gap {
    pub device: DevicePeaks,
    /// Decode steps × weight bytes ÷ bandwidth.
    pub lm_limit_s: f64,
    /// The flow's FLOPs ÷ the bf16 tensor-core peak.
    pub flow_limit_s: f64,
    /// Measured ÷ limit.
    pub lm_times_limit: f64,
    pub flow_times_limit: f64,
}

impl Gap {
    /// The bounds, the device's peaks and the ratios, for a benchmark's JSON.
    #[must_use]
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "device": self.device.name,
            "memory_bytes_per_s": self.device.memory_bytes_per_s,
            "bf16_flops": self.device.bf16_flops,
            "lm_limit_s": self.lm_limit_s,
            "flow_limit_s": self.flow_limit_s,
            "lm_times_limit": self.lm_times_limit,
            "flow_times_limit": self.flow_times_limit,
        })
    }
}

/// What a run's counts say the stages could take at best on `device`, against what they took.
#[must_use]
pub fn gap(
    device: DevicePeaks,
    lm_step_bytes: f64,
    decode_steps: usize,
    flow_flops: f64,
    lm_s: f64,
    flow_s: f64,
) -> Gap {
    let lm_limit_s = decode_steps as f64 * lm_step_bytes / device.memory_bytes_per_s;
    let flow_limit_s = flow_flops / device.bf16_flops;
    Gap {
        device,
        lm_limit_s,
        flow_limit_s,
        lm_times_limit: lm_s / lm_limit_s,
        flow_times_limit: flow_s / flow_limit_s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full_size() -> ModelConfig {
        ModelConfig::full_size()
    }

    #[test]
    fn the_lm_reads_about_a_billion_and_a_half_bytes_a_step_in_f32() {
        let cfg = full_size();
        let f32_bytes = lm_step_weight_bytes(&cfg, LmPrecision::F32);
        // Qwen2-0.5B without its embeddings: ~358 M projection weights, plus the speech head.
        assert!((1.4e9..1.5e9).contains(&f32_bytes), "{f32_bytes}");
        assert_eq!(lm_step_weight_bytes(&cfg, LmPrecision::Bf16), f32_bytes / 2.0);
    }

    #[test]
    fn a_second_of_audio_costs_about_half_a_teraflop_at_nfe_10() {
        let cfg = full_size();
        // 50 mel frames a second; a 40 s group after a 588-frame prompt.
        let (prompt, group) = (588, 2000);
        let per_call = dit_call_flops(&cfg, prompt + group);
        let per_audio_s = per_call * 10.0 / (group as f64 / 50.0);
        assert!((4e11..8e11).contains(&per_audio_s), "{per_audio_s}");
        // Attention grows with the square of the sequence, projections linearly.
        assert!(dit_call_flops(&cfg, 2 * group) > 2.0 * dit_call_flops(&cfg, group));
    }

    #[test]
    fn known_gpus_are_found_by_the_drivers_name() {
        assert_eq!(peaks_for("NVIDIA H200").map(|p| p.name), Some("H200"));
        assert_eq!(peaks_for("NVIDIA H100 80GB HBM3").map(|p| p.name), Some("H100"));
        assert!(peaks_for("NVIDIA GeForce RTX 4090").is_none());
    }

    #[test]
    fn the_gap_is_measured_over_limit() {
        let h200 = peaks_for("NVIDIA H200").unwrap();
        let g = gap(h200, 4.8e9, 1000, 989.4e12, 2.0, 3.0);
        assert!((g.lm_limit_s - 1.0).abs() < 1e-9 && (g.flow_limit_s - 1.0).abs() < 1e-9);
        assert!((g.lm_times_limit - 2.0).abs() < 1e-9 && (g.flow_times_limit - 3.0).abs() < 1e-9);
    }
}
