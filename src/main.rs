//! The `lectern` binary: parse arguments, dispatch. No logic lives here.

use clap::Parser;

fn main() -> std::process::ExitCode {
    let cli = lectern::cli::Cli::parse();
    match lectern::cli::run(cli) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
