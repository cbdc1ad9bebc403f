//! The session pipeline both faces of Lectern drive — `render` and the workstation: manuscript
//! → project sync → the engine's work (renders and regenerations) → takes saved the moment a
//! flow group is complete → the narrator's choices.
//!
//! The project directory is the single source of truth. With `--no-project` the session keeps
//! a scratch project in a temporary directory (removed when it ends), so there is one code path.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

use super::content::{ContentBasis, voice_hash};
use super::plan::{PlannedSegment, render_specs};
use super::seed;
use crate::cast::Cast;
use crate::quality::{QualityProbe, TakeFigures};
use crate::reading::ReadOptions;
use crate::review::{CastingOverride, Review, SegmentKey, TakeInfo, TakeStatus};
use crate::store::BookRecord;
use crate::store::{OpenReport, Project, ProofedSegment, Sources, StoreError, StoredSegment};
use lectern_engine::protocol::{SegmentSpec, Take, TakeId, TakeRecord, TakeSettings};
use lectern_text::{Manuscript, Tokenizer};
use lectern_voice::Voice;

/// Where a session keeps its takes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ProjectChoice {
    /// The project next to the manuscript (`book.txt` → `book.lectern/`).
    #[default]
    NextToManuscript,
    /// `--project DIR`.
    Dir(PathBuf),
    /// `--no-project`: a scratch project, removed when the session ends.
    Off,
}

impl ProjectChoice {
    /// The project directory for `manuscript` (`None` for a scratch session).
    #[must_use]
    pub fn dir(&self, manuscript: &Path) -> Option<PathBuf> {
        match self {
            Self::NextToManuscript => Some(Project::dir_for_manuscript(manuscript)),
            Self::Dir(d) => Some(d.clone()),
            Self::Off => None,
        }
    }
}

/// The engine's work to bring the project up to date, in the order to request it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Work {
    /// Chosen takes whose file is gone or damaged, regenerated bit for bit from their records.
    pub regenerate: Vec<TakeRecord>,
    /// Segments without a usable current take, in manuscript order, grouped by the plan.
    pub render: Vec<SegmentSpec>,
}

impl Work {
    pub fn is_empty(&self) -> bool {
        self.regenerate.is_empty() && self.render.is_empty()
    }

    /// Segments the work will give a take.
    pub fn len(&self) -> usize {
        self.regenerate.len() + self.render.len()
    }
}

/// A take the session has saved (or restored) in the project.
#[derive(Debug, Clone)]
pub struct SavedTake {
    pub key: SegmentKey,
    /// The store's id of the take.
    pub id: TakeId,
    pub take: Take,
    /// A regeneration that restored an existing take's file (no new take).
    pub restored: bool,
    /// Its quality figures (None when the session does not measure).
    pub figures: Option<TakeFigures>,
}

/// A segment with everything the workstation shows of it.
#[derive(Debug, Clone)]
pub struct SegmentView {
    pub planned: PlannedSegment,
    pub review: Review,
    /// Approved, then its text changed in the manuscript: its review reads as a pickup, and
    /// it needs listening again (the list shows "edited since approval").
    pub edited_since_approval: bool,
    pub note: String,
    /// Its takes, oldest first (stale ones included: the history stays).
    pub takes: Vec<TakeInfo>,
    /// The store id of the chosen take.
    pub chosen: Option<TakeId>,
}

impl SegmentView {
    /// Whether a take was made for the segment's current content.
    #[must_use]
    pub fn is_current(&self, take: &TakeInfo) -> bool {
        take.content_key == self.planned.content.key()
    }
}

/// A voice of the cast, loaded.
#[derive(Debug, Clone)]
struct CastVoice {
    /// As the cast or the manuscript names it (a name or a directory).
    written: String,
    voice: Voice,
    /// Its content hash ([`voice_hash`]).
    hash: String,
}

