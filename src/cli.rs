//! Command-line interface: every subcommand's arguments and dispatch.

use std::path::PathBuf;

use anyhow::Result;
use clap::{Parser, Subcommand};

use crate::{bench, parity, store};

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
    /// Export a project's chosen takes (with pauses) as audio plus a chapter list.
    Export {
        /// Project directory, or the manuscript (its project is `NAME.lectern` beside it).
        project: PathBuf,
        /// Output file (`book.wav`); with `--split chapters`, `book-01.wav`, ... beside it.
        #[arg(short, long)]
        out: PathBuf,
        /// `chapters`: one file per chapter.
        #[arg(long, value_enum)]
        split: Option<ExportSplit>,
        #[arg(long, value_enum, default_value = "wav")]
        format: ExportFormatArg,
        /// Bits per sample: 16 or 24 (WAV also 32 = float).
        #[arg(long, default_value_t = 16)]
        bits: u32,
        /// Normalise each file to this integrated loudness, LUFS (e.g. -18).
        #[arg(long, allow_negative_numbers = true)]
        loudness: Option<f64>,
    },
    /// Voice prompts: list them, or show one.
    Voice {
        #[command(subcommand)]
        action: VoiceCommand,
    },
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum ExportSplit {
    Chapters,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum ExportFormatArg {
    Wav,
    Flac,
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
        Some(Command::Export { project, out, split, format, bits, loudness }) => {
            run_export(&project, out, split.is_some(), format, bits, loudness)
        }
        Some(Command::Voice { action }) => run_voice(action),
        None => anyhow::bail!("the workstation is not wired yet; see `lectern --help`"),
    }
}

fn run_export(
    project: &std::path::Path,
    out: PathBuf,
    split_chapters: bool,
    format: ExportFormatArg,
    bits: u32,
    loudness_lufs: Option<f64>,
) -> Result<()> {
    use store::export::{ExportFormat, ExportOptions, SampleFormat};
    let dir = if project.is_file() {
        store::Project::dir_for_manuscript(project)
    } else {
        project.to_path_buf()
    };
    anyhow::ensure!(dir.join(store::DB_FILE).is_file(), "no Lectern project at {}", dir.display());
    let sample_format = match bits {
        16 => SampleFormat::Int16,
        24 => SampleFormat::Int24,
        32 => SampleFormat::Float32,
        other => anyhow::bail!("--bits {other}: use 16, 24 or 32"),
    };
    let format = match format {
        ExportFormatArg::Wav => ExportFormat::Wav,
        ExportFormatArg::Flac => ExportFormat::Flac,
    };
    let project = store::Project::open(&dir)?;
    let opts = ExportOptions { out, format, sample_format, split_chapters, loudness_lufs };
    let report = store::export::export(&project, &opts)?;
    for f in &report.files {
        let lufs = f
            .measured_lufs
            .map_or(String::new(), |l| format!(", {l:.2} LUFS → {:+.2} dB", f.gain_db));
        eprintln!("wrote {} ({:.1} s{lufs})", f.path.display(), f.samples as f64 / 24_000.0);
        if f.clipped_samples > 0 {
            eprintln!("warning: {} samples clipped in {}", f.clipped_samples, f.path.display());
        }
    }
    eprintln!("chapters: {} and {}", report.cue_path.display(), report.json_path.display());
    Ok(())
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
