//! `lectern model download`: the real model from the hub ([`crate::model_download`]).

use std::io::IsTerminal;

use anyhow::Result;

use super::ModelCommand;
use crate::model_download::{self, DownloadOptions};

pub(super) fn run(action: ModelCommand) -> Result<()> {
    match action {
        ModelCommand::Download { name, dir, revision, no_config } => {
            let config = if no_config { None } else { crate::config::Config::default_path() };
            let opts = DownloadOptions {
                name,
                dir,
                revision,
                config,
                progress: std::io::stderr().is_terminal(),
            };
            let done = model_download::download(&opts)?;
            println!("model ready in {}", done.dir.display());
            println!("  {} at {}", done.manifest.repo, done.manifest.revision);
            match &done.recorded_in {
                Some(config) => println!(
                    "  recorded as `model` in {}: commands use it without --model",
                    config.display()
                ),
                None => println!("  use it with --model {}", done.dir.display()),
            }
            // Without a recorded model, `voice add` needs to be told which one.
            let model_flag = match &done.recorded_in {
                Some(_) => String::new(),
                None => format!(" --model {}", done.dir.display()),
            };
            println!(
                "next: make a voice, `lectern voice add ref.wav --text \"what it says\" --name \
                 narrator{model_flag}`, then `lectern doctor`"
            );
            Ok(())
        }
    }
}
