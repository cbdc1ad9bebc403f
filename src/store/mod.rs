//! The project store: one directory per manuscript holding an SQLite database (manuscript
//! versions, segments, takes, chosen takes, settings) and the takes' WAV files, plus export.
//!
//! Layout of a project directory (`book.txt` → `book.lectern/` by default):
//! - `project.db` (+ `-wal`, `-shm`): SQLite in WAL mode, schema versioned by `user_version`;
//! - `takes/*.wav`: one 24 kHz mono 32-bit float WAV per take, written atomically
//!   (temp file, fsync, rename, fsync dir) *before* its row is committed;
//! - `takes/orphans/`: complete WAVs found without a row at open (a save killed between the
//!   rename and the commit), kept for inspection rather than deleted;
//! - `takes/quarantine/`: damaged take files (the wrong size at open, the wrong audio hash in
//!   [`check`] or when read), their takes marked missing and made again by the next render;
//! - `project.db.rebuilding`: a `--rebuild` under way ([`rebuild`]), finished by the next open;
//! - housekeeping of all that is left behind: [`clean`];
//! - `lectern.lock`: an advisory lock so only one process opens the project at a time.
//!
//! Segments are keyed by content: `(hash, dup)`, where `dup` counts earlier segments of the
//! manuscript with the same hash. Takes hang off that key, so editing one sentence keeps the
//! takes of every other one, and reverting an edit brings its old takes back.
//!
//! The store's take ids are its own database row ids ([`TakeId`]); the engine's run-local take
//! id is kept alongside as `engine_take_id`.

pub mod carry;
pub mod check;
pub mod clean;
pub mod db;
pub mod export;
pub mod import;
pub mod rebuild;
pub mod record;
pub mod takes;

use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};

use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};

use lectern_engine::protocol::{RenderParams, SegmentId, Take, TakeId};

// The proofing values the store keeps; callers name them from `crate::review`, one path.
use crate::review::{CastingOverride, Review, SegmentKey, TakeInfo, TakeStatus};

/// Sample rate of every take and export, Hz.
pub use lectern_model::config::SAMPLE_RATE_HZ;
/// Samples per millisecond at [`SAMPLE_RATE_HZ`] (pauses are whole milliseconds).
pub const SAMPLES_PER_MS: u64 = SAMPLE_RATE_HZ as u64 / 1000;
/// Database file name inside a project directory.
pub const DB_FILE: &str = "project.db";
/// Take files' directory inside a project directory.
pub const TAKES_DIR: &str = "takes";
/// Where complete take files without a database row are moved at open.
pub const ORPHANS_DIR: &str = "orphans";
/// Where damaged take files are moved (their takes are marked missing and rendered again).
pub const QUARANTINE_DIR: &str = "quarantine";
/// Advisory lock file.
pub const LOCK_FILE: &str = "lectern.lock";

/// Errors of the store. Each names what failed and what was (not) touched.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(
        "project database {pathd} has schema v{found}, newer than this Lectern reads \
         (v{supported}); upgrade Lectern. The file was not modified"
    , pathd = .path.display())]
    NewerSchema { path: PathBuf, found: i64, supported: i64 },
    #[error(
        "project database {pathd} is corrupt or not a Lectern database ({detail}); nothing was \
         modified and the take files are untouched. Restore the database from a backup"
    , pathd = .path.display())]
    Corrupt { path: PathBuf, detail: String },
    #[error("project directory {pathd} is read-only ({detail}); Lectern needs write access to it", pathd = .path.display())]
    ReadOnly { path: PathBuf, detail: String },
    #[error(
        "no space left on the device holding {pathd}; the take was not saved, takes saved \
         before are intact"
    , pathd = .path.display())]
    DiskFull { path: PathBuf },
    #[error("project {pathd} is open in another Lectern process", pathd = .path.display())]
    Locked { path: PathBuf },
    #[error(
        "project database {pathd} is missing or empty, but {take_files} take file(s) are beside \
         it: the database was lost (it holds the takes' records, choices and notes), so the \
         project is not opened as a new one. Restore {pathd} from a backup; or run again with \
         --rebuild to re-attach the takes from the records their files carry (choices of \
         another take, review states and notes are not in the files); or, to start afresh, \
         move the project's `takes` folder aside. Nothing was modified"
    , pathd = .path.display())]
    LostDatabase { path: PathBuf, take_files: usize },
    // `cause`, not `source`: the message shows it (see `text::TextError::Io`).
    #[error("{context} {pathd}: {cause}", pathd = .path.display())]
    Io { context: &'static str, path: PathBuf, cause: io::Error },
    #[error("project database: {0}")]
    Db(rusqlite::Error),
    #[error("no segment with id {0} in the current manuscript")]
    UnknownSegment(SegmentId),
    #[error("no take with id {0}")]
    UnknownTake(TakeId),
    #[error("take {take} is not a take of segment {segment}")]
    TakeMismatch { take: TakeId, segment: SegmentId },
    #[error("take {take}'s file {pathd} is missing or damaged", pathd = .path.display())]
    TakeFileMissing { take: TakeId, path: PathBuf },
    #[error("take {take}'s file {pathd} does not match its recorded audio hash", pathd = .path.display())]
    HashMismatch { take: TakeId, path: PathBuf },
    #[error(
        "the take of \"{shown}\" (take {take}) is damaged: its file {pathd} no longer holds the \
         audio it was saved with; {moved}. Run `lectern render` on the manuscript to regenerate \
         it from its record (the same audio), then export again",
        shown = shorten(.text), pathd = .path.display(),
        moved = match .quarantined {
            Some(to) => format!("it was moved to {} and its take will be made again", to.display()),
            None => "its take will be made again".to_string(),
        }
    )]
    DamagedTake { take: TakeId, text: String, path: PathBuf, quarantined: Option<PathBuf> },
    #[error(
        "{count} segment(s) have no take yet ({list}); render them first (`lectern render`)",
        list = SegmentRef::list(.first, .count)
    )]
    MissingTakes { count: usize, first: Vec<SegmentRef> },
    #[error(
        "{count} segment(s) have a chosen take made for other content — the text, the voice or \
         the model changed since ({list}); render them again first (`lectern render`), or pass \
         --allow-stale to export the old takes",
        list = SegmentRef::list(.first, .count)
    )]
    StaleTakes { count: usize, first: Vec<SegmentRef> },
    #[error("invalid input: {0}")]
    InvalidInput(String),
    #[error("export: {0}")]
    Export(String),
}

