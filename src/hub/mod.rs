//! A Hugging Face hub client for `lectern model download`: a repository's file listing with
//! sizes and hashes, and resumable, verified file downloads ([`fetch`]).
//!
//! It speaks the hub's HTTP API with `ureq` rather than through the `hf-hub` crate. hf-hub 0.4
//! (what candle's examples use) writes only into its cache layout (blobs and snapshot links),
//! not a folder of the user's choosing; 1.0 can, but neither checks a file against the hub's
//! hash, and 1.0 brings an async stack (tokio, reqwest, the xet client) for what is here two
//! kinds of GET.
//!
//! - Listing: `GET {endpoint}/api/models/{repo}/revision/{rev}?blobs=true` gives the commit
//!   and, per file, its size, git blob id and, for LFS files, the SHA-256 of the contents.
//! - Files: `GET {endpoint}/{repo}/resolve/{commit}/{path}`, with `Range: bytes=N-` to resume
//!   (the hub redirects LFS files to its CDN, which honours ranges).
//!
//! The address is `$HF_ENDPOINT` (as the Hugging Face tools read it), else
//! `https://huggingface.co`; `$HF_TOKEN` is sent as a bearer token when set. Connecting gives up
//! after a few seconds, so an offline machine hears so at once.

pub mod fetch;

use std::time::Duration;

use serde::Deserialize;

/// The hub's address when `HF_ENDPOINT` is not set.
pub const DEFAULT_ENDPOINT: &str = "https://huggingface.co";
/// How long resolving the host and connecting may take before the hub counts as unreachable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long the hub may go silent in the middle of a response before the read is retried.
const READ_TIMEOUT: Duration = Duration::from_secs(30);

/// Why talking to the hub failed.
#[derive(Debug, thiserror::Error)]
pub enum HubError {
    #[error(
        "cannot reach the model hub at {endpoint} (offline, or a wrong HF_ENDPOINT?): {reason}"
    )]
    Unreachable { endpoint: String, reason: String },
    #[error("not found on the hub: {what} ({url})")]
    NotFound { what: String, url: String },
    #[error(
        "the hub refused {what} ({url}, HTTP {status}): a private or gated repository needs \
         a token in HF_TOKEN"
    )]
    Refused { what: String, url: String, status: u16 },
    #[error("the hub answered HTTP {status} for {url}")]
    Status { url: String, status: u16 },
    #[error("the hub's answer for {url} is not what the API gives: {reason}")]
    BadAnswer { url: String, reason: String },
    #[error("{file}: {reason}")]
    Transfer { file: String, reason: String },
    #[error("{file}: {reason}")]
    Integrity { file: String, reason: String },
    #[error("{path}: {source}")]
    Io { path: String, source: std::io::Error },
}

impl HubError {
    /// Whether trying again may help: the connection dropped or went silent mid-transfer.
    pub fn is_transient(&self) -> bool {
        matches!(self, Self::Transfer { .. })
    }
}

/// How the hub says a file's contents are checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expected {
    /// SHA-256 of the contents (LFS files), lower-case hex.
    Sha256(String),
    /// Git's blob hash, SHA-1 of `blob {size}\0` and the contents (files kept in git).
    GitSha1(String),
}

/// One file of a repository, as the hub lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteFile {
    pub path: String,
    pub size: u64,
    pub expected: Expected,
}

/// A repository at one commit.
#[derive(Debug, Clone)]
pub struct RepoListing {
    /// The commit the revision named.
    pub commit: String,
    pub files: Vec<RemoteFile>,
}

/// A connection to one hub.
#[derive(Debug, Clone)]
pub struct Hub {
    endpoint: String,
    token: Option<String>,
    agent: ureq::Agent,
}

#[derive(Deserialize)]
struct RevisionAnswer {
    sha: String,
    siblings: Vec<Sibling>,
}

#[derive(Deserialize)]
struct Sibling {
    rfilename: String,
    size: Option<u64>,
    #[serde(rename = "blobId")]
    blob_id: Option<String>,
    lfs: Option<LfsInfo>,
}

#[derive(Deserialize)]
struct LfsInfo {
    sha256: String,
    size: u64,
}

