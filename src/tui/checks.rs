//! A chapter's ACX status in the workstation: once every segment of a chapter has a chosen take
//! for its current text, the chapter is mastered and measured as `export --preset acx` would
//! master its file ([`crate::deliver::chapter_check`]) on a thread of its own (resampling a
//! long chapter takes seconds), and the App hears the figures.
//!
//! A check is keyed by the chapter's chosen takes: a result for takes that are no longer the
//! chosen ones is dropped, and a chapter whose choices change is checked again.

use std::collections::HashMap;
use std::sync::mpsc::{Receiver, Sender, channel};

use super::app::{ChapterAcx, Msg};
use crate::review::TakeInfo;
use lectern_engine::protocol::TakeId;

/// A chapter to check: its chosen takes with the pause after each (24 kHz samples).
struct Job {
    chapter: usize,
    ids: Vec<TakeId>,
    takes: Vec<(TakeInfo, u64)>,
}

struct Done {
    chapter: usize,
    ids: Vec<TakeId>,
    result: Result<crate::deliver::check::FileCheck, String>,
}

/// The checker: a worker thread, and what each chapter's status is for.
pub struct ChapterChecks {
    jobs_tx: Sender<Job>,
    done_rx: Receiver<Done>,
    /// Per chapter, the chosen takes its shown (or pending) status is for.
    current: HashMap<usize, Vec<TakeId>>,
}

impl std::fmt::Debug for ChapterChecks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChapterChecks").field("chapters", &self.current.len()).finish()
    }
}

impl Default for ChapterChecks {
    fn default() -> Self {
        Self::new()
    }
}

impl ChapterChecks {
    /// Starts the worker (it ends when the checker is dropped).
    #[must_use]
    pub fn new() -> Self {
        let (jobs_tx, jobs_rx) = channel::<Job>();
        let (done_tx, done_rx) = channel();
        // Without the thread, jobs cannot be sent and each chapter says "not checked".
        let _worker = std::thread::Builder::new().name("acx-check".into()).spawn(move || {
            while let Ok(job) = jobs_rx.recv() {
                let result = crate::deliver::chapter_check(&job.takes, job.chapter + 1)
                    .map_err(|e| e.to_string());
                let done = Done { chapter: job.chapter, ids: job.ids, result };
                if done_tx.send(done).is_err() {
                    break;
                }
            }
        });
        Self { jobs_tx, done_rx, current: HashMap::new() }
    }

    /// A chapter's chosen takes now (`None`: some segment has no usable chosen take). Returns
    /// the App's message when the chapter's status changes: checking, or no status.
    pub fn update(&mut self, chapter: usize, takes: Option<Vec<(TakeInfo, u64)>>) -> Option<Msg> {
        let Some(takes) = takes else {
            return self
                .current
                .remove(&chapter)
                .map(|_| Msg::ChapterStatus { chapter, status: None });
        };
        let ids: Vec<TakeId> = takes.iter().map(|(t, _)| t.id).collect();
        if self.current.get(&chapter) == Some(&ids) {
            return None;
        }
        self.current.insert(chapter, ids.clone());
        let job = Job { chapter, ids, takes };
        let status = match self.jobs_tx.send(job) {
            Ok(()) => ChapterAcx::Checking,
            Err(_) => ChapterAcx::Failed("the checker has stopped".into()),
        };
        Some(Msg::ChapterStatus { chapter, status: Some(status) })
    }

    /// Forgets the chapters not in `chapters` (the manuscript lost them); their status goes.
    pub fn keep_only(&mut self, chapters: &[usize]) -> Vec<Msg> {
        let gone: Vec<usize> =
            self.current.keys().copied().filter(|c| !chapters.contains(c)).collect();
        gone.into_iter().filter_map(|chapter| self.update(chapter, None)).collect()
    }

    /// Finished checks still current, as the App's messages.
    pub fn poll(&mut self) -> Vec<Msg> {
        let mut out = Vec::new();
        while let Ok(done) = self.done_rx.try_recv() {
            out.extend(self.message(done));
        }
        out
    }

    /// Waits for the next finished check, then takes any others (tests: a check takes real
    /// time, so they wait here rather than poll on a clock).
    pub fn wait(&mut self) -> Vec<Msg> {
        let Ok(done) = self.done_rx.recv() else { return Vec::new() };
        let mut out: Vec<Msg> = self.message(done).into_iter().collect();
        out.extend(self.poll());
        out
    }

    /// The App's message for a finished check, unless its chapter's takes changed since.
    fn message(&self, done: Done) -> Option<Msg> {
        if self.current.get(&done.chapter) != Some(&done.ids) {
            return None;
        }
        let status = match done.result {
            Ok(check) => ChapterAcx::Checked(Box::new(check)),
            Err(why) => ChapterAcx::Failed(why),
        };
        Some(Msg::ChapterStatus { chapter: done.chapter, status: Some(status) })
    }
}
