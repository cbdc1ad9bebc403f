//! The workstation's side of the session: what the run loop does with the App's
//! [`Command`]s and the engine's takes. It owns the [`Session`] (the project), re-reads the
//! manuscript when it is saved, and answers with [`Msg`]s for the App.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc::Sender;

use anyhow::Context;

use super::app::{AUDITION_ID, AuditionChoice, Command, Msg, RowInit, TakeEntry};
use super::casting::{CastView, RowCasting};
use super::checks::ChapterChecks;
use crate::reading::ReadOptions;
use crate::review::{CastingOverride, Review, SegmentKey, TakeInfo, TakeStatus};
use crate::session::{SegmentView, Session, Work};
use lectern_engine::protocol::{Request, SegmentId, SegmentSpec, Take};
use lectern_text::{Manuscript, ParseOptions, Pronunciations, Tokenizer};

/// The session, the manuscript it was opened on and the tokenizer that reads it.
pub struct Desk {
    session: Session,
    manuscript: PathBuf,
    tokenizer: Arc<Tokenizer>,
    /// (key, content key) of every segment at the last sync: what a reload compares.
    synced: Vec<(SegmentKey, String)>,
    read: ReadOptions,
    /// Chapters' ACX checks, once all their takes are chosen.
    checks: ChapterChecks,
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
            checks: ChapterChecks::new(),
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

    /// The segment the narrator last listened to, as the App knows it (`None`: never
    /// recorded, or the project cannot say).
    pub fn listening_position(&self) -> Option<SegmentId> {
        let at = self.session.project().listening_position().ok().flatten()?;
        SegmentId::try_from(at).ok()
    }

    /// Keeps the segment the narrator listens to in the project; a failure goes to the log.
    pub fn set_listening_position(&mut self, segment: SegmentId) -> Option<Msg> {
        let stored = self.session.project_mut().set_listening_position(key(segment));
        stored.err().map(|e| Msg::Log(format!("listening position not kept: {e}")))
    }