impl Hub {
    /// The hub at `$HF_ENDPOINT`, else [`DEFAULT_ENDPOINT`], with `$HF_TOKEN` if set.
    pub fn from_env() -> Self {
        let endpoint = std::env::var("HF_ENDPOINT")
            .ok()
            .filter(|e| !e.trim().is_empty())
            .unwrap_or_else(|| DEFAULT_ENDPOINT.to_string());
        let token = std::env::var("HF_TOKEN").ok().filter(|t| !t.trim().is_empty());
        Self::new(&endpoint, token)
    }

    /// The hub at `endpoint`.
    pub fn new(endpoint: &str, token: Option<String>) -> Self {
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_resolve(Some(CONNECT_TIMEOUT))
            .timeout_connect(Some(CONNECT_TIMEOUT))
            .timeout_recv_response(Some(READ_TIMEOUT))
            .timeout_per_read(Some(READ_TIMEOUT))
            .user_agent(concat!("lectern/", env!("CARGO_PKG_VERSION")))
            .build()
            .into();
        Self { endpoint: endpoint.trim_end_matches('/').to_string(), token, agent }
    }

    /// The hub's address.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The files of `repo` at `revision` (a branch, tag or commit), with sizes and hashes.
    pub fn list(&self, repo: &str, revision: &str) -> Result<RepoListing, HubError> {
        let url = format!("{}/api/models/{repo}/revision/{revision}?blobs=true", self.endpoint);
        let what = format!("model {repo} at revision {revision}");
        let mut response = self.get(&url, None)?;
        check_status(response.status().as_u16(), &what, &url)?;
        let bad = |reason: String| HubError::BadAnswer { url: url.clone(), reason };
        let text = response.body_mut().read_to_string().map_err(|e| bad(e.to_string()))?;
        let answer: RevisionAnswer = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
        let files = answer
            .siblings
            .into_iter()
            .map(|s| remote_file(s, &url))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(RepoListing { commit: answer.sha, files })
    }

    /// The address of one file of `repo` at `commit`.
    pub fn file_url(&self, repo: &str, commit: &str, path: &str) -> String {
        format!("{}/{repo}/resolve/{commit}/{path}", self.endpoint)
    }

    /// `GET url`, from byte `from` on when given; connection failures are [`HubError::Unreachable`].
    fn get(
        &self,
        url: &str,
        from: Option<u64>,
    ) -> Result<ureq::http::Response<ureq::Body>, HubError> {
        let mut request = self.agent.get(url);
        if let Some(token) = &self.token {
            request = request.header("Authorization", format!("Bearer {token}"));
        }
        if let Some(from) = from {
            request = request.header("Range", format!("bytes={from}-"));
        }
        request.call().map_err(|e| self.unreachable(&e))
    }

    fn unreachable(&self, e: &ureq::Error) -> HubError {
        let reason = match e {
            ureq::Error::HostNotFound => "host not found".into(),
            ureq::Error::ConnectionFailed => "the connection failed".into(),
            ureq::Error::Timeout(t) => format!("no answer in time ({t})"),
            ureq::Error::Io(io) => io.to_string(),
            other => other.to_string(),
        };
        HubError::Unreachable { endpoint: self.endpoint.clone(), reason }
    }
}

fn check_status(status: u16, what: &str, url: &str) -> Result<(), HubError> {
    let (what, url) = (what.to_string(), url.to_string());
    match status {
        200..=299 => Ok(()),
        404 => Err(HubError::NotFound { what, url }),
        // The hub answers 401 for a repository that does not exist as for a gated one.
        401 | 403 => Err(HubError::Refused { what, url, status }),
        status => Err(HubError::Status { url, status }),
    }
}

fn remote_file(s: Sibling, url: &str) -> Result<RemoteFile, HubError> {
    let bad = |reason: String| HubError::BadAnswer { url: url.to_string(), reason };
    let (size, expected) = match (s.lfs, s.blob_id, s.size) {
        (Some(lfs), _, _) => (lfs.size, Expected::Sha256(lfs.sha256.to_ascii_lowercase())),
        (None, Some(blob), Some(size)) => (size, Expected::GitSha1(blob.to_ascii_lowercase())),
        _ => {
            return Err(bad(format!(
                "{}: no size and hash (was ?blobs=true ignored?)",
                s.rfilename
            )));
        }
    };
    Ok(RemoteFile { path: s.rfilename, size, expected })
}
