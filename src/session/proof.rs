//! Proofing without the workstation, on the same pipeline: a project's session opened with the
//! model and voice it was rendered with, segments and takes by the numbers the dry run and the
//! workstation's list show, and new takes rendered through the engine with the automatic
//! no-speech retry ([`super::retry`]). `lectern takes|reseed|choose|approve|note|pickups` are
//! thin faces of this module.
//!
//! Numbering, one rule everywhere: segments from 1 across the book, in manuscript order
//! ([`segment_number`]); a segment's takes from 1, oldest first, stale ones included, as the
//! list shows them ([`SegmentView::take_number`]).

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, bail};
use serde::Serialize;

use super::retry::{NoSpeechRetries, Retry, retry_try};
use super::{ModelChoice, PlannedSegment, ProjectChoice, SavedTake, SegmentView, Session};
use crate::review::{Review, TakeInfo, TakeStatus};
use crate::store::Project;
use lectern_engine::EngineHandle;
use lectern_engine::protocol::{EngineEvent, Request, SegmentId, SegmentSpec, SegmentState};
use lectern_model::config::SAMPLE_RATE_HZ;
use lectern_text::Tokenizer;
use lectern_voice::Voice;

/// A segment's number as messages, the dry run and the workstation's list show it: from 1,
/// across the book.
#[must_use]
pub fn segment_number(segment: &PlannedSegment) -> usize {
    segment.position + 1
}

impl SegmentView {
    /// The segment's number ([`segment_number`]).
    #[must_use]
    pub fn number(&self) -> usize {
        segment_number(&self.planned)
    }

    /// A take's number in the list (from 1, oldest first), if it is one of this segment's.
    #[must_use]
    pub fn take_number(&self, id: lectern_engine::protocol::TakeId) -> Option<usize> {
        self.takes.iter().position(|t| t.id == id).map(|i| i + 1)
    }

    /// The take with this number in the list.
    #[must_use]
    pub fn take_by_number(&self, n: usize) -> Option<&TakeInfo> {
        n.checked_sub(1).and_then(|i| self.takes.get(i))
    }

    /// The chosen take's number in the list.
    #[must_use]
    pub fn chosen_number(&self) -> Option<usize> {
        self.chosen.and_then(|id| self.take_number(id))
    }

    /// Whether the chosen take is usable: its file is intact and it was made for the segment's
    /// current content.
    #[must_use]
    pub fn has_usable_choice(&self) -> bool {
        self.chosen
            .and_then(|id| self.takes.iter().find(|t| t.id == id))
            .is_some_and(|t| t.status == TakeStatus::Ok && self.is_current(t))
    }

    /// Which try of the automatic no-speech retry made this take (2 for the first retry), if
    /// one did: a current take whose seed is a retry of the segment's default seed
    /// ([`retry_try`]) while no current take has the default seed itself (a re-seed by hand
    /// follows a take of the default seed).
    #[must_use]
    pub fn retry_of(&self, take: &TakeInfo) -> Option<u32> {
        let default = self.planned.default_seed;
        let first_try_kept =
            self.takes.iter().any(|t| self.is_current(t) && t.record.seed == default);
        if first_try_kept || !self.is_current(take) {
            return None;
        }
        retry_try(default, take.record.seed)
    }
}

/// A project opened for proofing: its session, synced with the manuscript, and what it was
/// opened with.
pub struct Proofing {
    pub session: Session,
    pub model: ModelChoice,
    pub voice: Voice,
    pub tokenizer: Tokenizer,
    pub project_dir: PathBuf,
}

impl std::fmt::Debug for Proofing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Proofing").field("project_dir", &self.project_dir).finish_non_exhaustive()
    }
}

/// What opens a project for proofing: where it is, and the model and voice when they are not
/// the ones it was last rendered with.
#[derive(Debug, Clone, Default)]
pub struct ProofOpen {
    pub project: ProjectChoice,
    /// The base seed of default seeds (as `render --seed`).
    pub base_seed: u64,
    /// A model directory other than the project's.
    pub model: Option<PathBuf>,
    /// A voice (name or directory) other than the project's.
    pub voice: Option<String>,
}

