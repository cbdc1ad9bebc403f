//! `lectern voice add`: reference recording + transcript → a voice directory under `voices/`.
//!
//! The voice is written to a hidden temporary directory next to its destination and renamed
//! into place, so an interrupted run never leaves a half-written voice behind, and an existing
//! voice is only replaced when asked (`--force`).

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

use super::extract::{PromptModels, VoiceInfo, build_voice, extract_features};
use super::reference::{Reference, load_reference};
use super::speech::SpeechEvidence;
use super::{ModelSignature, Voice, rfc3339_utc};

/// One `voice add` request.
#[derive(Debug, Clone)]
pub struct AddRequest {
    pub reference: PathBuf,
    pub text: String,
    pub name: String,
    /// The model directory holding the two ONNX models (and the LM config for the signature).
    pub model_dir: PathBuf,
    /// Where voices live; the voice goes to `voices_dir/name`.
    pub voices_dir: PathBuf,
    /// Replace an existing voice of the same name.
    pub force: bool,
    /// Use a reference that does not sound like speech (a warning instead of a refusal).
    pub allow_non_speech: bool,
}

/// What `voice add` did, for the report it prints.
#[derive(Debug)]
pub struct Added {
    pub voice: Voice,
    /// Tokens and mel frames before the alignment cut (P0, T_mel).
    pub raw_tokens: usize,
    pub raw_mel_frames: usize,
    /// Things the user should know about the voice (a reference let through with
    /// `allow_non_speech`).
    pub warnings: Vec<String>,
}

/// Extracts the prompt and writes the voice. Nothing is written when anything fails.
pub fn add_voice(req: &AddRequest) -> anyhow::Result<Added> {
    check_name(&req.name)?;
    let text = req.text.trim();
    if text.is_empty() {
        bail!("--text is empty: give the transcript of {}", req.reference.display());
    }
    let dest = req.voices_dir.join(&req.name);
    if dest.exists() && !req.force {
        bail!(
            "voice `{}` already exists at {} (pass --force to replace it)",
            req.name,
            dest.display()
        );
    }
    let model = ModelSignature::from_model_dir(&req.model_dir)?;
    let reference = load_reference(&req.reference)?;
    let warnings = check_speech(&reference, req.allow_non_speech)?;
    let models = PromptModels::load(&req.model_dir)?;
    let features = extract_features(&reference, &models)?;
    let info = VoiceInfo {
        name: req.name.clone(),
        prompt_text: text.to_string(),
        model,
        created: rfc3339_utc(now_unix_s()),
    };
    let mut voice = build_voice(&features, &reference, info)?;
    write_atomically(&voice, &dest, req.force)?;
    voice.dir = dest;
    Ok(Added {
        voice,
        raw_tokens: features.speech_tokens.len(),
        raw_mel_frames: features.mel_frames,
        warnings,
    })
}

/// Refuses a reference without speech ([`SpeechEvidence`]), or returns it as a warning when
/// `allow` is set.
fn check_speech(reference: &Reference, allow: bool) -> anyhow::Result<Vec<String>> {
    let evidence = SpeechEvidence::measure(&reference.samples, reference.sample_rate_hz);
    let Some(problem) = evidence.problem() else { return Ok(Vec::new()) };
    let file = reference.source.display();
    if allow {
        return Ok(vec![format!("{file} does not sound like speech: {problem}")]);
    }
    bail!(
        "{file}: no speech found: {problem}. A voice is cloned from a recording of one person \
         speaking; pass --allow-non-speech to use this file anyway"
    )
}

/// A voice name becomes a directory name: no separators, no leading dot.
fn check_name(name: &str) -> anyhow::Result<()> {
    let ok = !name.is_empty()
        && !name.starts_with('.')
        && name.chars().all(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if !ok {
        bail!("voice name `{name}`: use letters, digits, '-', '_' or '.' (not leading)");
    }
    Ok(())
}

fn write_atomically(voice: &Voice, dest: &Path, replace: bool) -> anyhow::Result<()> {
    let parent = dest.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent)
        .with_context(|| format!("creating the voices directory {}", parent.display()))?;
    let name = dest.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let tmp = parent.join(format!(".{name}.tmp-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    voice.save(&tmp)?;
    if replace && dest.exists() {
        std::fs::remove_dir_all(dest)
            .with_context(|| format!("removing the old voice {}", dest.display()))?;
    }
    std::fs::rename(&tmp, dest).with_context(|| format!("moving the voice to {}", dest.display()))
}

fn now_unix_s() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::check_name;

    #[test]
    fn voice_names_are_plain_directory_names() {
        for ok in ["narrator", "fox-2", "anna_b", "v1.0"] {
            assert!(check_name(ok).is_ok(), "{ok}");
        }
        for bad in ["", ".hidden", "a/b", "../x", "a b"] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
    }
}
