//! Joined decode steps replayed as CUDA graphs.
//!
//! A decode step is ~500 small kernels (24 layers of ~20), each a launch with candle's host-side
//! overhead, so the LM on a GPU is bound by launching, not by the GPU. A CUDA graph
//! records the step once and replays it with one launch. Replay needs every kernel to see the
//! same shapes and buffers each time, so a graphed step differs from [`SpeechLm::step_batch`]
//! in what is fixed:
//! - attention runs over the batch's whole capacity every step, positions a lane has not
//!   reached masked to −∞ (their probabilities are exactly 0, as for a ragged batch);
//! - everything that changes per step — the token ids, the RoPE tables, the positions every
//!   lane's k|v is written at, the mask — lives in device buffers ([`StepInputs`]) that are
//!   overwritten before each replay; the log-probs land in a fixed output buffer;
//! - candle's per-op layout parameters come from its device-side cache (warmed by running the
//!   step once for real before capturing it).
//!
//! A graph is captured for one [`LaneBatch`] generation (its KV tensors) and lane count, on the
//! first step after lanes joined or left, and replayed until they change again. The capture runs
//! in thread-local mode, so the flow's thread may use the device meanwhile. If capturing fails,
//! the batch goes on without graphs (the step that was being captured has already run for
//! real). Off CUDA, or with [`SpeechLm::set_decode_graphs`] off, nothing here is used.

use candle::Tensor;

#[cfg(feature = "cuda")]
use super::{DType, Device, ModelError, cache_layout_params};
use super::{JoinedStep, LaneBatch, Result, SpeechLm};

/// Counts of this process, for benchmarks: steps captured, steps replayed, captures that
/// failed, the last failure, and the nodes (kernels and copies) of the last captured step, which
/// is what fusing kernels changes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GraphStats {
    pub captured: u64,
    pub replayed: u64,
    pub failed: u64,
    pub last_failure: Option<String>,
    pub last_step_nodes: Option<usize>,
}

static STATS: std::sync::Mutex<GraphStats> = std::sync::Mutex::new(GraphStats {
    captured: 0,
    replayed: 0,
    failed: 0,
    last_failure: None,
    last_step_nodes: None,
});

/// This process's [`GraphStats`] so far.
pub fn graph_stats() -> GraphStats {
    STATS.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
}

#[cfg(feature = "cuda")]
fn count(update: impl FnOnce(&mut GraphStats)) {
    update(&mut STATS.lock().unwrap_or_else(std::sync::PoisonError::into_inner));
}

/// The graph of the current batch, if one is captured, and whether capturing failed.
#[derive(Default)]
pub struct GraphSlot {
    #[cfg(feature = "cuda")]
    captured: Option<Captured>,
    failed: bool,
}

impl SpeechLm {
    /// One joined decode step through a CUDA graph: `None` when graphs are not used (not
    /// CUDA, switched off, or a capture failed in this batch), so the caller runs
    /// [`SpeechLm::step_batch`] instead.
    pub(super) fn step_graphed(
        &self,
        batch: &mut LaneBatch,
        tokens: &[u32],
        slot: &mut GraphSlot,
    ) -> Result<Option<Tensor>> {
        if !self.decode_graphs || !self.device.is_cuda() || slot.failed {
            return Ok(None);
        }
        self.check_batch_step(batch, tokens)?;
        self.graphed(batch, tokens, slot)
    }
}

#[cfg(not(feature = "cuda"))]
impl SpeechLm {
    fn graphed(
        &self,
        _batch: &mut LaneBatch,
        _tokens: &[u32],
        slot: &mut GraphSlot,
    ) -> Result<Option<Tensor>> {
        slot.failed = true;
        Ok(None)
    }
}

/// Per-step inputs of a fixed-shape step, on the device: token ids `(lanes,)`, RoPE cos and
/// sin `(lanes, heads + 2·kv, d/2)`, the write position of every cache row
/// `(2·lanes·kv, 1, d)`, the attention mask over the whole capacity `(lanes, 1, 1, capacity)`.
/// Built everywhere, used for replay only on CUDA: the CPU tests check the step a graph records.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(super) struct StepInputs {
    ids: Tensor,
    cos: Tensor,
    sin: Tensor,
    rows: Tensor,
    mask: Tensor,
}