/// Opens the project of `manuscript` and syncs it, as the workstation does when it opens a
/// book: with the model and voice the project was last rendered with (unless `how` names
/// others), the manuscript's cast and the options the book was read with. A project that does
/// not exist, or was never rendered, is refused with the command that makes it.
pub fn open(manuscript: &Path, how: &ProofOpen) -> anyhow::Result<Proofing> {
    let book_name = manuscript.display();
    let Some(dir) = how.project.dir(manuscript) else {
        bail!("proofing needs a project: leave out --no-project");
    };
    if !dir.join(crate::store::DB_FILE).is_file() {
        bail!(no_project_yet(manuscript, &dir, None));
    }
    let sources = Project::open(&dir)
        .with_context(|| format!("opening the project {}", dir.display()))?
        .sources()?;
    let Some(sources) = sources else {
        bail!(
            "the project {} does not record the model and voice it was rendered with: render it \
             once with `lectern render {book_name}`",
            dir.display()
        );
    };
    let model = match &how.model {
        Some(m) => ModelChoice::resolve(Some(m))?,
        None if sources.model_dir.is_dir() => {
            // Where the demo model lives; looked up, never materialised, for a real model.
            let tiny = crate::assets::demo_dir().map(|d| d.join("model"));
            let bundled_tiny = tiny.is_some_and(|t| same_dir(&t, &sources.model_dir));
            ModelChoice { dir: sources.model_dir.clone(), bundled_tiny }
        }
        None => bail!(
            "the model the project was rendered with ({}) is not available: pass --model DIR",
            sources.model_dir.display()
        ),
    };
    let voice = match &how.voice {
        Some(v) => super::resolve_voice(Some(v), &model)?,
        None => Voice::load_dir(&sources.voice_dir).with_context(|| {
            format!(
                "the voice the project was rendered with ({}) is not available: pass --voice",
                sources.voice_dir.display()
            )
        })?,
    };
    let tokenizer = super::tokenizer(&model)?;
    let read = Project::open(&dir)?.book()?.read;
    let book = crate::reading::load(manuscript, &tokenizer, &read)?;
    let choice = ProjectChoice::Dir(dir.clone());
    let mut session = Session::open(&choice, manuscript, &voice, &model.dir, how.base_seed)?;
    let mut cast = crate::cast::Cast::beside(manuscript, "")?;
    cast.book_cross_lingual = sources.cross_lingual;
    session.set_cast(cast)?;
    session.sync_read(&book, &tokenizer, &read)?;
    Ok(Proofing { session, model, voice, tokenizer, project_dir: dir })
}

/// What a command that needs a book's project says when there is none yet: where it looked
/// and the command that makes it; `then` is what to run after (e.g. "export it again").
/// `lectern export tale.epub` before any render says this with `Some("export it again")`.
#[must_use]
pub fn no_project_yet(manuscript: &Path, project_dir: &Path, then: Option<&str>) -> String {
    let book = manuscript.display();
    let then = then.map_or(String::new(), |t| format!(", then {t}"));
    format!(
        "{book} has no Lectern project yet (looked in {}): render it first with `lectern render \
         {book}`{then}",
        project_dir.display()
    )
}

fn same_dir(a: &Path, b: &Path) -> bool {
    let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    canon(a) == canon(b)
}

/// One take as `lectern takes` lists it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ListedTake {
    /// From 1, oldest first.
    pub take: usize,
    /// The store's id of the take.
    pub id: u64,
    pub seed: u64,
    pub seconds: f64,
    pub tokens: usize,
    pub chosen: bool,
    /// Made for the segment's current content (text, voice, model, casting).
    pub current: bool,
    /// Its file is missing or damaged (it is rendered again from its record).
    pub missing: bool,
    /// Which try of the automatic no-speech retry made it (2 for the first retry), if one did.
    pub retry: Option<u32>,
}

/// One segment as `lectern takes` lists it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ListedSegment {
    /// From 1, across the book.
    pub segment: usize,
    /// From 1.
    pub chapter: usize,
    pub line: usize,
    pub text: String,
    pub review: Review,
    /// Approved, then its text was edited in the manuscript: it needs listening again.
    pub edited_since_approval: bool,
    pub note: String,
    /// The chosen take's number.
    pub chosen: Option<usize>,
    /// Whether the chosen take is usable (intact, made for the current content).
    pub ready: bool,
    pub takes: Vec<ListedTake>,
}

/// A project's segments and takes, numbered as the list numbers them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Listing {
    /// Always `lectern.takes/1`.
    pub schema: &'static str,
    pub project: PathBuf,
    pub segments: Vec<ListedSegment>,
}

impl Proofing {
    /// The segments with their takes and proofing state, as the list numbers them.
    pub fn views(&self) -> anyhow::Result<Vec<SegmentView>> {
        self.session.views()
    }

