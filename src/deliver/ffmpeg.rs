//! The ffmpeg program, which Lectern runs rather than links (see [`super::m4b`] for why): where
//! it is and whether it runs. A leaf of `deliver`: [`super::m4b`] encodes M4Bs with it and
//! [`super::check`] decodes them with it, and it uses neither of them.

use std::path::PathBuf;
use std::process::Command;

use super::{DeliverError, Result};

/// The ffmpeg program: `$LECTERN_FFMPEG`, else `ffmpeg` on the PATH.
#[must_use]
pub fn ffmpeg_program() -> PathBuf {
    std::env::var_os("LECTERN_FFMPEG").map_or_else(|| PathBuf::from("ffmpeg"), PathBuf::from)
}

/// Fails with install advice when ffmpeg cannot be run.
pub fn require_ffmpeg() -> Result<PathBuf> {
    let program = ffmpeg_program();
    let ok = Command::new(&program)
        .args(["-hide_banner", "-version"])
        .output()
        .is_ok_and(|o| o.status.success());
    if ok {
        Ok(program)
    } else {
        Err(DeliverError::Invalid(format!(
            "--format m4b needs the ffmpeg program for its AAC encoder, and `{}` could not be run. \
             Install it (Debian/Ubuntu: `sudo apt install ffmpeg`; macOS: `brew install ffmpeg`) \
             or set LECTERN_FFMPEG to its path. Nothing was written",
            program.display()
        )))
    }
}