/// What a sync learns of a segment besides what the store keeps.
struct SyncedSegment {
    content: lectern_engine::protocol::TakeContent,
    chapter: usize,
    ends_paragraph: bool,
    source: String,
    casting: lectern_engine::protocol::Casting,
    character: Option<String>,
    recast: CastingOverride,
    /// How many earlier segments have the same text (the store keys segments by hash and
    /// occurrence; default seeds derive from both).
    occurrence: u32,
}

/// One open session. Holds the project's lock until dropped.
pub struct Session {
    project: Project,
    /// The scratch directory of `--no-project` (removed on drop, after the project closes).
    scratch: Option<tempfile::TempDir>,
    basis: ContentBasis,
    /// The model and voice directories, recorded in the project at each sync.
    sources: Sources,
    voice_name: String,
    /// Who speaks what: `cast.toml` and the book's voice.
    cast: Cast,
    /// The voices the manuscript uses, the book's first: (name as written in the cast or the
    /// manuscript, the voice, its content hash).
    voices: Vec<CastVoice>,
    base_seed: u64,
    segments: Vec<PlannedSegment>,
    /// Takes of a flow group not yet complete (a group is saved all or nothing).
    group: Vec<Take>,
    /// Regenerations asked for: segment key → the take whose file they restore.
    regens: HashMap<SegmentKey, TakeId>,
    /// Measures each saved take's quality figures (None: takes are saved unmeasured).
    probe: Option<QualityProbe>,
    /// Segments the last sync marked for a pickup: approved, now read differently.
    reading_changed: usize,
    /// The narrator's work on segments the last sync removed, and where it went.
    carried: Vec<crate::store::CarriedWork>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session").field("project", &self.project.dir()).finish_non_exhaustive()
    }
}

impl Session {
    /// Opens (or creates) the project and hashes the voice and the model.
    pub fn open(
        choice: &ProjectChoice,
        manuscript: &Path,
        voice: &Voice,
        model_dir: &Path,
        base_seed: u64,
    ) -> anyhow::Result<Self> {
        let (dir, scratch) = match choice.dir(manuscript) {
            None => {
                let tmp = tempfile::Builder::new()
                    .prefix("lectern-scratch-")
                    .tempdir()
                    .context("creating a scratch project")?;
                (tmp.path().join("scratch.lectern"), Some(tmp))
            }
            Some(dir) => (dir, None),
        };
        let mut project = Project::open(&dir)
            .with_context(|| format!("opening the project {}", dir.display()))?;
        let basis = ContentBasis::compute(voice, model_dir, &mut project)?;
        let voice_hash = basis.voice_hash.clone();
        let absolute = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        let sources = Sources {
            model_dir: absolute(model_dir),
            voice_dir: absolute(&voice.dir),
            cross_lingual: false,
        };
        Ok(Self {
            project,
            scratch,
            basis,
            sources,
            voice_name: voice.manifest.name.clone(),
            cast: Cast::solo(&voice.manifest.name),
            voices: vec![CastVoice {
                written: voice.manifest.name.clone(),
                voice: voice.clone(),
                hash: voice_hash.clone(),
            }],
            base_seed,
            reading_changed: 0,
            carried: Vec::new(),
            segments: Vec::new(),
            group: Vec::new(),
            regens: HashMap::new(),
            probe: None,
        })
    }

    /// Casts the book with `cast` (its book voice is this session's voice) and loads the
    /// voices of its characters, so the engine holds every voice the cast can give a segment.
    /// The next sync resolves each segment's voice, mode and pace through it; a voice only the
    /// manuscript names (`[voice:…]`) is loaded there.
    pub fn set_cast(&mut self, mut cast: Cast) -> anyhow::Result<()> {
        cast.book_voice.clone_from(&self.voice_name);
        self.sources.cross_lingual = cast.book_cross_lingual;
        for (name, character) in &cast.file.characters {
            self.cast_voice(&character.voice).with_context(|| {
                let file = cast.path.as_deref().unwrap_or(Path::new(crate::cast::CAST_FILE));
                format!("{}: character `{name}`", file.display())
            })?;
        }
        self.cast = cast;
        Ok(())
    }

