//! `lectern [MANUSCRIPT]`: the workstation. Opens (or creates) the manuscript's project through
//! the session pipeline, starts the engine thread (which loads the model on its own thread),
//! audio playback and the terminal UI.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::Context;
use candle::Device;

use crate::audio::player::DeviceChoice;
use crate::audio::{Player, PlayerConfig};
use crate::session::{self, ModelChoice, ProjectChoice, Session};
use crate::synth::SynthOptions;
use crate::tui::desk::Desk;
use crate::tui::watch::ManuscriptSource;
use crate::tui::{self, AppConfig, RunConfig};
use lectern_engine::Engine;
use lectern_model::flow::FlowMatmul;
use lectern_voice::{ModelSignature, Voice};

/// Where the keymap comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeymapChoice {
    /// The built-in keys.
    Defaults,
    /// `--keymap FILE`: an error in it stops the workstation before it opens.
    Given(PathBuf),
    /// `keymap.toml` in the configuration directory: an error in it is shown in the banner
    /// and the built-in keys are used.
    Found(PathBuf),
}

/// Options of the workstation.
#[derive(Debug, Clone)]
pub struct WorkstationOptions {
    pub manuscript: Option<PathBuf>,
    /// Model, voice, device, engine parameters, flow matmul, base seed.
    pub synth: SynthOptions,
    /// Where playback is written when there is no audio device (never over an existing file).
    pub fallback_wav: Option<PathBuf>,
    pub project: ProjectChoice,
    /// Theme name (`dark`, `light`, or a file's in the configuration's `themes/`).
    pub theme: String,
    /// `default`, `file`, or an output device's name or cpal id.
    pub playback_device: String,
    pub keymap: KeymapChoice,
    /// Errors in `config.toml` (their keys run on the defaults), shown in a banner.
    pub config_errors: Vec<String>,
    /// A configuration file written by this start, if any (said in the log).
    pub config_created: Option<PathBuf>,
    /// What of the manuscript is read (an EPUB's front matter).
    pub read: crate::reading::ReadOptions,
}

/// Opens the workstation and runs it until the narrator quits.
pub fn run(opts: WorkstationOptions) -> anyhow::Result<()> {
    let manuscript_path = match &opts.manuscript {
        Some(p) => p.clone(),
        None => crate::assets::sample_manuscript()?,
    };
    let model = ModelChoice::resolve(opts.synth.model.as_deref())?;
    let voice = session::resolve_voice(opts.synth.voice.as_deref(), &model)?;
    let signature = ModelSignature::from_model_dir(&model.dir)
        .with_context(|| format!("reading the model in {}", model.dir.display()))?;
    voice.check_model(&signature).with_context(|| format!("voice `{}`", voice.manifest.name))?;
    let tokenizer = Arc::new(session::tokenizer(&model)?);
    let project = opts.project.clone();
    let mut session =
        Session::open(&project, &manuscript_path, &voice, &model.dir, opts.synth.base_seed)?;
    // Each take is measured as it is saved, so the list can flag outliers (#19).
    session.measure_with(crate::quality::QualityProbe::load(&model.dir, &voice)?)?;
    session.set_cast(opts.synth.cast(&manuscript_path)?)?;
    let mut desk = Desk::open_with(session, &manuscript_path, Arc::clone(&tokenizer), opts.read)?;
    // Every voice the manuscript's cast uses now; one added by a later edit fails its segments
    // with the engine's "holds voice …" message until the workstation is restarted.
    let voices: Vec<Voice> = desk.session().voices().into_iter().cloned().collect();

    let voice_name = voice.manifest.name.clone();
    let (model_for_engine, device, precision, flow_matmul) = (
        model.clone(),
        opts.synth.device.clone(),
        opts.synth.params.precision,
        opts.synth.flow_matmul,
    );
    let handle = Engine::spawn_with(
        move || {
            let voices: Vec<&Voice> = voices.iter().collect();
            session::backend(&model_for_engine, &voices, &device, precision, flow_matmul)
                .map_err(|e| lectern_engine::EngineError::Backend(format!("{e:#}")))
        },
        voice_name.clone(),
        opts.synth.params.clone(),
    );
    let fallback = match &opts.fallback_wav {
        Some(p) => unused_path(p),
        None => default_fallback(&manuscript_path, desk.session().project_dir()),
    };
    if let Some(dir) = fallback.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let device = match opts.playback_device.as_str() {
        "default" => DeviceChoice::Default,
        "file" => DeviceChoice::File,
        name => DeviceChoice::Named(name.to_string()),
    };
    let player =
        Player::open(PlayerConfig { device, fallback_wav: fallback, ..PlayerConfig::default() })
            .context("opening audio output")?;
    let mut banner = opts.config_errors.clone();
    let keymap_file = match &opts.keymap {
        KeymapChoice::Defaults => None,
        KeymapChoice::Given(p) => Some(p.clone()),
        KeymapChoice::Found(p) => match crate::tui::keymap::KeyMap::from_file(p) {
            Ok(_) => Some(p.clone()),
            Err(e) => {
                banner.push(format!("{}: {e} (the built-in keys are used)", p.display()));
                None
            }
        },
    };
    let themes_dir = crate::assets::config_dir().map(|d| d.join(crate::config::THEMES_DIR));
    let mut log = Vec::new();
    if let Some(p) = &opts.config_created {
        log.push(format!("config: wrote {} (every key commented out)", p.display()));
    }

    let quit = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGHUP] {
        signal_hook::flag::register(signal, Arc::clone(&quit))
            .context("installing the signal handlers")?;
    }
    let cfg = RunConfig {
        app: AppConfig {
            manuscript: display_name(&manuscript_path),
            voice: voice_name,
            model: if model.bundled_tiny {
                "tiny-a".into()
            } else {
                model.dir.display().to_string()
            },
            tiny_model: model.bundled_tiny,
            backend: backend_label(&opts.synth.device, opts.synth.flow_matmul),
            project: desk.session().project_dir().map(|d| d.display().to_string()),
            params: opts.synth.params.clone(),
            theme: opts.theme.clone(),
            banner,
            log,
            ..AppConfig::default()
        },
        keymap_file,
        manuscript: Some(ManuscriptSource { path: manuscript_path.clone() }),
        themes_dir,
        quit_signal: Some(quit),
        redraw_log: std::env::var_os("LECTERN_REDRAW_LOG").map(PathBuf::from),
        ..RunConfig::default()
    };
    let result = tui::run(cfg, &handle.tx, &handle.rx, &player, &mut desk);
    eprintln!("lectern: stopping the engine (it finishes the step it is in)…");
    handle.shutdown();
    // Dropping the player finalises the playback file.
    drop(player);
    result.context("workstation")
}

