//! The workstation's side of the session: what the run loop does with the App's
//! [`Command`]s and the engine's takes. It owns the [`Session`] (the project), re-reads the
//! manuscript when it is saved, and answers with [`Msg`]s for the App.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc::Sender;

use anyhow::Context;

use super::app::{Command, Msg, RowInit, TakeEntry};
use crate::reading::ReadOptions;
use crate::session::{SegmentView, Session, Work};
use crate::store::SegmentKey;
use lectern_engine::protocol::{Request, SegmentId, Take};
use lectern_text::{Manuscript, Tokenizer};

/// The session, the manuscript it was opened on and the tokenizer that reads it.
pub struct Desk {
    session: Session,
    manuscript: PathBuf,
    tokenizer: Arc<Tokenizer>,
    /// (key, content key) of every segment at the last sync: what a reload compares.
    synced: Vec<(SegmentKey, String)>,
    read: ReadOptions,
}

impl std::fmt::Debug for Desk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Desk").field("manuscript", &self.manuscript).finish_non_exhaustive()
    }
}

/// Reads a manuscript file as the session needs it, with the default reading options.
pub fn read_manuscript(path: &Path, tokenizer: &Tokenizer) -> anyhow::Result<Manuscript> {
    crate::reading::load(path, tokenizer, &ReadOptions::default())
}

impl Desk {
    /// Syncs the manuscript into the session's project.
    pub fn open(
        session: Session,
        manuscript: &Path,
        tokenizer: Arc<Tokenizer>,
    ) -> anyhow::Result<Self> {
        Self::open_with(session, manuscript, tokenizer, ReadOptions::default())
    }

    /// Syncs the manuscript, read with `read`, into the session's project.
    pub fn open_with(
        mut session: Session,
        manuscript: &Path,
        tokenizer: Arc<Tokenizer>,
        read: ReadOptions,
    ) -> anyhow::Result<Self> {
        let book = crate::reading::load(manuscript, &tokenizer, &read)?;
        session.sync_read(&book, &tokenizer, &read)?;
        let mut desk = Self {
            session,
            manuscript: manuscript.to_path_buf(),
            tokenizer,
            synced: Vec::new(),
            read,
        };
        desk.synced = desk.fingerprint();
        Ok(desk)
    }

    pub fn session(&self) -> &Session {
        &self.session
    }

    pub fn manuscript(&self) -> &Path {
        &self.manuscript
    }

    fn fingerprint(&self) -> Vec<(SegmentKey, String)> {
        self.session.segments().iter().map(|s| (s.key, s.content.key())).collect()
    }

    /// The manuscript's lead-in in samples.
    pub fn lead_in_samples(&self) -> usize {
        self.session.lead_in_ms().map_or(0, crate::audio::master::ms_to_samples)
    }

    /// The rows the App shows: the project's segments with their takes and choices.
    pub fn rows(&self) -> anyhow::Result<Vec<RowInit>> {
        Ok(self.session.views()?.into_iter().map(row_init).collect())
    }

    /// What the engine must do now, sent to it; returns the ids it will render.
    pub fn start_work(&mut self, engine: &Sender<Request>) -> anyhow::Result<Vec<SegmentId>> {
        let work = self.session.work()?;
        send_work(&work, engine)?;
        let mut ids: Vec<SegmentId> = work.render.iter().map(|s| s.id).collect();
        ids.extend(work.regenerate.iter().map(|r| r.segment_id));
        Ok(ids)
    }

    /// The manuscript was saved: re-read and sync it. `Ok(false)` when no segment's content
    /// changed (nothing to do). Otherwise the engine's queue is replaced by the new plan, so
    /// groups form exactly as a fresh run would form them.
    pub fn reload(&mut self, engine: &Sender<Request>) -> anyhow::Result<Option<Vec<SegmentId>>> {
        let book = crate::reading::load(&self.manuscript, &self.tokenizer, &self.read)?;
        self.session.sync_read(&book, &self.tokenizer, &self.read)?;
        let now = self.fingerprint();
        if now == self.synced {
            return Ok(None);
        }
        self.synced = now;
        engine.send(Request::CancelAll).context("the engine has stopped")?;
        self.start_work(engine).map(Some)
    }