    /// The cast.
    pub fn cast(&self) -> &Cast {
        &self.cast
    }

    /// The voices the manuscript uses, the book's first.
    pub fn voices(&self) -> Vec<&Voice> {
        self.voices.iter().map(|v| &v.voice).collect()
    }

    /// The voices the manuscript uses, the book's first, each with the name the cast or the
    /// manuscript wrote for it (a name or a directory).
    pub fn written_voices(&self) -> Vec<(&str, &Voice)> {
        self.voices.iter().map(|v| (v.written.as_str(), &v.voice)).collect()
    }

    /// The voice a cast or manuscript names, loaded (and hashed) on first use.
    fn cast_voice(&mut self, written: &str) -> anyhow::Result<&CastVoice> {
        let known = self
            .voices
            .iter()
            .position(|v| v.written == written || v.voice.manifest.name == written);
        let at = match known {
            Some(at) => at,
            None => {
                let voice = crate::voices::load(written)
                    .with_context(|| format!("unknown voice `{written}`"))?;
                if let Some(other) =
                    self.voices.iter().find(|v| v.voice.manifest.name == voice.manifest.name)
                {
                    bail!(
                        "voices `{written}` and `{}` are both named `{}`: the engine keys voices by name",
                        other.written,
                        voice.manifest.name
                    );
                }
                let hash = voice_hash(&voice)?;
                if let Some(probe) = &mut self.probe {
                    probe.add_voice(&voice)?;
                }
                self.voices.push(CastVoice { written: written.to_string(), voice, hash });
                self.voices.len() - 1
            }
        };
        Ok(&self.voices[at])
    }

    /// An override as the cast resolves it: its voice (a manifest name) as the cast or the
    /// manuscript wrote it, so that voice's defaults in `cast.toml` apply.
    fn as_written(&self, over: &CastingOverride) -> CastingOverride {
        let voice = over.voice.as_ref().map(|name| {
            self.voices
                .iter()
                .find(|v| v.voice.manifest.name == *name)
                .map_or_else(|| name.clone(), |v| v.written.clone())
        });
        CastingOverride { voice, style: over.style.clone() }
    }

    /// Records the narrator's casting of a segment (its voice, one of [`Self::voices`], and
    /// its instruction) in the project; an empty override gives the segment back to the
    /// manuscript and the cast. The next sync plans the segment with it: its current takes
    /// become stale, and the take it needs is made with the new casting.
    pub fn set_casting_override(
        &mut self,
        key: SegmentKey,
        over: &CastingOverride,
    ) -> anyhow::Result<()> {
        let mut over = over.clone();
        over.style = over.style.map(|s| s.trim().to_string()).filter(|s| !s.is_empty());
        if let Some(name) = &over.voice
            && !self.voices.iter().any(|v| v.voice.manifest.name == *name)
        {
            let known: Vec<&str> =
                self.voices.iter().map(|v| v.voice.manifest.name.as_str()).collect();
            bail!("`{name}` is not a voice of this session ({})", known.join(", "));
        }
        self.planned(key)?;
        Ok(self.project.set_casting_override(key, &over)?)
    }

    /// Measures every take saved from now on with `probe` (given the session's voices) and
    /// stores its figures with it.
    pub fn measure_with(&mut self, mut probe: QualityProbe) -> anyhow::Result<()> {
        for v in &self.voices {
            probe.add_voice(&v.voice)?;
        }
        self.probe = Some(probe);
        Ok(())
    }

    /// A take's stored quality figures; a take without them (saved by an older Lectern, or
    /// before the session measured) is measured now and its figures stored.
    pub fn figures_of(&mut self, id: TakeId) -> anyhow::Result<TakeFigures> {
        let info = self.project.take(id)?;
        if let Some(f) = info.figures {
            return Ok(f);
        }
        let samples = self.load_samples(id)?;
        self.store_figures(id, &info.record, &samples)?
            .with_context(|| format!("take {id} has no quality figures and nothing measures them"))
    }

