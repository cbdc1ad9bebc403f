//! A set of files that replaces the previous set as a whole: the chapters of
//! `--split chapters`, an ACX delivery, an M4B with its cover.
//!
//! The files are written into a staged folder beside the output (`.NAME.partial-PID`); on
//! [`StagedFolder::commit`] the previous folder is moved aside (`.NAME.old-PID`), the staged one
//! renamed into place and the previous one removed. Killed before the swap, the previous folder
//! is untouched; killed between its two renames, the next run finds the output missing and its
//! previous folder aside, and puts it back first. Files in the previous folder that Lectern did
//! not write (the folder's [`MARKER`] lists those it did) are carried into the new one: an
//! export never deletes what it did not make.

use std::path::{Path, PathBuf};

use super::OutputError;

/// The file in an output folder listing the files Lectern wrote there, one name a line.
pub const MARKER: &str = ".lectern-output";

/// Whether the folder is one Lectern wrote (it has its marker).
#[must_use]
pub fn is_lecterns(dir: &Path) -> bool {
    dir.join(MARKER).is_file()
}

/// An output folder being written: write into [`Self::path`], then [`Self::commit`].
#[derive(Debug)]
pub struct StagedFolder {
    target: PathBuf,
    staged: PathBuf,
    committed: bool,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> OutputError + '_ {
    move |e| OutputError::Io(path.to_path_buf(), e)
}

/// `.NAME.TAG-PID` beside `target`.
fn sibling(target: &Path, tag: &str, pid: u32) -> PathBuf {
    let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    target.with_file_name(format!(".{name}.{tag}-{pid}"))
}

/// The siblings of `target` a run left with this tag (`.NAME.TAG-*`).
fn leftovers(target: &Path, tag: &str) -> Vec<PathBuf> {
    let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let prefix = format!(".{name}.{tag}-");
    let parent = target.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let Ok(entries) = std::fs::read_dir(parent) else { return Vec::new() };
    entries
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .map(|e| e.path())
        .collect()
}

impl StagedFolder {
    /// Starts writing `target` (already checked by [`super::Guard::folder`]): repairs what a
    /// killed run left, then makes an empty staged folder.
    pub fn begin(target: &Path) -> Result<Self, OutputError> {
        recover(target)?;
        let staged = sibling(target, "partial", std::process::id());
        if staged.exists() {
            std::fs::remove_dir_all(&staged).map_err(io(&staged))?;
        }
        std::fs::create_dir_all(&staged).map_err(io(&staged))?;
        Ok(Self { target: target.to_path_buf(), staged, committed: false })
    }

    /// Where the files are written until the commit.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.staged
    }

    /// The path a file written at `staged` will have once committed.
    #[must_use]
    pub fn final_path(&self, staged: &Path) -> PathBuf {
        staged
            .strip_prefix(&self.staged)
            .map_or_else(|_| staged.to_path_buf(), |rel| self.target.join(rel))
    }

    /// Swaps the staged folder in for the previous one; returns the names of the files carried
    /// over from the previous folder (those Lectern did not write there).
    pub fn commit(mut self) -> Result<Vec<String>, OutputError> {
        let written = file_names(&self.staged)?;
        let carried = if self.target.is_dir() { self.carry_over(&written)? } else { Vec::new() };
        let marker = self.staged.join(MARKER);
        std::fs::write(&marker, written.join("\n") + "\n").map_err(io(&marker))?;
        sync_dir(&self.staged);
        let aside = sibling(&self.target, "old", std::process::id());
        if self.target.exists() {
            std::fs::rename(&self.target, &aside).map_err(io(&self.target))?;
        }
        std::fs::rename(&self.staged, &self.target).map_err(io(&self.target))?;
        self.committed = true;
        if let Some(parent) = self.target.parent() {
            sync_dir(parent);
        }
        if aside.exists() {
            std::fs::remove_dir_all(&aside).map_err(io(&aside))?;
        }
        Ok(carried)
    }

    /// Moves the previous folder's files that Lectern did not write into the staged folder
    /// (unless a new file has the same name: then the export refuses, naming it).
    fn carry_over(&self, written: &[String]) -> Result<Vec<String>, OutputError> {
        let ours: Vec<String> = std::fs::read_to_string(self.target.join(MARKER))
            .map(|t| t.lines().map(str::to_string).collect())
            .unwrap_or_default();
        let mut carried = Vec::new();
        for name in file_names(&self.target)? {
            if name == MARKER || ours.contains(&name) {
                continue;
            }
            if written.contains(&name) {
                return Err(OutputError::Exists { path: self.target.join(&name) });
            }
            let (from, to) = (self.target.join(&name), self.staged.join(&name));
            std::fs::rename(&from, &to).map_err(io(&from))?;
            carried.push(name);
        }
        Ok(carried)
    }
}

