//! What a CosyVoice3 model directory must hold, and the check every command that takes
//! `--model` runs before any work ([`check`]): a missing, empty or cut-short file is named, and
//! a directory of the wrong shape (the folder above the model, its tokenizer subfolder, a file)
//! is explained with the path to pass instead. `lectern model download` fetches exactly
//! [`download_selection`] and leaves a [`Manifest`] of sizes and hashes, against which a later
//! check finds a truncated file by its size.
//!
//! The layout is upstream's (`COSYVOICE3.md` §1): the three checkpoints, the Qwen2 config and
//! tokenizer in `CosyVoice-BlankEN/`, and the two ONNX models that `voice add` runs. A tiny
//! test model (`tiny.json`, as the demo and the fixtures) may go without tokenizer files: it
//! falls back to byte ids ([`lectern_text::Tokenizer`]).

use std::fmt;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The tokenizer subfolder of an upstream model directory.
pub const TOKENIZER_DIR: &str = "CosyVoice-BlankEN";
/// The record `lectern model download` leaves in a finished directory.
pub const MANIFEST: &str = ".lectern-model.json";
/// The suffix of a file whose download has not finished.
pub const PARTIAL_SUFFIX: &str = ".part";
/// The marker of a tiny random-weight test model (the demo, the fixtures).
pub const TINY_MARKER: &str = "tiny.json";

/// What a command is about to do with the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelUse {
    /// Speak: the three checkpoints, the Qwen2 config and the tokenizer.
    Speech,
    /// Make a voice (`voice add`): the two ONNX models and the Qwen2 config.
    VoiceMaking,
    /// Both (a downloaded model, `lectern doctor`).
    Everything,
}

/// How a file is checked beyond being there and not empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    /// A `torch.save` zip: it ends with the zip archive's end record.
    Checkpoint,
    /// Parsed whole.
    Json,
    /// Only present and not empty (an ONNX protobuf or BPE merges have no cheap end marker).
    Opaque,
}

struct Needed {
    path: &'static str,
    format: Format,
    speech: bool,
    voices: bool,
}

const MODEL_FILES: &[Needed] = &[
    Needed { path: "llm.pt", format: Format::Checkpoint, speech: true, voices: false },
    Needed { path: "flow.pt", format: Format::Checkpoint, speech: true, voices: false },
    Needed { path: "hift.pt", format: Format::Checkpoint, speech: true, voices: false },
    Needed {
        path: "CosyVoice-BlankEN/config.json",
        format: Format::Json,
        speech: true,
        voices: true,
    },
    Needed {
        path: "speech_tokenizer_v3.onnx",
        format: Format::Opaque,
        speech: false,
        voices: true,
    },
    Needed { path: "campplus.onnx", format: Format::Opaque, speech: false, voices: true },
];

/// The Qwen2 tokenizer in one file (`tokenizer.json`)…
const TOKENIZER_JSON: &str = "CosyVoice-BlankEN/tokenizer.json";
/// …or as vocabulary, merges and the added special tokens, as upstream ships it.
const TOKENIZER_PARTS: &[(&str, Format)] = &[
    ("CosyVoice-BlankEN/vocab.json", Format::Json),
    ("CosyVoice-BlankEN/merges.txt", Format::Opaque),
    ("CosyVoice-BlankEN/tokenizer_config.json", Format::Json),
];

/// The files of the model directory that `use_` needs (the tokenizer files apart).
pub fn required_files(use_: ModelUse) -> Vec<&'static str> {
    MODEL_FILES
        .iter()
        .filter(|f| match use_ {
            ModelUse::Speech => f.speech,
            ModelUse::VoiceMaking => f.voices,
            ModelUse::Everything => true,
        })
        .map(|f| f.path)
        .collect()
}

/// Every file of a complete model directory, for the hand-copy instructions.
pub fn files_to_copy() -> Vec<&'static str> {
    let mut all = required_files(ModelUse::Everything);
    all.extend(TOKENIZER_PARTS.iter().map(|(p, _)| *p));
    all
}

