//! The non-real-time player: a handle the UI sends [`AudioCommand`]s to, and an `audio-mgr`
//! thread that owns the sink (a cpal output stream, or a [`FileSink`] when there is no device),
//! resamples takes to the device rate, keeps the ring topped up, tracks which take is playing,
//! and rebuilds the output when the device is lost.
//!
//! No output device (servers, CI) is a normal situation: the player then writes what it would
//! have played to a WAV file at real-time pace and says so in [`PlayerStatus::notice`]; it never
//! fails to start.

use std::collections::VecDeque;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use cpal::traits::{DeviceTrait, HostTrait, StreamTrait};
use cpal::{FromSample, SampleFormat, SizedSample, StreamConfig};

use super::callback::{self, Renderer, Shared};
use super::{SAMPLE_RATE_HZ, resample, wav};

/// Period of the manager loop while there is audio to play: how often the ring is topped up
/// and the status refreshed.
const TICK: Duration = Duration::from_millis(5);
/// The manager's wait while nothing plays: it blocks on its commands and wakes this rarely
/// only to notice a lost device (the cpal error callback just sets a flag).
const IDLE_TICK: Duration = Duration::from_secs(1);
/// Period of one file-sink block (real-time pace), 10 ms.
const FILE_BLOCK: Duration = Duration::from_millis(10);

/// A take to play: 24 kHz mono samples plus the ids the UI shows.
#[derive(Debug, Clone)]
pub struct Cue {
    pub take_id: u64,
    pub segment_id: u64,
    pub samples: Arc<Vec<f32>>,
}

/// Commands from the UI to the player; none blocks.
#[derive(Debug, Clone)]
pub enum AudioCommand {
    /// Drop everything queued or playing, then play this cue (and unpause).
    Play(Cue),
    /// Play this cue after what is queued.
    Enqueue(Cue),
    /// Drop everything queued or playing.
    Stop,
    Pause,
    Resume,
    /// Linear gain in [0, 2].
    SetVolume(f32),
}

/// Which output to open.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum DeviceChoice {
    /// The host's default output device.
    #[default]
    Default,
    /// An output device by cpal id (`alsa:default`) or description name.
    Named(String),
    /// No device: the file sink, writing to [`PlayerConfig::fallback_wav`].
    File,
}

/// How the player opens its output.
#[derive(Debug, Clone, PartialEq)]
pub struct PlayerConfig {
    pub device: DeviceChoice,
    /// Where the file sink writes when there is no device (24 kHz mono f32 WAV).
    pub fallback_wav: PathBuf,
    /// Device rate to ask for; default 24 kHz when supported, else the device default.
    pub rate_hz: Option<u32>,
    /// Device channel count to ask for; default stereo, else mono, else the fewest.
    pub channels: Option<u16>,
    /// Ring capacity, milliseconds of audio.
    pub ring_ms: u32,
}

impl Default for PlayerConfig {
    fn default() -> Self {
        Self {
            device: DeviceChoice::Default,
            fallback_wav: std::env::temp_dir().join("lectern-playback.wav"),
            rate_hz: None,
            channels: None,
            ring_ms: 500,
        }
    }
}

/// Where the audio goes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum SinkInfo {
    /// Not opened yet.
    #[default]
    Starting,
    Device {
        name: String,
        rate_hz: u32,
        channels: u16,
        format: String,
    },
    File {
        path: PathBuf,
    },
}

impl fmt::Display for SinkInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Starting => f.write_str("starting"),
            Self::Device { name, rate_hz, channels, format } => {
                write!(f, "{name} {rate_hz} Hz {channels} ch {format}")
            }
            Self::File { path } => write!(f, "file {}", path.display()),
        }
    }
}

/// Transport state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PlayState {
    #[default]
    Idle,
    Playing,
    Paused,
}

/// The take under the playhead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NowPlaying {
    pub take_id: u64,
    pub segment_id: u64,
    /// Playhead within the take, 24 kHz samples.
    pub pos_samples: u64,
    pub len_samples: u64,
}

