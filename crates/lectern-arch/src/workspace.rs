//! The workspace's crates: the root package (where the root manifest has one and a `src/`),
//! then each `crates/*/` with a `src/`.

use std::fs;
use std::path::{Path, PathBuf};

/// A crate of the workspace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    /// The package name (`lectern-model`).
    pub name: String,
    /// The directory of its `Cargo.toml`.
    pub dir: PathBuf,
}

/// The crates of the workspace at `root`: the root package first, then `crates/*` by name.
pub fn workspace_members(root: &Path) -> Vec<Member> {
    let mut dirs = vec![root.to_path_buf()];
    if let Ok(entries) = fs::read_dir(root.join("crates")) {
        let mut crates: Vec<PathBuf> = entries.filter_map(|e| e.ok()).map(|e| e.path()).collect();
        crates.sort();
        dirs.extend(crates);
    }
    dirs.into_iter()
        .filter(|dir| dir.join("src").is_dir())
        .filter_map(|dir| Some(Member { name: package_name(&dir.join("Cargo.toml"))?, dir }))
        .collect()
}

/// `[package] name = "..."` of a manifest (a line-level read: no TOML parser for one string).
pub fn package_name(manifest: &Path) -> Option<String> {
    let text = fs::read_to_string(manifest).ok()?;
    let mut in_package = false;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_package = line == "[package]";
            continue;
        }
        if in_package
            && let Some(rest) = line.strip_prefix("name")
            && let Some(value) = rest.trim_start().strip_prefix('=')
        {
            return Some(value.trim().trim_matches('"').to_string());
        }
    }
    None
}