/// The files a download fetches, out of the paths a repository lists: every model file and the
/// tokenizer files the repository has (its `tokenizer.json` if any, and the vocabulary, merges
/// and special tokens). Errors name what the repository lacks.
pub fn download_selection(listed: &[&str]) -> Result<Vec<&'static str>, String> {
    let has = |p: &str| listed.contains(&p);
    let mut missing: Vec<&str> = MODEL_FILES.iter().map(|f| f.path).filter(|p| !has(p)).collect();
    let parts_listed = TOKENIZER_PARTS.iter().all(|(p, _)| has(p));
    if !has(TOKENIZER_JSON) && !parts_listed {
        missing.push("CosyVoice-BlankEN/tokenizer.json (or vocab.json, merges.txt and tokenizer_config.json)");
    }
    if !missing.is_empty() {
        return Err(format!("it has no {}", missing.join(", ")));
    }
    let mut chosen: Vec<&'static str> = MODEL_FILES.iter().map(|f| f.path).collect();
    chosen.extend(std::iter::once(TOKENIZER_JSON).filter(|p| has(p)));
    chosen.extend(TOKENIZER_PARTS.iter().map(|(p, _)| *p).filter(|p| has(p)));
    Ok(chosen)
}

/// The record of a finished download: where the files came from, their sizes and hashes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// The repository, e.g. `FunAudioLLM/Fun-CosyVoice3-0.5B-2512`.
    pub repo: String,
    /// The commit the files were taken from.
    pub revision: String,
    /// The hub's address.
    pub endpoint: String,
    pub files: Vec<ManifestFile>,
}

/// One downloaded file: its path in the directory, size and the hub's hash of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestFile {
    pub path: String,
    pub size: u64,
    /// SHA-256 of the contents (files the hub keeps in LFS).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// Git's blob hash (small files kept in git itself).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_sha1: Option<String>,
}

impl Manifest {
    /// The manifest of `dir`, if a download left one that parses.
    pub fn read(dir: &Path) -> Option<Self> {
        let text = std::fs::read_to_string(dir.join(MANIFEST)).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// Writes it into `dir`.
    pub fn write(&self, dir: &Path) -> std::io::Result<()> {
        let text = serde_json::to_string_pretty(self).map_err(std::io::Error::other)?;
        std::fs::write(dir.join(MANIFEST), text + "\n")
    }

    fn size_of(&self, path: &str) -> Option<u64> {
        self.files.iter().find(|f| f.path == path).map(|f| f.size)
    }
}

/// A model directory that passed [`check`].
#[derive(Debug, Clone)]
pub struct CheckedModel {
    pub dir: PathBuf,
    /// A tiny random-weight test model (`tiny.json`).
    pub tiny: bool,
    /// The tokenizer files found: `tokenizer.json`, `vocab.json + merges.txt`, or the tiny
    /// model's byte fallback.
    pub tokenizer: &'static str,
    /// What `lectern model download` recorded, if it made this directory.
    pub manifest: Option<Manifest>,
}

/// One file in error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileProblem {
    /// The path in the model directory.
    pub file: String,
    /// What is wrong with it.
    pub what: String,
}

/// Why a model directory cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelDirError {
    #[error(
        "model directory not found: {}\n  `lectern model download` fetches the model (or pass \
         --model with the folder that holds llm.pt)",
        .0.display()
    )]
    NotFound(PathBuf),
    #[error("--model takes the model's folder, and {} is a file{hint}", path.display())]
    IsAFile { path: PathBuf, hint: String },
    #[error("{} holds no CosyVoice3 model: {hint}", dir.display())]
    WrongLayout { dir: PathBuf, hint: String },
    #[error("{}", incomplete_message(dir, problems, *resumable))]
    Incomplete { dir: PathBuf, problems: Vec<FileProblem>, resumable: bool },
}

