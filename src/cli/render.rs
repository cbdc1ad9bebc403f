//! `lectern render`: a whole manuscript to WAV without the terminal UI.

use anyhow::Result;

use super::common::output_dir;
use super::{ExtraFlags, RenderArgs};
use crate::config::Config;
use crate::render;

pub(super) fn run(args: RenderArgs) -> Result<()> {
    let RenderArgs {
        manuscript,
        read,
        out,
        split,
        synth,
        report,
        quiet,
        project,
        dry_run,
        json,
        rerender_settings,
    } = args;
    let cfg = Config::load_default();
    cfg.check()?;
    let eff = synth.effective(&cfg, &ExtraFlags::default());
    let manuscript = match manuscript {
        Some(m) => m,
        None => crate::assets::sample_manuscript()?,
    };
    project.rebuild_if_asked(&manuscript)?;
    let out = out.unwrap_or_else(|| {
        let stem = manuscript
            .file_stem()
            .map_or_else(|| "book".into(), |s| s.to_string_lossy().into_owned());
        output_dir(&cfg).join(format!("{stem}.wav"))
    });
    let opts = render::RenderOptions {
        manuscript,
        out,
        split_chapters: split.is_some(),
        synth: eff.synth_options(&synth)?,
        progress: !quiet,
        project: project.choice(),
        dry_run,
        rerender_settings,
        read: read.options(),
    };
    let rep = render::render(&opts)?;
    for (path, n) in &rep.files {
        eprintln!("wrote {} ({:.2} s)", path.display(), *n as f64 / 24_000.0);
    }
    if let (true, Some(dry)) = (json, &rep.listing) {
        println!("{}", serde_json::to_string_pretty(dry)?);
    } else if let Some(dry) = &rep.listing {
        print!("{}", crate::dry_run::format_listing(dry));
    } else {
        eprintln!(
            "{} segments ({} reused, {} with other settings), {:.1} s of audio in {:.1} s \
             (RTF {:.2}) · {}",
            rep.segments.len(),
            rep.reused,
            rep.other_settings,
            rep.audio_s,
            rep.wall_s,
            rep.wall_s / rep.audio_s.max(1e-9),
            rep.model
        );
    }
    if let Some(path) = report {
        std::fs::write(&path, serde_json::to_string_pretty(&rep)?)?;
    }
    Ok(())
}
