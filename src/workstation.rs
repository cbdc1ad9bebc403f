//! `lectern [MANUSCRIPT]`: the workstation. Wires the text frontend, the engine thread (which
//! loads the model on its own thread), audio playback and the terminal UI.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use candle::Device;

use crate::audio::{Player, PlayerConfig};
use crate::engine::Engine;
use crate::engine::protocol::RenderParams;
use crate::model::flow::FlowMatmul;
use crate::session::{self, ModelChoice};
use crate::text::{Manuscript, ParseOptions, TextError, Tokenizer};
use crate::tui::watch::{ManuscriptSource, Reparse};
use crate::tui::{self, AppConfig, RunConfig};

/// The sample manuscript opened when none is given.
pub const SAMPLE_MANUSCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/samples/welcome.md");
/// Themes shipped with the sources.
pub const BUNDLED_THEMES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/themes");

/// Options of the workstation.
#[derive(Debug, Clone)]
pub struct WorkstationOptions {
    pub manuscript: Option<PathBuf>,
    pub model: Option<PathBuf>,
    pub voice: Option<String>,
    pub device: Device,
    pub params: RenderParams,
    /// How the flow's matmuls run; `None`: the device's default ([`FlowMatmul::default_for`]).
    pub flow_matmul: Option<FlowMatmul>,
    pub base_seed: u64,
    /// Where playback goes when there is no audio device.
    pub fallback_wav: Option<PathBuf>,
}

/// Opens the workstation and runs it until the narrator quits.
pub fn run(opts: WorkstationOptions) -> anyhow::Result<()> {
    let manuscript_path =
        opts.manuscript.clone().unwrap_or_else(|| PathBuf::from(SAMPLE_MANUSCRIPT));
    let model = ModelChoice::resolve(opts.model.as_deref())?;
    let voice = session::resolve_voice(opts.voice.as_deref(), &model)?;
    let tokenizer = session::tokenizer(&model)?;
    let segments = segment_texts(&manuscript_path, &tokenizer)
        .with_context(|| format!("reading {}", manuscript_path.display()))?;
    let tokenizer = Arc::new(tokenizer);
    let reparse: Reparse =
        Arc::new(move |path: &Path| segment_texts(path, &tokenizer).map_err(|e| e.to_string()));

    let voice_name = voice.manifest.name.clone();
    let (model_for_engine, device, precision, flow_matmul) =
        (model.clone(), opts.device.clone(), opts.params.precision, opts.flow_matmul);
    let handle = Engine::spawn_with(
        move || {
            session::backend(&model_for_engine, &voice, &device, precision, flow_matmul)
                .map_err(|e| crate::engine::EngineError::Backend(format!("{e:#}")))
        },
        voice_name.clone(),
        opts.params.clone(),
    );
    let fallback = opts.fallback_wav.clone().unwrap_or_else(|| default_fallback(&manuscript_path));
    let player = Player::open(PlayerConfig { fallback_wav: fallback, ..PlayerConfig::default() })
        .context("opening audio output")?;

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
            backend: backend_label(&opts.device, opts.flow_matmul),
            base_seed: opts.base_seed,
            params: opts.params.clone(),
            ..AppConfig::default()
        },
        segments,
        manuscript: Some(ManuscriptSource { path: manuscript_path.clone(), reparse }),
        themes_dir: Some(PathBuf::from(BUNDLED_THEMES)),
        ..RunConfig::default()
    };
    let result = tui::run(cfg, &handle.tx, &handle.rx, &player);
    handle.shutdown();
    result.context("workstation")
}

/// The manuscript's segment texts, in reading order (also on every save).
fn segment_texts(path: &Path, tokenizer: &Tokenizer) -> Result<Vec<String>, TextError> {
    let book = Manuscript::load(path, &ParseOptions::default().with_tokenizer(tokenizer))?;
    Ok(book.segments().map(|s| s.text.clone()).collect())
}

fn display_name(path: &Path) -> String {
    path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into())
}

/// `book.md` → `book.playback.wav` beside it (or in the temp dir for the bundled sample).
fn default_fallback(manuscript: &Path) -> PathBuf {
    if manuscript.starts_with(env!("CARGO_MANIFEST_DIR")) {
        return std::env::temp_dir().join("lectern-playback.wav");
    }
    manuscript.with_extension("playback.wav")
}

/// The parameters panel's backend: the device, and the flow's matmuls where they are not plain
/// f32 (`cuda · tf32x3`), so the narrator sees what renders the takes.
fn backend_label(device: &Device, flow_matmul: Option<FlowMatmul>) -> String {
    let device_name = crate::engine::cosyvoice::device_name(device);
    match flow_matmul.unwrap_or_else(|| FlowMatmul::default_for(device)) {
        FlowMatmul::F32 => device_name,
        m => format!("{device_name} · {}", m.name()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backend_label_names_the_flow_matmuls_unless_plain_f32() {
        let cpu = Device::Cpu;
        assert_eq!(backend_label(&cpu, None), "cpu");
        assert_eq!(backend_label(&cpu, Some(FlowMatmul::F32)), "cpu");
        assert_eq!(backend_label(&cpu, Some(FlowMatmul::Tf32x3)), "cpu · tf32x3");
    }
}