pub type Result<T> = std::result::Result<T, StoreError>;

/// A segment as an error or a warning names it: number, manuscript line and the start of its
/// text, so the narrator finds it in their manuscript.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SegmentRef {
    pub id: SegmentId,
    /// Manuscript line (1-based) where the segment starts.
    pub line: u32,
    pub text: String,
}

impl SegmentRef {
    /// How many segments an error lists before it says "and N more".
    pub const LISTED: usize = 10;

    pub fn of(s: &StoredSegment) -> Self {
        Self { id: s.id, line: s.span.0, text: s.text.clone() }
    }

    /// `first`, shown, then how many more of `count` there are.
    fn list(first: &[SegmentRef], count: &usize) -> String {
        let count = *count;
        let mut out: Vec<String> = first.iter().map(ToString::to_string).collect();
        if count > first.len() {
            out.push(format!("and {} more", count - first.len()));
        }
        out.join("; ")
    }
}

/// The start of a segment's text as messages show it.
fn shorten(text: &str) -> String {
    const SHOWN: usize = 40;
    let mut out: String = text.chars().take(SHOWN).collect();
    if text.chars().count() > SHOWN {
        out.push('…');
    }
    out
}

impl std::fmt::Display for SegmentRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        const SHOWN: usize = 40;
        let mut text: String = self.text.chars().take(SHOWN).collect();
        if self.text.chars().count() > SHOWN {
            text.push('…');
        }
        write!(f, "segment {} at line {}: \"{text}\"", self.id + 1, self.line)
    }
}

impl StoreError {
    /// Classifies an I/O error: a full disk and a read-only file system get their own variants.
    pub fn io(context: &'static str, path: &Path, source: io::Error) -> Self {
        const ENOSPC: i32 = 28;
        const EROFS: i32 = 30;
        const EACCES: i32 = 13;
        match source.raw_os_error() {
            Some(ENOSPC) => return Self::DiskFull { path: path.to_path_buf() },
            Some(EROFS) | Some(EACCES) => {
                return Self::ReadOnly { path: path.to_path_buf(), detail: source.to_string() };
            }
            _ => {}
        }
        match source.kind() {
            io::ErrorKind::StorageFull => Self::DiskFull { path: path.to_path_buf() },
            io::ErrorKind::ReadOnlyFilesystem | io::ErrorKind::PermissionDenied => {
                Self::ReadOnly { path: path.to_path_buf(), detail: source.to_string() }
            }
            _ => Self::Io { context, path: path.to_path_buf(), cause: source },
        }
    }

    /// Classifies an SQLite error against the database at `path`.
    pub fn sqlite(path: &Path, e: rusqlite::Error) -> Self {
        use rusqlite::ErrorCode as C;
        if let rusqlite::Error::SqliteFailure(f, msg) = &e {
            let detail = msg.clone().unwrap_or_else(|| f.to_string());
            match f.code {
                C::DiskFull => return Self::DiskFull { path: path.to_path_buf() },
                C::ReadOnly | C::CannotOpen | C::PermissionDenied => {
                    return Self::ReadOnly { path: path.to_path_buf(), detail };
                }
                C::NotADatabase | C::DatabaseCorrupt => {
                    return Self::Corrupt { path: path.to_path_buf(), detail };
                }
                _ => {}
            }
        }
        if let rusqlite::Error::FromSqlConversionFailure(_, _, cause) = &e {
            if let Some(broken) = cause.downcast_ref::<takes::BrokenRecord>() {
                return Self::Corrupt { path: path.to_path_buf(), detail: broken.to_string() };
            }
        }
        Self::Db(e)
    }
}

