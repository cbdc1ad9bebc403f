//! `lectern render`: a whole manuscript to WAV without the terminal UI.

use anyhow::Result;

use super::common::{guard_for, output_dir};
use super::{ExtraFlags, RenderArgs};
use crate::config::Config;
use crate::render;

pub(super) fn run(args: RenderArgs) -> Result<()> {
    let RenderArgs {
        manuscript,
        read,
        out,
        split,
        force,
        synth,
        report,
        quiet,
        project,
        dry_run,
        json,
        rerender_settings,
        shard,
        gather,
    } = args;
    let cfg = Config::load_default();
    cfg.check()?;
    let eff = synth.effective(&cfg, &ExtraFlags::default());
    let manuscript = match manuscript {
        Some(m) => m,
        None => crate::assets::sample_manuscript()?,
    };
    project.rebuild_if_asked(&manuscript)?;
    let stem =
        manuscript.file_stem().map_or_else(|| "book".into(), |s| s.to_string_lossy().into_owned());
    let out = out.unwrap_or_else(|| {
        let name = if split.is_some() { stem.clone() } else { format!("{stem}.wav") };
        output_dir(&cfg).join(name)
    });
    let synth_opts = eff.synth_options(&synth)?;
    let guard = guard_for(Some(&manuscript), project.project.as_deref(), &synth_opts, force);
    if let Some(path) = &report {
        guard.file(path, "the report", &["json"], "name it .json")?;
    }
    // A dry run and a shard write no audio; a split render writes a folder, staged and swapped
    // in whole.
    let staged = match (dry_run || shard.is_some(), split.is_some()) {
        (true, _) => None,
        (false, true) => {
            guard.folder(&out, "the chapters' folder")?;
            Some(crate::output::StagedFolder::begin(&out)?)
        }
        (false, false) => {
            guard.file(
                &out,
                "the render's output",
                &["wav"],
                "render writes a 24 kHz WAV master (`lectern export --format flac` writes FLAC; \
                 `--split chapters` writes a folder)",
            )?;
            None
        }
    };
    let opts = render::RenderOptions {
        manuscript,
        out: staged.as_ref().map_or_else(|| out.clone(), |s| s.path().join(format!("{stem}.wav"))),
        split_chapters: split.is_some(),
        synth: synth_opts,
        progress: !quiet,
        project: project.choice(),
        dry_run,
        rerender_settings,
        read: read.options(),
        scope: render::RenderScope { shard, gather, takes_only: false },
    };
    let mut rep = render::render(&opts)?;
    if let Some(staged) = staged {
        for (path, _) in &mut rep.files {
            *path = staged.final_path(path);
        }
        for kept in staged.commit()? {
            eprintln!("note: {kept} was in {} before; kept", out.display());
        }
    }
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
        let json = serde_json::to_string_pretty(&rep)?;
        crate::output::write_atomically(&path, |tmp| std::fs::write(tmp, &json))?;
    }
    Ok(())
}