    /// Measures a take and stores its figures, when the session has a probe.
    fn store_figures(
        &mut self,
        id: TakeId,
        record: &TakeRecord,
        samples: &[f32],
    ) -> anyhow::Result<Option<TakeFigures>> {
        let Some(probe) = &self.probe else { return Ok(None) };
        let figures = probe
            .measure(&record.text, samples, &record.voice_id)
            .with_context(|| format!("measuring take {id}"))?;
        self.project.set_take_figures(id, &figures)?;
        Ok(Some(figures))
    }

    /// The project directory (`None` for a scratch session).
    pub fn project_dir(&self) -> Option<&Path> {
        self.scratch.is_none().then(|| self.project.dir())
    }

    pub fn project(&self) -> &Project {
        &self.project
    }

    /// The project, for what the session does not wrap (tests inject store failures here).
    pub fn project_mut(&mut self) -> &mut Project {
        &mut self.project
    }

    /// What the project's opening check found (missing files, orphans quarantined).
    pub fn open_report(&self) -> &OpenReport {
        self.project.open_report()
    }

    pub fn basis(&self) -> &ContentBasis {
        &self.basis
    }

    /// The manuscript's segments as last synced, in order.
    /// The base of every segment's default seed ([`seed::segment_seed`]).
    pub fn base_seed(&self) -> u64 {
        self.base_seed
    }

    pub fn segments(&self) -> &[PlannedSegment] {
        &self.segments
    }

    /// [`Self::sync_read`] of a manuscript read with the default options.
    pub fn sync(&mut self, book: &Manuscript, tokenizer: &Tokenizer) -> anyhow::Result<()> {
        self.sync_read(book, tokenizer, &ReadOptions::default())
    }

    /// Records the manuscript in the project: segments keyed by content, each with its
    /// current content key and default seed, and the book's metadata, chapter titles and the
    /// options it was read with (for export). Takes are never deleted.
    pub fn sync_read(
        &mut self,
        book: &Manuscript,
        tokenizer: &Tokenizer,
        read: &ReadOptions,
    ) -> anyhow::Result<()> {
        let mut stored = Vec::new();
        let mut contents = Vec::new();
        let path = book.path.clone().unwrap_or_else(|| PathBuf::from("<manuscript>"));
        let overrides: HashMap<(u64, u32), CastingOverride> = self
            .project
            .casting_overrides()?
            .into_iter()
            .map(|(hash, dup, over)| ((hash, dup), over))
            .collect();
        let mut occurrences: HashMap<u64, u32> = HashMap::new();
        for (chapter, ch) in book.chapters.iter().enumerate() {
            for s in &ch.segments {
                let ids = tokenizer.encode(&s.text).with_context(|| {
                    format!("segment {} (line {})", s.id + 1, s.span.start.line)
                })?;
                // The store keys a segment by (hash, occurrence): find its override the same way.
                let n = occurrences.entry(s.hash).or_insert(0);
                let occurrence = *n;
                *n += 1;
                let recast = overrides.get(&(s.hash, occurrence)).cloned().unwrap_or_default();
                let role = self.cast.resolve_as(s, &path, &self.as_written(&recast))?;
                let voice = self.cast_voice(&role.voice).with_context(|| {
                    let at = format!("{}:{}", path.display(), s.span.start.line);
                    match &recast.voice {
                        Some(v) => format!(
                            "{at}: the voice `{v}` was chosen for this segment in the workstation \
                             and is neither in the cast nor installed: put it back in {} or add \
                             it with `lectern voice add`",
                            crate::cast::CAST_FILE
                        ),
                        None => at,
                    }
                })?;
                let casting = role.casting(&voice.voice.manifest.name);
                let hash = voice.hash.clone();
                let content = self.basis.cast_content(ids, s.language.clone(), &hash, &casting);
                let character = s.voicing.character.clone();
                stored.push(StoredSegment {
                    id: s.id as u64,
                    chapter: chapter as u32,
                    ordinal: s.id as u32,
                    text: s.text.clone(),
                    span: (s.span.start.line as u32, s.span.start.column as u32),
                    hash: s.hash,
                    pause_after_ms: s.pause_after_ms,
                    content_key: content.key(),
                });
                contents.push(SyncedSegment {
                    content,
                    chapter,
                    ends_paragraph: s.ends_paragraph,
                    source: s.source.clone(),
                    casting,
                    character,
                    recast,
                    occurrence,
                });
            }
        }
        let diff = self.project.sync_manuscript(&stored).context("recording the manuscript")?;
        self.reading_changed = diff.reading_changed.len();
        self.carried = diff.carried;
        self.project.set_lead_in_ms(book.lead_in_ms)?;
        self.project.set_sources(&self.sources)?;
        self.project.set_book(BookRecord {
            info: book.info.clone(),
            chapter_titles: book.chapters.iter().map(|c| c.title.clone()).collect(),
            chapter_marks: book.chapters.iter().map(sub_chapters).collect(),
            cover_file: None,
            read: read.clone(),
        })?;
        let proofed = self.project.proofed_segments()?;
        if proofed.len() != stored.len() {
            bail!(
                "the project holds {} segments after sync, expected {}",
                proofed.len(),
                stored.len()
            );
        }
        self.segments = proofed
            .into_iter()
            .zip(contents)
            .map(|(p, synced)| {
                let default_seed =
                    seed::segment_seed(self.base_seed, p.segment.hash, synced.occurrence);
                PlannedSegment {
                    key: p.key,
                    position: p.segment.id as usize,
                    chapter: synced.chapter,
                    text: p.segment.text,
                    source: synced.source,
                    span: (p.segment.span.0 as usize, p.segment.span.1 as usize),
                    pause_after_ms: p.segment.pause_after_ms,
                    ends_paragraph: synced.ends_paragraph,
                    default_seed,
                    content: synced.content,
                    casting: synced.casting,
                    character: synced.character,
                    recast: synced.recast,
                }
            })
            .collect();
        Ok(())
    }

