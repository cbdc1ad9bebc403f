//! One file from the hub into a folder: written to `FILE.part`, resumed from there with a
//! `Range` request after a dropped connection (in the same run, or the next one), and moved to
//! its name only when its size and hash match the hub's listing. A file that fails its hash is
//! removed, never left looking complete.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use sha2::Digest;

use super::{Expected, Hub, HubError, RemoteFile, check_status};
use crate::model_dir::PARTIAL_SUFFIX;

/// Tries of one file before the run gives up (it resumes from the `.part` each time).
const ATTEMPTS: u32 = 4;
/// The wait before the first retry, doubled after each.
const FIRST_BACKOFF: Duration = Duration::from_millis(500);

/// What a download reports as it goes (a progress bar; nothing in tests).
pub trait Progress {
    /// The transfer of `file` starts (again) with `done` bytes already on disk.
    fn start(&mut self, file: &RemoteFile, done: u64);
    /// `bytes` more arrived.
    fn advance(&mut self, bytes: u64);
    /// The file is being hashed.
    fn verifying(&mut self);
}

/// No progress report.
impl Progress for () {
    fn start(&mut self, _: &RemoteFile, _: u64) {}
    fn advance(&mut self, _: u64) {}
    fn verifying(&mut self) {}
}

/// How one file came to be in place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fetched {
    /// Bytes that were on disk from an earlier, interrupted transfer when this run began.
    pub resumed_from: u64,
    /// Transfers it took (1 when nothing dropped).
    pub attempts: u32,
}

/// Where a file of `dir` is written until it is complete.
pub fn partial_path(dest: &Path) -> PathBuf {
    let mut name = dest.file_name().unwrap_or_default().to_os_string();
    name.push(PARTIAL_SUFFIX);
    dest.with_file_name(name)
}

/// Downloads `file` of `repo` at `commit` to `dir/file.path`, resuming an earlier `.part`.
pub fn fetch_file(
    hub: &Hub,
    repo: &str,
    commit: &str,
    file: &RemoteFile,
    dir: &Path,
    progress: &mut dyn Progress,
) -> Result<Fetched, HubError> {
    let dest = dir.join(&file.path);
    let part = partial_path(&dest);
    if let Some(parent) = dest.parent() {
        std::fs::create_dir_all(parent).map_err(|e| io(parent, e))?;
    }
    let url = hub.file_url(repo, commit, &file.path);
    let resumed_from = std::fs::metadata(&part).map_or(0, |m| m.len().min(file.size));
    let mut attempts = 0;
    loop {
        attempts += 1;
        match transfer(hub, &url, file, &part, progress) {
            Ok(()) => break,
            Err(e) if e.is_transient() && attempts < ATTEMPTS => {
                std::thread::sleep(FIRST_BACKOFF * 2u32.pow(attempts - 1));
            }
            Err(e) => return Err(e),
        }
    }
    progress.verifying();
    verify(&part, file)?;
    std::fs::rename(&part, &dest).map_err(|e| io(&dest, e))?;
    Ok(Fetched { resumed_from, attempts })
}

/// One request: the rest of the file, appended to `part`.
fn transfer(
    hub: &Hub,
    url: &str,
    file: &RemoteFile,
    part: &Path,
    progress: &mut dyn Progress,
) -> Result<(), HubError> {
    let mut done = std::fs::metadata(part).map_or(0, |m| m.len());
    if done > file.size {
        done = restart(part)?;
    }
    if done == file.size {
        return Ok(());
    }
    let mut response = hub.get(url, (done > 0).then_some(done))?;
    let status = response.status().as_u16();
    match status {
        206 if content_range_starts_at(&response, done) => {}
        // The server sent the whole file (it ignored the range), or the part is stale.
        200 | 206 | 416 => {
            done = restart(part)?;
            if status != 200 {
                response = hub.get(url, None)?;
                check_status(response.status().as_u16(), &file.path, url)?;
            }
        }
        _ => check_status(status, &format!("file {}", file.path), url)?,
    }
    progress.start(file, done);
    let out = OpenOptions::new().create(true).append(true).open(part).map_err(|e| io(part, e))?;
    let mut out = BufWriter::with_capacity(1 << 20, out);
    let mut body = response.body_mut().with_config().limit(u64::MAX).reader();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = match body.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) => {
                out.flush().map_err(|e| io(part, e))?;
                return Err(dropped(file, done, &e.to_string()));
            }
        };
        out.write_all(&buf[..n]).map_err(|e| io(part, e))?;
        done += n as u64;
        progress.advance(n as u64);
    }
    out.flush().map_err(|e| io(part, e))?;
    out.get_ref().sync_all().map_err(|e| io(part, e))?;
    if done < file.size {
        return Err(dropped(file, done, "the connection closed early"));
    }
    Ok(())
}