    /// Carries out one App command; returns the App's answers.
    pub fn handle(&mut self, cmd: Command, engine: &Sender<Request>) -> Vec<Msg> {
        let (segment, result) = match cmd {
            Command::Engine(r) => {
                if engine.send(r).is_err() {
                    return vec![Msg::EngineGone];
                }
                return Vec::new();
            }
            Command::Reseed(id) => (id, self.new_take(id, false, engine)),
            Command::Rerender(id) => (id, self.new_take(id, true, engine)),
            Command::Choose { segment, take } => {
                (segment, self.session.choose(key(segment), take).map(|()| Vec::new()))
            }
            Command::SetReview { segment, review } => {
                (segment, self.session.set_review(key(segment), review).map(|()| Vec::new()))
            }
            Command::SetNote { segment, note } => {
                (segment, self.session.set_note(key(segment), &note).map(|()| Vec::new()))
            }
            Command::Load { segment, take } => (
                segment,
                self.session
                    .load_samples(take)
                    .map(|samples| vec![Msg::Loaded { segment, take, samples: Arc::new(samples) }]),
            ),
        };
        result.unwrap_or_else(|e| vec![Msg::Refused { segment, why: format!("{e:#}") }])
    }

    fn new_take(
        &mut self,
        id: SegmentId,
        same_seed: bool,
        engine: &Sender<Request>,
    ) -> anyhow::Result<Vec<Msg>> {
        let spec = if same_seed {
            self.session.rerender_spec(key(id))?
        } else {
            self.session.reseed_spec(key(id))?
        };
        let seed = spec.seed;
        engine.send(Request::Reseed(spec)).context("the engine has stopped")?;
        Ok(vec![Msg::Seeded { segment: id, seed }])
    }

    /// A take from the engine: the session saves it (with its whole group); the App hears of
    /// each saved take.
    pub fn accept(&mut self, take: Take) -> Vec<Msg> {
        let segment = take.record.segment_id;
        match self.session.accept(take) {
            Ok(saved) => saved
                .into_iter()
                .map(|s| Msg::Saved {
                    segment: s.key as SegmentId,
                    take: Box::new(TakeEntry {
                        id: s.id,
                        samples: Some(Arc::clone(&s.take.samples)),
                        record: s.take.record,
                        stale: false,
                    }),
                    restored: s.restored,
                })
                .collect(),
            Err(e) => vec![Msg::Refused { segment, why: format!("take not saved: {e:#}") }],
        }
    }
}

fn key(id: SegmentId) -> SegmentKey {
    id as SegmentKey
}

/// Sends a session's work to the engine: regenerations first (they restore chosen takes),
/// then the plan's renders in manuscript order.
pub fn send_work(work: &Work, engine: &Sender<Request>) -> anyhow::Result<()> {
    for record in &work.regenerate {
        engine.send(Request::Regenerate(Box::new(record.clone()))).context("engine stopped")?;
    }
    if !work.render.is_empty() {
        engine.send(Request::Enqueue(work.render.clone())).context("engine stopped")?;
    }
    Ok(())
}

fn row_init(v: SegmentView) -> RowInit {
    let chosen = v.chosen.and_then(|id| v.takes.iter().position(|t| t.id == id));
    let takes = v
        .takes
        .iter()
        .map(|t| TakeEntry {
            id: t.id,
            samples: None,
            record: t.record.clone(),
            stale: !v.is_current(t),
        })
        .collect();
    RowInit {
        id: v.planned.key as SegmentId,
        text: v.planned.text,
        source: v.planned.source,
        pause_after_ms: v.planned.pause_after_ms,
        default_seed: v.planned.default_seed,
        takes,
        chosen,
        review: v.review,
        note: v.note,
    }
}
