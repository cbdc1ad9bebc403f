//! Command-line interface: parses the arguments, then hands each subcommand to its handler.

mod args;
mod bench;
mod book_state;
mod check;
mod common;
mod config;
mod doctor;
mod export;
mod housekeeping;
mod model;
mod open;
mod parity;
mod proof;
mod read_along;
mod render;
mod say;
mod settings;
mod voice;

use anyhow::Result;

pub use args::{
    BenchArgs, CaptionsArg, CheckArgs, Cli, Command, ConfigArgs, DeliveryArgs, DoctorArgs,
    ExportArgs, ExportFormatArg, ExportPreset, ExportSplit, FlowMatmulArg, FrontendArg,
    ModelCommand, NotesArg, ParityArgs, PrecisionArg, ProjectArgs, ReadArgs, RenderArgs, SayArgs,
    SynthArgs, UiArgs, VoiceCommand, WorkloadArgs, WorkstationArgs, parse_clock,
};
pub use args::{CheckProjectArgs, CleanArgs};
pub use settings::{Effective, ExtraFlags, parse_device};

/// Caps the CPU threads of the model's math: candle sizes its matmul parallelism from
/// `RAYON_NUM_THREADS` and the rest runs on rayon's global pool, so both are set. Must run
/// before any model work (the pool is built once).
#[allow(unsafe_code)] // `std::env::set_var` (SAFETY note below)
fn set_threads(threads: Option<usize>) -> Result<()> {
    let Some(n) = threads else {
        return Ok(());
    };
    // SAFETY: called first thing in `run`, while this process has no other thread that could
    // read the environment concurrently.
    unsafe { std::env::set_var("RAYON_NUM_THREADS", n.to_string()) };
    rayon::ThreadPoolBuilder::new().num_threads(n).build_global()?;
    Ok(())
}

pub fn run(cli: Cli) -> Result<()> {
    set_threads(cli.threads)?;
    match cli.command {
        Some(Command::Config(args)) => config::run(args),
        Some(Command::Render(args)) => render::run(args),
        Some(Command::Say(args)) => say::run(args),
        Some(Command::Parity(args)) => parity::run(args),
        Some(Command::Bench(args)) => bench::run(args),
        Some(Command::Export(args)) => export::run(*args),
        Some(Command::Check(args)) => check::run(args),
        Some(Command::Voice { action }) => voice::run(action),
        Some(Command::Model { action }) => model::run(action),
        Some(Command::Doctor(args)) => doctor::run(args),
        Some(Command::CheckProject(args)) => housekeeping::check_project(args),
        Some(Command::Clean(args)) => housekeeping::clean(args),
        Some(Command::Takes(args)) => proof::takes(args),
        Some(Command::Reseed(args)) => proof::reseed(args),
        Some(Command::Choose(args)) => proof::choose(args),
        Some(Command::Approve(args)) => proof::approve(args),
        Some(Command::Note(args)) => proof::note(args),
        Some(Command::Pickups(args)) => proof::pickups(args),
        None => open::run(cli.workstation),
    }
}