impl From<crate::audio::loudness::MeterError> for StoreError {
    fn from(e: crate::audio::loudness::MeterError) -> Self {
        Self::Export(e.to_string())
    }
}

/// A manuscript segment as the store keeps it (the text frontend's output, minimally).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredSegment {
    /// The caller's stable id (the engine's `SegmentId`).
    pub id: SegmentId,
    /// Chapter number; export splits and marks chapters by it.
    pub chapter: u32,
    /// Position in the manuscript; segments are ordered by `(chapter, ordinal)`.
    pub ordinal: u32,
    pub text: String,
    /// Where the segment starts in the manuscript: (line, column), 1-based.
    pub span: (u32, u32),
    /// Content hash of the segment (text as rendered); takes are keyed by it.
    pub hash: u64,
    /// Silence after the segment in the export, milliseconds.
    pub pause_after_ms: u32,
    /// Key of the content a take of this segment must have to be current
    /// ([`lectern_engine::protocol::TakeContent::key`]); a chosen take with another key is stale.
    #[serde(default)]
    pub content_key: String,
}

/// A current segment with its store key and proofing state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProofedSegment {
    pub segment: StoredSegment,
    /// The store's key of the segment: stable while its text (and occurrence) is unchanged.
    pub key: SegmentKey,
    pub review: Review,
    pub note: String,
}

/// What a manuscript sync changed, keyed by segment hash.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Diff {
    /// Segments already known (same hash): their takes are kept.
    pub unchanged: Vec<SegmentId>,
    /// New or edited segments (new hash), in manuscript order.
    pub changed: Vec<SegmentId>,
    /// Ids (from the previous version) of segments no longer in the manuscript.
    pub removed: Vec<SegmentId>,
    /// New segments that took the place of an approved one (the manuscript was edited there,
    /// or the reading rules changed): each is "edited since approval" ([`carry`]), listed for
    /// a pickup with its note and the approved reading, never approved silently.
    pub reading_changed: Vec<SegmentId>,
    /// The narrator's work (review state, note, pickup flag) on each removed segment, and the
    /// segments it moved to ([`carry`]).
    pub carried: Vec<CarriedWork>,
}

/// The narrator's work on a segment an edit removed, and where it went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CarriedWork {
    /// The removed segment's text.
    pub text: String,
    /// Its manuscript line before the edit.
    pub line: u32,
    /// Its review state (an edit since approval reads as a pickup).
    pub review: Review,
    /// Its note.
    pub note: String,
    /// The segments of this version that received it (empty: none; see `left_behind`).
    pub to: Vec<SegmentId>,
    /// No segment received it and its note is nowhere in the new manuscript: it stays with the
    /// removed text (restoring the text brings it back).
    pub left_behind: bool,
}

/// What the startup check found and did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OpenReport {
    /// Takes whose WAV is missing or unreadable (rows kept, marked missing; re-queued).
    pub missing_files: Vec<TakeId>,
    /// Takes whose file reappeared since they were marked missing.
    pub restored_files: Vec<TakeId>,
    /// Complete WAVs without a row, moved to `takes/orphans/`.
    pub orphans_quarantined: Vec<PathBuf>,
    /// Take files found damaged (truncated, lengthened, not the recorded length), moved to
    /// `takes/quarantine/`; their takes are among `missing_files`.
    pub damaged_quarantined: Vec<PathBuf>,
    /// Interrupted writes (`*.tmp`) removed.
    pub temp_files_removed: Vec<PathBuf>,
    /// An interrupted `--rebuild` this open finished before anything else.
    pub resumed_rebuild: Option<rebuild::RebuildReport>,
    /// Leftovers removed because they were past the housekeeping limit ([`clean`]).
    pub auto_cleaned: Vec<clean::Leftover>,
}

impl OpenReport {
    pub fn is_clean(&self) -> bool {
        self.missing_files.is_empty()
            && self.restored_files.is_empty()
            && self.orphans_quarantined.is_empty()
            && self.damaged_quarantined.is_empty()
            && self.temp_files_removed.is_empty()
            && self.resumed_rebuild.is_none()
            && self.auto_cleaned.is_empty()
    }
}

/// An open project. Holds the directory lock until dropped.
pub struct Project {
    dir: PathBuf,
    conn: Connection,
    report: OpenReport,
    _lock: File,
}

impl std::fmt::Debug for Project {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Project").field("dir", &self.dir).finish_non_exhaustive()
    }
}