    /// The manuscript's lead-in, milliseconds.
    pub fn lead_in_ms(&self) -> anyhow::Result<u32> {
        Ok(self.project.lead_in_ms()?)
    }

    /// What the engine must do so every segment has a usable current chosen take: regenerate
    /// lost files of current chosen takes from their records, render the rest. Remembers the
    /// regenerations, so [`Self::accept`] restores their files.
    pub fn work(&mut self) -> anyhow::Result<Work> {
        let mut work = Work::default();
        let mut render = HashSet::new();
        for s in &self.segments {
            let chosen = self.project.chosen_of_key(s.key)?;
            match chosen {
                Some(t) if t.content_key == s.content.key() && t.status == TakeStatus::Ok => {}
                Some(t) if t.content_key == s.content.key() && self.can_regenerate(&t, s.key) => {
                    self.regens.insert(s.key, t.id);
                    work.regenerate.push(t.record);
                }
                _ => {
                    render.insert(s.key);
                }
            }
        }
        work.render = render_specs(&self.segments, &render);
        Ok(work)
    }

    /// A lost take can be regenerated when its record holds its group's tokens, was made for
    /// this segment (its engine id is the segment's key) and with one of this session's voices
    /// (the engine refuses others).
    fn can_regenerate(&self, take: &TakeInfo, key: SegmentKey) -> bool {
        let r = &take.record;
        let held = self.voices.iter().any(|v| v.voice.manifest.name == r.voice_id);
        !r.group.tokens.is_empty() && held && r.segment_id == key as u64
    }

