//! The arguments of the project's housekeeping commands: `check-project` and `clean`.

use std::path::PathBuf;

/// `lectern check-project`'s arguments.
#[derive(Debug, clap::Args)]
pub struct CheckProjectArgs {
    /// The manuscript (its project is `NAME.lectern` beside it), or the project directory.
    pub book: PathBuf,
    /// Project directory [default: NAME.lectern next to the manuscript]
    #[arg(long)]
    pub project: Option<PathBuf>,
    /// Print what was found as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `lectern clean`'s arguments.
#[derive(Debug, clap::Args)]
pub struct CleanArgs {
    /// The manuscript (its project is `NAME.lectern` beside it), or the project directory.
    pub book: PathBuf,
    /// Project directory [default: NAME.lectern next to the manuscript]
    #[arg(long)]
    pub project: Option<PathBuf>,
    /// List what would be removed; remove nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Print the list as JSON.
    #[arg(long)]
    pub json: bool,
}