    /// The session's voices and cast, for the voices panel and the voice picker.
    pub fn cast_view(&self) -> CastView {
        CastView::of(&self.session)
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
        // The cast file may have changed with it: its characters' voices, styles and paces.
        let mut cast = crate::cast::Cast::beside(&self.manuscript, "")?;
        cast.book_cross_lingual = self.session.cast().book_cross_lingual;
        self.session.set_cast(cast)?;
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
            Command::AuditionChoices(id) => (
                id,
                self.audition_choices(id)
                    .map(|choices| vec![Msg::AuditionChoices { segment: id, choices }]),
            ),
            Command::Audition { segment, text } => (segment, self.audition(&text, engine)),
            Command::Reseed(id) => (id, self.new_take(id, false, engine)),
            Command::Rerender(id) => (id, self.new_take(id, true, engine)),
            Command::Choose { segment, take } => {
                let chosen = self.session.choose(key(segment), take);
                let chapter: Vec<usize> = self.chapter_of(segment).into_iter().collect();
                (segment, chosen.map(|()| self.check_chapters(Some(&chapter))))
            }
            Command::SetReview { segment, review } => {
                (segment, self.session.set_review(key(segment), review).map(|()| Vec::new()))
            }
            Command::SetNote { segment, note } => {
                (segment, self.session.set_note(key(segment), &note).map(|()| Vec::new()))
            }
            Command::Recast { segment, over } => (segment, self.recast(segment, &over, engine)),
            Command::Load { segment, take } => (
                segment,
                self.session
                    .load_samples(take)
                    .map(|samples| vec![Msg::Loaded { segment, take, samples: Arc::new(samples) }]),
            ),
        };
        result.unwrap_or_else(|e| vec![Msg::Refused { segment, why: format!("{e:#}") }])
    }

    /// The words of a segment's source, each with its pronunciation entry where one matches.
    fn audition_choices(&self, id: SegmentId) -> anyhow::Result<Vec<AuditionChoice>> {
        let source = self
            .session
            .segments()
            .iter()
            .find(|s| s.key == key(id))
            .map(|s| s.source.clone())
            .context("the segment is no longer in the manuscript")?;
        Ok(audition_choices(&source, &Pronunciations::beside(&self.manuscript)?))
    }

    /// Asks the engine to speak `text` as the manuscript would read it (its pronunciations
    /// apply) in the current voice and settings, as [`AUDITION_ID`]: the run loop plays the
    /// take instead of saving it.
    fn audition(&self, text: &str, engine: &Sender<Request>) -> anyhow::Result<Vec<Msg>> {
        let prons = Pronunciations::beside(&self.manuscript)?;
        let opts = ParseOptions::default()
            .with_tokenizer(&self.tokenizer)
            .with_pronunciations(prons)
            .with_lead_sentence(false);
        let line = Manuscript::parse(text, &opts)?;
        let spoken = line.segments().map(|s| s.text.as_str()).collect::<Vec<_>>().join(" ");
        if spoken.is_empty() {
            anyhow::bail!("nothing to say in “{text}”");
        }
        let language = line.segments().find_map(|s| s.language.clone());
        let ids = self.tokenizer.encode(&spoken)?;
        let hash = lectern_text::stable_hash(spoken.as_bytes());
        let spec = SegmentSpec {
            id: AUDITION_ID,
            seed: crate::session::seed::segment_seed(self.session.base_seed(), hash, 0),
            text: spoken.clone(),
            group_break_after: true,
            content: self.session.basis().content(ids, language),
            casting: lectern_engine::protocol::Casting::default(),
        };
        // A queued audition would only change seed: drop it so the new text is spoken.
        engine.send(Request::Cancel(vec![AUDITION_ID])).context("the engine has stopped")?;
        engine.send(Request::Reseed(Box::new(spec))).context("the engine has stopped")?;
        Ok(vec![Msg::Log(format!("audition: “{text}” reads as “{spoken}”"))])
    }

    /// The narrator's casting of a segment: kept in the project, then the manuscript is
    /// planned again with it. When only that segment's content changed, its new take is
    /// rendered alone with its chosen take's seed (as `R` does); when the manuscript changed
    /// too, the whole plan is sent again (as a reload does).
    fn recast(
        &mut self,
        id: SegmentId,
        over: &CastingOverride,
        engine: &Sender<Request>,
    ) -> anyhow::Result<Vec<Msg>> {
        if self.session.project().review_of_key(key(id))? == Review::Approved {
            anyhow::bail!("approved (locked): un-approve it to change its voice or style");
        }
        self.session.set_casting_override(key(id), over)?;
        let book = crate::reading::load(&self.manuscript, &self.tokenizer, &self.read)?;
        self.session.sync_read(&book, &self.tokenizer, &self.read)?;
        let now = self.fingerprint();
        let changed: Vec<SegmentKey> =
            now.iter().filter(|e| !self.synced.contains(e)).map(|(k, _)| *k).collect();
        self.synced = now;
        let mut msgs = Vec::new();
        let queued = if changed.is_empty() {
            msgs.push(Msg::Log("recast: the same content as before: no new take".into()));
            Vec::new()
        } else if changed == [key(id)] {
            let spec = self.session.rerender_spec(key(id))?;
            let seed = spec.seed;
            engine.send(Request::Reseed(Box::new(spec))).context("the engine has stopped")?;
            msgs.push(Msg::Seeded { segment: id, seed });
            vec![id]
        } else {
            engine.send(Request::CancelAll).context("the engine has stopped")?;
            self.start_work(engine)?
        };
        msgs.insert(0, Msg::Replanned { rows: self.rows()?, queued });
        msgs.extend(self.check_chapters(None));
        Ok(msgs)
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
        engine.send(Request::Reseed(Box::new(spec))).context("the engine has stopped")?;
        Ok(vec![Msg::Seeded { segment: id, seed }])
    }

    /// Checks again the chapters whose chosen takes changed (all of them when `chapters` is
    /// `None`); returns the App's messages for those whose status changed.
    pub fn check_chapters(&mut self, chapters: Option<&[usize]>) -> Vec<Msg> {
        let all: Vec<usize> = {
            let mut c: Vec<usize> = self.session.segments().iter().map(|s| s.chapter).collect();
            c.dedup();
            c
        };
        let mut out = if chapters.is_none() { self.checks.keep_only(&all) } else { Vec::new() };
        for chapter in all.into_iter().filter(|c| chapters.is_none_or(|w| w.contains(c))) {
            let takes = self.chosen_takes_of(chapter).unwrap_or(None);
            out.extend(self.checks.update(chapter, takes));
        }
        out
    }

    /// A chapter's chosen takes with the pause after each, if every segment has a usable one.
    fn chosen_takes_of(&self, chapter: usize) -> anyhow::Result<Option<Vec<(TakeInfo, u64)>>> {
        let mut out = Vec::new();
        for s in self.session.segments().iter().filter(|s| s.chapter == chapter) {
            match self.session.project().chosen_of_key(s.key)? {
                Some(t) if t.status == TakeStatus::Ok && t.content_key == s.content.key() => {
                    let pause = crate::audio::master::ms_to_samples(s.pause_after_ms) as u64;
                    out.push((t, pause));
                }
                _ => return Ok(None),
            }
        }
        Ok(Some(out))
    }

    /// Finished chapter checks, as the App's messages.
    pub fn poll_checks(&mut self) -> Vec<Msg> {
        self.checks.poll()
    }

    /// Waits for the next finished chapter check (tests).
    pub fn wait_checks(&mut self) -> Vec<Msg> {
        self.checks.wait()
    }

    fn chapter_of(&self, segment: SegmentId) -> Option<usize> {
        self.session.segments().iter().find(|s| s.key == key(segment)).map(|s| s.chapter)
    }

    /// A take from the engine: the session saves it (with its whole group); the App hears of
    /// each saved take, then of the chapters it completes.
    pub fn accept(&mut self, take: Take) -> Vec<Msg> {
        let mut msgs = self.save(take);
        let chapters: Vec<usize> = msgs
            .iter()
            .filter_map(|m| match m {
                Msg::Saved { segment, .. } => self.chapter_of(*segment),
                _ => None,
            })
            .collect();
        if !chapters.is_empty() {
            msgs.extend(self.check_chapters(Some(&chapters)));
        }
        msgs
    }

    fn save(&mut self, take: Take) -> Vec<Msg> {
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
                        figures: s.figures,
                    }),
                    restored: s.restored,
                })
                .collect(),
            Err(e) => vec![Msg::Refused { segment, why: format!("take not saved: {e:#}") }],
        }
    }
}

