//! The command line's clap types: `Cli`, its `Command`s and their arguments (their doc comments
//! are the `--help` text), with the pure conversions of parsed arguments into options.

mod bench;
mod export;
mod groups;
mod housekeeping;
mod proof;

use std::path::PathBuf;

use clap::{Parser, Subcommand};

pub use bench::{BenchArgs, ParityArgs, WorkloadArgs};
pub use export::{
    CaptionsArg, DeliveryArgs, ExportArgs, ExportFormatArg, ExportPreset, ExportSplit, parse_clock,
};
pub use groups::{
    FlowMatmulArg, FrontendArg, NotesArg, PrecisionArg, ProjectArgs, ReadArgs, SynthArgs, UiArgs,
    WorkstationArgs,
};
pub use housekeeping::{CheckProjectArgs, CleanArgs};
pub use proof::{ApproveArgs, BookArgs, ChooseArgs, NoteArgs, PickupsArgs, ReseedArgs, TakesArgs};

#[derive(Debug, Parser)]
#[command(
    name = "lectern",
    version,
    about = "Terminal narration workstation (CosyVoice3 in candle)"
)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// CPU threads for the model's math, at most 4 per logical CPU [default: every core]
    #[arg(long, global = true, value_parser = crate::limits::parse_threads)]
    pub threads: Option<usize>,
    /// The workstation's options (when no subcommand is given).
    #[command(flatten)]
    pub workstation: WorkstationArgs,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print the effective settings and where each came from (flag, config.toml, default),
    /// and the configuration, data and voices folders.
    Config(ConfigArgs),
    /// Render a whole manuscript to WAV without the terminal UI.
    Render(RenderArgs),
    /// Speak a line for a quick check (a name, a number, a pronunciation entry) with the
    /// model and voice the other commands use; plays it, or writes it with `-o`.
    Say(SayArgs),
    /// Run one model stage on a reference fixture case and write Lectern's outputs (a
    /// developer's check against the upstream implementation; hidden from the help).
    #[command(hide = true)]
    Parity(ParityArgs),
    /// Benchmark a stage, or an end-to-end workload, on full-size, seeded random weights.
    Bench(BenchArgs),
    /// Export a project's chosen takes (with pauses) as audio plus a chapter list.
    // Boxed: its delivery and metadata flags make it far larger than the other commands.
    Export(Box<ExportArgs>),
    /// Check delivery files (a folder of MP3/M4B files, or one file) against a store's audio
    /// requirements (ACX's unless --preset names another): RMS, peak, noise floor, room tone,
    /// sample rate, bitrate, channels, length.
    Check(CheckArgs),
    /// Voice prompts: make one from a recording, list them, or show one.
    Voice {
        #[command(subcommand)]
        action: VoiceCommand,
    },
    /// The real model: download it from the Hugging Face hub.
    Model {
        #[command(subcommand)]
        action: ModelCommand,
    },
    /// What this machine will use and why: model, voice, tokenizer, device, CPU kernels, audio
    /// output, folders, ffmpeg; each line OK, WARN or FAIL with what to do.
    Doctor(DoctorArgs),
    /// Check every take file of a project against the audio hash it was saved with; damaged
    /// files are moved to takes/quarantine/ and the next render makes them again.
    CheckProject(CheckProjectArgs),
    /// Remove a project's leftovers: orphan and damaged take files, interrupted writes, all
    /// but the newest playback files (`--dry-run` lists them).
    Clean(CleanArgs),
    /// List a book's segments with their review state, note and takes (numbered as the dry
    /// run and the workstation number them), or one segment's takes.
    Takes(TakesArgs),
    /// Render a new take of segments with their next seed, on the project's model and voice
    /// (the workstation's re-seed); a take with no speech is tried again with the next seeds.
    Reseed(ReseedArgs),
    /// Make a take (its number in `lectern takes BOOK SEGMENT`) a segment's chosen take.
    Choose(ChooseArgs),
    /// Approve segments (their chosen take is locked), or take approvals back with --undo.
    Approve(ApproveArgs),
    /// Write a segment's note (an empty text clears it).
    Note(NoteArgs),
    /// List the segments that need a pickup, with their notes.
    Pickups(PickupsArgs),
}

