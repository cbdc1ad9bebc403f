//! The headless proofing commands' arguments: `takes`, `reseed`, `choose`, `approve`, `note`,
//! `pickups`. Segments are numbered as the dry run and the workstation's list number them
//! (from 1, across the book), takes as the list shows them (from 1, oldest first).

use std::path::PathBuf;

use super::SynthArgs;
use crate::limits;

/// The book a proofing command works on.
#[derive(Debug, Clone, clap::Args)]
pub struct BookArgs {
    /// The manuscript (its project is NAME.lectern beside it, unless --project)
    pub book: PathBuf,
    /// Project directory [default: NAME.lectern next to the manuscript]
    #[arg(long)]
    pub project: Option<PathBuf>,
}

/// The base seed of a book's default seeds, for the commands that only read them.
#[derive(Debug, Clone, clap::Args)]
pub struct BaseSeedArgs {
    /// The base seed the book was rendered with (`render --seed`): the list flags takes the
    /// automatic no-speech retry made by their seeds.
    #[arg(
        long,
        default_value_t = 1000,
        value_parser = limits::parse_seed,
        allow_negative_numbers = true
    )]
    pub seed: u64,
}

/// `lectern takes`'s arguments.
#[derive(Debug, clap::Args)]
pub struct TakesArgs {
    #[command(flatten)]
    pub book: BookArgs,
    /// One segment's takes (its number) instead of the whole book's list.
    pub segment: Option<String>,
    /// Print JSON (`lectern.takes/1`) instead of a table.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub base: BaseSeedArgs,
}

/// `lectern reseed`'s arguments.
#[derive(Debug, clap::Args)]
pub struct ReseedArgs {
    #[command(flatten)]
    pub book: BookArgs,
    /// Segment numbers (`3`, or a range `3-5`).
    #[arg(required = true, num_args = 1..)]
    pub segments: Vec<String>,
    /// Model, voice, device and engine (model and voice default to the project's).
    #[command(flatten)]
    pub synth: SynthArgs,
    /// No progress lines.
    #[arg(long)]
    pub quiet: bool,
}

/// `lectern choose`'s arguments.
#[derive(Debug, clap::Args)]
pub struct ChooseArgs {
    #[command(flatten)]
    pub book: BookArgs,
    /// The segment's number.
    pub segment: String,
    /// The take's number, as `lectern takes BOOK SEGMENT` lists them.
    pub take: usize,
    #[command(flatten)]
    pub base: BaseSeedArgs,
}

/// `lectern approve`'s arguments.
#[derive(Debug, clap::Args)]
pub struct ApproveArgs {
    #[command(flatten)]
    pub book: BookArgs,
    /// Segment numbers (`3`, or a range `3-5`).
    #[arg(required = true, num_args = 1..)]
    pub segments: Vec<String>,
    /// Take the approval back (the segment becomes heard; its choice is unlocked).
    #[arg(long)]
    pub undo: bool,
    #[command(flatten)]
    pub base: BaseSeedArgs,
}

/// `lectern note`'s arguments.
#[derive(Debug, clap::Args)]
pub struct NoteArgs {
    #[command(flatten)]
    pub book: BookArgs,
    /// The segment's number.
    pub segment: String,
    /// The note (an empty one clears it).
    pub text: String,
    /// Mark the segment for a pickup too.
    #[arg(long)]
    pub pickup: bool,
    #[command(flatten)]
    pub base: BaseSeedArgs,
}

/// `lectern pickups`'s arguments.
#[derive(Debug, clap::Args)]
pub struct PickupsArgs {
    #[command(flatten)]
    pub book: BookArgs,
    /// Print JSON (`lectern.takes/1`, the pickups only) instead of a list.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub base: BaseSeedArgs,
}