    /// The listing of these views.
    #[must_use]
    pub fn listing(&self, views: &[SegmentView]) -> Listing {
        let segments = views.iter().map(listed).collect();
        Listing { schema: "lectern.takes/1", project: self.project_dir.clone(), segments }
    }
}

fn listed(v: &SegmentView) -> ListedSegment {
    let takes = v
        .takes
        .iter()
        .enumerate()
        .map(|(i, t)| ListedTake {
            take: i + 1,
            id: t.id,
            seed: t.record.seed,
            seconds: t.num_samples as f64 / f64::from(SAMPLE_RATE_HZ),
            tokens: t.record.tokens.len(),
            chosen: v.chosen == Some(t.id),
            current: v.is_current(t),
            missing: t.status == TakeStatus::Missing,
            retry: v.retry_of(t),
        })
        .collect();
    ListedSegment {
        segment: v.number(),
        chapter: v.planned.chapter + 1,
        line: v.planned.span.0,
        text: v.planned.text.clone(),
        review: v.review,
        edited_since_approval: v.edited_since_approval,
        note: v.note.clone(),
        chosen: v.chosen_number(),
        ready: v.has_usable_choice(),
        takes,
    }
}

/// What came of specs rendered through the engine.
#[derive(Debug, Default)]
pub struct Rendered {
    /// Takes saved, in the order they arrived.
    pub saved: Vec<SavedTake>,
    /// Retries asked after a take with no speech.
    pub retried: Vec<Retry>,
    /// Segments that failed for good, with why.
    pub failed: Vec<(SegmentId, String)>,
}

/// How long to wait for the engine's next event before giving up on it.
const ENGINE_SILENCE: Duration = Duration::from_secs(3600);

/// Renders `specs` on `engine`, saving each take in the session as it arrives; a segment whose
/// take has no speech is tried again with the next seeds of its retry sequence
/// ([`NoSpeechRetries`]). `log` hears each retry and the engine's log lines. Other failures
/// do not stop the other segments: they are returned.
pub fn render_with_retries(
    session: &mut Session,
    engine: &EngineHandle,
    specs: Vec<SegmentSpec>,
    mut log: impl FnMut(String),
) -> anyhow::Result<Rendered> {
    let mut retries = NoSpeechRetries::new(&specs);
    let mut waiting: std::collections::HashSet<SegmentId> = specs.iter().map(|s| s.id).collect();
    let mut out = Rendered::default();
    engine.tx.send(Request::Enqueue(specs)).context("the engine has stopped")?;
    while !waiting.is_empty() {
        let event = engine
            .rx
            .recv_timeout(ENGINE_SILENCE)
            .context("the engine stopped before every segment was rendered")?;
        match event {
            EngineEvent::TakeReady(take) => {
                waiting.remove(&take.record.segment_id);
                out.saved.extend(session.accept(*take)?);
            }
            EngineEvent::SegmentState { id, state: SegmentState::Failed(why) } => {
                match retries.next(id, &why) {
                    Some(retry) => {
                        log(retry_line(session, &retry));
                        let spec = Box::new(retry.spec.clone());
                        engine.tx.send(Request::Reseed(spec)).context("the engine has stopped")?;
                        out.retried.push(retry);
                    }
                    None => {
                        waiting.remove(&id);
                        out.failed.push((id, why));
                    }
                }
            }
            EngineEvent::Log(line) => log(line),
            _ => {}
        }
    }
    Ok(out)
}

/// "segment 6: no speech with seed 123; trying seed 456 (try 2 of 3)".
#[must_use]
pub fn retry_line(session: &Session, retry: &Retry) -> String {
    let n = session
        .segments()
        .iter()
        .find(|s| s.key as SegmentId == retry.segment)
        .map_or(0, segment_number);
    format!(
        "segment {n}: no speech with seed {}; trying seed {} (try {} of {})",
        retry.failed_seed,
        retry.spec.seed,
        retry.try_number,
        super::retry::NO_SPEECH_TRIES
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_project_the_message_names_the_render_to_run() {
        let m = no_project_yet(
            Path::new("tale.epub"),
            Path::new("tale.lectern"),
            Some("export it again"),
        );
        assert_eq!(
            m,
            "tale.epub has no Lectern project yet (looked in tale.lectern): render it first with \
             `lectern render tale.epub`, then export it again"
        );
        assert!(
            no_project_yet(Path::new("b.md"), Path::new("b.lectern"), None)
                .ends_with("`lectern render b.md`")
        );
    }
}