#[derive(Debug, Subcommand)]
pub enum ModelCommand {
    /// Download a CosyVoice3 release (only the files Lectern reads, each checked against the
    /// hub's size and hash; an interrupted download resumes) and record it as `model` in
    /// config.toml. The hub is $HF_ENDPOINT, else https://huggingface.co; $HF_TOKEN is sent
    /// when set.
    // Help text, shown as written: the hub's address is not made a link.
    #[allow(rustdoc::bare_urls)]
    Download {
        /// A release name, or a hub repository OWNER/NAME [default: Fun-CosyVoice3-0.5B-2512]
        name: Option<String>,
        /// The model folder [default: models/NAME in the data directory]
        #[arg(long)]
        dir: Option<PathBuf>,
        /// A branch, tag or commit of the repository.
        #[arg(long, default_value = "main")]
        revision: String,
        /// Do not record the folder as `model` in config.toml.
        #[arg(long)]
        no_config: bool,
    },
}

/// `lectern doctor`'s arguments.
#[derive(Debug, clap::Args)]
pub struct DoctorArgs {
    #[command(flatten)]
    pub synth: SynthArgs,
    /// Audio output to check: `default`, a device name or cpal id, or `file` [default: as
    /// config.toml says, else default]
    #[arg(long)]
    pub playback_device: Option<String>,
    /// Print the checks as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `lectern config`'s arguments.
#[derive(Debug, clap::Args)]
pub struct ConfigArgs {
    #[command(flatten)]
    pub synth: SynthArgs,
    #[command(flatten)]
    pub ui: UiArgs,
}

/// `lectern render`'s arguments.
#[derive(Debug, clap::Args)]
pub struct RenderArgs {
    /// Manuscript (plain text, Markdown, EPUB or DOCX) [default: the sample manuscript]
    pub manuscript: Option<PathBuf>,
    #[command(flatten)]
    pub read: ReadArgs,
    /// Output WAV, 24 kHz mono float; with `--split chapters`, a folder [default: NAME.wav
    /// (or the folder NAME) in config.toml's output_dir, else in the current directory]
    #[arg(short, long)]
    pub out: Option<PathBuf>,
    /// `chapters`: one file per chapter (`NAME-01.wav`, ...) in the output folder, which
    /// replaces the previous one as a whole.
    #[arg(long, value_enum)]
    pub split: Option<ExportSplit>,
    /// Replace an existing output Lectern did not write (never an input of the run, never
    /// something that is not a file).
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub synth: SynthArgs,
    /// Also write the render report as JSON here.
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
    #[command(flatten)]
    pub project: ProjectArgs,
    /// Check the inputs and list the segments (source and spoken text, size against the
    /// segment limit, why each ends); load no model, write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// With --dry-run: print the listing as JSON instead of a table.
    #[arg(long, requires = "dry_run")]
    pub json: bool,
    /// Render again the chosen takes made with other settings than this run's (NFE,
    /// precision, device, flow matmul); approved takes are kept.
    #[arg(long)]
    pub rerender_settings: bool,
    /// Render only the K-th of N shares of the book (whole paragraphs, balanced on text
    /// length) into the project (give each shard its own `--project DIR`); writes no output.
    /// `--gather` joins the shares.
    #[arg(long, value_name = "K/N", conflicts_with_all = ["gather", "dry_run"])]
    pub shard: Option<crate::session::plan::Shard>,
    /// Attach the takes of these shard projects (`--shard K/N --project DIR` runs) to the
    /// book's project and write the output, rendering nothing: byte for byte what one render
    /// of the whole book writes. Refuses, by name, a shard of other text, voice, model or
    /// settings, and a missing share.
    #[arg(long, value_name = "DIR", num_args = 1.., conflicts_with = "dry_run")]
    pub gather: Vec<PathBuf>,
}

/// `lectern say`'s arguments.
#[derive(Debug, clap::Args)]
pub struct SayArgs {
    /// The text to speak (pause and language markup work as in a manuscript).
    pub text: String,
    /// Write the audio here (24 kHz mono float WAV) instead of playing it.
    #[arg(short, long)]
    pub out: Option<PathBuf>,
    /// Replace an existing `-o` file Lectern did not write.
    #[arg(long)]
    pub force: bool,
    /// Pronunciation list to read with [default: pronunciations.txt in the current
    /// directory, if there is one]
    #[arg(long)]
    pub pronunciations: Option<PathBuf>,
    #[command(flatten)]
    pub synth: SynthArgs,
    /// Audio output: `default`, a device name or cpal id, or `file` [default: default]
    #[arg(long)]
    pub playback_device: Option<String>,
    /// Where the audio goes when there is no audio device [default: say.wav in
    /// config.toml's output_dir, else in the current directory]
    #[arg(long)]
    pub fallback_wav: Option<PathBuf>,
}

/// `lectern check`'s arguments.
#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// A folder (its .mp3 and .m4b files) or one file.
    pub path: PathBuf,
    /// Print the figures as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// The store whose rules to check against (as `export --preset`).
    #[arg(long, value_enum, default_value = "acx")]
    pub preset: ExportPreset,
}