fn incomplete_message(dir: &Path, problems: &[FileProblem], resumable: bool) -> String {
    let mut out = format!("model directory {} is incomplete:", dir.display());
    for p in problems {
        out.push_str(&format!("\n  {}: {}", p.file, p.what));
    }
    out.push_str(if resumable {
        "\n  run `lectern model download` again with the same --dir: it resumes where it stopped"
    } else {
        "\n  copy the missing files from the model's release, or fetch it whole with \
         `lectern model download`"
    });
    out
}

/// Checks `dir` for what `use_` needs, reading no more than each file's end (checkpoints) or
/// the small JSON files.
pub fn check(dir: &Path, use_: ModelUse) -> Result<CheckedModel, ModelDirError> {
    if dir.is_file() {
        return Err(ModelDirError::IsAFile { path: dir.to_path_buf(), hint: file_hint(dir) });
    }
    if !dir.is_dir() {
        return Err(ModelDirError::NotFound(dir.to_path_buf()));
    }
    if !looks_like_a_model(dir) {
        return Err(ModelDirError::WrongLayout { dir: dir.to_path_buf(), hint: layout_hint(dir) });
    }
    let manifest = Manifest::read(dir);
    let tiny = dir.join(TINY_MARKER).is_file();
    let mut problems: Vec<FileProblem> = MODEL_FILES
        .iter()
        .filter(|f| required_files(use_).contains(&f.path))
        .filter_map(|f| inspect(dir, f.path, f.format, manifest.as_ref()))
        .collect();
    let mut tokenizer = if tiny { "byte fallback (tiny model)" } else { "" };
    if use_ != ModelUse::VoiceMaking {
        match tokenizer_files(dir, manifest.as_ref()) {
            Ok(found) => tokenizer = found,
            Err(_) if tiny => {}
            Err(mut missing) => problems.append(&mut missing),
        }
    }
    // An unfinished file counts only where this use reads it.
    let reads = |f: &str| {
        required_files(use_).contains(&f)
            || (use_ != ModelUse::VoiceMaking && f.starts_with(TOKENIZER_DIR))
    };
    let partial: Vec<String> = partial_downloads(dir).into_iter().filter(|p| reads(p)).collect();
    for p in &partial {
        let what = "its download did not finish".to_string();
        match problems.iter_mut().find(|q| q.file == *p) {
            Some(q) => q.what = what,
            None => problems.push(FileProblem { file: p.clone(), what }),
        }
    }
    if problems.is_empty() {
        Ok(CheckedModel { dir: dir.to_path_buf(), tiny, tokenizer, manifest })
    } else {
        let resumable = manifest.is_some() || !partial.is_empty();
        Err(ModelDirError::Incomplete { dir: dir.to_path_buf(), problems, resumable })
    }
}

/// Whether `dir` holds any of a model's own files (as opposed to a folder around one).
fn looks_like_a_model(dir: &Path) -> bool {
    MODEL_FILES.iter().any(|f| dir.join(f.path).exists())
        || dir.join(TOKENIZER_DIR).is_dir()
        || dir.join(TINY_MARKER).is_file()
        || dir.join(MANIFEST).is_file()
        || !partial_downloads(dir).is_empty()
}

/// The tokenizer files found, or what is missing of them.
fn tokenizer_files(
    dir: &Path,
    manifest: Option<&Manifest>,
) -> Result<&'static str, Vec<FileProblem>> {
    if dir.join(TOKENIZER_JSON).is_file() {
        return match inspect(dir, TOKENIZER_JSON, Format::Json, manifest) {
            None => Ok("tokenizer.json"),
            Some(p) => Err(vec![p]),
        };
    }
    let problems: Vec<FileProblem> = TOKENIZER_PARTS
        .iter()
        .filter_map(|(path, format)| inspect(dir, path, *format, manifest))
        .collect();
    if problems.is_empty() { Ok("vocab.json + merges.txt") } else { Err(problems) }
}

