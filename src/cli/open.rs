//! `lectern [MANUSCRIPT]` (no subcommand): opens the workstation.

use anyhow::Result;

use super::WorkstationArgs;
use crate::config::Config;
use crate::workstation;

pub(super) fn run(w: WorkstationArgs) -> Result<()> {
    if let Some(manuscript) = &w.manuscript {
        w.project.rebuild_if_asked(manuscript)?;
    }
    let cfg = Config::load_default();
    let created = if cfg.exists { None } else { Config::create_default().ok().flatten() };
    let eff = w.synth.effective(&cfg, &w.ui.extra());
    let keymap = w.ui.keymap.clone().map(workstation::KeymapChoice::Given).unwrap_or_else(|| {
        crate::assets::config_dir()
            .map(|d| d.join(crate::config::KEYMAP_FILE))
            .filter(|p| p.is_file())
            .map_or(workstation::KeymapChoice::Defaults, workstation::KeymapChoice::Found)
    });
    workstation::run(workstation::WorkstationOptions {
        manuscript: w.manuscript,
        synth: eff.synth_options(&w.synth)?,
        fallback_wav: w.fallback_wav,
        project: w.project.choice(),
        theme: eff.theme.value.clone(),
        playback_device: eff.playback_device.value.clone(),
        keymap,
        config_errors: cfg.errors.iter().map(ToString::to_string).collect(),
        config_created: created,
        read: w.read.options(),
    })
}
