//! Honest instruments: stage timers that synchronise the device before each clock read,
//! per-group and moving-average RTF, LM tokens/s, flow frames/s, time to first audio, KV-cache
//! arithmetic, and process memory from the metric that reflects pressure (RSS + swap and PSS on
//! Linux, `phys_footprint` on macOS). A memory metric that stays bit-identical while the work
//! changes is flagged as suspect.

use std::collections::VecDeque;
use std::time::Instant;

use super::Result;
use super::protocol::{LaneMemory, MemorySample, TelemetrySample};
use lectern_model::config::SAMPLE_RATE_HZ;

/// Groups in the moving averages.
pub const AVERAGE_WINDOW_GROUPS: usize = 8;

/// Consecutive samples with an identical metric (while the inputs differ) that make it suspect.
pub const SUSPECT_WINDOW_SAMPLES: usize = 6;

/// KV-cache bytes of one lane: 2 (K and V) × kv_heads × positions × head_dim × bytes × layers.
pub fn kv_bytes(
    kv_heads: usize,
    positions: usize,
    head_dim: usize,
    bytes_per_value: usize,
    layers: usize,
) -> u64 {
    (2 * kv_heads * positions * head_dim * bytes_per_value * layers) as u64
}

/// A stage timer: synchronises the device before both clock reads, so asynchronous work is
/// charged to the stage that queued it.
#[derive(Debug, Clone, Copy)]
pub struct StageTimer {
    start: Instant,
}

impl StageTimer {
    /// Starts once `sync` (the stage's device synchronise) has returned.
    pub fn start(sync: impl Fn() -> Result<()>) -> Result<Self> {
        sync()?;
        Ok(Self { start: Instant::now() })
    }

    /// Seconds since `start`, after `sync` returned (the device finished the stage's work).
    pub fn stop(self, sync: impl Fn() -> Result<()>) -> Result<f64> {
        sync()?;
        Ok(self.start.elapsed().as_secs_f64())
    }
}

/// The figures of one finished flow group.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct GroupFigures {
    /// LM time attributed to the group's segments (their shares of their LM batches).
    pub lm_s: f64,
    pub flow_s: f64,
    pub vocoder_s: f64,
    /// Wall time since the previous group ended (or the run started / resumed).
    pub wall_s: f64,
    pub tokens: usize,
    pub frames: usize,
}

impl GroupFigures {
    pub fn audio_s(&self) -> f64 {
        (self.frames * lectern_model::config::SAMPLES_PER_FRAME) as f64 / f64::from(SAMPLE_RATE_HZ)
    }
}

/// Running telemetry of an engine.
#[derive(Debug)]
pub struct Telemetry {
    started: Instant,
    window: VecDeque<GroupFigures>,
    audio_s_total: f64,
    run_start: Option<Instant>,
    time_to_first_audio_ms: Option<u64>,
    last_mark: Instant,
    suspect: SuspectTracker,
}

impl Default for Telemetry {
    fn default() -> Self {
        Self::new()
    }
}

impl Telemetry {
    pub fn new() -> Self {
        let now = Instant::now();
        Self {
            started: now,
            window: VecDeque::new(),
            audio_s_total: 0.0,
            run_start: None,
            time_to_first_audio_ms: None,
            last_mark: now,
            suspect: SuspectTracker::default(),
        }
    }

    /// Work arrived while idle: a new run starts (time to first audio counts from here).
    pub fn start_run(&mut self) {
        let now = Instant::now();
        self.run_start = Some(now);
        self.time_to_first_audio_ms = None;
        self.last_mark = now;
    }

    /// Work resumes after a pause: the pause is not charged to the next group's wall time.
    pub fn mark(&mut self) {
        self.last_mark = Instant::now();
    }

    /// True from the start of a run until its first take is out.
    pub fn awaiting_first_audio(&self) -> bool {
        self.run_start.is_some() && self.time_to_first_audio_ms.is_none()
    }

    /// The first take of the run is out.
    pub fn first_audio(&mut self) {
        if self.time_to_first_audio_ms.is_none() {
            if let Some(start) = self.run_start {
                self.time_to_first_audio_ms = Some(start.elapsed().as_millis() as u64);
            }
        }
    }

    /// Wall seconds since the last mark; moves the mark to now.
    pub fn lap(&mut self) -> f64 {
        let now = Instant::now();
        let s = now.duration_since(self.last_mark).as_secs_f64();
        self.last_mark = now;
        s
    }

