//! Command-line interface: every subcommand's arguments and dispatch.

use std::path::PathBuf;

use anyhow::Result;
use clap::{Parser, Subcommand};

use crate::{bench, parity};

#[derive(Debug, Parser)]
#[command(
    name = "lectern",
    version,
    about = "Terminal narration workstation (CosyVoice3 in candle)"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run one model stage on a reference fixture case and write Lectern's outputs.
    Parity {
        /// Model directory in upstream layout (llm.pt, flow.pt, hift.pt, CosyVoice-BlankEN/).
        #[arg(long)]
        model: PathBuf,
        /// Case file (e.g. fixtures/cosyvoice3-tiny-a/llm.safetensors).
        #[arg(long)]
        case: PathBuf,
        /// Where to write the outputs (safetensors).
        #[arg(long)]
        out: PathBuf,
        /// Stage; inferred from the case file's name when omitted.
        #[arg(long, value_enum)]
        stage: Option<parity::Stage>,
        /// cpu (default) or cuda / cuda:N / metal.
        #[arg(long, default_value = "cpu")]
        device: String,
    },
    /// Benchmark a stage on full-size, seeded random weights.
    Bench {
        /// The stage to benchmark.
        #[arg(long, value_enum)]
        stage: bench::BenchStage,
        /// cpu (default) or cuda / cuda:N / metal.
        #[arg(long, default_value = "cpu")]
        device: String,
        /// Print the figures as JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// A smaller sweep, for quick checks.
        #[arg(long)]
        quick: bool,
    },
    /// Voice prompts: list them, or show one.
    Voice {
        #[command(subcommand)]
        action: VoiceCommand,
    },
}

#[derive(Debug, Subcommand)]
pub enum VoiceCommand {
    /// List the voices in the voices directory ($LECTERN_VOICES or ./voices).
    List,
    /// Show one voice: prompt text, duration, token count, source, model.
    Show {
        /// A voice name under the voices directory, or a voice directory.
        name: String,
    },
}

/// Parses a `--device` value.
pub fn parse_device(spec: &str) -> Result<candle::Device> {
    Ok(match spec {
        "cpu" => candle::Device::Cpu,
        "cuda" => candle::Device::new_cuda(0)?,
        "metal" => candle::Device::new_metal(0)?,
        s if s.starts_with("cuda:") => candle::Device::new_cuda(s[5..].parse()?)?,
        other => anyhow::bail!("unknown device `{other}` (cpu, cuda, cuda:N, metal)"),
    })
}

pub fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Some(Command::Parity { model, case, out, stage, device }) => {
            let req = parity::ParityRequest {
                model_dir: model,
                case,
                out,
                stage,
                device: parse_device(&device)?,
            };
            let (stage, n) = parity::run(&req)?;
            eprintln!("parity {stage:?}: wrote {n} tensors to {}", req.out.display());
            Ok(())
        }
        Some(Command::Bench { stage, device, json, quick }) => {
            let opts =
                bench::BenchOptions { device: parse_device(&device)?, weights_seed: 0, quick };
            let report = bench::run_stage(stage, &opts)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            }
            Ok(())
        }
        Some(Command::Voice { action }) => run_voice(action),
        None => anyhow::bail!("the workstation is not wired yet; see `lectern --help`"),
    }
}

fn run_voice(action: VoiceCommand) -> Result<()> {
    match action {
        VoiceCommand::List => {
            let dir = crate::voice::voices_dir();
            let voices = crate::voice::list(&dir)?;
            if voices.is_empty() {
                println!("no voices in {}", dir.display());
            }
            for m in voices {
                let secs = m.prompt_tokens as f64 / crate::voice::TOKENS_PER_SECOND;
                println!(
                    "{:<20} {:>6.2} s  {:>5} tokens  {}",
                    m.name, secs, m.prompt_tokens, m.model.name
                );
            }
            Ok(())
        }
        VoiceCommand::Show { name } => {
            println!("{}", crate::voice::Voice::load(&name)?.describe());
            Ok(())
        }
    }
}