fn dropped(file: &RemoteFile, done: u64, reason: &str) -> HubError {
    HubError::Transfer {
        file: file.path.clone(),
        reason: format!("transfer stopped at {done} of {} bytes: {reason}", file.size),
    }
}

/// Whether a 206 answer resumes at byte `from` (`Content-Range: bytes FROM-…`).
fn content_range_starts_at(response: &ureq::http::Response<ureq::Body>, from: u64) -> bool {
    response
        .headers()
        .get("content-range")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("bytes "))
        .and_then(|v| v.split('-').next())
        .is_some_and(|start| start.trim() == from.to_string())
}

/// Empties `part`; returns its new length, 0.
fn restart(part: &Path) -> Result<u64, HubError> {
    File::create(part).map_err(|e| io(part, e))?;
    Ok(0)
}

/// Checks the finished `part` against the listing; removes it when it does not match.
fn verify(part: &Path, file: &RemoteFile) -> Result<(), HubError> {
    let len = std::fs::metadata(part).map_err(|e| io(part, e))?.len();
    let got = if len == file.size { Some(hash_file(part, &file.expected)?) } else { None };
    let want = match &file.expected {
        Expected::Sha256(h) | Expected::GitSha1(h) => h,
    };
    if got.as_ref() == Some(want) {
        return Ok(());
    }
    let _ = std::fs::remove_file(part);
    let found = match got {
        Some(h) => format!("{} {h}", algorithm(&file.expected)),
        None => format!("{len} bytes"),
    };
    Err(HubError::Integrity {
        file: file.path.clone(),
        reason: format!(
            "the download does not match the hub's listing ({} bytes, {} {want}; got {found}): \
             it was removed; run the command again to fetch it anew",
            file.size,
            algorithm(&file.expected)
        ),
    })
}

fn algorithm(expected: &Expected) -> &'static str {
    match expected {
        Expected::Sha256(_) => "SHA-256",
        Expected::GitSha1(_) => "git blob SHA-1",
    }
}

/// The hash the hub lists for `path`'s contents, lower-case hex.
pub fn hash_file(path: &Path, kind: &Expected) -> Result<String, HubError> {
    let mut f = File::open(path).map_err(|e| io(path, e))?;
    let len = f.metadata().map_err(|e| io(path, e))?.len();
    match kind {
        Expected::Sha256(_) => digest_reader(sha2::Sha256::new(), &mut f, path),
        Expected::GitSha1(_) => {
            let mut h = sha1::Sha1::new();
            h.update(format!("blob {len}\0").as_bytes());
            digest_reader(h, &mut f, path)
        }
    }
}

fn digest_reader<D: Digest>(mut hasher: D, r: &mut File, path: &Path) -> Result<String, HubError> {
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = r.read(&mut buf).map_err(|e| io(path, e))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hasher.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

fn io(path: &Path, source: std::io::Error) -> HubError {
    HubError::Io { path: path.display().to_string(), source }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_git_blob_hash_is_gits() {
        // `printf 'hello\n' | git hash-object --stdin`
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("f");
        std::fs::write(&p, b"hello\n").unwrap();
        let got = hash_file(&p, &Expected::GitSha1(String::new())).unwrap();
        assert_eq!(got, "ce013625030ba8dba906f756967f9e9ca394464a");
        let got = hash_file(&p, &Expected::Sha256(String::new())).unwrap();
        assert_eq!(got, "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03");
    }

    #[test]
    fn a_file_that_fails_its_hash_is_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let part = tmp.path().join("x.json.part");
        std::fs::write(&part, b"hello\n").unwrap();
        let file = RemoteFile {
            path: "x.json".into(),
            size: 6,
            expected: Expected::GitSha1("0".repeat(40)),
        };
        let e = verify(&part, &file).unwrap_err();
        assert!(e.to_string().contains("x.json: the download does not match"), "{e}");
        assert!(e.to_string().contains("ce013625030ba8dba906f756967f9e9ca394464a"), "{e}");
        assert!(!part.exists());
    }

    #[test]
    fn the_partial_file_sits_beside_the_file() {
        let p = partial_path(Path::new("/m/CosyVoice-BlankEN/vocab.json"));
        assert_eq!(p, Path::new("/m/CosyVoice-BlankEN/vocab.json.part"));
    }
}