/// The audition picker's choices for a segment's source text: its words in order, each once;
/// where a pronunciation entry matches at a word (a multi-word key too), the entry instead.
#[must_use]
pub fn audition_choices(source: &str, prons: &Pronunciations) -> Vec<AuditionChoice> {
    let mut out: Vec<AuditionChoice> = Vec::new();
    let mut at = 0;
    while at < source.len() {
        let rest = &source[at..];
        let Some(c) = rest.chars().next() else { break };
        if !c.is_alphanumeric() {
            at += c.len_utf8();
            continue;
        }
        let choice = match prons.lookup_at(rest, true) {
            Some((len, spoken)) => AuditionChoice {
                label: format!("{} → {spoken}", &rest[..len]),
                text: rest[..len].into(),
            },
            None => {
                let word = &rest[..word_len(rest)];
                AuditionChoice { label: word.into(), text: word.into() }
            }
        };
        at += choice.text.len().max(c.len_utf8());
        if !out.iter().any(|o| o.text == choice.text) {
            out.push(choice);
        }
    }
    out
}

/// The length of the word at the start of `s`: letters and digits, joined by an apostrophe or
/// hyphen between letters (`don't`, `well-known`) or a point, comma or colon between digits
/// (`3.50`, `10,000`, `6:30`), as the normaliser reads them.
fn word_len(s: &str) -> usize {
    let chars: Vec<(usize, char)> = s.char_indices().collect();
    let mut end = 0;
    for (k, &(i, c)) in chars.iter().enumerate() {
        let prev = k.checked_sub(1).map(|p| chars[p].1);
        let next = chars.get(k + 1).map(|n| n.1);
        let joins =
            |f: fn(&char) -> bool| prev.is_some_and(|p| f(&p)) && next.is_some_and(|n| f(&n));
        let inside = match c {
            '\'' | '’' | '-' => joins(|c| c.is_alphabetic()),
            '.' | ',' | ':' => joins(|c| c.is_ascii_digit()),
            _ => c.is_alphanumeric(),
        };
        if !inside {
            break;
        }
        end = i + c.len_utf8();
    }
    end
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
            figures: t.figures.clone(),
        })
        .collect();
    let cast = RowCasting::of(&v.planned);
    RowInit {
        id: v.planned.key as SegmentId,
        chapter: v.planned.chapter,
        text: v.planned.text,
        source: v.planned.source,
        pause_after_ms: v.planned.pause_after_ms,
        default_seed: v.planned.default_seed,
        takes,
        chosen,
        review: v.review,
        edited_since_approval: v.edited_since_approval,
        note: v.note,
        cast,
    }
}
