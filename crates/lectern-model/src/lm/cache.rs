//! The LM's key/value caches: one lane's ([`KvCache`]) and several lanes joined for decoding
//! together ([`LaneBatch`]).

use candle::Tensor;

use crate::error::{ModelError, Result};

/// Keys and values of one lane, f32: per layer one `(2, kv_heads, capacity, head_dim)` tensor,
/// k then v, matching the adjacent k and v columns of the fused projection so that one
/// `slice_set` writes both, and laid out like a [`LaneBatch`] of one lane.
#[derive(Debug)]
pub struct KvCache {
    pub(super) kv: Vec<Tensor>,
    pub(super) len: usize,
    pub(super) capacity: usize,
}

/// The caches of several lanes joined for decoding them together ([`crate::lm::SpeechLm::step_batch`]):
/// per layer one `(2, lanes·kv_heads, capacity, head_dim)` tensor — all lanes' k heads, then all
/// their v heads, lane-major — so that the k (and the v) of every lane is one evenly strided
/// batch for a single matmul. Each lane keeps its own length.
#[derive(Debug)]
pub struct LaneBatch {
    pub(super) kv: Vec<Tensor>,
    pub(super) lens: Vec<usize>,
    pub(super) capacity: usize,
    pub(super) kv_heads: usize,
    /// Changes whenever `kv` is replaced (lanes join or leave): a captured decode step is only
    /// valid for the tensors it was captured on.
    pub(super) generation: u64,
}

/// Lanes decoded together share one capacity.
fn same_capacity(lane: usize, batch: usize) -> Result<()> {
    if lane == batch {
        Ok(())
    } else {
        Err(ModelError::InvalidInput(format!(
            "lanes of a batch share one capacity: {lane} and {batch}"
        )))
    }
}

/// A fresh [`LaneBatch::generation`].
fn next_generation() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

impl LaneBatch {
    /// Joins prefilled lanes (all of one capacity), in order.
    pub fn join(caches: Vec<KvCache>) -> Result<Self> {
        let first = caches
            .first()
            .ok_or_else(|| ModelError::InvalidInput("a lane batch needs a lane".into()))?;
        let (capacity, kv_heads) = (first.capacity, first.kv[0].dim(1)?);
        for c in &caches {
            same_capacity(c.capacity, capacity)?;
        }
        let layers = first.kv.len();
        let kv = (0..layers)
            .map(|l| {
                let parts: Vec<&Tensor> = caches.iter().map(|c| &c.kv[l]).collect();
                Tensor::cat(&parts, 1)
            })
            .collect::<candle::Result<Vec<_>>>()?;
        let lens = caches.iter().map(|c| c.len).collect();
        Ok(Self { kv, lens, capacity, kv_heads, generation: next_generation() })
    }

    pub fn lanes(&self) -> usize {
        self.lens.len()
    }

    /// Positions written so far, per lane.
    pub fn lens(&self) -> &[usize] {
        &self.lens
    }

    /// Adds a prefilled lane at the end.
    pub fn push(&mut self, cache: KvCache) -> Result<()> {
        same_capacity(cache.capacity, self.capacity)?;
        for (t, new) in self.kv.iter_mut().zip(&cache.kv) {
            *t = Tensor::cat(&[&*t, new], 1)?;
        }
        self.lens.push(cache.len);
        self.generation = next_generation();
        Ok(())
    }

    /// One position more for every lane (after a step wrote them).
    pub(super) fn advance(&mut self) {
        for len in &mut self.lens {
            *len += 1;
        }
    }

    /// `(2·lanes·kv, 1, d)`: the position each cache row is written at this step (all k rows,
    /// then all v rows, lane-major, as the cache holds them) — a scatter's indices.
    pub(super) fn write_rows(&self) -> Result<Tensor> {
        let (rows, d) = (2 * self.lanes() * self.kv_heads, self.kv[0].dim(3)?);
        let at: Vec<u32> = (0..2)
            .flat_map(|_| self.lens.iter())
            .flat_map(|&pos| std::iter::repeat_n(pos as u32, self.kv_heads * d))
            .collect();
        Ok(Tensor::from_vec(at, (rows, 1, d), self.kv[0].device())?)
    }

    /// `(lanes, 1, 1, len)`: 0 up to each lane's position of this step, −∞ beyond it.
    pub(super) fn mask(&self, len: usize) -> Result<Tensor> {
        let m: Vec<f32> = self
            .lens
            .iter()
            .flat_map(|&pos| (0..len).map(move |j| if j <= pos { 0.0 } else { f32::NEG_INFINITY }))
            .collect();
        Ok(Tensor::from_vec(m, (self.lanes(), 1, 1, len), self.kv[0].device())?)
    }

    /// Keeps the lanes whose `keep` entry is true, in order.
    pub fn retain(&mut self, keep: &[bool]) -> Result<()> {
        if keep.len() != self.lanes() {
            return Err(ModelError::InvalidInput(format!(
                "{} flags for {} lanes",
                keep.len(),
                self.lanes()
            )));
        }
        if keep.iter().all(|&k| k) {
            return Ok(());
        }
        let n = self.kv_heads;
        let rows: Vec<u32> = keep
            .iter()
            .enumerate()
            .filter(|(_, k)| **k)
            .flat_map(|(lane, _)| (lane * n..(lane + 1) * n).map(|r| r as u32))
            .collect();
        let rows = Tensor::new(rows.as_slice(), self.kv[0].device())?;
        for t in &mut self.kv {
            *t = t.index_select(&rows, 1)?;
        }
        self.lens = self.lens.iter().zip(keep).filter(|(_, k)| **k).map(|(l, _)| *l).collect();
        self.generation = next_generation();
        Ok(())
    }
}

impl KvCache {
    /// Positions written so far (= the RoPE position of the next row).
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub fn capacity(&self) -> usize {
        self.capacity
    }
    /// A deep copy (new storage: the original is written in place, so a shallow clone would
    /// alias it). Used to fork one prefilled prompt into several lanes.
    pub fn duplicate(&self) -> Result<Self> {
        let kv = self.kv.iter().map(Tensor::copy).collect::<candle::Result<Vec<_>>>()?;
        Ok(Self { kv, len: self.len, capacity: self.capacity })
    }

    /// Bytes actually allocated by this cache's tensors.
    pub fn allocated_bytes(&self) -> usize {
        self.kv.iter().map(|t| t.elem_count() * t.dtype().size_in_bytes()).sum()
    }
}