    /// Takes a finished take from the engine. A regeneration restores its take's file; a
    /// rendered take waits until its whole flow group has arrived, which is then saved in one
    /// transaction. Returns what was saved (empty while a group is incomplete).
    pub fn accept(&mut self, take: Take) -> anyhow::Result<Vec<SavedTake>> {
        let key = take.record.segment_id as SegmentKey;
        if let Some(id) = self.regens.remove(&key) {
            match self.project.restore_take_file(id, &take.samples) {
                Ok(()) => {
                    let figures = self.project.take(id)?.figures;
                    return Ok(vec![SavedTake { key, id, take, restored: true, figures }]);
                }
                // Not the recorded audio (another backend, say): keep it as a take of its own.
                Err(StoreError::HashMismatch { .. }) => {
                    let id = self.project.save_group(&[(key, &take)])?[0];
                    let figures = self.store_figures(id, &take.record, &take.samples)?;
                    return Ok(vec![SavedTake { key, id, take, restored: false, figures }]);
                }
                Err(e) => return Err(e.into()),
            }
        }
        if let Some(first) = self.group.first()
            && first.record.group.segment_ids != take.record.group.segment_ids
        {
            bail!(
                "take of segment {key} arrived before its group's other takes (group {:?})",
                first.record.group.segment_ids
            );
        }
        let size = takes_expected(&take.record.group);
        self.group.push(take);
        if self.group.len() < size {
            return Ok(Vec::new());
        }
        let group = std::mem::take(&mut self.group);
        let keyed: Vec<(SegmentKey, &Take)> =
            group.iter().map(|t| (t.record.segment_id as SegmentKey, t)).collect();
        let ids = self.project.save_group(&keyed).with_context(|| {
            format!("saving the takes of segments {:?}", group[0].record.group.segment_ids)
        })?;
        let mut saved = Vec::with_capacity(group.len());
        for (take, id) in group.into_iter().zip(ids) {
            let figures = self.store_figures(id, &take.record, &take.samples)?;
            let key = take.record.segment_id as SegmentKey;
            saved.push(SavedTake { key, id, take, restored: false, figures });
        }
        Ok(saved)
    }

    /// The segments with their takes, choices and proofing state, in manuscript order.
    pub fn views(&self) -> anyhow::Result<Vec<SegmentView>> {
        let proofed: HashMap<SegmentKey, ProofedSegment> =
            self.project.proofed_segments()?.into_iter().map(|p| (p.key, p)).collect();
        let edited = self.edited_since_approval()?;
        let mut out = Vec::with_capacity(self.segments.len());
        for s in &self.segments {
            let p = proofed.get(&s.key);
            out.push(SegmentView {
                planned: s.clone(),
                review: p.map_or(Review::Unheard, |p| p.review),
                edited_since_approval: edited.contains(&s.key),
                note: p.map(|p| p.note.clone()).unwrap_or_default(),
                takes: self.project.takes_of_key(s.key)?,
                chosen: self.project.chosen_of_key(s.key)?.map(|t| t.id),
            });
        }
        Ok(out)
    }

    /// The next re-seed's spec of a segment: a new seed derived from its default seed and the
    /// number of takes it has.
    pub fn reseed_spec(&self, key: SegmentKey) -> anyhow::Result<SegmentSpec> {
        let s = self.planned(key)?;
        let takes = self.project.takes_of_key(key)?;
        let taken: Vec<u64> = takes.iter().map(|t| t.record.seed).collect();
        let mut spec = s.spec();
        spec.seed = seed::reseed(s.default_seed, takes.len().max(1) as u32, &taken);
        Ok(spec.with_group_break())
    }

    /// The spec that renders a segment again with the seed of its chosen take (new settings
    /// apply), as a group of its own.
    pub fn rerender_spec(&self, key: SegmentKey) -> anyhow::Result<SegmentSpec> {
        let s = self.planned(key)?;
        let mut spec = s.spec();
        if let Some(t) = self.project.chosen_of_key(key)? {
            spec.seed = t.record.seed;
        }
        Ok(spec.with_group_break())
    }

    fn planned(&self, key: SegmentKey) -> anyhow::Result<&PlannedSegment> {
        self.segments
            .iter()
            .find(|s| s.key == key)
            .with_context(|| format!("segment {key} is not in the manuscript"))
    }

    /// Makes a take the segment's chosen take (refused while the segment is approved).
    pub fn choose(&mut self, key: SegmentKey, take: TakeId) -> anyhow::Result<()> {
        Ok(self.project.choose_for_key(key, take)?)
    }

