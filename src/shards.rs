//! A book rendered in shares by several processes or machines, gathered into one project.
//!
//! Splitting a book is exact because of two facts the rest of Lectern already keeps: every take
//! carries the record it was made from (its content, seed and settings), and flow groups come
//! from the plan (they close at every paragraph's end), never from timing. A shard
//! (`render --shard K/N --project DIR`) renders whole paragraphs
//! ([`crate::session::plan::shard_keys`]) into a project of its own; gathering
//! (`render --gather DIR…`) checks each shard's chosen takes against this book's plan and run
//! settings, copies them into the book's project and imports them with their records — the
//! same import `--rebuild` uses — then the output is written from the store as always.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use lectern_engine::protocol::TakeSettings;

use crate::review::TakeStatus;
use crate::session::Session;
use crate::store::{Project, TAKES_DIR};

/// What a gather attached.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Gathered {
    /// Shard projects read.
    pub shards: usize,
    /// Takes copied in and imported.
    pub imported: usize,
    /// Takes the book's project had already (gathered before, or rendered here).
    pub already_present: usize,
}

/// Attaches the chosen takes of the shard projects in `dirs` to `session`'s project, each one
/// checked first: made for a segment of this book as it reads now (text, voice, model) and with
/// `current` settings, since only the same settings give the same bytes.
pub fn gather(
    session: &mut Session,
    dirs: &[PathBuf],
    current: &TakeSettings,
) -> anyhow::Result<Gathered> {
    let Some(book_dir) = session.project_dir().map(Path::to_path_buf) else {
        bail!("--gather attaches takes to the book's project: leave out --no-project");
    };
    let planned: HashMap<String, String> =
        session.segments().iter().map(|s| (s.content.key(), s.source.clone())).collect();
    let mut files = Vec::new();
    for dir in dirs {
        files.extend(shard_takes(dir, &book_dir, &planned, current)?);
    }
    let copied = copy_into(&files, &book_dir.join(TAKES_DIR))?;
    let report = session.project_mut().import_take_files(&copied)?;
    if let Some(bad) = report.to_regenerate.first() {
        bail!(
            "{}: the take file does not hold the audio its record names (damaged in the copy?); \
             gather again",
            bad.display()
        );
    }
    choose_gathered(session)?;
    Ok(Gathered {
        shards: dirs.len(),
        imported: report.takes,
        already_present: report.already_present.len(),
    })
}

/// The take files of one shard's chosen takes, refused by name when one was made for other
/// content or with other settings.
fn shard_takes(
    dir: &Path,
    book_dir: &Path,
    planned: &HashMap<String, String>,
    current: &TakeSettings,
) -> anyhow::Result<Vec<PathBuf>> {
    if std::fs::canonicalize(dir).ok() == std::fs::canonicalize(book_dir).ok() {
        bail!("{}: is the book's own project; gather the shards' projects", dir.display());
    }
    let shard = Project::open(dir).with_context(|| format!("shard {}", dir.display()))?;
    let mut files = Vec::new();
    for segment in shard.segments()? {
        let Some(take) = shard.chosen_take(segment.id)? else { continue };
        if take.status != TakeStatus::Ok {
            bail!(
                "shard {}: the take of \u{201c}{}\u{201d} is missing or damaged; render the shard \
                 again to restore it",
                dir.display(),
                segment.text
            );
        }
        if !planned.contains_key(&take.content_key) {
            bail!(
                "shard {}: \u{201c}{}\u{201d} was rendered from other content than this book \
                 (its text, voice or model changed since): render the shard again",
                dir.display(),
                segment.text
            );
        }
        let settings = take.record.settings();
        if settings != *current {
            bail!(
                "shard {} was rendered with other settings ({}) than this run ({}); the same \
                 bytes need the same settings: gather with the shards' settings, or render the \
                 shard again",
                dir.display(),
                describe(&settings),
                describe(current)
            );
        }
        files.push(take.wav_path);
    }
    Ok(files)
}

fn describe(s: &TakeSettings) -> String {
    format!(
        "NFE {}, {:?}, {}, flow matmul {}, {:?}",
        s.nfe, s.precision, s.backend, s.flow_matmul, s.min_len_rule
    )
}

/// Copies the files into `takes` (under a temporary name, then renamed), leaving those it has
/// already; returns their paths there.
fn copy_into(files: &[PathBuf], takes: &Path) -> anyhow::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(takes).with_context(|| format!("creating {}", takes.display()))?;
    let mut copied = Vec::new();
    for file in files {
        let name = file.file_name().context("a take file without a name")?;
        let to = takes.join(name);
        if !to.exists() {
            let tmp = takes.join(format!(".{}.gather", name.to_string_lossy()));
            std::fs::copy(file, &tmp).with_context(|| format!("copying {}", file.display()))?;
            std::fs::File::open(&tmp)?.sync_all()?;
            std::fs::rename(&tmp, &to).with_context(|| format!("renaming to {}", to.display()))?;
        }
        copied.push(to);
    }
    Ok(copied)
}

/// Chooses, for each segment whose chosen take is not current, a gathered take made for it
/// (a book's project may hold older takes of a segment, chosen before the shards rendered).
fn choose_gathered(session: &mut Session) -> anyhow::Result<()> {
    let segments = session.segments().to_vec();
    for s in segments {
        let key = s.content.key();
        let chosen = session.project().chosen_of_key(s.key)?;
        if chosen.is_some_and(|t| t.content_key == key && t.status == TakeStatus::Ok) {
            continue;
        }
        let takes = session.project().takes_of_key(s.key)?;
        if let Some(t) = takes.iter().find(|t| t.content_key == key && t.status == TakeStatus::Ok) {
            session.choose(s.key, t.id)?;
        }
    }
    Ok(())
}