#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
impl SpeechLm {
    /// This step's inputs, uploaded to fresh tensors (the buffers of a new capture, or copied
    /// into a captured graph's buffers before a replay).
    pub(super) fn step_inputs(&self, batch: &LaneBatch, tokens: &[u32]) -> Result<StepInputs> {
        let (cos, sin, shape) = self.rope_host(&batch.lens);
        Ok(StepInputs {
            ids: Tensor::new(tokens, &self.device)?,
            cos: Tensor::from_vec(cos, shape, &self.device)?,
            sin: Tensor::from_vec(sin, shape, &self.device)?,
            rows: batch.write_rows()?,
            mask: batch.mask(batch.capacity)?,
        })
    }

    /// The step a graph records: every per-step value read from `inputs`, attention over the
    /// whole capacity, the k|v written by scatter even for one lane (a position baked into a
    /// kernel's arguments would be replayed as it was). Does not advance the batch.
    /// `(lanes, speech_vocab)` log-probs.
    pub(super) fn fixed_shape_step(
        &self,
        batch: &LaneBatch,
        inputs: &StepInputs,
    ) -> Result<Tensor> {
        let step = JoinedStep {
            len: batch.capacity,
            write_rows: Some(inputs.rows.clone()),
            mask: Some(inputs.mask.clone()),
        };
        let x = self.speech_embedding.index_select(&inputs.ids, 0)?;
        let x = self.layers_with_tables(&x, &inputs.cos, &inputs.sin, &mut |li, qkv| {
            self.attend_joined(qkv, batch, li, &step)
        })?;
        self.head(&x)
    }
}

/// A captured step and the buffers it reads and writes.
#[cfg(feature = "cuda")]
struct Captured {
    /// (lanes, batch generation) it was captured for.
    key: (usize, u64),
    inputs: StepInputs,
    out: Tensor,
    graph: candle::cuda_backend::cudarc::driver::CudaGraph,
}

#[cfg(feature = "cuda")]
impl StepInputs {
    /// Overwrites these buffers in place with `new`'s values (the graph keeps the addresses).
    fn write(&self, new: &StepInputs) -> Result<()> {
        for (buf, src) in [
            (&self.ids, &new.ids),
            (&self.cos, &new.cos),
            (&self.sin, &new.sin),
            (&self.rows, &new.rows),
            (&self.mask, &new.mask),
        ] {
            buf.slice_set(src, 0, 0)?;
        }
        Ok(())
    }
}

#[cfg(feature = "cuda")]
impl SpeechLm {
    fn graphed(
        &self,
        batch: &mut LaneBatch,
        tokens: &[u32],
        slot: &mut GraphSlot,
    ) -> Result<Option<Tensor>> {
        // Uploaded before the parameter cache is on: it would keep every step's small inputs
        // (token ids, positions) on the device, keyed by value, for good.
        let inputs = self.step_inputs(batch, tokens)?;
        let _params = cache_layout_params(&self.device);
        let key = (batch.lanes(), batch.generation);
        if let Some(c) = slot.captured.as_ref().filter(|c| c.key == key) {
            c.inputs.write(&inputs)?;
            c.graph.launch().map_err(cuda_error)?;
            count(|s| s.replayed += 1);
            batch.advance();
            return Ok(Some(c.out.clone()));
        }
        slot.captured = None;
        // This step for real: its log-probs are the step's, and it warms candle's parameter
        // cache for the capture below.
        let logp = self.fixed_shape_step(batch, &inputs)?;
        match self.capture(batch, &inputs) {
            Ok((graph, out)) => {
                let nodes = lectern_kernels::cuda::graph_nodes(&graph);
                count(|s| {
                    s.captured += 1;
                    s.last_step_nodes = nodes;
                });
                slot.captured = Some(Captured { key, inputs, out, graph });
            }
            Err(e) => {
                count(|s| {
                    s.failed += 1;
                    s.last_failure = Some(e.to_string());
                });
                slot.failed = true;
            }
        }
        batch.advance();
        Ok(Some(logp))
    }

