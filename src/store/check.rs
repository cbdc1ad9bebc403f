//! The full check of a project's take files (`lectern check-project`): every take's audio read
//! and compared with the hash and length its row recorded. Opening a project checks only each
//! file's size against its header and record (`super::takes::file_complete`), which finds
//! truncated and lengthened files at the cost of a few header reads; a file whose bytes changed
//! in place (a bad sector, a tool that rewrote it) is found here, or when its samples are read.
//!
//! A damaged file is moved to `takes/quarantine/` and its take marked missing, so the next
//! render regenerates it from its record (the same audio, in the flow group the record names)
//! or, when it cannot be regenerated, renders its segment again.

use std::path::PathBuf;

use serde::Serialize;

use super::{Project, Result, StoreError, takes};
use crate::review::TakeStatus;
use lectern_engine::protocol::TakeId;

/// A take whose file failed the check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DamagedTake {
    pub take: TakeId,
    /// The start of its text.
    pub text: String,
    /// Whether it is the chosen take of a segment of the current manuscript (the render needs
    /// it, and regenerates it).
    pub chosen: bool,
    /// Whether its record holds what regenerating it needs (its flow group's speech tokens).
    pub regenerable: bool,
    /// What was wrong.
    pub cause: String,
    /// Where the file was moved (None: there was no file).
    pub quarantined: Option<PathBuf>,
}

/// What the full check found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct AudioCheck {
    /// Takes whose file was read and hashed.
    pub checked: usize,
    /// Takes already marked missing before the check (their file is gone or was quarantined).
    pub already_missing: usize,
    pub damaged: Vec<DamagedTake>,
}

impl AudioCheck {
    /// Damaged chosen takes the next render regenerates from their records.
    pub fn to_regenerate(&self) -> usize {
        self.damaged.iter().filter(|d| d.chosen && d.regenerable).count()
    }

    /// Damaged chosen takes whose segment the next render renders again (no tokens to
    /// regenerate them from: a new take, other audio).
    pub fn to_rerender(&self) -> usize {
        self.damaged.iter().filter(|d| d.chosen && !d.regenerable).count()
    }
}

/// Reads every usable take's audio and compares it with its recorded hash and length; each
/// damaged one is quarantined and marked missing.
pub(crate) fn verify_audio(project: &mut Project) -> Result<AudioCheck> {
    let chosen = chosen_current(project)?;
    let mut check = AudioCheck::default();
    for info in project.all_takes()? {
        if info.status != TakeStatus::Ok {
            check.already_missing += 1;
            continue;
        }
        check.checked += 1;
        let cause = match takes::read_verified(&info) {
            Ok(_) => continue,
            Err(StoreError::HashMismatch { .. }) => {
                "its audio does not match the hash it was saved with".to_string()
            }
            Err(StoreError::TakeFileMissing { .. }) => {
                "the file is missing or not a take WAV".to_string()
            }
            Err(e) => return Err(e),
        };
        let existed = info.wav_path.exists();
        let to = takes::quarantine(project, info.id)?;
        check.damaged.push(DamagedTake {
            take: info.id,
            text: info.record.text.chars().take(60).collect(),
            chosen: chosen.contains(&info.id),
            regenerable: !info.record.group.tokens.is_empty(),
            cause,
            quarantined: existed.then_some(to),
        });
    }
    Ok(check)
}

/// Ids of the chosen takes of the current manuscript's segments.
fn chosen_current(project: &Project) -> Result<std::collections::HashSet<TakeId>> {
    let mut stmt = project
        .connection()
        .prepare(
            "SELECT c.take_id FROM chosen_takes c JOIN segments s ON s.key = c.segment_key
             WHERE s.active = 1",
        )
        .map_err(|e| project.sql_err(e))?;
    let ids: rusqlite::Result<_> = stmt
        .query_map([], |r| r.get::<_, i64>(0))
        .and_then(|rows| rows.map(|r| r.map(|id| id as TakeId)).collect());
    ids.map_err(|e| project.sql_err(e))
}
