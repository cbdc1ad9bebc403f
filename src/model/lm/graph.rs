//! Joined decode steps replayed as CUDA graphs.
//!
//! A decode step is ~500 small kernels (24 layers of ~20), each costing candle ~10 µs of host
//! time to launch, so the LM on a GPU is bound by launching, not by the GPU. A CUDA graph
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

#[cfg(feature = "cuda")]
use super::cache_layout_params;
#[cfg(feature = "cuda")]
use super::{DType, Device, ModelError, Tensor};
use super::{LaneBatch, Result, SpeechLm};

/// Counts of this process, for benchmarks: steps captured, steps replayed, captures that
/// failed, and the last failure.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GraphStats {
    pub captured: u64,
    pub replayed: u64,
    pub failed: u64,
    pub last_failure: Option<String>,
}

static STATS: std::sync::Mutex<GraphStats> =
    std::sync::Mutex::new(GraphStats { captured: 0, replayed: 0, failed: 0, last_failure: None });

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
pub(super) struct GraphSlot {
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
    ) -> Result<Option<candle::Tensor>> {
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
    ) -> Result<Option<candle::Tensor>> {
        slot.failed = true;
        Ok(None)
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

/// Per-step inputs, on the device: token ids `(lanes,)`, RoPE cos and sin
/// `(lanes, heads + 2·kv, d/2)`, the write position of every cache row `(2·lanes·kv, 1, d)`,
/// the attention mask `(lanes, 1, 1, capacity)`.
#[cfg(feature = "cuda")]
struct StepInputs {
    ids: Tensor,
    cos: Tensor,
    sin: Tensor,
    rows: Tensor,
    mask: Tensor,
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
        let host = self.host_inputs(batch, tokens)?;
        let _params = cache_layout_params(&self.device);
        let key = (batch.lanes(), batch.generation);
        if let Some(c) = slot.captured.as_ref().filter(|c| c.key == key) {
            c.inputs.write(&host)?;
            c.graph.launch().map_err(cuda_error)?;
            count(|s| s.replayed += 1);
            advance(batch);
            return Ok(Some(c.out.clone()));
        }
        slot.captured = None;
        let inputs = host;
        // This step for real: its log-probs are the step's, and it warms candle's parameter
        // cache for the capture below.
        let logp = self.graph_body(batch, &inputs)?;
        match self.capture(batch, &inputs) {
            Ok((graph, out)) => {
                count(|s| s.captured += 1);
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
        advance(batch);
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
            let logp = self.graph_body(batch, inputs)?;
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

    /// The step with every per-step value read from `inputs` and attention over the whole
    /// capacity: `(lanes, speech_vocab)` log-probs.
    fn graph_body(&self, batch: &LaneBatch, inputs: &StepInputs) -> Result<Tensor> {
        let x = self.speech_embedding.index_select(&inputs.ids, 0)?;
        let x = self.layers_with_tables(&x, &inputs.cos, &inputs.sin, &mut |li, qkv| {
            self.attend_whole(qkv, batch, li, inputs)
        })?;
        self.head(&x)
    }

    /// [`SpeechLm::attend_joined`] over the whole capacity, positions and mask from `inputs`.
    fn attend_whole(
        &self,
        qkv: &Tensor,
        batch: &LaneBatch,
        layer: usize,
        inputs: &StepInputs,
    ) -> Result<Tensor> {
        let qc = &self.cfg.qwen;
        let (nh, nkv, d) = (qc.num_attention_heads, qc.num_key_value_heads, qc.head_dim());
        let (groups, lanes, cap) = (nh / nkv, batch.lanes(), batch.capacity);
        let src = qkv
            .narrow(1, nh, 2 * nkv)?
            .reshape((lanes, 2, nkv, d))?
            .transpose(0, 1)?
            .contiguous()?
            .reshape((2 * lanes * nkv, 1, d))?;
        let cache = &batch.kv[layer]; // (2, lanes·nkv, capacity, d)
        cache.reshape((2 * lanes * nkv, cap, d))?.scatter_set(&inputs.rows, &src, 1)?;
        let (kc, vc) = (cache.get(0)?, cache.get(1)?); // (lanes·nkv, capacity, d)
        let q = qkv.narrow(1, 0, nh)?.contiguous()?.reshape((lanes * nkv, groups, d))?;
        let scores = q
            .matmul(&kc.t()?)?
            .reshape((lanes, nkv, groups, cap))?
            .broadcast_add(&inputs.mask)?
            .reshape((lanes * nkv, groups, cap))?;
        let probs = candle_nn::ops::softmax_last_dim(&scores)?;
        Ok(probs.matmul(&vc)?.reshape((lanes, nh * d))?)
    }

    /// This step's inputs, uploaded to fresh tensors (copied into the graph's buffers when
    /// replaying; the buffers of a new capture).
    fn host_inputs(&self, batch: &LaneBatch, tokens: &[u32]) -> Result<StepInputs> {
        let qc = &self.cfg.qwen;
        let (nkv, d) = (qc.num_key_value_heads, qc.head_dim());
        let (lanes, cap) = (batch.lanes(), batch.capacity);
        let dev = &self.device;
        let (cos, sin, shape) = self.rope_host(&batch.lens);
        let rows: Vec<u32> = (0..2)
            .flat_map(|_| batch.lens.iter())
            .flat_map(|&pos| std::iter::repeat_n(pos as u32, nkv * d))
            .collect();
        let mask: Vec<f32> = batch
            .lens
            .iter()
            .flat_map(|&pos| (0..cap).map(move |j| if j <= pos { 0.0 } else { f32::NEG_INFINITY }))
            .collect();
        Ok(StepInputs {
            ids: Tensor::new(tokens, dev)?,
            cos: Tensor::from_vec(cos, shape, dev)?,
            sin: Tensor::from_vec(sin, shape, dev)?,
            rows: Tensor::from_vec(rows, (2 * lanes * nkv, 1, d), dev)?,
            mask: Tensor::from_vec(mask, (lanes, 1, 1, cap), dev)?,
        })
    }
}

#[cfg(feature = "cuda")]
fn advance(batch: &mut LaneBatch) {
    for len in &mut batch.lens {
        *len += 1;
    }
}

#[cfg(feature = "cuda")]
fn cuda_error(e: candle::cuda_backend::cudarc::driver::DriverError) -> ModelError {
    ModelError::InvalidInput(format!("CUDA graph: {e}"))
}