/// What is wrong with one file, if anything.
fn inspect(
    dir: &Path,
    file: &str,
    format: Format,
    manifest: Option<&Manifest>,
) -> Option<FileProblem> {
    let path = dir.join(file);
    let expected = manifest.and_then(|m| m.size_of(file));
    file_problem(&path, format, expected).map(|what| FileProblem { file: file.to_string(), what })
}

fn file_problem(path: &Path, format: Format, expected: Option<u64>) -> Option<String> {
    let Ok(meta) = std::fs::metadata(path) else { return Some("missing".into()) };
    if meta.is_dir() {
        return Some("is a folder, not a file".into());
    }
    let len = meta.len();
    if len == 0 {
        return Some("empty".into());
    }
    match expected {
        Some(want) if len < want => {
            return Some(format!("truncated: {len} of {want} bytes"));
        }
        Some(want) if len > want => {
            return Some(format!("{len} bytes, but the download was {want}: replaced since?"));
        }
        _ => {}
    }
    match format {
        Format::Checkpoint => match ends_like_a_zip(path, len) {
            Ok(true) => None,
            Ok(false) => Some(
                "truncated or damaged: it lacks the end of the zip archive a PyTorch \
                 checkpoint ends with"
                    .into(),
            ),
            Err(e) => Some(format!("cannot be read: {e}")),
        },
        Format::Json => match std::fs::read(path) {
            Ok(bytes) => serde_json::from_slice::<serde_json::Value>(&bytes)
                .err()
                .map(|e| format!("not valid JSON (truncated?): {e}")),
            Err(e) => Some(format!("cannot be read: {e}")),
        },
        Format::Opaque => None,
    }
}

/// Whether the file's tail holds a zip end-of-central-directory record, which a zip writer
/// puts last: a file cut short (an interrupted copy) has none.
fn ends_like_a_zip(path: &Path, len: u64) -> std::io::Result<bool> {
    // The record is 22 bytes plus a comment of at most 65535.
    const EOCD_SIGNATURE: [u8; 4] = [0x50, 0x4b, 0x05, 0x06];
    const MAX_TAIL: u64 = 22 + 65_535;
    let tail = len.min(MAX_TAIL);
    let mut f = std::fs::File::open(path)?;
    f.seek(SeekFrom::Start(len - tail))?;
    let mut buf = Vec::with_capacity(tail as usize);
    f.take(tail).read_to_end(&mut buf)?;
    Ok(buf.len() >= 22 && buf.windows(4).rev().any(|w| w == EOCD_SIGNATURE))
}