const SETTINGS_RENDER_PARAMS: &str = "render_params";
const SETTINGS_LEAD_IN_MS: &str = "lead_in_ms";
const SETTINGS_SOURCES: &str = "sources";
const SETTINGS_BOOK: &str = "book";
/// The segment the narrator last listened to in the workstation (its store key).
const SETTINGS_LISTENING_POSITION: &str = "listening_position";

/// What the manuscript says about the book, for export: its metadata, chapter titles, the
/// cover's file in the project directory, and the options it was read with.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct BookRecord {
    pub info: lectern_text::BookInfo,
    /// One per chapter, in order (`None`: untitled).
    pub chapter_titles: Vec<Option<String>>,
    /// Per chapter, its sub-chapters (a part that opens it, its sections: an EPUB's nested
    /// contents entries), for the export's chapter list.
    pub chapter_marks: Vec<Vec<SubChapter>>,
    /// The cover's file name in the project directory (`cover.jpg`).
    pub cover_file: Option<String>,
    pub read: crate::reading::ReadOptions,
}

/// A sub-chapter of the book record: its title, its depth below the chapter (0: a part that
/// opens it), and the index of the segment it starts at within its chapter.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SubChapter {
    pub title: String,
    pub depth: usize,
    pub segment: usize,
}

/// What a project's last sync was made with (absolute directories).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sources {
    pub model_dir: PathBuf,
    pub voice_dir: PathBuf,
    /// The book's voice spoke cross-lingually (`--cross-lingual`): part of its takes' content,
    /// so `export book.md` must sync with it too. (False in projects synced before it existed.)
    #[serde(default)]
    pub cross_lingual: bool,
}

impl Project {
    /// The default project directory of a manuscript: `book.txt` → `book.lectern`.
    pub fn dir_for_manuscript(manuscript: &Path) -> PathBuf {
        manuscript.with_extension("lectern")
    }

    /// Opens (or creates) the project in `dir`: takes the lock, checks and migrates the
    /// database, then reconciles take files with rows (see [`OpenReport`]).
    pub fn open(dir: impl AsRef<Path>) -> Result<Self> {
        let dir = dir.as_ref().to_path_buf();
        let lock = lock_project(&dir)?;
        let resumed_rebuild = rebuild::is_pending(&dir).then(|| rebuild::run(&dir)).transpose()?;
        refuse_lost_database(&dir)?;
        let conn = db::open(&dir.join(DB_FILE))?;
        // Before the file check: what it moves aside now is kept until the next open.
        let auto_cleaned = auto_clean(&dir)?;
        let mut project = Self { dir, conn, report: OpenReport::default(), _lock: lock };
        project.report = takes::check_files(&project.conn, &project.dir)?;
        project.report.resumed_rebuild = resumed_rebuild;
        project.report.auto_cleaned = auto_cleaned;
        Ok(project)
    }

    /// Reads every take's audio and checks it against its recorded hash and length
    /// (`lectern check-project`); damaged files are quarantined and their takes marked missing,
    /// so the next render makes them again ([`check`]).
    pub fn verify_audio(&mut self) -> Result<check::AudioCheck> {
        check::verify_audio(self)
    }

    /// The project's leftovers ([`clean`]): orphans, quarantined files, interrupted writes and
    /// old playback files inside the project, and, with `manuscript`, interrupted writes and
    /// playback files named after it beside it and in `output_dirs`.
    pub fn leftovers(
        &self,
        manuscript: Option<&Path>,
        output_dirs: &[PathBuf],
    ) -> Result<Vec<clean::Leftover>> {
        let mut out = clean::in_project(&self.dir)?;
        if let Some(m) = manuscript {
            out.extend(clean::beside_manuscript(m, output_dirs)?);
        }
        Ok(out)
    }

    /// Rebuilds a lost database (missing or empty, with take files beside it) from the records
    /// the take files carry ([`rebuild`]), or finishes a rebuild that was interrupted; the lost
    /// file is kept as `project.db.lost-…`. A database that is present is left alone: there is
    /// nothing to rebuild.
    pub fn rebuild(dir: impl AsRef<Path>) -> Result<rebuild::RebuildReport> {
        let dir = dir.as_ref().to_path_buf();
        let _lock = lock_project(&dir)?;
        if !rebuild::is_pending(&dir) && refuse_lost_database(&dir).is_ok() {
            let db = dir.join(DB_FILE);
            return Err(StoreError::InvalidInput(
                if fs::metadata(&db).is_ok_and(|m| m.len() > 0) {
                    format!("--rebuild: {} is present; there is nothing to rebuild", db.display())
                } else {
                    format!("--rebuild: {} has no take files to rebuild from", dir.display())
                },
            ));
        }
        rebuild::run(&dir)
    }