impl Drop for StagedFolder {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_dir_all(&self.staged);
        }
    }
}

/// Puts back a previous folder a killed commit left aside, and removes staged folders of
/// killed runs.
fn recover(target: &Path) -> Result<(), OutputError> {
    let aside = leftovers(target, "old");
    if !target.exists() {
        if let Some(previous) = aside.first() {
            std::fs::rename(previous, target).map_err(io(previous))?;
            eprintln!(
                "note: {} was put back from {} (an earlier export was stopped while replacing it)",
                target.display(),
                previous.display()
            );
        }
    }
    for stale in leftovers(target, "old").into_iter().chain(leftovers(target, "partial")) {
        let _ = std::fs::remove_dir_all(stale);
    }
    Ok(())
}

fn file_names(dir: &Path) -> Result<Vec<String>, OutputError> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map_err(io(dir))?
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    Ok(names)
}

/// Makes a folder's entries durable (a rename is only as durable as its folder).
fn sync_dir(dir: &Path) {
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        file_names(dir).unwrap()
    }

    #[test]
    fn a_commit_replaces_the_set_and_keeps_what_lectern_did_not_write() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("acx");
        let first = StagedFolder::begin(&out).unwrap();
        for n in ["01.mp3", "02.mp3", "03.mp3"] {
            std::fs::write(first.path().join(n), n).unwrap();
        }
        first.commit().unwrap();
        std::fs::write(out.join("notes.txt"), "mine").unwrap();

        let second = StagedFolder::begin(&out).unwrap();
        std::fs::write(second.path().join("01.mp3"), "new").unwrap();
        assert_eq!(second.final_path(&second.path().join("01.mp3")), out.join("01.mp3"));
        assert_eq!(second.commit().unwrap(), ["notes.txt"]);
        assert_eq!(names(&out), [MARKER, "01.mp3", "notes.txt"]);
        assert_eq!(std::fs::read_to_string(out.join("01.mp3")).unwrap(), "new");
        assert_eq!(names(tmp.path()), ["acx"], "nothing staged or aside is left");
    }

    #[test]
    fn an_unfinished_export_leaves_the_previous_set_and_a_killed_swap_is_undone() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("book");
        let first = StagedFolder::begin(&out).unwrap();
        std::fs::write(first.path().join("01.wav"), "old").unwrap();
        first.commit().unwrap();
        {
            let failed = StagedFolder::begin(&out).unwrap();
            std::fs::write(failed.path().join("01.wav"), "half").unwrap();
        }
        assert_eq!(std::fs::read_to_string(out.join("01.wav")).unwrap(), "old");
        // A commit killed between its two renames: the output is aside.
        std::fs::rename(&out, sibling(&out, "old", 7)).unwrap();
        let next = StagedFolder::begin(&out).unwrap();
        assert_eq!(std::fs::read_to_string(out.join("01.wav")).unwrap(), "old");
        drop(next);
        assert_eq!(names(tmp.path()), ["book"]);
    }
}