/// The model files whose download did not finish (a `.part` beside them).
fn partial_downloads(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for base in [dir.to_path_buf(), dir.join(TOKENIZER_DIR)] {
        let Ok(entries) = std::fs::read_dir(&base) else { continue };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if let Some(file) = name.strip_suffix(PARTIAL_SUFFIX) {
                let rel = base.join(file);
                let rel = rel.strip_prefix(dir).unwrap_or(&rel);
                found.push(rel.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    found.sort();
    found
}

/// Advice for a `--model` that names a file.
fn file_hint(path: &Path) -> String {
    let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) else {
        return String::new();
    };
    if looks_like_a_model(parent) {
        format!(": pass its folder, --model {}", parent.display())
    } else {
        ": pass the folder that holds llm.pt, flow.pt, hift.pt and CosyVoice-BlankEN/".into()
    }
}

/// Advice for a folder that holds none of a model's files: the model one level down (the
/// folder above it was given), or above (its tokenizer subfolder was given).
fn layout_hint(dir: &Path) -> String {
    if dir.file_name().is_some_and(|n| n == TOKENIZER_DIR) {
        if let Some(parent) = dir.parent().filter(|p| p.join("llm.pt").exists()) {
            return format!(
                "it is the model's tokenizer folder; pass the model's folder, --model {}",
                parent.display()
            );
        }
    }
    let found = find_models_below(dir, 3);
    match found.as_slice() {
        [] => "it holds none of llm.pt, flow.pt, hift.pt, CosyVoice-BlankEN/; pass the folder \
               that does, or fetch the model with `lectern model download`"
            .into(),
        [one] => format!("the model is in a folder inside it; pass --model {}", one.display()),
        many => format!(
            "models are in folders inside it; pass one of them with --model: {}",
            many.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
        ),
    }
}

/// Folders below `dir` (to `depth` levels, as a hub cache's `models--…/snapshots/REV/`) that
/// hold `llm.pt`.
fn find_models_below(dir: &Path, depth: usize) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else { return found };
    let mut subdirs: Vec<PathBuf> =
        entries.flatten().map(|e| e.path()).filter(|p| p.is_dir()).collect();
    subdirs.sort();
    for sub in subdirs {
        if sub.join("llm.pt").exists() {
            found.push(sub);
        } else if depth > 1 {
            found.extend(find_models_below(&sub, depth - 1));
        }
    }
    found
}

impl fmt::Display for ModelUse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Speech => "speech",
            Self::VoiceMaking => "making voices",
            Self::Everything => "speech and making voices",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/cosyvoice3-tiny-a/model");

    /// A copy of the fixture model (its ONNX links followed) in a temp dir.
    fn fixture_copy() -> (tempfile::TempDir, PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("model");
        copy_dir(Path::new(FIXTURE), &dir);
        (tmp, dir)
    }

    fn copy_dir(src: &Path, dst: &Path) {
        std::fs::create_dir_all(dst).unwrap();
        for e in std::fs::read_dir(src).unwrap() {
            let p = e.unwrap().path();
            let to = dst.join(p.file_name().unwrap());
            if p.is_dir() { copy_dir(&p, &to) } else { std::fs::copy(&p, &to).map(drop).unwrap() }
        }
    }

    fn problems(e: ModelDirError) -> Vec<FileProblem> {
        match e {
            ModelDirError::Incomplete { problems, .. } => problems,
            other => panic!("not an incomplete directory: {other}"),
        }
    }

    #[test]
    fn the_fixture_model_is_complete_for_every_use() {
        for use_ in [ModelUse::Speech, ModelUse::VoiceMaking, ModelUse::Everything] {
            let m = check(Path::new(FIXTURE), use_).unwrap_or_else(|e| panic!("{use_}: {e}"));
            assert!(m.tiny);
        }
    }

    #[test]
    fn a_cut_short_checkpoint_is_named() {
        let (_tmp, dir) = fixture_copy();
        let llm = dir.join("llm.pt");
        let len = std::fs::metadata(&llm).unwrap().len();
        std::fs::OpenOptions::new().write(true).open(&llm).unwrap().set_len(len / 2).unwrap();
        let e = check(&dir, ModelUse::Speech).unwrap_err();
        let text = e.to_string();
        let p = problems(e);
        assert_eq!(p.len(), 1, "{text}");
        assert_eq!(p[0].file, "llm.pt");
        assert!(p[0].what.contains("truncated"), "{text}");
        // Making a voice does not read llm.pt.
        assert!(check(&dir, ModelUse::VoiceMaking).is_ok());
    }

    #[test]
    fn the_manifest_names_the_size_a_file_falls_short_of() {
        let (_tmp, dir) = fixture_copy();
        let len = std::fs::metadata(dir.join("hift.pt")).unwrap().len();
        let manifest = Manifest {
            repo: "o/r".into(),
            revision: "abc".into(),
            endpoint: "http://hub".into(),
            files: vec![ManifestFile {
                path: "hift.pt".into(),
                size: len + 10,
                sha256: None,
                git_sha1: None,
            }],
        };
        manifest.write(&dir).unwrap();
        let e = check(&dir, ModelUse::Speech).unwrap_err();
        assert!(e.to_string().contains("resumes"), "{e}");
        let p = problems(e);
        assert_eq!(p[0].what, format!("truncated: {len} of {} bytes", len + 10));
    }

    #[test]
    fn missing_files_and_unfinished_downloads_are_listed() {
        let (_tmp, dir) = fixture_copy();
        std::fs::remove_file(dir.join("flow.pt")).unwrap();
        std::fs::remove_file(dir.join("campplus.onnx")).unwrap();
        std::fs::write(dir.join("campplus.onnx.part"), b"half").unwrap();
        let p = problems(check(&dir, ModelUse::Everything).unwrap_err());
        let named: Vec<(&str, &str)> =
            p.iter().map(|p| (p.file.as_str(), p.what.as_str())).collect();
        let unfinished = "its download did not finish";
        assert_eq!(named, vec![("flow.pt", "missing"), ("campplus.onnx", unfinished)]);
    }

    #[test]
    fn a_full_size_model_needs_its_tokenizer_files() {
        let (_tmp, dir) = fixture_copy();
        std::fs::remove_file(dir.join(TINY_MARKER)).unwrap();
        let p = problems(check(&dir, ModelUse::Speech).unwrap_err());
        let files: Vec<&str> = p.iter().map(|p| p.file.as_str()).collect();
        assert_eq!(files, TOKENIZER_PARTS.iter().map(|(f, _)| *f).collect::<Vec<_>>());
        std::fs::write(dir.join(TOKENIZER_JSON), "{\"model\": ").unwrap();
        let p = problems(check(&dir, ModelUse::Speech).unwrap_err());
        assert_eq!(p[0].file, TOKENIZER_JSON);
        assert!(p[0].what.starts_with("not valid JSON"), "{}", p[0].what);
        std::fs::write(dir.join(TOKENIZER_JSON), "{}").unwrap();
        assert_eq!(check(&dir, ModelUse::Speech).unwrap().tokenizer, "tokenizer.json");
    }

    #[test]
    fn a_wrong_folder_or_a_file_points_to_the_model() {
        let (tmp, dir) = fixture_copy();
        let e = check(tmp.path(), ModelUse::Speech).unwrap_err();
        assert!(matches!(e, ModelDirError::WrongLayout { .. }), "{e}");
        assert!(e.to_string().contains(&format!("--model {}", dir.display())), "{e}");
        let e = check(&dir.join(TOKENIZER_DIR), ModelUse::Speech).unwrap_err();
        assert!(e.to_string().contains("tokenizer folder"), "{e}");
        assert!(e.to_string().ends_with(&format!("--model {}", dir.display())), "{e}");
        let e = check(&dir.join("llm.pt"), ModelUse::Speech).unwrap_err();
        assert!(matches!(e, ModelDirError::IsAFile { .. }), "{e}");
        assert!(e.to_string().ends_with(&format!("--model {}", dir.display())), "{e}");
        let e = check(&tmp.path().join("nowhere"), ModelUse::Speech).unwrap_err();
        assert!(e.to_string().contains("model download"), "{e}");
    }

    #[test]
    fn a_download_takes_the_model_files_and_no_more() {
        let listed = [
            "README.md",
            "llm.pt",
            "llm.rl.pt",
            "flow.pt",
            "hift.pt",
            "campplus.onnx",
            "speech_tokenizer_v3.onnx",
            "speech_tokenizer_v3.batch.onnx",
            "flow.decoder.estimator.fp32.onnx",
            "CosyVoice-BlankEN/config.json",
            "CosyVoice-BlankEN/model.safetensors",
            "CosyVoice-BlankEN/vocab.json",
            "CosyVoice-BlankEN/merges.txt",
            "CosyVoice-BlankEN/tokenizer_config.json",
        ];
        let mut got = download_selection(&listed).unwrap();
        got.sort_unstable();
        let mut want = files_to_copy();
        want.sort_unstable();
        assert_eq!(got, want);
        let err = download_selection(&listed[..4]).unwrap_err();
        for absent in ["campplus.onnx", "speech_tokenizer_v3.onnx", "config.json", "vocab.json"] {
            assert!(err.contains(absent), "{err}");
        }
        assert!(!err.contains("flow.pt"), "{err}");
    }
}