    /// Folds in a finished group and returns the sample to emit.
    pub fn group_done(
        &mut self,
        fig: GroupFigures,
        lanes: Vec<LaneMemory>,
        mut memory: MemorySample,
    ) -> TelemetrySample {
        self.window.push_back(fig);
        if self.window.len() > AVERAGE_WINDOW_GROUPS {
            self.window.pop_front();
        }
        self.audio_s_total += fig.audio_s();
        let kv_total: u64 = lanes.iter().map(|l| l.used_bytes).sum();
        self.suspect.observe(&mut memory, ((fig.frames as u64) << 32) ^ kv_total);
        let rtf = |s: f64, audio: f64| if audio > 0.0 { s / audio } else { 0.0 };
        let per_s = |n: usize, s: f64| if s > 0.0 { n as f64 / s } else { 0.0 };
        let sum = |f: fn(&GroupFigures) -> f64| self.window.iter().map(f).sum::<f64>();
        let audio = fig.audio_s();
        let win_audio = sum(GroupFigures::audio_s);
        TelemetrySample {
            at_ms: self.started.elapsed().as_millis() as u64,
            lm_rtf: rtf(fig.lm_s, audio),
            flow_rtf: rtf(fig.flow_s, audio),
            vocoder_rtf: rtf(fig.vocoder_s, audio),
            total_rtf: rtf(fig.wall_s, audio),
            avg_lm_rtf: rtf(sum(|g| g.lm_s), win_audio),
            avg_flow_rtf: rtf(sum(|g| g.flow_s), win_audio),
            avg_vocoder_rtf: rtf(sum(|g| g.vocoder_s), win_audio),
            avg_total_rtf: rtf(sum(|g| g.wall_s), win_audio),
            lm_tokens_per_s: per_s(fig.tokens, fig.lm_s),
            flow_frames_per_s: per_s(fig.frames, fig.flow_s),
            time_to_first_audio_ms: self.time_to_first_audio_ms,
            audio_s_total: self.audio_s_total,
            lanes,
            memory,
        }
    }
}

/// Flags a memory metric that stays bit-identical across samples whose inputs differ.
#[derive(Debug, Clone, Default)]
pub struct SuspectTracker {
    history: VecDeque<Observation>,
}

/// One memory reading and the signature of the work before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Observation {
    primary: Option<u64>,
    device: Option<u64>,
    input: u64,
}

impl SuspectTracker {
    /// Records `sample` taken after work with signature `input`, and sets `sample.suspect` if
    /// its primary metric (phys_footprint, else RSS) or the device metric has not moved over
    /// the last [`SUSPECT_WINDOW_SAMPLES`] samples although the inputs changed.
    pub fn observe(&mut self, sample: &mut MemorySample, input: u64) {
        let primary = sample.phys_footprint.or(sample.rss);
        self.history.push_back(Observation { primary, device: sample.device_used, input });
        if self.history.len() > SUSPECT_WINDOW_SAMPLES {
            self.history.pop_front();
        }
        if self.history.len() < SUSPECT_WINDOW_SAMPLES {
            return;
        }
        let first = self.history[0];
        let inputs_changed = self.history.iter().any(|h| h.input != first.input);
        let stuck = |get: fn(&Observation) -> Option<u64>| {
            get(&first).is_some() && self.history.iter().all(|h| get(h) == get(&first))
        };
        sample.suspect |= inputs_changed && (stuck(|h| h.primary) || stuck(|h| h.device));
    }
}

/// Reads the process's memory now. Fields the platform lacks are `None`.
///
/// The one place Lectern reads its own memory: the resident set through `sysinfo` (every
/// platform it supports); by hand only what `sysinfo` cannot give — swap, PSS and the peak
/// resident set from `/proc/self` on Linux, `phys_footprint` through `mach2` on macOS.
pub fn probe_memory() -> MemorySample {
    let mut sample = MemorySample { rss: resident_bytes(), ..MemorySample::default() };
    platform::fill(&mut sample);
    sample
}

/// This process's resident set through `sysinfo`.
fn resident_bytes() -> Option<u64> {
    use sysinfo::{ProcessRefreshKind, ProcessesToUpdate, System};
    let pid = sysinfo::get_current_pid().ok()?;
    let mut sys = System::new();
    sys.refresh_processes_specifics(
        ProcessesToUpdate::Some(&[pid]),
        false,
        ProcessRefreshKind::nothing().with_memory(),
    );
    sys.process(pid).map(sysinfo::Process::memory)
}

/// The peak resident set of this process, where the platform keeps it (Linux `VmHWM`).
pub fn peak_resident_bytes() -> Option<u64> {
    platform::peak_rss()
}

#[cfg(target_os = "linux")]
mod platform {
    use super::MemorySample;

    /// VmSwap from /proc/self/status, Pss from /proc/self/smaps_rollup.
    pub fn fill(sample: &mut MemorySample) {
        if let Ok(status) = std::fs::read_to_string("/proc/self/status") {
            sample.swap = kib_field(&status, "VmSwap:");
        }
        if let Ok(rollup) = std::fs::read_to_string("/proc/self/smaps_rollup") {
            sample.pss = kib_field(&rollup, "Pss:");
        }
    }

