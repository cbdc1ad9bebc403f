//! The real-time side of playback: what the output callback runs.
//!
//! [`Renderer::render`] copies mono samples from the consumer half of an rtrb ring to every
//! channel of the device buffer, applies the volume, and fills any shortfall with silence. It
//! never allocates, locks or blocks: its only shared state is the atomics of [`Shared`], written
//! by the callback and read by the non-real-time player (or the other way round for controls).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

use cpal::{FromSample, Sample};

/// State shared between the callback and the player thread; atomics only.
#[derive(Debug)]
pub struct Shared {
    /// Frames taken from the ring since the player started (silence is not counted).
    played_frames: AtomicU64,
    /// Callbacks that ran out of ring samples while the player still had audio to give.
    underruns: AtomicU64,
    /// Frames of silence those underruns inserted.
    underrun_frames: AtomicU64,
    /// Callbacks run so far.
    callbacks: AtomicU64,
    /// Output silence without consuming the ring.
    paused: AtomicBool,
    /// Linear gain, f32 bits.
    volume_bits: AtomicU32,
    /// The player holds samples not yet in the ring: running dry now is an underrun.
    pending: AtomicBool,
    /// Incremented by the player to ask the callback to discard the ring.
    flush_req: AtomicU64,
    /// The last flush request the callback has carried out.
    flush_ack: AtomicU64,
}

impl Default for Shared {
    fn default() -> Self {
        Self {
            played_frames: AtomicU64::new(0),
            underruns: AtomicU64::new(0),
            underrun_frames: AtomicU64::new(0),
            callbacks: AtomicU64::new(0),
            paused: AtomicBool::new(false),
            volume_bits: AtomicU32::new(1.0f32.to_bits()),
            pending: AtomicBool::new(false),
            flush_req: AtomicU64::new(0),
            flush_ack: AtomicU64::new(0),
        }
    }
}

impl Shared {
    #[must_use]
    pub fn played_frames(&self) -> u64 {
        self.played_frames.load(Ordering::Acquire)
    }
    #[must_use]
    pub fn underruns(&self) -> u64 {
        self.underruns.load(Ordering::Relaxed)
    }
    #[must_use]
    pub fn underrun_frames(&self) -> u64 {
        self.underrun_frames.load(Ordering::Relaxed)
    }
    #[must_use]
    pub fn callbacks(&self) -> u64 {
        self.callbacks.load(Ordering::Relaxed)
    }
    #[must_use]
    pub fn is_paused(&self) -> bool {
        self.paused.load(Ordering::Relaxed)
    }
    pub fn set_paused(&self, paused: bool) {
        self.paused.store(paused, Ordering::Relaxed);
    }
    #[must_use]
    pub fn volume(&self) -> f32 {
        f32::from_bits(self.volume_bits.load(Ordering::Relaxed))
    }
    /// Sets the gain, clamped to [0, 2].
    pub fn set_volume(&self, volume: f32) {
        let v = if volume.is_finite() { volume.clamp(0.0, 2.0) } else { 1.0 };
        self.volume_bits.store(v.to_bits(), Ordering::Relaxed);
    }
    /// Tells the callback whether the player holds audio that did not fit in the ring yet.
    pub fn set_pending(&self, pending: bool) {
        self.pending.store(pending, Ordering::Release);
    }
    /// Asks the callback to discard what is in the ring; returns the request number to wait for
    /// with [`Shared::flushed`].
    pub fn request_flush(&self) -> u64 {
        self.flush_req.fetch_add(1, Ordering::AcqRel) + 1
    }
    /// Whether flush request `req` has been carried out.
    #[must_use]
    pub fn flushed(&self, req: u64) -> bool {
        self.flush_ack.load(Ordering::Acquire) >= req
    }
}

/// The callback's state: the ring's consumer half, the shared atomics, the channel count.
pub struct Renderer {
    cons: rtrb::Consumer<f32>,
    shared: Arc<Shared>,
    channels: usize,
    flush_seen: u64,
}

impl Renderer {
    /// A renderer writing `channels` interleaved channels (at least 1).
    #[must_use]
    pub fn new(cons: rtrb::Consumer<f32>, shared: Arc<Shared>, channels: usize) -> Self {
        let flush_seen = shared.flush_req.load(Ordering::Acquire);
        shared.flush_ack.fetch_max(flush_seen, Ordering::AcqRel);
        Self { cons, shared, channels: channels.max(1), flush_seen }
    }

    #[must_use]
    pub fn channels(&self) -> usize {
        self.channels
    }

    /// Fills one interleaved device buffer; returns how many frames came from the ring (they
    /// are the buffer's first frames; the rest is silence). Real-time safe: no allocation, no
    /// lock, no syscall.
    pub fn render<T>(&mut self, out: &mut [T]) -> usize
    where
        T: Sample + FromSample<f32>,
    {
        self.apply_flush();
        let shared = &*self.shared;
        shared.callbacks.fetch_add(1, Ordering::Relaxed);
        let frames = out.len() / self.channels;
        if shared.paused.load(Ordering::Relaxed) {
            out.fill(T::EQUILIBRIUM);
            return 0;
        }
        let gain = f32::from_bits(shared.volume_bits.load(Ordering::Relaxed));
        let taken = self.cons.slots().min(frames);
        if let Ok(chunk) = self.cons.read_chunk(taken) {
            let (a, b) = chunk.as_slices();
            for (frame, &x) in out.chunks_exact_mut(self.channels).zip(a.iter().chain(b)) {
                frame.fill(T::from_sample(x * gain));
            }
            chunk.commit_all();
        }
        out[taken * self.channels..].fill(T::EQUILIBRIUM);
        shared.played_frames.fetch_add(taken as u64, Ordering::AcqRel);
        if taken < frames && shared.pending.load(Ordering::Acquire) {
            shared.underruns.fetch_add(1, Ordering::Relaxed);
            shared.underrun_frames.fetch_add((frames - taken) as u64, Ordering::Relaxed);
        }
        taken
    }

    /// Discards the ring if the player asked for it since the last callback.
    fn apply_flush(&mut self) {
        let req = self.shared.flush_req.load(Ordering::Acquire);
        if req == self.flush_seen {
            return;
        }
        let n = self.cons.slots();
        if let Ok(chunk) = self.cons.read_chunk(n) {
            chunk.commit_all();
        }
        self.flush_seen = req;
        self.shared.flush_ack.store(req, Ordering::Release);
    }
}

/// A ring of `capacity_frames` mono frames, split into the player's producer and a renderer.
#[must_use]
pub fn ring(
    capacity_frames: usize,
    shared: Arc<Shared>,
    channels: usize,
) -> (rtrb::Producer<f32>, Renderer) {
    let (prod, cons) = rtrb::RingBuffer::new(capacity_frames.max(1));
    (prod, Renderer::new(cons, shared, channels))
}
