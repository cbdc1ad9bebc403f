//! Where the narrator's voices live: the voices directory of this installation, the bundled demo
//! voice, and lookup by name. (The voice files themselves are [`lectern_voice`]'s.)

use std::path::PathBuf;

use lectern_voice::{MANIFEST, Result, Voice};

/// Environment variable naming the voices directory.
pub const VOICES_DIR_ENV: &str = "LECTERN_VOICES";

/// The voices directory: `$LECTERN_VOICES`, else `voices/` in the data directory
/// (`~/.local/share/lectern/voices` on Linux), else `./voices`.
pub fn voices_dir() -> PathBuf {
    match std::env::var_os(VOICES_DIR_ENV) {
        Some(dir) => PathBuf::from(dir),
        None => {
            crate::assets::data_dir().map_or_else(|| PathBuf::from("voices"), |d| d.join("voices"))
        }
    }
}

/// A demo voice of this name (materialising the demo files if needed), if there is one.
pub fn demo_voice_dir(name: &str) -> Option<PathBuf> {
    if name != crate::assets::DEMO_VOICE {
        return None;
    }
    let dir = crate::assets::ensure_demo().ok()?.join("voices").join(name);
    dir.join(MANIFEST).is_file().then_some(dir)
}

/// Finds a voice: an existing directory path, or a name under [`voices_dir`].
pub fn resolve(dir_or_name: &str) -> Result<PathBuf> {
    lectern_voice::resolve_in(dir_or_name, &voices_dir())
}

/// Loads a voice directory or a voice name under the voices directory.
pub fn load(dir_or_name: &str) -> Result<Voice> {
    Voice::load_dir(&resolve(dir_or_name)?)
}
