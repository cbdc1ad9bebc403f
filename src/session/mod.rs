//! The session: what a run works with — the model directory (the real download or the bundled
//! tiny model), the voice, the tokenizer and the engine backend built from them — and the one
//! pipeline `lectern render` and the workstation both drive ([`pipeline::Session`]).
//!
//! - [`seed`]: the seed policy (content-keyed default seeds, reproducible re-seeds);
//! - [`content`]: a take's content key (LM input ids, voice and model hashes, mode, frontend);
//! - [`plan`]: which segments render and where their flow groups close;
//! - [`pipeline`]: project sync, the engine's work, group-atomic saves, choices and proofing;
//! - [`retry`]: a take with no speech tried again with the next seeds;
//! - [`proof`]: proofing by number without the workstation (`lectern takes`, `reseed`, …);
//! - [`worklog`]: what a sync says of the narrator's work it moved to edited text.

pub mod content;
pub mod pipeline;
pub mod plan;
pub mod proof;
pub mod retry;
pub mod seed;
pub mod worklog;

pub use pipeline::{ProjectChoice, SavedTake, SegmentView, Session, Work};
pub use plan::{PlannedSegment, implausible};

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use candle::Device;

use lectern_engine::CosyVoiceBackend;
use lectern_engine::protocol::Precision;
use lectern_model::flow::FlowMatmul;
use lectern_text::Tokenizer;
use lectern_voice::Voice;

/// The demo voice made for the tiny model.
pub const TINY_DEMO_VOICE: &str = crate::assets::DEMO_VOICE;
/// What Lectern says whenever it runs on the bundled model.
pub const TINY_NOTICE: &str =
    "bundled tiny model with random weights: it proves the pipeline, not the voice";

/// The model a run uses.
#[derive(Debug, Clone)]
pub struct ModelChoice {
    pub dir: PathBuf,
    /// The bundled tiny random-weight model (no `--model` given).
    pub bundled_tiny: bool,
}

impl ModelChoice {
    /// `--model DIR`, or the demo tiny model (materialised from the binary into the data
    /// directory on first use, [`crate::assets::ensure_demo`]).
    pub fn resolve(arg: Option<&Path>) -> anyhow::Result<Self> {
        Self::resolve_for(arg, crate::model_dir::ModelUse::Speech)
    }

    /// [`Self::resolve`], with `--model DIR` checked for what `use_` needs
    /// ([`crate::model_dir::check`]): missing or cut-short files and a wrong folder are named
    /// before any work starts.
    pub fn resolve_for(
        arg: Option<&Path>,
        use_: crate::model_dir::ModelUse,
    ) -> anyhow::Result<Self> {
        match arg {
            Some(dir) => {
                crate::model_dir::check(dir, use_)?;
                Ok(Self { dir: dir.to_path_buf(), bundled_tiny: false })
            }
            None => {
                let demo = crate::assets::ensure_demo()?;
                Ok(Self { dir: demo.join("model"), bundled_tiny: true })
            }
        }
    }

    /// The tiny model's files at `dir` (tests use the source tree's copy).
    pub fn tiny_at(dir: &Path) -> Self {
        Self { dir: dir.to_path_buf(), bundled_tiny: true }
    }

    /// A one-line description for logs and title bars.
    pub fn describe(&self) -> String {
        if self.bundled_tiny {
            TINY_NOTICE.to_string()
        } else {
            format!("model {}", self.dir.display())
        }
    }
}

/// `--voice NAME|DIR`; defaults to the tiny demo voice on the demo model. Names are looked up
/// in the voices directory (`$LECTERN_VOICES`, else the data directory's `voices/`), then
/// among the demo voices.
pub fn resolve_voice(arg: Option<&str>, model: &ModelChoice) -> anyhow::Result<Voice> {
    let name = match arg {
        Some(v) => v.to_string(),
        None if model.bundled_tiny => TINY_DEMO_VOICE.to_string(),
        None => bail!("a real model needs a voice: pass --voice NAME (see `lectern voice list`)"),
    };
    match crate::voices::load(&name) {
        Ok(v) => Ok(v),
        Err(first) => {
            let demo = crate::voices::demo_voice_dir(&name);
            match demo {
                Some(dir) => Voice::load_dir(&dir)
                    .with_context(|| format!("loading voice `{name}` ({first})")),
                None => Err(first).with_context(|| format!("loading voice `{name}`")),
            }
        }
    }
}

/// The tokenizer of the model directory.
pub fn tokenizer(model: &ModelChoice) -> anyhow::Result<Tokenizer> {
    Tokenizer::from_model_dir(&model.dir)
        .with_context(|| format!("loading the tokenizer of {}", model.dir.display()))
}

/// Loads the three stages and prepares the voices (the default first).
pub fn backend(
    model: &ModelChoice,
    voices: &[&Voice],
    device: &Device,
    precision: Precision,
    flow_matmul: Option<FlowMatmul>,
) -> anyhow::Result<CosyVoiceBackend> {
    let flow_matmul = flow_matmul.unwrap_or_else(|| FlowMatmul::default_for(device));
    CosyVoiceBackend::load(&model.dir, voices, device, precision, flow_matmul)
        .with_context(|| format!("loading the model in {}", model.dir.display()))
}

/// Brings a project up to date with its manuscript before `export book.md`, using the model
/// and voice of the project's last sync: a segment edited, added or removed since the last
/// render becomes stale or missing, so the export names it instead of exporting the old text.
/// Takes are never touched.
pub fn resync_for_export(manuscript: &Path, project_dir: &Path) -> anyhow::Result<()> {
    let sources = crate::store::Project::open(project_dir)
        .with_context(|| format!("opening the project {}", project_dir.display()))?
        .sources()?;
    let Some(sources) = sources else {
        bail!(
            "the project {} does not record the model and voice it was rendered with (it was \
             made by an older Lectern), so {} cannot be checked against its takes: run `lectern \
             render` on it once, or export the project directory to export the takes as they are",
            project_dir.display(),
            manuscript.display()
        );
    };
    let unavailable = |what: &str, dir: &Path| {
        format!(
            "the {what} the project was last rendered with ({}) is not available, so {} cannot \
             be checked against its takes: render it again with the {what} you use now, or \
             export the project directory to export the takes as they are",
            dir.display(),
            manuscript.display()
        )
    };
    if !sources.model_dir.is_dir() {
        bail!(unavailable("model", &sources.model_dir));
    }
    let voice = Voice::load_dir(&sources.voice_dir)
        .with_context(|| unavailable("voice", &sources.voice_dir))?;
    let tokenizer = Tokenizer::from_model_dir(&sources.model_dir)
        .with_context(|| format!("loading the tokenizer of {}", sources.model_dir.display()))?;
    let project = crate::store::Project::open(project_dir)
        .with_context(|| format!("opening the project {}", project_dir.display()))?;
    // Read as the render read it (front matter skipped or not), or every segment would differ.
    let read = project.book()?.read;
    drop(project);
    let book = crate::reading::load(manuscript, &tokenizer, &read)?;
    // The base seed only sets default seeds of takes to come; the sync records none.
    let choice = ProjectChoice::Dir(project_dir.to_path_buf());
    let mut session = Session::open(&choice, manuscript, &voice, &sources.model_dir, 0)?;
    // Cast as the render cast it: the manuscript's cast.toml and the book voice's mode.
    let mut cast = crate::cast::Cast::beside(manuscript, "")?;
    cast.book_cross_lingual = sources.cross_lingual;
    session.set_cast(cast)?;
    session.sync_read(&book, &tokenizer, &read)
}
