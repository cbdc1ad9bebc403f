//! Helpers the command handlers share: the output folder, `--rebuild`, printing checks.

use std::path::PathBuf;

use anyhow::Result;

use super::ProjectArgs;
use crate::config::Config;
use crate::store;

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
        for (what, paths) in
            [("carry no record (older files)", &r.without_record), ("are damaged", &r.damaged)]
        {
            if !paths.is_empty() {
                eprintln!(
                    "{} take file(s) {what}; they go to {}/takes/orphans/",
                    paths.len(),
                    dir.display()
                );
            }
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
