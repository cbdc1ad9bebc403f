//! Where Lectern writes, and what it never overwrites.
//!
//! Every file a command writes (`render -o`, `say -o`, `export`, delivery, `--report`) is
//! checked before any work by one [`Guard`]:
//! - it is not one of the files the run reads (the manuscript, `cast.toml`, the pronunciations,
//!   `config.toml`, a voice's or the model's files — hard links and symbolic links included),
//!   nor inside the project directory, a voice or the model directory;
//! - where something is there already, it is a regular file (never a directory, a device, a FIFO)
//!   that Lectern wrote — its [`ledger`] records the size and modification time of every file
//!   Lectern writes — or `--force` says to replace it;
//! - a file's format follows its extension, and an extension the command does not write is
//!   refused (a WAV named `.flac` used to be written).
//!
//! Files are written under a temporary name and renamed into place ([`write_atomically`]); a
//! set of files that belongs together (the chapters of `--split chapters`, an ACX delivery, an
//! M4B with its cover) is written into a staged folder that replaces the previous one as a
//! whole ([`folder::StagedFolder`]).

pub mod folder;
mod guard;
pub mod ledger;

pub use folder::StagedFolder;
pub use guard::{Guard, OutputError};

use std::path::{Path, PathBuf};

/// `path` with `.part` appended to its file name: the name a file is written under until it is
/// complete.
#[must_use]
pub fn partial_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(".part");
    path.with_file_name(name)
}

/// Writes `path` through `write` (given the temporary path), syncs it and renames it into
/// place, then records it in the [`ledger`] as Lectern's. On an error nothing is left behind
/// and the previous file, if any, is untouched.
pub fn write_atomically<E: From<std::io::Error>>(
    path: &Path,
    write: impl FnOnce(&Path) -> Result<(), E>,
) -> Result<(), E> {
    let tmp = partial_path(path);
    let result = write(&tmp).and_then(|()| {
        std::fs::File::open(&tmp)?.sync_all()?;
        std::fs::rename(&tmp, path)?;
        Ok(())
    });
    match result {
        Ok(()) => {
            ledger::record(path);
            Ok(())
        }
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}