    /// VmHWM from /proc/self/status.
    pub fn peak_rss() -> Option<u64> {
        kib_field(&std::fs::read_to_string("/proc/self/status").ok()?, "VmHWM:")
    }

    /// Parses `Name:   1234 kB` into bytes.
    pub fn kib_field(text: &str, name: &str) -> Option<u64> {
        let line = text.lines().find(|l| l.starts_with(name))?;
        let kib: u64 = line[name.len()..].split_whitespace().next()?.parse().ok()?;
        Some(kib * 1024)
    }
}

#[cfg(target_os = "macos")]
#[allow(unsafe_code)]
mod platform {
    use super::MemorySample;
    use mach2::kern_return::KERN_SUCCESS;
    use mach2::message::mach_msg_type_number_t;
    use mach2::task::task_info;
    use mach2::task_info::TASK_VM_INFO;
    use mach2::traps::mach_task_self;

    /// `task_vm_info` up to `phys_footprint` (TASK_VM_INFO_REV1), as in <mach/task_info.h>
    /// (`#pragma pack(4)`).
    #[repr(C, packed(4))]
    #[derive(Default, Clone, Copy)]
    #[allow(dead_code)] // the kernel fills every field; we read two
    struct TaskVmInfo {
        virtual_size: u64,
        region_count: i32,
        page_size: i32,
        resident_size: u64,
        resident_size_peak: u64,
        device: u64,
        device_peak: u64,
        internal: u64,
        internal_peak: u64,
        external: u64,
        external_peak: u64,
        reusable: u64,
        reusable_peak: u64,
        purgeable_volatile_pmap: u64,
        purgeable_volatile_resident: u64,
        purgeable_volatile_virtual: u64,
        compressed: u64,
        compressed_peak: u64,
        compressed_lifetime: u64,
        phys_footprint: u64,
    }

    /// phys_footprint (what Activity Monitor and jetsam use) via task_info.
    pub fn fill(sample: &mut MemorySample) {
        let mut info = TaskVmInfo::default();
        let mut count = (std::mem::size_of::<TaskVmInfo>() / std::mem::size_of::<u32>())
            as mach_msg_type_number_t;
        // SAFETY: `info` is a plain repr(C) struct of `count` 32-bit words that the kernel fills
        // at most up to `count`; the task port is our own.
        let kr = unsafe {
            task_info(mach_task_self(), TASK_VM_INFO, (&raw mut info).cast::<i32>(), &mut count)
        };
        if kr == KERN_SUCCESS {
            sample.phys_footprint = Some(info.phys_footprint);
        }
    }

    /// Not read on macOS.
    pub fn peak_rss() -> Option<u64> {
        None
    }
}

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
mod platform {
    use super::MemorySample;

    pub fn fill(_sample: &mut MemorySample) {}

    pub fn peak_rss() -> Option<u64> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kv_arithmetic() {
        // 0.5B: 2 kv heads, head_dim 64, 24 layers, f32: 24 KiB per position.
        assert_eq!(kv_bytes(2, 1, 64, 4, 24), 24_576);
        assert_eq!(kv_bytes(2, 1000, 64, 2, 24), 12_288_000);
    }

    #[test]
    fn stuck_metric_is_suspect_only_when_inputs_change() {
        let mut t = SuspectTracker::default();
        let mut last = MemorySample::default();
        for i in 0..SUSPECT_WINDOW_SAMPLES as u64 {
            last = MemorySample { rss: Some(1000), ..Default::default() };
            t.observe(&mut last, i);
        }
        assert!(last.suspect);
        let mut t = SuspectTracker::default();
        for _ in 0..SUSPECT_WINDOW_SAMPLES {
            last = MemorySample { rss: Some(1000), ..Default::default() };
            t.observe(&mut last, 7); // same input, same reading: fine
        }
        assert!(!last.suspect);
        let mut t = SuspectTracker::default();
        for i in 0..SUSPECT_WINDOW_SAMPLES as u64 {
            last = MemorySample { rss: Some(1000 + i), ..Default::default() };
            t.observe(&mut last, i);
        }
        assert!(!last.suspect);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn parses_proc_fields() {
        let text = "Name:\tx\nVmRSS:\t  2048 kB\nVmSwap:\t     0 kB\n";
        assert_eq!(platform::kib_field(text, "VmRSS:"), Some(2 * 1024 * 1024));
        assert_eq!(platform::kib_field(text, "VmSwap:"), Some(0));
        assert_eq!(platform::kib_field(text, "Pss:"), None);
    }
}