    pub fn set_review(&mut self, key: SegmentKey, review: Review) -> anyhow::Result<()> {
        Ok(self.project.set_review(key, review)?)
    }

    pub fn set_note(&mut self, key: SegmentKey, note: &str) -> anyhow::Result<()> {
        Ok(self.project.set_note(key, note)?)
    }

    /// A take's samples, checked against its audio hash. A damaged or vanished file is moved
    /// to quarantine and the take marked missing (the next [`Self::work`] regenerates or
    /// re-renders it); the error says so.
    pub fn load_samples(&mut self, id: TakeId) -> anyhow::Result<Vec<f32>> {
        match self.project.load_samples(id) {
            Ok(s) => Ok(s),
            Err(e @ (StoreError::HashMismatch { .. } | StoreError::TakeFileMissing { .. })) => {
                let to = self.project.quarantine_take(id)?;
                bail!(
                    "{e}; moved to {} and marked missing: it will be rendered again",
                    to.display()
                )
            }
            Err(e) => Err(e.into()),
        }
    }

    /// How many approved segments the last sync found read differently (marked for a pickup,
    /// with the approved reading in their note).
    pub fn reading_changed(&self) -> usize {
        self.reading_changed
    }

    /// The narrator's work (review state, note, pickup flag) on each segment the last sync
    /// removed, and the segments it moved to.
    pub fn carried(&self) -> &[crate::store::CarriedWork] {
        &self.carried
    }

    /// The log's line on the work the last sync moved ("1 segment edited since approval; 2
    /// notes carried"); `None` when it moved nothing.
    pub fn carry_summary(&self) -> Option<String> {
        super::worklog::summary(&self.carried, self.reading_changed)
    }

    /// A line for each removed segment whose note or state no segment received (it stays with
    /// the removed text): nothing the narrator wrote goes without a word.
    pub fn left_behind(&self) -> Vec<String> {
        super::worklog::left_behind(&self.carried)
    }

    /// The keys of the segments that are "edited since approval": approved, then their text
    /// changed in the manuscript (they read as [`Review::Pickup`] and need listening).
    pub fn edited_since_approval(&self) -> anyhow::Result<HashSet<SegmentKey>> {
        let keys = crate::store::db::edited_since_approval(self.project.connection())
            .map_err(|e| self.project.sql_err(e))?;
        Ok(keys.into_iter().collect())
    }

    /// Current chosen takes made with settings other than `current`, in manuscript order,
    /// with whether each is approved (approved takes are never replaced automatically).
    pub fn other_settings(
        &self,
        current: &TakeSettings,
    ) -> anyhow::Result<Vec<(SegmentKey, bool)>> {
        let mut out = Vec::new();
        for s in &self.segments {
            let Some(t) = self.project.chosen_of_key(s.key)? else { continue };
            if t.status == TakeStatus::Ok
                && t.content_key == s.content.key()
                && t.record.settings() != *current
            {
                out.push((s.key, self.project.review_of_key(s.key)? == Review::Approved));
            }
        }
        Ok(out)
    }
}

/// How many takes a flow group yields: one per member with speech tokens (the engine fails a
/// member whose take came out empty instead of sending it).
fn takes_expected(group: &lectern_engine::protocol::GroupInfo) -> usize {
    let n = if group.token_counts.len() == group.segment_ids.len() {
        group.token_counts.iter().filter(|&&n| n > 0).count()
    } else {
        group.segment_ids.len()
    };
    n.max(1)
}

/// A chapter's marks as the book record keeps them: each at its segment's index in the chapter.
fn sub_chapters(chapter: &lectern_text::Chapter) -> Vec<crate::store::SubChapter> {
    let first = chapter.segments.first().map_or(0, |s| s.id);
    chapter
        .marks
        .iter()
        .map(|m| crate::store::SubChapter {
            title: m.title.clone(),
            depth: m.depth,
            segment: m.segment.saturating_sub(first),
        })
        .collect()
}