    /// Imports take files that lie in this project's `takes/` folder but have no row yet (takes
    /// rendered elsewhere, copied in) from the records they carry ([`import`]). Files already
    /// imported are skipped; damaged ones and ones without a record are reported, not imported.
    pub fn import_take_files(&mut self, files: &[PathBuf]) -> Result<import::ImportReport> {
        let db_path = self.db_path();
        import::import_take_files(&mut self.conn, &db_path, &self.dir, files)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn db_path(&self) -> PathBuf {
        self.dir.join(DB_FILE)
    }

    /// What the startup check found.
    pub fn open_report(&self) -> &OpenReport {
        &self.report
    }

    /// The underlying connection (read-only use: reports, tests).
    pub fn connection(&self) -> &Connection {
        &self.conn
    }

    pub(crate) fn sql_err(&self, e: rusqlite::Error) -> StoreError {
        StoreError::sqlite(&self.db_path(), e)
    }

    /// `PRAGMA integrity_check`; `Ok(())` when the database reports "ok".
    pub fn integrity_check(&self) -> Result<()> {
        db::integrity_check(&self.conn, &self.db_path())
    }

    /// Replaces the manuscript's segments with `segments` (manuscript order) and records a
    /// manuscript version when the content changed. Takes are never deleted.
    pub fn sync_manuscript(&mut self, segments: &[StoredSegment]) -> Result<Diff> {
        db::sync_manuscript(&mut self.conn, segments).map_err(|e| self.sql_or(e))
    }

    fn sql_or(&self, e: StoreError) -> StoreError {
        match e {
            StoreError::Db(e) => self.sql_err(e),
            other => other,
        }
    }

    /// The current manuscript's segments, in order.
    pub fn segments(&self) -> Result<Vec<StoredSegment>> {
        db::active_segments(&self.conn).map_err(|e| self.sql_err(e))
    }

    /// Segments of the current manuscript without a usable chosen take, in order.
    pub fn segments_needing_takes(&self) -> Result<Vec<StoredSegment>> {
        let needing = db::segments_needing_takes(&self.conn).map_err(|e| self.sql_err(e))?;
        Ok(needing)
    }

    /// Writes the take's WAV atomically, then commits its row; the first usable take of a
    /// segment becomes its chosen take. Returns the store's id of the take.
    pub fn save_take(&mut self, take: &Take) -> Result<TakeId> {
        takes::save_take(self, take, &mut takes::FsWriter)
    }

    /// Saves the takes of one flow group all or nothing: every WAV is written first, then all
    /// rows are committed in one transaction (a kill in between leaves orphan files, which the
    /// next open quarantines, and no row, so the group renders again whole). Each take goes to
    /// the segment with the given key; a take becomes its segment's chosen take when the
    /// segment has no usable one (missing file or stale content). Returns the takes' ids.
    pub fn save_group(&mut self, group: &[(SegmentKey, &Take)]) -> Result<Vec<TakeId>> {
        takes::save_group(self, group, &mut takes::FsWriter)
    }

    /// Like [`Project::save_group`] with a custom file writer (tests inject failures here).
    #[doc(hidden)]
    pub fn save_group_with(
        &mut self,
        group: &[(SegmentKey, &Take)],
        writer: &mut dyn takes::TakeWriter,
    ) -> Result<Vec<TakeId>> {
        takes::save_group(self, group, writer)
    }

    /// The current segments in order, with their keys and proofing state.
    pub fn proofed_segments(&self) -> Result<Vec<ProofedSegment>> {
        db::proofed_segments(&self.conn).map_err(|e| self.sql_err(e))
    }

    /// Every take of the segment with this key (any status), oldest first.
    pub fn takes_of_key(&self, key: SegmentKey) -> Result<Vec<TakeInfo>> {
        takes::takes_where(&self.conn, &self.dir, "segment_key = ?1", key)
            .map_err(|e| self.sql_err(e))
    }

    /// The chosen take of the segment with this key, if any (usable or not).
    pub fn chosen_of_key(&self, key: SegmentKey) -> Result<Option<TakeInfo>> {
        let id: Option<i64> = self
            .conn
            .query_row("SELECT take_id FROM chosen_takes WHERE segment_key = ?1", [key], |r| {
                r.get(0)
            })
            .optional()
            .map_err(|e| self.sql_err(e))?;
        id.map(|id| self.take(id as TakeId)).transpose()
    }

    /// Makes `take` the chosen take of the segment with this key. An approved segment's
    /// choice is locked: un-approve it first.
    pub fn choose_for_key(&mut self, key: SegmentKey, take: TakeId) -> Result<()> {
        if self.review_of_key(key)? == Review::Approved {
            return Err(StoreError::InvalidInput(
                "the segment is approved: its chosen take is locked (un-approve it first)".into(),
            ));
        }
        self.choose_unchecked(key, take)
    }

    fn choose_unchecked(&mut self, key: SegmentKey, take: TakeId) -> Result<()> {
        let info = self.take(take)?;
        let take_key: i64 = self
            .conn
            .query_row("SELECT segment_key FROM takes WHERE id = ?1", [take as i64], |r| r.get(0))
            .map_err(|e| self.sql_err(e))?;
        if take_key != key {
            return Err(StoreError::TakeMismatch { take, segment: key as SegmentId });
        }
        if info.status != TakeStatus::Ok {
            return Err(StoreError::TakeFileMissing { take, path: info.wav_path });
        }
        self.conn
            .execute(
                "INSERT INTO chosen_takes (segment_key, take_id) VALUES (?1, ?2)
                 ON CONFLICT(segment_key) DO UPDATE SET take_id = excluded.take_id",
                params![key, take as i64],
            )
            .map_err(|e| self.sql_err(e))?;
        Ok(())
    }

    /// The narrator's review state of the segment with this key.
    pub fn review_of_key(&self, key: SegmentKey) -> Result<Review> {
        let text: Option<String> = self
            .conn
            .query_row("SELECT review FROM segments WHERE key = ?1", [key], |r| r.get(0))
            .optional()
            .map_err(|e| self.sql_err(e))?;
        text.map(|t| Review::parse(&t)).ok_or(StoreError::UnknownSegment(key as SegmentId))
    }

    /// Sets the review state of the segment with this key. Approving needs a usable chosen
    /// take (it is what gets locked).
    pub fn set_review(&mut self, key: SegmentKey, review: Review) -> Result<()> {
        if review == Review::Approved {
            let usable = self.chosen_of_key(key)?.is_some_and(|t| t.status == TakeStatus::Ok);
            if !usable {
                return Err(StoreError::InvalidInput(
                    "nothing to approve: the segment has no usable chosen take".into(),
                ));
            }
        }
        self.conn
            .execute(
                "UPDATE segments SET review = ?2 WHERE key = ?1",
                params![key, review.as_str()],
            )
            .map_err(|e| self.sql_err(e))?;
        Ok(())
    }

    /// The narrator's casting overrides, by segment (hash, occurrence in the manuscript).
    pub fn casting_overrides(&self) -> Result<Vec<(u64, u32, CastingOverride)>> {
        db::casting_overrides(&self.conn).map_err(|e| self.sql_err(e))
    }

    /// Sets the narrator's casting of the segment with this key; an empty override removes
    /// it (the manuscript and cast decide again).
    pub fn set_casting_override(&mut self, key: SegmentKey, over: &CastingOverride) -> Result<()> {
        self.review_of_key(key)?; // an unknown segment is an error, not a dangling row
        db::set_casting_override(&self.conn, key, over).map_err(|e| self.sql_err(e))
    }

    /// Sets the narrator's note on the segment with this key (empty clears it).
    pub fn set_note(&mut self, key: SegmentKey, note: &str) -> Result<()> {
        self.conn
            .execute("UPDATE segments SET note = ?2 WHERE key = ?1", params![key, note])
            .map_err(|e| self.sql_err(e))?;
        Ok(())
    }

    /// Moves a take's damaged file to `takes/quarantine/` and marks the take missing, so its
    /// segment renders again (or the take is regenerated from its record).
    pub fn quarantine_take(&mut self, id: TakeId) -> Result<PathBuf> {
        takes::quarantine(self, id)
    }

    /// Writes back the file of a take whose file was missing or damaged, from samples
    /// regenerated from its record; refused unless they hash to the recorded audio hash.
    pub fn restore_take_file(&mut self, id: TakeId, samples: &[f32]) -> Result<()> {
        takes::restore_file(self, id, samples, &mut takes::FsWriter)
    }

    /// The SHA-256 cached for a file of this size and modification time, if any.
    pub fn cached_file_hash(
        &self,
        path: &Path,
        size: u64,
        mtime_ns: i64,
    ) -> Result<Option<String>> {
        self.conn
            .query_row(
                "SELECT sha256 FROM file_hashes WHERE path = ?1 AND size = ?2 AND mtime_ns = ?3",
                params![path.to_string_lossy(), size as i64, mtime_ns],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.sql_err(e))
    }

    /// Caches a file's SHA-256 by path, size and modification time.
    pub fn cache_file_hash(
        &mut self,
        path: &Path,
        size: u64,
        mtime_ns: i64,
        sha256: &str,
    ) -> Result<()> {
        self.conn
            .execute(
                "INSERT INTO file_hashes (path, size, mtime_ns, sha256) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT(path) DO UPDATE SET size = excluded.size,
                 mtime_ns = excluded.mtime_ns, sha256 = excluded.sha256",
                params![path.to_string_lossy(), size as i64, mtime_ns, sha256],
            )
            .map_err(|e| self.sql_err(e))?;
        Ok(())
    }

    /// Like [`Project::save_take`] with a custom file writer (tests inject failures here).
    #[doc(hidden)]
    pub fn save_take_with(
        &mut self,
        take: &Take,
        writer: &mut dyn takes::TakeWriter,
    ) -> Result<TakeId> {
        takes::save_take(self, take, writer)
    }

    /// Makes `take` the chosen take of `segment`.
    pub fn choose_take(&mut self, segment: SegmentId, take: TakeId) -> Result<()> {
        let key = self.segment_key(segment)?;
        self.choose_for_key(key, take)
    }

    /// The chosen take of a segment, if any (usable or not: check `status`).
    pub fn chosen_take(&self, segment: SegmentId) -> Result<Option<TakeInfo>> {
        self.chosen_of_key(self.segment_key(segment)?)
    }

    /// Every take of a segment (any status), oldest first.
    pub fn takes_of(&self, segment: SegmentId) -> Result<Vec<TakeInfo>> {
        self.takes_of_key(self.segment_key(segment)?)
    }

    /// Every take in the project, oldest first.
    pub fn all_takes(&self) -> Result<Vec<TakeInfo>> {
        takes::takes_where(&self.conn, &self.dir, "?1 = ?1", 0).map_err(|e| self.sql_err(e))
    }

    pub fn take(&self, id: TakeId) -> Result<TakeInfo> {
        takes::takes_where(&self.conn, &self.dir, "id = ?1", id as i64)
            .map_err(|e| self.sql_err(e))?
            .pop()
            .ok_or(StoreError::UnknownTake(id))
    }

    /// Records a take's quality figures (measured from its audio, so they can always be
    /// measured again: they replace what was there).
    pub fn set_take_figures(
        &mut self,
        id: TakeId,
        figures: &crate::quality::TakeFigures,
    ) -> Result<()> {
        let json = serde_json::to_string(figures)
            .map_err(|e| StoreError::InvalidInput(format!("quality figures: {e}")))?;
        let n = self
            .conn
            .execute("UPDATE takes SET figures = ?2 WHERE id = ?1", params![id as i64, json])
            .map_err(|e| self.sql_err(e))?;
        if n == 0 {
            return Err(StoreError::UnknownTake(id));
        }
        Ok(())
    }

    /// Reads a take's samples and checks them against the recorded audio hash.
    pub fn load_samples(&self, id: TakeId) -> Result<Vec<f32>> {
        let info = self.take(id)?;
        takes::read_verified(&info)
    }

    /// The render parameters stored with the project (defaults when never set).
    pub fn settings(&self) -> Result<RenderParams> {
        let value: Option<String> = self
            .conn
            .query_row("SELECT value FROM settings WHERE key = ?1", [SETTINGS_RENDER_PARAMS], |r| {
                r.get(0)
            })
            .optional()
            .map_err(|e| self.sql_err(e))?;
        match value {
            None => Ok(RenderParams::default()),
            Some(json) => serde_json::from_str(&json).map_err(|e| StoreError::Corrupt {
                path: self.db_path(),
                detail: format!("settings.render_params: {e}"),
            }),
        }
    }

    pub fn set_settings(&mut self, params: &RenderParams) -> Result<()> {
        let json = serde_json::to_string(params)
            .map_err(|e| StoreError::InvalidInput(format!("render params: {e}")))?;
        self.conn
            .execute(
                "INSERT INTO settings (key, value) VALUES (?1, ?2)
                 ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                params![SETTINGS_RENDER_PARAMS, json],
            )
            .map_err(|e| self.sql_err(e))?;
        Ok(())
    }

    /// The manuscript's lead-in (silence before its first segment), milliseconds.
    pub fn lead_in_ms(&self) -> Result<u32> {
        Ok(self.setting(SETTINGS_LEAD_IN_MS)?.and_then(|v| v.parse().ok()).unwrap_or(0))
    }

    /// Records the manuscript's lead-in (export puts it before the first segment).
    pub fn set_lead_in_ms(&mut self, ms: u32) -> Result<()> {
        self.set_setting(SETTINGS_LEAD_IN_MS, &ms.to_string())
    }

    /// The segment the narrator last listened to in the workstation, where a reopened book
    /// waits; `None` when never recorded (or unreadable: the first segment does as well).
    pub fn listening_position(&self) -> Result<Option<SegmentKey>> {
        Ok(self.setting(SETTINGS_LISTENING_POSITION)?.and_then(|v| v.parse().ok()))
    }

    /// Records the segment the narrator listens to (its key: a segment whose text changes
    /// gets a new key, and the book then waits at its first segment).
    pub fn set_listening_position(&mut self, key: SegmentKey) -> Result<()> {
        self.set_setting(SETTINGS_LISTENING_POSITION, &key.to_string())
    }

    /// The model and voice directories the project was last synced with, if recorded.
    pub fn sources(&self) -> Result<Option<Sources>> {
        match self.setting(SETTINGS_SOURCES)? {
            None => Ok(None),
            Some(json) => serde_json::from_str(&json).map(Some).map_err(|e| StoreError::Corrupt {
                path: self.db_path(),
                detail: format!("settings.{SETTINGS_SOURCES}: {e}"),
            }),
        }
    }

    /// Records the model and voice a sync used, so `export book.md` can check the manuscript
    /// against the takes with the same tokenizer, voice and model hashes.
    pub fn set_sources(&mut self, sources: &Sources) -> Result<()> {
        let json = serde_json::to_string(sources)
            .map_err(|e| StoreError::InvalidInput(format!("sources: {e}")))?;
        self.set_setting(SETTINGS_SOURCES, &json)
    }

    /// The book's record as last synced (defaults for a project synced before it was kept).
    pub fn book(&self) -> Result<BookRecord> {
        match self.setting(SETTINGS_BOOK)? {
            None => Ok(BookRecord::default()),
            Some(json) => serde_json::from_str(&json).map_err(|e| StoreError::Corrupt {
                path: self.db_path(),
                detail: format!("settings.{SETTINGS_BOOK}: {e}"),
            }),
        }
    }

    /// Records the book; a cover is written beside the database as `cover.EXT` (atomically,
    /// and only when its bytes changed).
    pub fn set_book(&mut self, mut book: BookRecord) -> Result<()> {
        book.cover_file = match &book.info.cover {
            Some(cover) => {
                let name = format!("cover.{}", cover.extension());
                let path = self.dir.join(&name);
                if fs::read(&path).ok().as_deref() != Some(cover.bytes.as_slice()) {
                    let tmp = self.dir.join(format!("{name}.tmp"));
                    fs::write(&tmp, &cover.bytes)
                        .and_then(|()| fs::rename(&tmp, &path))
                        .map_err(|e| StoreError::io("writing the cover", &path, e))?;
                }
                Some(name)
            }
            None => None,
        };
        let json = serde_json::to_string(&book)
            .map_err(|e| StoreError::InvalidInput(format!("book record: {e}")))?;
        self.set_setting(SETTINGS_BOOK, &json)
    }

    fn setting(&self, key: &str) -> Result<Option<String>> {
        self.conn
            .query_row("SELECT value FROM settings WHERE key = ?1", [key], |r| r.get(0))
            .optional()
            .map_err(|e| self.sql_err(e))
    }

    fn set_setting(&mut self, key: &str, value: &str) -> Result<()> {
        self.conn
            .execute(
                "INSERT INTO settings (key, value) VALUES (?1, ?2)
                 ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                params![key, value],
            )
            .map_err(|e| self.sql_err(e))?;
        Ok(())
    }

    /// The store key of the current manuscript's segment `id`.
    pub(crate) fn segment_key(&self, id: SegmentId) -> Result<i64> {
        self.conn
            .query_row(
                "SELECT key FROM segments WHERE segment_id = ?1 AND active = 1",
                [id as i64],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.sql_err(e))?
            .ok_or(StoreError::UnknownSegment(id))
    }
}

/// A missing or empty database beside take files is a lost database, not a new project:
/// opening it as new would orphan (quarantine) every take and render everything again.
fn refuse_lost_database(dir: &Path) -> Result<()> {
    let db = dir.join(DB_FILE);
    let empty = fs::metadata(&db).map_or(true, |m| m.len() == 0);
    if !empty {
        return Ok(());
    }
    let takes = takes::take_files(dir).unwrap_or_default();
    let wavs = takes.iter().filter(|p| p.extension().is_some_and(|e| e == "wav")).count();
    if wavs == 0 {
        return Ok(());
    }
    Err(StoreError::LostDatabase { path: db, take_files: wavs })
}

/// Removes the leftovers inside the project directory when they are past the housekeeping
/// limit ([`clean::past_auto_limit`]); below it they stay for `lectern clean`.
fn auto_clean(dir: &Path) -> Result<Vec<clean::Leftover>> {
    let leftovers = clean::in_project(dir)?;
    if !clean::past_auto_limit(&leftovers) {
        return Ok(Vec::new());
    }
    clean::remove(&leftovers)?;
    Ok(leftovers)
}

/// Creates the project directory if needed and takes its lock.
fn lock_project(dir: &Path) -> Result<File> {
    fs::create_dir_all(dir.join(TAKES_DIR))
        .map_err(|e| StoreError::io("creating project directory", dir, e))?;
    let lock_path = dir.join(LOCK_FILE);
    let lock = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|e| StoreError::io("opening lock file", &lock_path, e))?;
    lock_with_grace(&lock).map_err(|_| StoreError::Locked { path: dir.to_path_buf() })?;
    Ok(lock)
}

/// Takes the project lock, retrying for up to a second: a process that forked while it held
/// the lock file open (any thread spawning a child) keeps the lock until its exec, which
/// closes the inherited descriptor a moment later.
fn lock_with_grace(lock: &fs::File) -> std::io::Result<()> {
    let mut attempt = 0;
    loop {
        match fs2::FileExt::try_lock_exclusive(lock) {
            Ok(()) => return Ok(()),
            Err(e) if attempt >= 20 => return Err(e),
            Err(_) => {
                attempt += 1;
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
        }
    }
}