#[derive(Debug, Subcommand)]
pub enum VoiceCommand {
    /// Make a voice from a reference recording (WAV, 16 kHz or more, 0.5–30 s) and its
    /// transcript: prompt speech tokens, prompt mel and speaker embedding, as upstream's
    /// zero-shot frontend computes them.
    Add {
        /// The reference recording.
        reference: PathBuf,
        /// What the recording says, word for word.
        #[arg(long)]
        text: String,
        /// Name of the new voice (a directory under the voices directory).
        #[arg(long)]
        name: String,
        /// Model directory holding speech_tokenizer_v3.onnx and campplus.onnx [default:
        /// config.toml's `model` (`lectern model download` records it), else the demo tiny
        /// model, with its stand-in ONNX models]
        #[arg(long)]
        model: Option<PathBuf>,
        /// Replace an existing voice of the same name.
        #[arg(long)]
        force: bool,
        /// Use the recording even if it does not sound like speech (noise, music, a tone):
        /// a warning instead of a refusal.
        #[arg(long)]
        allow_non_speech: bool,
    },
    /// List the voices in the voices directory ($LECTERN_VOICES, else voices/ in the data
    /// directory) and the demo voice.
    List,
    /// Show one voice: prompt text, duration, token count, source, model.
    Show {
        /// A voice name under the voices directory, or a voice directory.
        name: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn q8_0_is_spelled_as_documented() {
        for spelling in ["q8_0", "q8-0"] {
            let cli = Cli::try_parse_from(["lectern", "--precision", spelling]).unwrap();
            assert!(
                matches!(cli.workstation.synth.precision, Some(PrecisionArg::Q8_0)),
                "{spelling}"
            );
        }
        assert!(Cli::try_parse_from(["lectern", "--precision", "q8"]).is_err());
    }

    #[test]
    fn threads_and_overlap_parse_for_every_command() {
        let cli = Cli::try_parse_from(["lectern", "--threads", "1", "--no-overlap"]).unwrap();
        assert_eq!(cli.threads, Some(1));
        assert!(!cli.workstation.synth.params().overlap);
        let cli =
            Cli::try_parse_from(["lectern", "bench", "--workload", "smoke", "--threads", "2"])
                .unwrap();
        assert_eq!(cli.threads, Some(2));
        let cli = Cli::try_parse_from(["lectern", "bench", "--workload", "smoke", "--no-overlap"])
            .unwrap();
        let Some(Command::Bench(BenchArgs { wl, .. })) = cli.command else { panic!("bench") };
        assert!(wl.no_overlap);
        assert!(Cli::try_parse_from(["lectern"]).unwrap().workstation.synth.params().overlap);
    }
}