/// A snapshot of the player for the UI.
#[derive(Debug, Clone, PartialEq)]
pub struct PlayerStatus {
    pub sink: SinkInfo,
    /// Something the user should know (no device, device lost); shown by the UI.
    pub notice: Option<String>,
    pub state: PlayState,
    pub now_playing: Option<NowPlaying>,
    /// Takes queued and not yet under the playhead.
    pub queued: usize,
    pub underruns: u64,
    /// Silence inserted by underruns, milliseconds.
    pub underrun_ms: u64,
    /// Audio in the ring, milliseconds.
    pub buffered_ms: u64,
    pub volume: f32,
    /// Errors the device reported (xruns included).
    pub device_errors: u64,
    /// Cues played to their end since the player started (a stopped cue is not counted):
    /// a UI that looks now and then learns from it what finished between two looks.
    pub played_through: u64,
    /// The segment of the last cue played to its end.
    pub last_played_through: Option<u64>,
}

impl Default for PlayerStatus {
    fn default() -> Self {
        Self {
            sink: SinkInfo::Starting,
            notice: None,
            state: PlayState::Idle,
            now_playing: None,
            queued: 0,
            underruns: 0,
            underrun_ms: 0,
            buffered_ms: 0,
            volume: 1.0,
            device_errors: 0,
            played_through: 0,
            last_played_through: None,
        }
    }
}

/// What the UI needs from a player: send commands, read a status snapshot. Implemented by
/// [`Player`]; tests and demos may use their own.
pub trait Playback {
    fn command(&self, cmd: AudioCommand);
    fn status(&self) -> PlayerStatus;
}

enum Msg {
    Cmd(AudioCommand),
    Shutdown,
}

/// Handle to the player thread. Dropping it stops playback and finalises the file sink.
pub struct Player {
    tx: mpsc::Sender<Msg>,
    status: Arc<Mutex<PlayerStatus>>,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl fmt::Debug for Player {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Player").field("status", &self.status()).finish_non_exhaustive()
    }
}

impl Player {
    /// Opens the configured output (falling back to the file sink) and starts the `audio-mgr`
    /// thread. Never fails for lack of a device; only if the thread cannot be spawned.
    pub fn open(cfg: PlayerConfig) -> std::io::Result<Self> {
        let (tx, rx) = mpsc::channel();
        let status = Arc::new(Mutex::new(PlayerStatus::default()));
        let shared = Arc::new(Shared::default());
        let (ready_tx, ready_rx) = mpsc::channel();
        let mut mgr = Manager::new(cfg, Arc::clone(&shared), Arc::clone(&status));
        let thread = std::thread::Builder::new().name("audio-mgr".into()).spawn(move || {
            mgr.open_sink();
            mgr.publish();
            let _ = ready_tx.send(());
            mgr.run(&rx);
        })?;
        // Wait until the sink is chosen so the first status is meaningful.
        let _ = ready_rx.recv_timeout(Duration::from_secs(5));
        Ok(Self { tx, status, shared, thread: Some(thread) })
    }

