//! `lectern model download`: a CosyVoice3 release from the Hugging Face hub into a folder —
//! only the files a model directory needs ([`crate::model_dir::download_selection`]), each
//! resumable and checked against the hub's size and hash ([`crate::hub`]) — then checked as a
//! whole and recorded as `config.toml`'s `model`.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use indicatif::{ProgressBar, ProgressStyle};

use crate::hub::fetch::{self, Fetched, Progress};
use crate::hub::{Expected, Hub, HubError, RemoteFile};
use crate::model_dir::{self, Manifest, ManifestFile, ModelUse};

/// A release `lectern model download` knows by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Release {
    /// The name a user types, and the default folder's name.
    pub name: &'static str,
    /// Its hub repository.
    pub repo: &'static str,
}

/// The known releases, the default first.
pub const RELEASES: &[Release] =
    &[Release { name: "Fun-CosyVoice3-0.5B-2512", repo: "FunAudioLLM/Fun-CosyVoice3-0.5B-2512" }];

/// What to download, and where.
#[derive(Debug, Clone)]
pub struct DownloadOptions {
    /// A known release's name, or a hub repository `owner/name` [default: the first release].
    pub name: Option<String>,
    /// The model folder [default: `DATA/models/NAME`].
    pub dir: Option<PathBuf>,
    /// A branch, tag or commit of the repository.
    pub revision: String,
    /// Where to record the folder as `model` (`None`: nowhere).
    pub config: Option<PathBuf>,
    /// Progress bars on a terminal.
    pub progress: bool,
}

/// How one file came to be in place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileOutcome {
    /// Downloaded in this run (resumed from a `.part` when `resumed_from` > 0).
    Downloaded(Fetched),
    /// Already in the folder with the listed size and hash.
    AlreadyThere,
}

/// A finished download.
#[derive(Debug, Clone)]
pub struct Downloaded {
    pub dir: PathBuf,
    pub manifest: Manifest,
    pub outcomes: Vec<(String, FileOutcome)>,
    /// The configuration file the folder was recorded in.
    pub recorded_in: Option<PathBuf>,
}

/// The release `name` names: a known name (any case), else a repository `owner/name`.
pub fn resolve_release(name: Option<&str>) -> anyhow::Result<(String, String)> {
    let Some(name) = name else {
        return Ok((RELEASES[0].name.into(), RELEASES[0].repo.into()));
    };
    if let Some(r) = RELEASES.iter().find(|r| r.name.eq_ignore_ascii_case(name)) {
        return Ok((r.name.into(), r.repo.into()));
    }
    match name.split_once('/') {
        Some((owner, repo)) if !owner.is_empty() && !repo.is_empty() && !repo.contains('/') => {
            Ok((repo.into(), name.into()))
        }
        _ => bail!(
            "unknown model `{name}`: known are {}; or name a hub repository as OWNER/NAME",
            RELEASES.iter().map(|r| r.name).collect::<Vec<_>>().join(", ")
        ),
    }
}

/// Downloads a release into its folder and records it (see the module doc).
pub fn download(opts: &DownloadOptions) -> anyhow::Result<Downloaded> {
    let (name, repo) = resolve_release(opts.name.as_deref())?;
    let dir = match &opts.dir {
        Some(d) => d.clone(),
        None => crate::assets::data_dir()
            .context("no data directory on this platform: pass --dir")?
            .join("models")
            .join(&name),
    };
    let hub = Hub::from_env();
    if std::env::var("HF_HUB_OFFLINE").is_ok_and(|v| matches!(v.trim(), "1" | "true" | "yes")) {
        bail!("HF_HUB_OFFLINE is set: no download.\n{}", by_hand(&hub, &repo, &dir));
    }
    let listing = hub.list(&repo, &opts.revision).map_err(|e| explain(e, &hub, &repo, &dir))?;
    let listed: Vec<&str> = listing.files.iter().map(|f| f.path.as_str()).collect();
    let chosen = model_dir::download_selection(&listed).map_err(|why| {
        anyhow::anyhow!("{repo} at {} is not a CosyVoice3 model directory: {why}", opts.revision)
    })?;
    let files: Vec<&RemoteFile> =
        chosen.iter().filter_map(|p| listing.files.iter().find(|f| f.path == *p)).collect();
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let _lock = lock_dir(&dir)?;
    let total: u64 = files.iter().map(|f| f.size).sum();
    check_space(&dir, &files)?;
    eprintln!(
        "{repo} ({} files, {}) from {} into {}",
        files.len(),
        human_bytes(total),
        hub.endpoint(),
        dir.display()
    );
    let previous = Manifest::read(&dir);
    let mut outcomes = Vec::new();
    for file in &files {
        let outcome = fetch_one(&hub, &repo, &listing.commit, file, &dir, previous.as_ref(), opts)
            .map_err(|e| explain(e, &hub, &repo, &dir))?;
        eprintln!(
            "  {:<42} {:>10}  {}",
            file.path,
            human_bytes(file.size),
            describe(&outcome, file)
        );
        outcomes.push((file.path.clone(), outcome));
    }
    let manifest = Manifest {
        repo: repo.clone(),
        revision: listing.commit.clone(),
        endpoint: hub.endpoint().to_string(),
        files: files.iter().map(|f| manifest_file(f)).collect(),
    };
    manifest.write(&dir).with_context(|| format!("writing the manifest in {}", dir.display()))?;
    model_dir::check(&dir, ModelUse::Everything)?;
    let dir = std::fs::canonicalize(&dir).unwrap_or(dir);
    if let Some(config) = &opts.config {
        crate::config::record_model(config, &dir)?;
    }
    Ok(Downloaded { dir, manifest, outcomes, recorded_in: opts.config.clone() })
}

