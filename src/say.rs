//! `lectern say "text"`: one line spoken with the model and voice the other commands use, for
//! quick checks (a pronunciation entry, a number, a name). The line goes through the same
//! reading and rendering path as a manuscript (`render` on a one-line scratch manuscript, no
//! project kept), then to the audio device — or, without one, to a WAV file, as the workstation
//! does.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use crate::audio::player::{
    AudioCommand, Cue, DeviceChoice, Playback, Player, PlayerConfig, SinkInfo,
};
use crate::audio::wav;
use crate::render::{self, RenderOptions};
use crate::session::ProjectChoice;
use crate::synth::SynthOptions;
use lectern_text::pronounce::PROJECT_FILE;

/// What `say` needs.
#[derive(Debug, Clone)]
pub struct SayOptions {
    pub text: String,
    /// Write the audio here instead of playing it.
    pub out: Option<PathBuf>,
    /// The pronunciation list to read with (default: `pronunciations.txt` in the current
    /// directory, when there is one).
    pub pronunciations: Option<PathBuf>,
    /// Model, voice, device, engine parameters, flow matmul, base seed.
    pub synth: SynthOptions,
    /// `default`, a device name, or `file`.
    pub playback_device: String,
    /// Where playback goes without an audio device.
    pub fallback_wav: PathBuf,
}

/// Where the line's audio went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Said {
    /// Played on this device.
    Played(String),
    /// Written to this file (`-o`, or no audio device).
    Written(PathBuf),
}

/// Speaks the line: renders it, then plays it or writes it.
pub fn say(opts: &SayOptions) -> anyhow::Result<Said> {
    if opts.text.trim().is_empty() {
        bail!("nothing to say: give the text to speak, as in `lectern say \"Hello.\"`");
    }
    let scratch = tempfile::Builder::new().prefix("lectern-say-").tempdir()?;
    let manuscript = scratch.path().join("say.txt");
    std::fs::write(&manuscript, &opts.text)
        .with_context(|| format!("writing {}", manuscript.display()))?;
    copy_pronunciations(opts.pronunciations.as_deref(), scratch.path())?;
    let wav_out = opts.out.clone().unwrap_or_else(|| scratch.path().join("say.wav"));
    let render_opts = RenderOptions {
        manuscript,
        out: wav_out.clone(),
        split_chapters: false,
        synth: opts.synth.clone(),
        progress: false,
        project: ProjectChoice::Off,
        dry_run: false,
        rerender_settings: false,
        read: crate::reading::ReadOptions::default(),
        scope: crate::render::RenderScope::default(),
    };
    render::render(&render_opts)?;
    if opts.out.is_some() {
        return Ok(Said::Written(wav_out));
    }
    let samples = wav::read(&wav_out).with_context(|| format!("reading {}", wav_out.display()))?;
    play(&samples, opts)
}

/// The given list, or the current directory's, copied beside the scratch manuscript (where
/// reading looks for it). A named list that does not exist is an error.
fn copy_pronunciations(given: Option<&Path>, dir: &Path) -> anyhow::Result<()> {
    let source = match given {
        Some(p) if !p.is_file() => bail!("pronunciation list {} not found", p.display()),
        Some(p) => p.to_path_buf(),
        None if Path::new(PROJECT_FILE).is_file() => PathBuf::from(PROJECT_FILE),
        None => return Ok(()),
    };
    // Checked where it is, so an error names the user's file, not the scratch copy.
    lectern_text::Pronunciations::load(&source)?;
    std::fs::copy(&source, dir.join(PROJECT_FILE))
        .with_context(|| format!("reading {}", source.display()))?;
    Ok(())
}

/// Plays the samples to the end; without a device they go to the fallback file.
fn play(samples: &[f32], opts: &SayOptions) -> anyhow::Result<Said> {
    let device = match opts.playback_device.as_str() {
        "default" => DeviceChoice::Default,
        "file" => DeviceChoice::File,
        name => DeviceChoice::Named(name.to_string()),
    };
    let cfg =
        PlayerConfig { device, fallback_wav: opts.fallback_wav.clone(), ..PlayerConfig::default() };
    let player = Player::open(cfg).context("opening audio output")?;
    let cue = Cue { take_id: 0, segment_id: 0, samples: std::sync::Arc::new(samples.to_vec()) };
    player.command(AudioCommand::Play(cue));
    let length = Duration::from_secs_f64(samples.len() as f64 / 24_000.0);
    // The player takes the cue on its own thread: wait for it to start, then to finish.
    let deadline = Instant::now() + length + Duration::from_secs(5);
    let mut started = false;
    let status = loop {
        let status = player.status();
        let busy = status.now_playing.is_some() || status.queued > 0;
        started |= busy;
        if started && !busy {
            break status;
        }
        if Instant::now() > deadline {
            bail!("playback did not finish ({:.1} s of audio)", length.as_secs_f64());
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    drop(player); // finalises the file sink
    Ok(match status.sink {
        SinkInfo::File { path } => Said::Written(path),
        other => Said::Played(other.to_string()),
    })
}