fn display_name(path: &Path) -> String {
    path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into())
}

/// Each session's playback file is new: `playback/session-N.wav` in the project, or
/// `book.playback-N.wav` beside the manuscript without one.
fn default_fallback(manuscript: &Path, project: Option<&Path>) -> PathBuf {
    match project {
        Some(dir) => unused_path(&dir.join("playback").join("session.wav")),
        None => unused_path(&manuscript.with_extension("playback.wav")),
    }
}

/// `path` if nothing is there, else the first free `stem-2.ext`, `stem-3.ext`, …: a playback
/// file is never written over an existing one.
pub fn unused_path(path: &Path) -> PathBuf {
    if !path.exists() {
        return path.to_path_buf();
    }
    let stem = path.file_stem().map_or_else(String::new, |s| s.to_string_lossy().into_owned());
    let ext = path.extension().map(|e| format!(".{}", e.to_string_lossy())).unwrap_or_default();
    (2u32..)
        .map(|n| path.with_file_name(format!("{stem}-{n}{ext}")))
        .find(|p| !p.exists())
        .expect("some number is free")
}

/// The parameters panel's backend: the device, and the flow's matmuls where they are not plain
/// f32 (`cuda · bf16`, `cpu · f32+openblas`), so the narrator sees what renders the takes.
fn backend_label(device: &Device, flow_matmul: Option<FlowMatmul>) -> String {
    let device_name = lectern_engine::cosyvoice::device_name(device);
    match flow_matmul.unwrap_or_else(|| FlowMatmul::default_for(device)).label(device) {
        label if label == "f32" => device_name,
        label => format!("{device_name} · {label}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backend_label_names_the_flow_matmuls_unless_plain_f32() {
        let cpu = Device::Cpu;
        // Plain f32 shows as the device alone, unless this machine's flow runs on OpenBLAS or
        // on Lectern's AVX2 GEMM.
        let f32_label = match lectern_kernels::gemm::sgemm::F32Gemm::for_flow() {
            Some(gemm) => format!("cpu · {}", gemm.label()),
            None => "cpu".to_string(),
        };
        assert_eq!(backend_label(&cpu, None), f32_label);
        assert_eq!(backend_label(&cpu, Some(FlowMatmul::F32)), f32_label);
        assert_eq!(backend_label(&cpu, Some(FlowMatmul::Tf32x3)), "cpu · tf32x3");
    }

    #[test]
    fn a_playback_file_is_never_reused() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().join("session.wav");
        assert_eq!(unused_path(&base), base);
        std::fs::write(&base, b"x").unwrap();
        let second = unused_path(&base);
        assert_eq!(second, dir.path().join("session-2.wav"));
        std::fs::write(&second, b"x").unwrap();
        assert_eq!(unused_path(&base), dir.path().join("session-3.wav"));
    }
}