/// Holds the folder for this run: two downloads into one folder would append to the same
/// partial files.
fn lock_dir(dir: &Path) -> anyhow::Result<std::fs::File> {
    let path = dir.join(".lectern-download.lock");
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .with_context(|| format!("creating {}", path.display()))?;
    fs2::FileExt::try_lock_exclusive(&lock).map_err(|_| {
        anyhow::anyhow!("another `lectern model download` is writing into {}", dir.display())
    })?;
    Ok(lock)
}

/// Refuses a download the disk cannot hold, before any of it is fetched.
fn check_space(dir: &Path, files: &[&RemoteFile]) -> anyhow::Result<()> {
    let on_disk = |p: &Path| std::fs::metadata(p).map_or(0, |m| m.len());
    let needed: u64 = files
        .iter()
        .map(|f| {
            let dest = dir.join(&f.path);
            let have = on_disk(&dest).max(on_disk(&fetch::partial_path(&dest)));
            f.size.saturating_sub(have)
        })
        .sum();
    let Ok(free) = fs2::available_space(dir) else { return Ok(()) };
    if free < needed {
        bail!(
            "{} needs {} more, and its disk has {} free: free some space or pass --dir on \
             another disk",
            dir.display(),
            human_bytes(needed),
            human_bytes(free)
        );
    }
    Ok(())
}

/// One file: skipped when already in place with the listed hash, else fetched.
fn fetch_one(
    hub: &Hub,
    repo: &str,
    commit: &str,
    file: &RemoteFile,
    dir: &Path,
    previous: Option<&Manifest>,
    opts: &DownloadOptions,
) -> Result<FileOutcome, HubError> {
    let dest = dir.join(&file.path);
    if dest.is_file() {
        if in_place(&dest, file, previous)? {
            return Ok(FileOutcome::AlreadyThere);
        }
        // A different file under the name (an older release, a damaged copy): replaced.
        std::fs::remove_file(&dest)
            .map_err(|e| HubError::Io { path: dest.display().to_string(), source: e })?;
    }
    let mut bar = Bar::new(opts.progress);
    let fetched = fetch::fetch_file(hub, repo, commit, file, dir, &mut bar);
    bar.clear();
    fetched.map(FileOutcome::Downloaded)
}

/// Whether `dest` is `file` as listed: by the previous download's record when it lists the
/// same hash and the size agrees (no re-reading gigabytes), else by hashing it.
fn in_place(dest: &Path, file: &RemoteFile, previous: Option<&Manifest>) -> Result<bool, HubError> {
    let len = std::fs::metadata(dest).map_or(0, |m| m.len());
    if len != file.size {
        return Ok(false);
    }
    let recorded = previous
        .and_then(|m| m.files.iter().find(|f| f.path == file.path))
        .is_some_and(|f| *f == manifest_file(file));
    if recorded {
        return Ok(true);
    }
    let want = match &file.expected {
        Expected::Sha256(h) | Expected::GitSha1(h) => h,
    };
    Ok(fetch::hash_file(dest, &file.expected)? == *want)
}

