//! Helpers the command handlers share: the output folder, `--rebuild`, printing checks.

use std::path::PathBuf;

use anyhow::Result;

use super::ProjectArgs;
use crate::config::Config;
use crate::store;

/// The guard of a run's outputs: the manuscript and what lies beside it, the project, the
/// setup (config, voices, demo model) and the model and voice given are its inputs.
pub(super) fn guard_for(
    manuscript: Option<&std::path::Path>,
    project: Option<&std::path::Path>,
    synth: &crate::synth::SynthOptions,
    force: bool,
) -> crate::output::Guard {
    let mut guard = crate::output::Guard::new(force).protect_setup();
    if let Some(m) = manuscript {
        guard = guard.protect_manuscript(m);
    }
    if let Some(p) = project {
        guard = guard.protect(p, "the project folder");
    }
    if let Some(model) = &synth.model {
        guard = guard.protect(model, "the model folder");
    }
    if let Some(voice) = synth.voice.as_deref() {
        guard = guard.protect(std::path::Path::new(voice), "the voice folder");
    }
    guard
}

/// Writes `text` to stdout. A reader that stopped reading (`lectern config | head -3`) ends
/// the output quietly: what it did not read, it did not want.
pub(super) fn print_stdout(text: &str) -> Result<()> {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        written => Ok(written?),
    }
}

/// `config.toml`'s output_dir, else the current directory.
pub(super) fn output_dir(cfg: &Config) -> PathBuf {
    cfg.settings.output_dir.clone().unwrap_or_else(|| PathBuf::from("."))
}

impl ProjectArgs {
    /// With `--rebuild`, rebuilds the project's lost database and says what came back.
    pub fn rebuild_if_asked(&self, manuscript: &std::path::Path) -> Result<()> {
        if !self.rebuild {
            return Ok(());
        }
        let Some(dir) = self.choice().dir(manuscript) else { return Ok(()) };
        let r = store::Project::rebuild(&dir)?;
        eprintln!(
            "rebuilt {}: {} take(s) of {} segment(s) re-attached from their files; each \
             segment's first take is chosen again (other choices, review states and notes were \
             only in the lost database)",
            dir.display(),
            r.takes,
            r.segments
        );
        if let Some(lost) = &r.lost_database {
            eprintln!("the lost database is kept as {}", lost.display());
        }
        if !r.without_record.is_empty() {
            eprintln!(
                "{} take file(s) carry no readable record (older or cut-short files); they go to \
                 {}/takes/orphans/ and their segments are rendered anew",
                r.without_record.len(),
                dir.display()
            );
        }
        if !r.damaged.is_empty() {
            eprintln!(
                "{} take file(s) are damaged; they went to {}/takes/quarantine/ and each is \
                 regenerated from its record (the same audio)",
                r.damaged.len(),
                dir.display()
            );
        }
        Ok(())
    }
}

/// Prints checks as a table (stdout) or JSON.
pub(super) fn print_checks(checks: &[crate::deliver::check::FileCheck], json: bool) -> Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(checks)?);
    } else {
        print!("{}", crate::deliver::check::table(checks));
    }
    Ok(())
}