    /// Records one step (reading `inputs`, writing the batch's caches and a fixed output).
    fn capture(
        &self,
        batch: &LaneBatch,
        inputs: &StepInputs,
    ) -> Result<(candle::cuda_backend::cudarc::driver::CudaGraph, Tensor)> {
        use candle::cuda_backend::cudarc::driver::sys::{
            CUgraphInstantiate_flags, CUstreamCaptureMode,
        };
        let Device::Cuda(dev) = &self.device else {
            return Err(ModelError::InvalidInput("CUDA graphs need a CUDA device".into()));
        };
        let out =
            Tensor::zeros((batch.lanes(), self.cfg.speech_vocab()), DType::F32, &self.device)?;
        let stream = dev.cuda_stream();
        stream
            .begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
            .map_err(cuda_error)?;
        let recorded = (|| -> Result<()> {
            let logp = self.fixed_shape_step(batch, inputs)?;
            out.slice_set(&logp, 0, 0)?;
            Ok(())
        })();
        let graph = stream.end_capture(CUgraphInstantiate_flags(0));
        recorded?;
        let graph = graph
            .map_err(cuda_error)?
            .ok_or_else(|| ModelError::InvalidInput("the captured step is empty".into()))?;
        Ok((graph, out))
    }
}

#[cfg(feature = "cuda")]
fn cuda_error(e: candle::cuda_backend::cudarc::driver::DriverError) -> ModelError {
    ModelError::InvalidInput(format!("CUDA graph: {e}"))
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use candle::Device;

    use super::super::{LmPrecision, SpeechLm};
    use super::*;

    /// The step a graph records, run for real on the CPU: the same log-probs as the joined
    /// step for a ragged batch and for one lane (attention over the whole capacity adds only
    /// exact zeros), and the same cache writes (the steps after it agree too).
    #[test]
    fn the_fixed_shape_step_decodes_as_the_joined_step() {
        let dir =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/cosyvoice3-tiny-a/model");
        let lm = SpeechLm::from_dir(&dir, LmPrecision::F32, &Device::Cpu).unwrap();
        let prompts: [&[u32]; 3] = [&[151_646, 5, 9], &[151_646, 7], &[3, 151_646, 8, 2, 11]];
        let capacity = 64;
        let batch = || {
            let caches = prompts
                .iter()
                .map(|text| {
                    let input = lm.lm_input(&[], text, &[1, 2, 3]).unwrap();
                    let mut c = lm.new_cache(capacity).unwrap();
                    lm.prefill(&input, &mut c).unwrap();
                    c
                })
                .collect();
            LaneBatch::join(caches).unwrap()
        };
        for lanes in [3, 1] {
            let (mut joined, mut fixed) = (batch(), batch());
            let keep: Vec<bool> = (0..3).map(|l| l < lanes).collect();
            joined.retain(&keep).unwrap();
            fixed.retain(&keep).unwrap();
            let mut dev = 0f32;
            for step in 0..4u32 {
                let tokens: Vec<u32> =
                    (0..lanes as u32).map(|l| (step * 13 + l * 5) % 50).collect();
                let a = lm.step_batch(&mut joined, &tokens).unwrap().to_vec2::<f32>().unwrap();
                let inputs = lm.step_inputs(&fixed, &tokens).unwrap();
                let b = lm.fixed_shape_step(&fixed, &inputs).unwrap().to_vec2::<f32>().unwrap();
                fixed.advance();
                for (x, y) in a.iter().flatten().zip(b.iter().flatten()) {
                    dev = dev.max((x - y).abs());
                }
            }
            assert_eq!(fixed.lens(), joined.lens());
            assert!(dev <= 1e-5, "{lanes} lanes: {dev}");
        }
    }
}