fn manifest_file(f: &RemoteFile) -> ManifestFile {
    let (sha256, git_sha1) = match &f.expected {
        Expected::Sha256(h) => (Some(h.clone()), None),
        Expected::GitSha1(h) => (None, Some(h.clone())),
    };
    ManifestFile { path: f.path.clone(), size: f.size, sha256, git_sha1 }
}

fn describe(outcome: &FileOutcome, file: &RemoteFile) -> String {
    let check = match file.expected {
        Expected::Sha256(_) => "SHA-256 ok",
        Expected::GitSha1(_) => "git hash ok",
    };
    match outcome {
        FileOutcome::AlreadyThere => format!("already there, {check}"),
        FileOutcome::Downloaded(f) if f.resumed_from > 0 => {
            format!("{check} (resumed at {})", human_bytes(f.resumed_from))
        }
        FileOutcome::Downloaded(f) if f.attempts > 1 => {
            format!("{check} (resumed after {} dropped connection(s))", f.attempts - 1)
        }
        FileOutcome::Downloaded(_) => check.to_string(),
    }
}

/// A hub error with what to do about it: for an unreachable hub, how to copy a model in by hand.
fn explain(e: HubError, hub: &Hub, repo: &str, dir: &Path) -> anyhow::Error {
    match e {
        HubError::Unreachable { .. } => anyhow::anyhow!("{e}\n{}", by_hand(hub, repo, dir)),
        HubError::Transfer { .. } => anyhow::anyhow!(
            "{e}\nThe part downloaded so far is kept: run the same command again to resume."
        ),
        other => other.into(),
    }
}

/// How to install the model without this command.
pub fn by_hand(hub: &Hub, repo: &str, dir: &Path) -> String {
    let config = crate::config::Config::default_path()
        .map_or_else(|| "config.toml".into(), |p| p.display().to_string());
    format!(
        "To install the model by hand: on a machine that reaches the hub, download these files \
         of {}/{repo}\n  {}\ninto one folder, keeping CosyVoice-BlankEN/ as a subfolder; copy \
         it here (e.g. to {}), then pass --model DIR or put model = \"DIR\" in {config}. \
         `lectern doctor` checks it.",
        hub.endpoint(),
        model_dir::files_to_copy().join("\n  "),
        dir.display()
    )
}

/// `1.2 GiB`.
pub fn human_bytes(n: u64) -> String {
    indicatif::BinaryBytes(n).to_string()
}

/// A progress bar per file: bytes, speed and time left.
struct Bar {
    shown: bool,
    bar: Option<ProgressBar>,
}

impl Bar {
    fn new(shown: bool) -> Self {
        Self { shown, bar: None }
    }

    fn clear(&mut self) {
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
        }
    }
}

impl Progress for Bar {
    fn start(&mut self, file: &RemoteFile, done: u64) {
        self.clear();
        let style = ProgressStyle::with_template(
            "  {msg:<32} [{bar:28}] {bytes:>10}/{total_bytes:<10} {binary_bytes_per_sec:>12} \
             ETA {eta}",
        )
        .map(|s| s.progress_chars("=> "))
        .unwrap_or_else(|_| ProgressStyle::default_bar());
        // Built whole before its first draw, so a resumed file never shows 0 bytes.
        let bar = if self.shown {
            ProgressBar::new(file.size)
                .with_style(style)
                .with_message(file.path.clone())
                .with_position(done)
        } else {
            ProgressBar::hidden()
        };
        bar.reset_eta();
        self.bar = Some(bar);
    }

    fn advance(&mut self, bytes: u64) {
        if let Some(b) = &self.bar {
            b.inc(bytes);
        }
    }

    fn verifying(&mut self) {
        if let Some(b) = &self.bar {
            b.set_message(format!("{} (checking)", b.message()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_are_found_by_name_or_repository() {
        let (name, repo) = resolve_release(None).unwrap();
        assert_eq!((name.as_str(), repo.as_str()), (RELEASES[0].name, RELEASES[0].repo));
        let (_, repo) = resolve_release(Some("fun-cosyvoice3-0.5b-2512")).unwrap();
        assert_eq!(repo, RELEASES[0].repo);
        let (name, repo) = resolve_release(Some("me/My-CosyVoice3")).unwrap();
        assert_eq!((name.as_str(), repo.as_str()), ("My-CosyVoice3", "me/My-CosyVoice3"));
        let e = resolve_release(Some("CosyVoice9")).unwrap_err().to_string();
        assert!(e.contains("unknown model `CosyVoice9`") && e.contains(RELEASES[0].name), "{e}");
        assert!(resolve_release(Some("a/b/c")).is_err());
    }
}
