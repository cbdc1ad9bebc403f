//! `lectern say`: speaks a line for a quick check, played or written to a WAV.

use anyhow::Result;

use super::common::{guard_for, output_dir};
use super::{ExtraFlags, SayArgs};
use crate::config::Config;

pub(super) fn run(args: SayArgs) -> Result<()> {
    let SayArgs { text, out, force, pronunciations, synth, playback_device, fallback_wav } = args;
    let cfg = Config::load_default();
    cfg.check()?;
    let extra = ExtraFlags { playback_device, ..ExtraFlags::default() };
    let eff = synth.effective(&cfg, &extra);
    let synth_opts = eff.synth_options(&synth)?;
    if let Some(path) = &out {
        let guard = guard_for(None, None, &synth_opts, force).protect(
            pronunciations.as_deref().unwrap_or(lectern_text::pronounce::PROJECT_FILE.as_ref()),
            "the pronunciation list",
        );
        guard.file(path, "the spoken line's file", &["wav"], "say writes a 24 kHz WAV")?;
    }
    let opts = crate::say::SayOptions {
        text,
        out,
        pronunciations,
        synth: synth_opts,
        playback_device: eff.playback_device.value.clone(),
        fallback_wav: fallback_wav.unwrap_or_else(|| output_dir(&cfg).join("say.wav")),
    };
    match crate::say::say(&opts)? {
        crate::say::Said::Played(device) => eprintln!("played on {device}"),
        crate::say::Said::Written(path) if opts.out.is_some() => {
            eprintln!("wrote {}", path.display());
        }
        crate::say::Said::Written(path) => {
            eprintln!("no audio device: wrote {} instead", path.display());
        }
    }
    Ok(())
}
