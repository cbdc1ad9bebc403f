//! What a take's content is: the segment's LM input ids and the content hashes of the voice and
//! the model (never their names or paths), the mode, and the text frontend's version. Hashes of
//! large weight files are cached in the project by (path, size, modification time).

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use anyhow::Context;
use sha2::{Digest, Sha256};

use crate::store::Project;
use lectern_engine::protocol::{Casting, TakeContent};
use lectern_voice::Voice;

/// Recorded in every take's content, and never bumped: a take is stale when the LM input ids
/// (or voice, model, mode, language, pace) it was made from differ from what the manuscript
/// gives now, so a change of the reading rules re-renders exactly the segments whose ids it
/// changes, not the whole book. (Bumping it would make every take of every project stale.)
pub const FRONTEND_VERSION: &str = "lectern-text-1";

/// The voice and model part of every take's content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContentBasis {
    pub voice_hash: String,
    pub model_hash: String,
}

impl ContentBasis {
    /// Hashes the voice and the model directory (weights through the project's cache).
    pub fn compute(voice: &Voice, model_dir: &Path, cache: &mut Project) -> anyhow::Result<Self> {
        Ok(Self { voice_hash: voice_hash(voice)?, model_hash: model_hash(model_dir, cache)? })
    }

    /// The content of a segment whose text the LM gets as `text_ids`, in `language` (the
    /// segment's non-English language, [`lectern_text::Segment::language`]), spoken by the
    /// book's voice, zero-shot, at pace 1.
    #[must_use]
    pub fn content(&self, text_ids: Vec<u32>, language: Option<String>) -> TakeContent {
        self.cast_content(text_ids, language, &self.voice_hash, &Casting::default())
    }

    /// [`Self::content`] spoken by the voice of hash `voice_hash` as `casting` says (mode,
    /// instruction and pace are content: a change of any makes the take stale).
    #[must_use]
    pub fn cast_content(
        &self,
        text_ids: Vec<u32>,
        language: Option<String>,
        voice_hash: &str,
        casting: &Casting,
    ) -> TakeContent {
        TakeContent {
            text_ids,
            voice_hash: voice_hash.to_string(),
            model_hash: self.model_hash.clone(),
            mode: String::new(),
            instruction: None,
            frontend_version: FRONTEND_VERSION.into(),
            language,
            pace: None,
        }
        .with_casting(casting)
    }
}

fn hex(digest: &[u8]) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// SHA-256 of a file, streamed.
pub fn file_sha256(path: &Path) -> io::Result<String> {
    let mut file = File::open(path)?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(hex(&h.finalize()))
}

/// The voice's content: its prompt tensors file and its transcript. The manifest's name and
/// creation time are not content: renaming a voice keeps its takes; `voice add --force` with
/// another recording makes them stale.
pub fn voice_hash(voice: &Voice) -> anyhow::Result<String> {
    let tensors = voice.dir.join(lectern_voice::TENSORS);
    let file = file_sha256(&tensors).with_context(|| format!("hashing {}", tensors.display()))?;
    let mut h = Sha256::new();
    h.update(file.as_bytes());
    h.update(b"\0");
    h.update(voice.manifest.prompt_text.as_bytes());
    Ok(hex(&h.finalize()))
}

/// The files of a model directory that make its output: weights, configuration and tokenizer
/// files (the ONNX models make voices, whose own hash covers them), sorted by relative path.
pub fn model_files(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for sub in [dir.to_path_buf(), dir.join("CosyVoice-BlankEN")] {
        if !sub.is_dir() {
            continue;
        }
        for entry in std::fs::read_dir(&sub)? {
            let path = entry?.path();
            let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
            let wanted = matches!(ext, "pt" | "safetensors" | "json" | "yaml" | "txt" | "model");
            if path.is_file() && wanted {
                files.push(path);
            }
        }
    }
    files.sort();
    Ok(files)
}

/// The model's content: the SHA-256 of each of its [`model_files`] with its relative path.
/// Moving the directory keeps its takes; replacing a weight file makes them stale.
pub fn model_hash(dir: &Path, cache: &mut Project) -> anyhow::Result<String> {
    let files = model_files(dir).with_context(|| format!("listing {}", dir.display()))?;
    anyhow::ensure!(!files.is_empty(), "no model files in {}", dir.display());
    let mut h = Sha256::new();
    for path in files {
        let rel = path.strip_prefix(dir).unwrap_or(&path).to_string_lossy().replace('\\', "/");
        let sha = cached_sha256(&path, cache)?;
        h.update(rel.as_bytes());
        h.update(b"\0");
        h.update(sha.as_bytes());
        h.update(b"\n");
    }
    Ok(hex(&h.finalize()))
}

/// A file's SHA-256 from the project's cache when its size and modification time are the ones
/// cached, else computed (a multi-gigabyte checkpoint takes seconds) and cached.
fn cached_sha256(path: &Path, cache: &mut Project) -> anyhow::Result<String> {
    let meta = std::fs::metadata(path).with_context(|| format!("reading {}", path.display()))?;
    let mtime_ns = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos() as i64);
    let canonical = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    if let Some(sha) = cache.cached_file_hash(&canonical, meta.len(), mtime_ns)? {
        return Ok(sha);
    }
    let sha = file_sha256(path).with_context(|| format!("hashing {}", path.display()))?;
    cache.cache_file_hash(&canonical, meta.len(), mtime_ns, &sha)?;
    Ok(sha)
}