    /// The shared callback counters (for tests and diagnostics).
    #[must_use]
    pub fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// Blocks until nothing is queued or playing, or `timeout` passes; true if drained.
    pub fn wait_idle(&self, timeout: Duration) -> bool {
        let end = Instant::now() + timeout;
        while Instant::now() < end {
            let s = self.status();
            if s.now_playing.is_none() && s.queued == 0 {
                return true;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        false
    }
}

impl Playback for Player {
    fn command(&self, cmd: AudioCommand) {
        // A send only fails once the thread is gone, and then there is nothing to play into.
        let _ = self.tx.send(Msg::Cmd(cmd));
    }

    fn status(&self) -> PlayerStatus {
        self.status.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

impl Drop for Player {
    fn drop(&mut self) {
        let _ = self.tx.send(Msg::Shutdown);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Errors the device's error callback reported, as atomics (that callback may run on the audio
/// thread).
#[derive(Debug, Default)]
struct DeviceErrors {
    count: AtomicU64,
    lost: AtomicBool,
    last_kind: AtomicU8,
}

impl DeviceErrors {
    fn record(&self, err: &cpal::Error) {
        self.count.fetch_add(1, Ordering::Relaxed);
        let kind = err.kind();
        self.last_kind.store(kind_code(kind), Ordering::Relaxed);
        if is_fatal(kind) {
            self.lost.store(true, Ordering::Release);
        }
    }
}

/// Errors after which the stream produces nothing and must be rebuilt.
fn is_fatal(kind: cpal::ErrorKind) -> bool {
    use cpal::ErrorKind as K;
    matches!(kind, K::DeviceNotAvailable | K::StreamInvalidated | K::HostUnavailable | K::Other)
}

fn kind_code(kind: cpal::ErrorKind) -> u8 {
    use cpal::ErrorKind as K;
    match kind {
        K::DeviceNotAvailable => 1,
        K::StreamInvalidated => 2,
        K::HostUnavailable => 3,
        K::Xrun => 4,
        K::BackendError => 5,
        _ => 6,
    }
}

fn kind_text(code: u8) -> &'static str {
    match code {
        1 => "device not available",
        2 => "stream invalidated",
        3 => "host unavailable",
        4 => "xrun",
        5 => "backend error",
        _ => "stream error",
    }
}

/// A queued take, resampled to the sink rate.
struct Entry {
    cue: Cue,
    /// Where this entry starts within the cue, 24 kHz samples (non-zero after a sink rebuild).
    offset_samples: usize,
    /// Device-rate mono frames from `offset_samples` on.
    frames: Arc<Vec<f32>>,
    /// Frames pushed into the ring so far.
    written: usize,
    /// Stream position (played-frame counter) of the entry's first frame, once pushed.
    start_frame: Option<u64>,
}

enum Sink {
    Cpal { stream: cpal::Stream, idle_paused: bool },
    File(FileSink),
}

struct Manager {
    cfg: PlayerConfig,
    shared: Arc<Shared>,
    errors: Arc<DeviceErrors>,
    status: Arc<Mutex<PlayerStatus>>,
    sink: Option<Sink>,
    info: SinkInfo,
    notice: Option<String>,
    prod: Option<rtrb::Producer<f32>>,
    rate_hz: u32,
    queue: VecDeque<Entry>,
    written_frames: u64,
    awaiting_flush: Option<u64>,
    /// Cues played to their end, and the segment of the last (see [`PlayerStatus`]).
    played_through: u64,
    last_played_through: Option<u64>,
}

impl Manager {
    fn new(cfg: PlayerConfig, shared: Arc<Shared>, status: Arc<Mutex<PlayerStatus>>) -> Self {
        Self {
            cfg,
            shared,
            errors: Arc::new(DeviceErrors::default()),
            status,
            sink: None,
            info: SinkInfo::Starting,
            notice: None,
            prod: None,
            rate_hz: SAMPLE_RATE_HZ,
            queue: VecDeque::new(),
            written_frames: 0,
            awaiting_flush: None,
            played_through: 0,
            last_played_through: None,
        }
    }

    /// Whether anything is queued, in the ring or being flushed: then the loop ticks.
    fn busy(&self) -> bool {
        !self.queue.is_empty()
            || self.awaiting_flush.is_some()
            || self.prod.as_ref().is_some_and(|p| p.slots() != p.buffer().capacity())
    }

    /// Wakes the file sink's thread, which sleeps while its ring is empty.
    fn wake_sink(&self) {
        if let Some(Sink::File(fs)) = &self.sink {
            fs.wake();
        }
    }

    fn run(&mut self, rx: &mpsc::Receiver<Msg>) {
        loop {
            let received = if self.shared.is_paused() {
                // Paused: the ring does not drain, so there is nothing to top up; the loop
                // sleeps until a command comes (a device lost meanwhile is noticed then).
                rx.recv().map_err(|_| mpsc::RecvTimeoutError::Disconnected)
            } else {
                rx.recv_timeout(if self.busy() { TICK } else { IDLE_TICK })
            };
            match received {
                Ok(Msg::Cmd(c)) => self.handle(c),
                Ok(Msg::Shutdown) | Err(mpsc::RecvTimeoutError::Disconnected) => break,
                Err(mpsc::RecvTimeoutError::Timeout) => {}
            }
            loop {
                match rx.try_recv() {
                    Ok(Msg::Cmd(c)) => self.handle(c),
                    Ok(Msg::Shutdown) | Err(mpsc::TryRecvError::Disconnected) => {
                        self.close_sink();
                        return;
                    }
                    Err(mpsc::TryRecvError::Empty) => break,
                }
            }
            if self.errors.lost.swap(false, Ordering::AcqRel) {
                self.recover();
            }
            self.tick();
            if !self.shared.is_paused() {
                self.wake_sink();
            }
            self.publish();
        }
        self.close_sink();
    }

    fn handle(&mut self, cmd: AudioCommand) {
        match cmd {
            AudioCommand::Play(cue) => {
                self.stop();
                self.shared.set_paused(false);
                self.push_cue(cue, 0);
            }
            AudioCommand::Enqueue(cue) => self.push_cue(cue, 0),
            AudioCommand::Stop => self.stop(),
            AudioCommand::Pause => self.shared.set_paused(true),
            AudioCommand::Resume => self.shared.set_paused(false),
            AudioCommand::SetVolume(v) => self.shared.set_volume(v),
        }
    }

    fn push_cue(&mut self, cue: Cue, offset_samples: usize) {
        let src = &cue.samples[offset_samples.min(cue.samples.len())..];
        let frames = if self.rate_hz == SAMPLE_RATE_HZ && offset_samples == 0 {
            Arc::clone(&cue.samples)
        } else {
            Arc::new(resample::linear(src, SAMPLE_RATE_HZ, self.rate_hz))
        };
        self.queue.push_back(Entry { cue, offset_samples, frames, written: 0, start_frame: None });
    }

    /// Drops the queue and asks the callback to discard the ring.
    fn stop(&mut self) {
        self.queue.clear();
        self.shared.set_pending(false);
        let ring_empty = self.prod.as_ref().is_none_or(|p| p.slots() == p.buffer().capacity());
        if ring_empty {
            self.written_frames = self.shared.played_frames();
        } else {
            self.awaiting_flush = Some(self.shared.request_flush());
        }
    }

    /// One manager period: finish a flush, top up the ring, retire played takes, pause an idle
    /// device stream.
    fn tick(&mut self) {
        if let Some(req) = self.awaiting_flush {
            if !self.shared.flushed(req) {
                return;
            }
            self.awaiting_flush = None;
            self.written_frames = self.shared.played_frames();
        }
        self.fill();
        let played = self.shared.played_frames();
        while let Some(e) = self.queue.front() {
            // An empty cue (a zero-length take with no pause) is never pushed, so it has no
            // start frame: it is done as soon as it reaches the front. Left there, it hid the
            // cues playing behind it and the transport said "stopped" while audio played.
            let done = e.frames.is_empty()
                || (e.written == e.frames.len()
                    && e.start_frame.is_some_and(|s| played >= s + e.frames.len() as u64));
            if !done {
                break;
            }
            self.played_through += 1;
            self.last_played_through = Some(e.cue.segment_id);
            self.queue.pop_front();
        }
        self.idle_pause();
    }

    fn fill(&mut self) {
        let Some(prod) = self.prod.as_mut() else { return };
        for e in &mut self.queue {
            if e.written == e.frames.len() {
                continue;
            }
            let left = e.frames.len() - e.written;
            // Say "more is coming" before pushing, so a callback that drains this chunk and
            // finds the ring empty counts an underrun only if we really hold more.
            if prod.slots() < left {
                self.shared.set_pending(true);
            }
            let (pushed, _) = prod.push_partial_slice(&e.frames[e.written..]);
            if e.start_frame.is_none() && !pushed.is_empty() {
                e.start_frame = Some(self.written_frames);
            }
            e.written += pushed.len();
            self.written_frames += pushed.len() as u64;
            if e.written < e.frames.len() {
                return;
            }
        }
        self.shared.set_pending(false);
    }

    /// Pauses a device stream with nothing to play (some devices would otherwise spin on
    /// silence) and restarts it when audio arrives.
    fn idle_pause(&mut self) {
        let idle = self.queue.is_empty()
            && self.prod.as_ref().is_none_or(|p| p.slots() == p.buffer().capacity());
        if let Some(Sink::Cpal { stream, idle_paused }) = self.sink.as_mut() {
            if idle && !*idle_paused {
                // Unsupported pause just means the stream keeps running on silence.
                *idle_paused = stream.pause().is_ok();
            } else if !idle && *idle_paused {
                *idle_paused = false;
                if let Err(e) = stream.play() {
                    self.errors.record(&e);
                }
            }
        }
    }

    fn publish(&self) {
        let played = self.shared.played_frames();
        let ring_frames = self.prod.as_ref().map_or(0, |p| p.buffer().capacity() - p.slots());
        let to_ms = |frames: u64| frames * 1000 / u64::from(self.rate_hz.max(1));
        let now_playing = self.queue.front().and_then(|e| {
            let start = e.start_frame?;
            let into = played.saturating_sub(start).min(e.frames.len() as u64);
            let pos = e.offset_samples as u64
                + into * u64::from(SAMPLE_RATE_HZ) / u64::from(self.rate_hz);
            Some(NowPlaying {
                take_id: e.cue.take_id,
                segment_id: e.cue.segment_id,
                pos_samples: pos.min(e.cue.samples.len() as u64),
                len_samples: e.cue.samples.len() as u64,
            })
        });
        let state = if self.shared.is_paused() {
            PlayState::Paused
        } else if now_playing.is_some() {
            PlayState::Playing
        } else {
            PlayState::Idle
        };
        let s = PlayerStatus {
            sink: self.info.clone(),
            notice: self.notice.clone(),
            state,
            now_playing,
            queued: self.queue.len() - usize::from(now_playing.is_some()),
            underruns: self.shared.underruns(),
            underrun_ms: to_ms(self.shared.underrun_frames()),
            buffered_ms: to_ms(ring_frames as u64),
            volume: self.shared.volume(),
            device_errors: self.errors.count.load(Ordering::Relaxed),
            played_through: self.played_through,
            last_played_through: self.last_played_through,
        };
        *self.status.lock().unwrap_or_else(PoisonError::into_inner) = s;
    }

    fn ring_frames(&self, rate_hz: u32) -> usize {
        (u64::from(rate_hz) * u64::from(self.cfg.ring_ms.max(10)) / 1000) as usize
    }

    /// Opens the configured device, or the file sink if that fails.
    fn open_sink(&mut self) {
        if self.cfg.device != DeviceChoice::File {
            match self.open_device() {
                Ok(()) => return,
                Err(why) => {
                    // The file comes first: a narrow status line cuts the reason, not where
                    // the audio went.
                    self.notice = Some(format!(
                        "no audio output: writing playback to {} ({why})",
                        self.cfg.fallback_wav.display()
                    ));
                }
            }
        } else {
            self.notice = Some(format!("audio to file: {}", self.cfg.fallback_wav.display()));
        }
        self.open_file();
    }

    fn open_device(&mut self) -> Result<(), String> {
        let _quiet = alsa_quiet::Guard::new();
        let host = cpal::default_host();
        let device = match &self.cfg.device {
            DeviceChoice::Named(name) => host
                .output_devices()
                .map_err(|e| e.to_string())?
                .find(|d| {
                    d.id().is_ok_and(|id| id.to_string() == *name)
                        || d.description().is_ok_and(|desc| desc.name() == name.as_str())
                })
                .ok_or_else(|| format!("no output device named {name}"))?,
            _ => host.default_output_device().ok_or("no default output device")?,
        };
        let name = device.id().map_or_else(|_| "output".to_string(), |id| id.to_string());
        let (config, format) = pick_config(&device, self.cfg.rate_hz, self.cfg.channels)?;
        let (prod, renderer) = callback::ring(
            self.ring_frames(config.sample_rate),
            Arc::clone(&self.shared),
            config.channels.into(),
        );
        let errors = Arc::clone(&self.errors);
        let stream = match format {
            SampleFormat::F32 => build::<f32>(&device, config, renderer, errors),
            SampleFormat::I16 => build::<i16>(&device, config, renderer, errors),
            SampleFormat::I32 => build::<i32>(&device, config, renderer, errors),
            SampleFormat::U16 => build::<u16>(&device, config, renderer, errors),
            SampleFormat::U8 => build::<u8>(&device, config, renderer, errors),
            SampleFormat::I8 => build::<i8>(&device, config, renderer, errors),
            SampleFormat::F64 => build::<f64>(&device, config, renderer, errors),
            other => return Err(format!("unsupported sample format {other}")),
        }
        .map_err(|e| e.to_string())?;
        // Not started until there is audio (see `idle_pause`): a device that is not paced in
        // real time (ALSA `null`) would otherwise spin on silence.
        self.info = SinkInfo::Device {
            name,
            rate_hz: config.sample_rate,
            channels: config.channels,
            format: format.to_string(),
        };
        self.rate_hz = config.sample_rate;
        self.prod = Some(prod);
        self.sink = Some(Sink::Cpal { stream, idle_paused: true });
        Ok(())
    }

    fn open_file(&mut self) {
        let (prod, renderer) =
            callback::ring(self.ring_frames(SAMPLE_RATE_HZ), Arc::clone(&self.shared), 1);
        let path = self.cfg.fallback_wav.clone();
        match FileSink::start(&path, renderer) {
            Ok(fs) => {
                self.info = SinkInfo::File { path };
                self.sink = Some(Sink::File(fs));
            }
            Err(e) => {
                // Nothing to play into: keep the ring so the UI still works, and say why.
                self.notice =
                    Some(format!("no audio output and cannot write {}: {e}", path.display()));
                self.info = SinkInfo::Starting;
                self.sink = None;
            }
        }
        self.rate_hz = SAMPLE_RATE_HZ;
        self.prod = Some(prod);
    }

    fn close_sink(&mut self) {
        match self.sink.take() {
            Some(Sink::File(fs)) => {
                if let Err(e) = fs.finish() {
                    self.notice = Some(format!("file sink: {e}"));
                }
            }
            Some(Sink::Cpal { stream, .. }) => drop(stream),
            None => {}
        }
        self.prod = None;
    }

    /// The device went away: rebuild the output (device again, else the file sink) and replay
    /// from the playhead.
    fn recover(&mut self) {
        let why = kind_text(self.errors.last_kind.load(Ordering::Relaxed));
        // Where each queued take stands, before the old ring goes.
        let played = self.shared.played_frames();
        let resume: Vec<(Cue, usize)> = self
            .queue
            .drain(..)
            .map(|e| {
                let into = e.start_frame.map_or(0, |s| played.saturating_sub(s));
                let pos = e.offset_samples
                    + (into * u64::from(SAMPLE_RATE_HZ) / u64::from(self.rate_hz)) as usize;
                (e.cue, pos)
            })
            .filter(|(cue, pos)| *pos < cue.samples.len())
            .collect();
        self.close_sink();
        self.awaiting_flush = None;
        self.shared.set_pending(false);
        match self.open_device() {
            Ok(()) => self.notice = Some(format!("audio device reopened after {why}")),
            Err(e) => {
                self.notice = Some(format!(
                    "audio device lost ({why}; {e}); writing playback to {}",
                    self.cfg.fallback_wav.display()
                ));
                self.open_file();
            }
        }
        self.written_frames = self.shared.played_frames();
        for (cue, pos) in resume {
            self.push_cue(cue, pos);
        }
    }
}

fn build<T>(
    device: &cpal::Device,
    config: StreamConfig,
    mut renderer: Renderer,
    errors: Arc<DeviceErrors>,
) -> Result<cpal::Stream, cpal::Error>
where
    T: SizedSample + FromSample<f32>,
{
    device.build_output_stream::<T, _, _>(
        config,
        move |data: &mut [T], _: &cpal::OutputCallbackInfo| {
            renderer.render(data);
        },
        move |err| errors.record(&err),
        None,
    )
}

/// Rank of a sample format we can write: f32 first (no conversion), then integer PCM.
fn format_rank(f: SampleFormat) -> Option<u8> {
    match f {
        SampleFormat::F32 => Some(0),
        SampleFormat::I16 => Some(1),
        SampleFormat::I32 => Some(2),
        SampleFormat::F64 => Some(3),
        SampleFormat::U16 => Some(4),
        SampleFormat::I8 => Some(5),
        SampleFormat::U8 => Some(6),
        _ => None,
    }
}

/// Chooses rate, channels and format: 24 kHz (or `want_rate`) when a range has it, else the
/// device default rate (and the player resamples); stereo, then mono, unless told.
fn pick_config(
    device: &cpal::Device,
    want_rate: Option<u32>,
    want_channels: Option<u16>,
) -> Result<(StreamConfig, SampleFormat), String> {
    let ranges: Vec<_> = device.supported_output_configs().map_err(|e| e.to_string())?.collect();
    let channel_rank = |c: u16| match want_channels {
        Some(w) if w == c => 0,
        Some(_) => u16::MAX,
        None if c == 2 => 0,
        None if c == 1 => 1,
        None => c,
    };
    let usable = |r: &&cpal::SupportedStreamConfigRange| {
        format_rank(r.sample_format()).is_some() && channel_rank(r.channels()) != u16::MAX
    };
    let key = |r: &&cpal::SupportedStreamConfigRange| {
        (channel_rank(r.channels()), format_rank(r.sample_format()).unwrap_or(u8::MAX))
    };
    let rate = want_rate.unwrap_or(SAMPLE_RATE_HZ);
    let best = ranges.iter().filter(usable).filter(|r| r.contains_rate(rate)).min_by_key(key);
    let chosen = match best {
        Some(r) => (*r).with_sample_rate(rate),
        None => {
            let default_rate = device.default_output_config().map_or(48_000, |c| c.sample_rate());
            let r = ranges
                .iter()
                .filter(usable)
                .min_by_key(key)
                .ok_or("no usable output configuration")?;
            let rate = default_rate.clamp(r.min_sample_rate(), r.max_sample_rate());
            (*r).with_sample_rate(rate)
        }
    };
    Ok((chosen.config(), chosen.sample_format()))
}

/// The no-device sink: runs the renderer at real-time pace on an `audio-file` thread and writes
/// the frames that came from the ring (not idle silence) to a 24 kHz mono f32 WAV.
pub struct FileSink {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<super::Result<()>>>,
}

impl FileSink {
    /// Creates `path` and starts writing. A file nothing was written to (a session that
    /// played nothing, a start that failed) is removed when the sink stops: it would hold a
    /// header and no audio.
    pub fn start(path: &Path, mut renderer: Renderer) -> super::Result<Self> {
        let mut writer = hound::WavWriter::create(path, wav::spec(wav::WavFormat::F32))?;
        let path = path.to_path_buf();
        let stop = Arc::new(AtomicBool::new(false));
        let stop_flag = Arc::clone(&stop);
        let block = (u64::from(SAMPLE_RATE_HZ) * FILE_BLOCK.as_millis() as u64 / 1000) as usize;
        let thread = std::thread::Builder::new().name("audio-file".into()).spawn(move || {
            let mut buf = vec![0.0f32; block * renderer.channels()];
            let mut next = Instant::now();
            let mut since_flush = 0usize;
            while !stop_flag.load(Ordering::Acquire) {
                let n = renderer.render(&mut buf);
                for &x in &buf[..n * renderer.channels()] {
                    writer.write_sample(x)?;
                }
                since_flush += n;
                // Keep the header valid on disk about twice a second, in case we are killed.
                if since_flush >= SAMPLE_RATE_HZ as usize / 2 {
                    writer.flush()?;
                    since_flush = 0;
                }
                if n == 0 {
                    // Nothing came from the ring: sleep until the player wakes us (it does
                    // after every command and ring top-up) instead of ticking on silence.
                    if since_flush > 0 {
                        writer.flush()?;
                        since_flush = 0;
                    }
                    // A wake-up sent before this park is kept, so none is missed.
                    std::thread::park();
                    next = Instant::now();
                    continue;
                }
                next += FILE_BLOCK;
                let now = Instant::now();
                if next > now {
                    std::thread::sleep(next - now);
                } else {
                    next = now;
                }
            }
            let empty = writer.duration() == 0;
            writer.finalize()?;
            if empty {
                std::fs::remove_file(&path)?;
            }
            Ok(())
        })?;
        Ok(Self { stop, thread: Some(thread) })
    }

    /// Wakes the writing thread (it sleeps while the ring is empty).
    pub fn wake(&self) {
        if let Some(t) = &self.thread {
            t.thread().unpark();
        }
    }

    /// Stops the thread and finalises the WAV.
    pub fn finish(mut self) -> super::Result<()> {
        self.stop.store(true, Ordering::Release);
        self.wake();
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err(super::AudioError::Device("file sink thread panicked".into())),
            None => Ok(()),
        }
    }
}

impl Drop for FileSink {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        self.wake();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Keeps alsa-lib from printing to stderr (the terminal) while we probe devices: its messages
/// go to a buffer on this thread instead.
#[cfg(target_os = "linux")]
mod alsa_quiet {
    pub struct Guard(#[allow(dead_code)] Option<std::rc::Rc<std::cell::RefCell<alsa::Output>>>);
    impl Guard {
        pub fn new() -> Self {
            Self(alsa::Output::local_error_handler().ok())
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod alsa_quiet {
    pub struct Guard;
    impl Guard {
        pub fn new() -> Self {
            Self
        }
    }
}
