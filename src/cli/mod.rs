//! Command-line interface: every subcommand's arguments and dispatch.

use std::path::PathBuf;

use anyhow::Result;
use clap::{Parser, Subcommand};

use crate::config::{Config, Setting, Source, pick};
use crate::{bench, limits, render, store, workstation};
use lectern_engine::protocol::{MinLenRule, Precision, RenderParams};
use lectern_model::flow::FlowMatmul;
use lectern_parity as parity;

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
    /// CPU threads for the model's math [default: every core]
    #[arg(long, global = true)]
    pub threads: Option<usize>,
    /// The workstation's options (when no subcommand is given).
    #[command(flatten)]
    pub workstation: WorkstationArgs,
}

/// `lectern [MANUSCRIPT] [--voice V] [--model DIR]`: open the workstation.
#[derive(Debug, Clone, clap::Args)]
pub struct WorkstationArgs {
    /// Manuscript (plain text, Markdown or EPUB) [default: the sample manuscript]
    pub manuscript: Option<PathBuf>,
    #[command(flatten)]
    pub read: ReadArgs,
    #[command(flatten)]
    pub synth: SynthArgs,
    #[command(flatten)]
    pub project: ProjectArgs,
    /// Where playback is written when there is no audio device [default: a new numbered file
    /// in the project's `playback/` folder, never one that exists]
    #[arg(long)]
    pub fallback_wav: Option<PathBuf>,
    #[command(flatten)]
    pub ui: UiArgs,
}

/// What of a manuscript is read, for the workstation and `render` alike.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ReadArgs {
    /// Leave out an EPUB's front matter: cover, title page, copyright, contents, dedication
    /// (as its guide, landmarks or `epub:type`s mark them).
    #[arg(long)]
    pub skip_front_matter: bool,
    /// `lectern`: CJK runs are read as Chinese and the rest as English, each with its own
    /// numbers and punctuation; `upstream`: one language per paragraph, Chinese if it holds
    /// any ideograph (CosyVoice3's rule) [default: lectern]
    #[arg(long, value_enum)]
    pub frontend: Option<FrontendArg>,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum FrontendArg {
    Lectern,
    Upstream,
}

impl ReadArgs {
    pub fn options(&self) -> crate::reading::ReadOptions {
        let frontend = match self.frontend {
            Some(FrontendArg::Upstream) => lectern_text::Frontend::Upstream,
            Some(FrontendArg::Lectern) | None => lectern_text::Frontend::Lectern,
        };
        crate::reading::ReadOptions { skip_front_matter: self.skip_front_matter, frontend }
    }
}

/// The workstation's own settings (also in `config.toml`, except the keymap file).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct UiArgs {
    /// Theme: dark, light, or a theme file's name in the configuration's themes/ folder
    /// [default: dark]
    #[arg(long)]
    pub theme: Option<String>,
    /// Audio output: `default`, a device name or cpal id, or `file` (write playback to a WAV)
    /// [default: default]
    #[arg(long)]
    pub playback_device: Option<String>,
    /// Key overrides (TOML, `action = "key"` lines) [default: keymap.toml in the configuration
    /// directory, if there is one]
    #[arg(long)]
    pub keymap: Option<PathBuf>,
}

impl UiArgs {
    fn extra(&self) -> ExtraFlags {
        ExtraFlags { theme: self.theme.clone(), playback_device: self.playback_device.clone() }
    }
}

/// Where the takes are kept, for the workstation and `render` alike.
#[derive(Debug, Clone, clap::Args)]
pub struct ProjectArgs {
    /// Project directory keeping the takes [default: NAME.lectern next to the manuscript]
    #[arg(long, conflicts_with = "no_project")]
    pub project: Option<PathBuf>,
    /// A scratch session: takes live in a temporary project removed at the end; nothing is
    /// reused or kept.
    #[arg(long)]
    pub no_project: bool,
    /// The project's database was lost (missing or empty beside take files): rebuild it from
    /// the records the take files carry, then go on.
    #[arg(long, conflicts_with = "no_project")]
    pub rebuild: bool,
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

    pub fn choice(&self) -> crate::session::ProjectChoice {
        use crate::session::ProjectChoice;
        match (&self.project, self.no_project) {
            (_, true) => ProjectChoice::Off,
            (Some(dir), false) => ProjectChoice::Dir(dir.clone()),
            (None, false) => ProjectChoice::NextToManuscript,
        }
    }
}

/// Model, voice, device and engine parameters shared by the workstation and `render`. Those
/// left out come from `config.toml`, else from the defaults shown.
#[derive(Debug, Clone, clap::Args)]
pub struct SynthArgs {
    /// Upstream CosyVoice3 model directory [default: the demo tiny random-weight model]
    #[arg(long)]
    pub model: Option<PathBuf>,
    /// Voice name (see `lectern voice list`) or voice directory [default: tiny-demo on the
    /// demo model]
    #[arg(long)]
    pub voice: Option<String>,
    /// cpu, cuda, cuda:N or metal [default: cpu]
    #[arg(long)]
    pub device: Option<String>,
    /// Flow Euler steps, 1–64 [default: 10]
    #[arg(long, value_parser = limits::parse_nfe, allow_negative_numbers = true)]
    pub nfe: Option<usize>,
    /// Target generated mel frames per flow group: 0 (one segment per group) or 50–8000
    /// [default: 2000]
    #[arg(long, value_parser = limits::parse_group_target, allow_negative_numbers = true)]
    pub group_target: Option<usize>,
    /// LM lanes decoded together, 1–32 [default: 8]
    #[arg(long, value_parser = limits::parse_lanes, allow_negative_numbers = true)]
    pub lanes: Option<usize>,
    /// LM weight precision [default: f32]
    #[arg(long, value_enum)]
    pub precision: Option<PrecisionArg>,
    /// Block every stop id below the minimum length (upstream blocks only id 6561).
    #[arg(long)]
    pub enforce_min_len: bool,
    /// Base seed: each segment's first take is sampled with a seed derived from it and the
    /// segment's text (so editing one sentence changes no other segment's seed); 0 to 2^64-1.
    #[arg(
        long,
        default_value_t = 1000,
        value_parser = limits::parse_seed,
        allow_negative_numbers = true
    )]
    pub seed: u64,
    /// Decode the LM and run the flow one after the other instead of at the same time.
    #[arg(long)]
    pub no_overlap: bool,
    /// How the flow's large matmuls run; tf32x3 is three TF32 tensor-core products, as exact
    /// as f32. Each take records which ran [default: tf32x3 on CUDA, f32 elsewhere]
    #[arg(long, value_enum)]
    pub flow_matmul: Option<FlowMatmulArg>,
    /// Speak the book's voice in cross-lingual mode (text in another language than its
    /// reference recording); a cast's voices say it in `cast.toml`.
    #[arg(long)]
    pub cross_lingual: bool,
}

/// `lectern bench --workload`'s options.
#[derive(Debug, Clone, clap::Args)]
pub struct WorkloadArgs {
    /// LM lanes; several (`1,4`) run one after another on the same weights (default 8;
    /// `--stage lm`: 1,2,4,8).
    #[arg(
        long,
        value_delimiter = ',',
        value_parser = limits::parse_lanes,
        allow_negative_numbers = true
    )]
    pub lanes: Vec<usize>,
    /// Target generated mel frames per flow group.
    #[arg(
        long,
        default_value_t = 2000,
        value_parser = limits::parse_group_target,
        allow_negative_numbers = true
    )]
    pub group_target: usize,
    /// Flow Euler steps.
    #[arg(
        long,
        default_value_t = 10,
        value_parser = limits::parse_nfe,
        allow_negative_numbers = true
    )]
    pub nfe: usize,
    /// LM weight precision (default f32; `--stage lm`: f32, f16 and q8_0).
    #[arg(long, value_enum)]
    pub precision: Option<PrecisionArg>,
    /// `--stage lm`: forced decode steps per run (default 8).
    #[arg(long)]
    pub steps: Option<usize>,
    /// How the flow's large matmuls run [default: tf32x3 on CUDA, f32 elsewhere]
    #[arg(long, value_enum)]
    pub flow_matmul: Option<FlowMatmulArg>,
    /// Only the first N segments (quick runs).
    #[arg(long)]
    pub max_segments: Option<usize>,
    /// `--stage flow`: total frames (prompt + generated) of the one-block breakdown [default:
    /// the prompt + 1000 generated; `smoke`'s one group is 1208]
    #[arg(long)]
    pub breakdown_frames: Option<usize>,
    /// Speech tokens forced per word (10 is the real model's rate; less only for quick runs).
    #[arg(long, default_value_t = bench::workload::TOKENS_PER_WORD)]
    pub tokens_per_word: usize,
    /// Segment without the fast start (the first segment is then a full upstream-sized one).
    #[arg(long)]
    pub no_lead_sentence: bool,
    /// Decode the LM and run the flow one after the other instead of at the same time.
    #[arg(long)]
    pub no_overlap: bool,
    /// Launch every LM decode kernel on its own instead of replaying CUDA graphs.
    #[arg(long)]
    pub no_cuda_graphs: bool,
    /// Run the LM's decode steps on candle's ops only, without Lectern's own CUDA kernels.
    #[arg(long)]
    pub no_lm_kernels: bool,
    /// Run the DiT's elementwise work on candle's ops only, without Lectern's CUDA kernels.
    #[arg(long)]
    pub no_flow_kernels: bool,
    /// Run the vocoder's convolutions and activations on candle's ops only, without Lectern's
    /// CUDA kernels.
    #[arg(long)]
    pub no_vocoder_kernels: bool,
}

impl WorkloadArgs {
    fn options(
        &self,
        w: bench::workload::Workload,
        device: candle::Device,
        json: bool,
    ) -> bench::workload::WorkloadOptions {
        let mut o = bench::workload::WorkloadOptions::new(w);
        o.device = device;
        o.lanes = if self.lanes.is_empty() {
            vec![8]
        } else {
            self.lanes.iter().map(|&l| l.max(1)).collect()
        };
        o.group_target_frames = self.group_target;
        o.nfe = self.nfe.max(1);
        o.precision = self.precision.map_or(Precision::F32, Into::into);
        o.flow_matmul = self.flow_matmul.map(Into::into);
        o.max_segments = self.max_segments;
        o.tokens_per_word = self.tokens_per_word.max(1);
        o.lead_sentence = !self.no_lead_sentence;
        o.overlap = !self.no_overlap;
        o.cuda_graphs = !self.no_cuda_graphs;
        o.lm_kernels = !self.no_lm_kernels;
        o.flow_kernels = !self.no_flow_kernels;
        o.vocoder_kernels = !self.no_vocoder_kernels;
        o.print = !json;
        o
    }

    /// The options of a stage benchmark (`--stage`).
    fn stage_options(&self, device: candle::Device, quick: bool) -> bench::BenchOptions {
        let mut o = bench::BenchOptions::new(device);
        o.quick = quick;
        o.lanes = (!self.lanes.is_empty()).then(|| self.lanes.iter().map(|&l| l.max(1)).collect());
        o.steps = self.steps;
        o.precision = self.precision.map(Into::into);
        o.flow_matmul = self.flow_matmul.map(Into::into);
        o.breakdown_frames = self.breakdown_frames.map(|n| n.max(1));
        o.lm_kernels = !self.no_lm_kernels;
        o.flow_kernels = !self.no_flow_kernels;
        o.vocoder_kernels = !self.no_vocoder_kernels;
        o
    }
}

/// `--flow-matmul`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum FlowMatmulArg {
    F32,
    Tf32x3,
    Bf16,
}

impl From<FlowMatmulArg> for FlowMatmul {
    fn from(m: FlowMatmulArg) -> Self {
        match m {
            FlowMatmulArg::F32 => FlowMatmul::F32,
            FlowMatmulArg::Tf32x3 => FlowMatmul::Tf32x3,
            FlowMatmulArg::Bf16 => FlowMatmul::Bf16,
        }
    }
}

/// `--precision`. The variants' doc comments are the help text users see.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum PrecisionArg {
    /// 32-bit float: the reference
    F32,
    /// 16-bit float: half the LM memory
    F16,
    /// bfloat16: half the LM memory
    Bf16,
    /// 8-bit quantized LM projections: about a quarter of the LM memory
    // Named as the docs and take records spell it (clap would derive `q8-0`).
    #[value(name = "q8_0", alias = "q8-0")]
    Q8_0,
}

impl From<PrecisionArg> for Precision {
    fn from(p: PrecisionArg) -> Self {
        match p {
            PrecisionArg::F32 => Precision::F32,
            PrecisionArg::F16 => Precision::F16,
            PrecisionArg::Bf16 => Precision::Bf16,
            PrecisionArg::Q8_0 => Precision::Q8_0,
        }
    }
}

impl SynthArgs {
    /// The engine parameters from the flags and the built-in defaults (no configuration file).
    pub fn params(&self) -> RenderParams {
        self.effective(&Config::default(), &ExtraFlags::default()).params(self)
    }

    /// The effective settings: flags, else the configuration file, else the defaults.
    pub fn effective(&self, cfg: &Config, extra: &ExtraFlags) -> Effective {
        let f = &cfg.settings;
        let p = cfg.path.as_deref();
        let defaults = RenderParams::default();
        Effective {
            model: pick(self.model.clone().map(Some), f.model.clone().map(Some), p, None),
            voice: pick(self.voice.clone().map(Some), f.voice.clone().map(Some), p, None),
            device: pick(self.device.clone(), f.device.clone(), p, "cpu".into()),
            nfe: pick(self.nfe, f.nfe, p, defaults.nfe),
            group_target: pick(self.group_target, f.group_target, p, defaults.group_target_frames),
            lanes: pick(self.lanes, f.lanes, p, defaults.lanes),
            precision: pick(self.precision.map(Into::into), f.precision, p, Precision::F32),
            theme: pick(extra.theme.clone(), f.theme.clone(), p, "dark".into()),
            playback_device: pick(
                extra.playback_device.clone(),
                f.playback_device.clone(),
                p,
                "default".into(),
            ),
            output_dir: pick(None, f.output_dir.clone(), p, PathBuf::from(".")),
        }
    }
}

/// Flags of the workstation that `config.toml` can also set.
#[derive(Debug, Clone, Default)]
pub struct ExtraFlags {
    pub theme: Option<String>,
    pub playback_device: Option<String>,
}

/// The settings a run uses, each with where it came from (`lectern config` prints them).
#[derive(Debug, Clone)]
pub struct Effective {
    pub model: Setting<Option<PathBuf>>,
    pub voice: Setting<Option<String>>,
    pub device: Setting<String>,
    pub nfe: Setting<usize>,
    pub group_target: Setting<usize>,
    pub lanes: Setting<usize>,
    pub precision: Setting<Precision>,
    pub theme: Setting<String>,
    pub playback_device: Setting<String>,
    pub output_dir: Setting<PathBuf>,
}

impl Effective {
    /// The engine parameters (`synth` gives the flag-only ones).
    pub fn params(&self, synth: &SynthArgs) -> RenderParams {
        RenderParams {
            nfe: self.nfe.value,
            group_target_frames: self.group_target.value,
            lanes: self.lanes.value.max(1),
            precision: self.precision.value,
            min_len_rule: if synth.enforce_min_len {
                MinLenRule::AllStopIds
            } else {
                MinLenRule::Upstream
            },
            overlap: !synth.no_overlap,
        }
    }

    /// Everything a run speaks with: these settings, and the flag-only ones of `synth`.
    pub fn synth_options(&self, synth: &SynthArgs) -> Result<crate::synth::SynthOptions> {
        Ok(crate::synth::SynthOptions {
            model: self.model.value.clone(),
            voice: self.voice.value.clone(),
            device: parse_device(&self.device.value)?,
            params: self.params(synth),
            flow_matmul: synth.flow_matmul.map(Into::into),
            base_seed: synth.seed,
            cross_lingual: synth.cross_lingual,
        })
    }

    /// `key  value  (source)` lines.
    pub fn lines(&self) -> Vec<(String, String, String)> {
        let row = |k: &str, v: String, s: &Source| (k.to_string(), v, s.to_string());
        let or = |v: &Option<String>, d: &str| v.clone().unwrap_or_else(|| d.to_string());
        vec![
            row(
                "model",
                self.model
                    .value
                    .as_ref()
                    .map_or_else(|| "demo tiny model".into(), |p| p.display().to_string()),
                &self.model.source,
            ),
            row("voice", or(&self.voice.value, "tiny-demo (demo model)"), &self.voice.source),
            row("device", self.device.value.clone(), &self.device.source),
            row("nfe", self.nfe.value.to_string(), &self.nfe.source),
            row("group_target", self.group_target.value.to_string(), &self.group_target.source),
            row("lanes", self.lanes.value.to_string(), &self.lanes.source),
            row("precision", self.precision.value.name().into(), &self.precision.source),
            row("theme", self.theme.value.clone(), &self.theme.source),
            row(
                "playback_device",
                self.playback_device.value.clone(),
                &self.playback_device.source,
            ),
            row("output_dir", self.output_dir.value.display().to_string(), &self.output_dir.source),
        ]
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print the effective settings and where each came from (flag, config.toml, default),
    /// and the configuration, data and voices folders.
    Config {
        #[command(flatten)]
        synth: SynthArgs,
        #[command(flatten)]
        ui: UiArgs,
    },
    /// Render a whole manuscript to WAV without the terminal UI.
    Render {
        /// Manuscript (plain text, Markdown or EPUB) [default: the sample manuscript]
        manuscript: Option<PathBuf>,
        #[command(flatten)]
        read: ReadArgs,
        /// Output WAV, 24 kHz mono float [default: NAME.wav in config.toml's output_dir, else
        /// in the current directory]
        #[arg(short, long)]
        out: Option<PathBuf>,
        /// `chapters`: one file per chapter (`OUT-01.wav`, ...).
        #[arg(long, value_enum)]
        split: Option<ExportSplit>,
        #[command(flatten)]
        synth: SynthArgs,
        /// Also write the render report as JSON here.
        #[arg(long)]
        report: Option<PathBuf>,
        /// No progress bar.
        #[arg(long)]
        quiet: bool,
        #[command(flatten)]
        project: ProjectArgs,
        /// Check the inputs and list the segments (source and spoken text, size against the
        /// segment limit, why each ends); load no model, write nothing.
        #[arg(long)]
        dry_run: bool,
        /// With --dry-run: print the listing as JSON instead of a table.
        #[arg(long, requires = "dry_run")]
        json: bool,
        /// Render again the chosen takes made with other settings than this run's (NFE,
        /// precision, device, flow matmul); approved takes are kept.
        #[arg(long)]
        rerender_settings: bool,
    },
    /// Speak a line for a quick check (a name, a number, a pronunciation entry) with the
    /// model and voice the other commands use; plays it, or writes it with `-o`.
    Say {
        /// The text to speak (pause and language markup work as in a manuscript).
        text: String,
        /// Write the audio here (24 kHz mono float WAV) instead of playing it.
        #[arg(short, long)]
        out: Option<PathBuf>,
        /// Pronunciation list to read with [default: pronunciations.txt in the current
        /// directory, if there is one]
        #[arg(long)]
        pronunciations: Option<PathBuf>,
        #[command(flatten)]
        synth: SynthArgs,
        /// Audio output: `default`, a device name or cpal id, or `file` [default: default]
        #[arg(long)]
        playback_device: Option<String>,
        /// Where the audio goes when there is no audio device [default: say.wav in
        /// config.toml's output_dir, else in the current directory]
        #[arg(long)]
        fallback_wav: Option<PathBuf>,
    },
    /// Run one model stage on a reference fixture case and write Lectern's outputs (a
    /// developer's check against the upstream implementation; hidden from the help).
    #[command(hide = true)]
    Parity {
        /// Model directory in upstream layout (llm.pt, flow.pt, hift.pt, CosyVoice-BlankEN/).
        #[arg(long)]
        model: PathBuf,
        /// Case file (a reference fixture's safetensors).
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
        /// Stage lm: decode the cases' greedy runs together, as lanes of one batch.
        #[arg(long)]
        lanes: bool,
        /// Stages dit, flow, e2e: how the flow's large matmuls run (default: tf32x3 on CUDA,
        /// f32 elsewhere).
        #[arg(long, value_enum)]
        flow_matmul: Option<FlowMatmulArg>,
    },
    /// Benchmark a stage, or an end-to-end workload, on full-size, seeded random weights.
    Bench {
        /// The stage to benchmark.
        #[arg(long, value_enum, required_unless_present = "workload")]
        stage: Option<bench::BenchStage>,
        /// An end-to-end workload through the engine.
        #[arg(long, value_enum, conflicts_with = "stage")]
        workload: Option<bench::workload::Workload>,
        #[command(flatten)]
        wl: WorkloadArgs,
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
        /// Output file (`book.wav`); with `--split chapters`, `book-01.wav`, ... beside it. For
        /// `mp3`, `m4b` and `--preset acx`: the output folder
        /// [default: NAME.wav (or the folder NAME) in config.toml's output_dir, else in the
        /// current directory]
        #[arg(short, long)]
        out: Option<PathBuf>,
        /// `chapters`: one file per chapter.
        #[arg(long, value_enum)]
        split: Option<ExportSplit>,
        /// Audio format: `wav`/`flac` are the 24 kHz master; `mp3`/`m4b` are mastered for
        /// delivery (44.1 kHz, RMS −20 dB, peaks ≤ −3 dB, room tone) [default: wav; mp3 with
        /// --preset acx]
        #[arg(long, value_enum)]
        format: Option<ExportFormatArg>,
        /// `acx`: Audible/ACX's requirements: one MP3 per chapter (192 kbps CBR, 44.1 kHz
        /// mono), ≤ 120 min each, RMS −23…−18 dB, peaks ≤ −3 dB, room tone; checked after
        /// writing.
        #[arg(long, value_enum)]
        preset: Option<ExportPreset>,
        #[command(flatten)]
        delivery: DeliveryArgs,
        /// Bits per sample: 16 or 24 (WAV also 32 = float).
        #[arg(long, default_value_t = 16)]
        bits: u32,
        /// Normalise each file to this integrated loudness, LUFS (-70 to -5, e.g. -18)
        /// [default: no normalisation]
        #[arg(long, allow_hyphen_values = true, value_parser = limits::parse_loudness)]
        loudness: Option<f64>,
        /// Export chosen takes made for an earlier text, voice or model anyway (a warning names
        /// each); without it such takes are refused.
        #[arg(long)]
        allow_stale: bool,
    },
    /// Check delivery files (a folder of MP3/M4B files, or one file) against ACX's audio
    /// requirements: RMS, peak, noise floor, room tone, sample rate, bitrate, channels, length.
    Check {
        /// A folder (its .mp3 and .m4b files) or one file.
        path: PathBuf,
        /// Print the figures as JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Voice prompts: make one from a recording, list them, or show one.
    Voice {
        #[command(subcommand)]
        action: VoiceCommand,
    },
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum ExportSplit {
    Chapters,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormatArg {
    Wav,
    Flac,
    Mp3,
    M4b,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportPreset {
    Acx,
}

/// `lectern export`'s options for delivery formats (`mp3`, `m4b`, `--preset acx`).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct DeliveryArgs {
    /// Book title (tags, credits; the M4B's name) [default: the EPUB's or the Markdown front
    /// matter's `title:`, else the manuscript's file name]
    #[arg(long)]
    pub title: Option<String>,
    /// Author (tags, credits) [default: the EPUB's creators or the front matter's `author:`,
    /// else config.toml's `[book] author`]
    #[arg(long)]
    pub author: Option<String>,
    /// Narrator (tags, credits) [default: the front matter's `narrator:`, else config.toml's
    /// `[book] narrator`]
    #[arg(long)]
    pub narrator: Option<String>,
    /// Cover image (JPEG or PNG): the M4B's cover and each MP3's front-cover picture
    /// [default: the EPUB's cover or the front matter's `cover:`]
    #[arg(long)]
    pub cover: Option<PathBuf>,
    /// A room-tone recording (WAV, under −60 dB RMS) to lay under every file instead of the
    /// generated noise bed.
    #[arg(long)]
    pub room_tone: Option<PathBuf>,
    /// Level of the generated room tone, dB RMS (between −90 and −60) [default: -70]
    #[arg(long, allow_hyphen_values = true, conflicts_with = "room_tone")]
    pub room_tone_db: Option<f64>,
    /// Recording (WAV) of the opening credits, delivered as the first file.
    #[arg(long)]
    pub opening_credits: Option<PathBuf>,
    /// Recording (WAV) of the closing credits, delivered as the last file.
    #[arg(long)]
    pub closing_credits: Option<PathBuf>,
    /// Speak the opening and closing credits in the book's voice (ACX's wording, e.g.
    /// "{title}. Written by {author}. Narrated by {narrator}."; config.toml's [book]
    /// opening_credits / closing_credits change it) where no recording is given.
    #[arg(long)]
    pub credits: bool,
    /// Speak the opening credits from this template ({title}, {author}, {narrator}).
    #[arg(long, value_name = "TEMPLATE", conflicts_with = "opening_credits")]
    pub opening_credits_text: Option<String>,
    /// Speak the closing credits from this template ({title}, {author}, {narrator}).
    #[arg(long, value_name = "TEMPLATE", conflicts_with = "closing_credits")]
    pub closing_credits_text: Option<String>,
    /// Also write a retail sample (`sample.mp3`): the start of chapter N, whole segments,
    /// at most 5 minutes.
    #[arg(long, value_name = "CHAPTER", conflicts_with_all = ["sample_from", "sample_start"])]
    pub sample: Option<u32>,
    /// Write the retail sample from segment SEG of chapter CH (both from 1: `3:12`).
    #[arg(long, value_name = "CH:SEG", value_parser = parse_chapter_segment,
          conflicts_with = "sample_start")]
    pub sample_from: Option<(u32, u32)>,
    /// Write the retail sample from the segment playing at this time of the book's master
    /// (`m:ss`, `h:mm:ss` or seconds), whole segments.
    #[arg(long, value_name = "TIME", value_parser = parse_clock)]
    pub sample_start: Option<f64>,
    /// Length of the retail sample, room tone included (`m:ss` or seconds; at most 5:00)
    /// [default: 5:00]
    #[arg(long, value_name = "TIME", value_parser = parse_clock)]
    pub sample_length: Option<f64>,
    /// Print the check of the written files as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
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
        /// Model directory holding speech_tokenizer_v3.onnx and campplus.onnx [default: the
        /// demo tiny model, with its stand-in ONNX models]
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

/// Caps the CPU threads of the model's math: candle sizes its matmul parallelism from
/// `RAYON_NUM_THREADS` and the rest runs on rayon's global pool, so both are set. Must run
/// before any model work (the pool is built once).
#[allow(unsafe_code)] // `std::env::set_var` (SAFETY note below)
fn set_threads(threads: Option<usize>) -> Result<()> {
    let Some(n) = threads else {
        return Ok(());
    };
    anyhow::ensure!(n > 0, "--threads must be at least 1");
    // SAFETY: called first thing in `run`, while this process has no other thread that could
    // read the environment concurrently.
    unsafe { std::env::set_var("RAYON_NUM_THREADS", n.to_string()) };
    rayon::ThreadPoolBuilder::new().num_threads(n).build_global()?;
    Ok(())
}

pub fn run(cli: Cli) -> Result<()> {
    set_threads(cli.threads)?;
    match cli.command {
        Some(Command::Parity { model, case, out, stage, device, lanes, flow_matmul }) => {
            let device = parse_device(&device)?;
            let flow_matmul = flow_matmul.map_or(FlowMatmul::default_for(&device), Into::into);
            let req = parity::ParityRequest {
                model_dir: model,
                case,
                out,
                stage,
                device,
                lanes,
                flow_matmul,
            };
            let (stage, n) = parity::run(&req)?;
            eprintln!("parity {stage:?}: wrote {n} tensors to {}", req.out.display());
            Ok(())
        }
        Some(Command::Bench { stage, workload, wl, device, json, quick }) => {
            let device = parse_device(&device)?;
            let report = match (stage, workload) {
                (_, Some(w)) => bench::workload::run(&wl.options(w, device, json))?,
                (Some(stage), None) => bench::run_stage(stage, &wl.stage_options(device, quick))?,
                (None, None) => anyhow::bail!("give --stage or --workload"),
            };
            if json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            }
            Ok(())
        }
        Some(Command::Export {
            project,
            out,
            split,
            format,
            preset,
            delivery,
            bits,
            loudness,
            allow_stale,
        }) => {
            let cfg = Config::load_default();
            cfg.check()?;
            if preset.is_some()
                || matches!(format, Some(ExportFormatArg::Mp3 | ExportFormatArg::M4b))
            {
                let args = DeliveryRun {
                    project,
                    out,
                    split,
                    format,
                    preset,
                    delivery,
                    loudness,
                    allow_stale,
                };
                return run_delivery(&cfg, args);
            }
            let format = format.unwrap_or(ExportFormatArg::Wav);
            let out = match out {
                Some(o) => o,
                None => {
                    let stem = project.file_stem().map_or_else(
                        || "book".to_string(),
                        |s| s.to_string_lossy().trim_end_matches(".lectern").to_string(),
                    );
                    let ext = if format == ExportFormatArg::Flac { "flac" } else { "wav" };
                    output_dir(&cfg).join(format!("{stem}.{ext}"))
                }
            };
            let opts = ExportArgs {
                out,
                split_chapters: split.is_some(),
                format,
                bits,
                loudness,
                allow_stale,
            };
            run_export(&project, opts)
        }
        Some(Command::Voice { action }) => run_voice(action),
        Some(Command::Check { path, json }) => run_check(&path, json),
        Some(Command::Config { synth, ui }) => run_config(&synth, &ui),
        Some(Command::Render {
            manuscript,
            read,
            out,
            split,
            synth,
            report,
            quiet,
            project,
            dry_run,
            json,
            rerender_settings,
        }) => {
            let cfg = Config::load_default();
            cfg.check()?;
            let eff = synth.effective(&cfg, &ExtraFlags::default());
            let manuscript = match manuscript {
                Some(m) => m,
                None => crate::assets::sample_manuscript()?,
            };
            project.rebuild_if_asked(&manuscript)?;
            let out = out.unwrap_or_else(|| {
                let stem = manuscript
                    .file_stem()
                    .map_or_else(|| "book".into(), |s| s.to_string_lossy().into_owned());
                output_dir(&cfg).join(format!("{stem}.wav"))
            });
            let opts = render::RenderOptions {
                manuscript,
                out,
                split_chapters: split.is_some(),
                synth: eff.synth_options(&synth)?,
                progress: !quiet,
                project: project.choice(),
                dry_run,
                rerender_settings,
                read: read.options(),
            };
            let rep = render::render(&opts)?;
            for (path, n) in &rep.files {
                eprintln!("wrote {} ({:.2} s)", path.display(), *n as f64 / 24_000.0);
            }
            if rep.dry_run && json {
                println!("{}", serde_json::to_string_pretty(&rep.listing)?);
            } else if rep.dry_run {
                print!("{}", render::format_listing(&rep.listing));
            } else {
                eprintln!(
                    "{} segments ({} reused, {} with other settings), {:.1} s of audio in {:.1} s \
                     (RTF {:.2}) · {}",
                    rep.segments.len(),
                    rep.reused,
                    rep.other_settings,
                    rep.audio_s,
                    rep.wall_s,
                    rep.wall_s / rep.audio_s.max(1e-9),
                    rep.model
                );
            }
            if let Some(path) = report {
                std::fs::write(&path, serde_json::to_string_pretty(&rep)?)?;
            }
            Ok(())
        }
        Some(Command::Say { text, out, pronunciations, synth, playback_device, fallback_wav }) => {
            let cfg = Config::load_default();
            cfg.check()?;
            let extra = ExtraFlags { playback_device, ..ExtraFlags::default() };
            let eff = synth.effective(&cfg, &extra);
            let opts = crate::say::SayOptions {
                text,
                out,
                pronunciations,
                synth: eff.synth_options(&synth)?,
                playback_device: eff.playback_device.value.clone(),
                fallback_wav: fallback_wav.unwrap_or_else(|| output_dir(&cfg).join("say.wav")),
            };
            match crate::say::say(&opts)? {
                crate::say::Said::Played(device) => eprintln!("played on {device}"),
                crate::say::Said::Written(path) if opts.out.is_some() => {
                    eprintln!("wrote {}", path.display());
                }
                crate::say::Said::Written(path) => {
                    eprintln!("no audio device: wrote {} instead", path.display());
                }
            }
            Ok(())
        }
        None => {
            let w = cli.workstation;
            if let Some(manuscript) = &w.manuscript {
                w.project.rebuild_if_asked(manuscript)?;
            }
            let cfg = Config::load_default();
            let created = if cfg.exists { None } else { Config::create_default().ok().flatten() };
            let eff = w.synth.effective(&cfg, &w.ui.extra());
            let keymap =
                w.ui.keymap.clone().map(workstation::KeymapChoice::Given).unwrap_or_else(|| {
                    crate::assets::config_dir()
                        .map(|d| d.join(crate::config::KEYMAP_FILE))
                        .filter(|p| p.is_file())
                        .map_or(
                            workstation::KeymapChoice::Defaults,
                            workstation::KeymapChoice::Found,
                        )
                });
            workstation::run(workstation::WorkstationOptions {
                manuscript: w.manuscript,
                synth: eff.synth_options(&w.synth)?,
                fallback_wav: w.fallback_wav,
                project: w.project.choice(),
                theme: eff.theme.value.clone(),
                playback_device: eff.playback_device.value.clone(),
                keymap,
                config_errors: cfg.errors.iter().map(ToString::to_string).collect(),
                config_created: created,
                read: w.read.options(),
            })
        }
    }
}

/// `config.toml`'s output_dir, else the current directory.
fn output_dir(cfg: &Config) -> PathBuf {
    cfg.settings.output_dir.clone().unwrap_or_else(|| PathBuf::from("."))
}

fn run_config(synth: &SynthArgs, ui: &UiArgs) -> Result<()> {
    let cfg = Config::load_default();
    let eff = synth.effective(&cfg, &ui.extra());
    let show = |p: Option<PathBuf>| {
        p.map_or_else(|| "(none on this platform)".into(), |p| p.display().to_string())
    };
    let state = |p: &Option<PathBuf>| match p {
        Some(p) if p.exists() => "",
        Some(_) => " (not there)",
        None => "",
    };
    let cfg_dir = crate::assets::config_dir();
    let keymap =
        ui.keymap.clone().or_else(|| cfg_dir.as_ref().map(|d| d.join(crate::config::KEYMAP_FILE)));
    let themes = cfg_dir.as_ref().map(|d| d.join(crate::config::THEMES_DIR));
    println!("config file   {}{}", show(cfg.path.clone()), state(&cfg.path));
    println!("keymap file   {}{}", show(keymap.clone()), state(&keymap));
    println!("themes        {}{}", show(themes.clone()), state(&themes));
    println!("data          {}", show(crate::assets::data_dir()));
    println!("voices        {}", crate::voices::voices_dir().display());
    println!("cpu f32 flow  {}", cpu_flow_gemm());
    println!();
    for (k, v, s) in eff.lines() {
        println!("{k:<16} {v:<32} ({s})");
    }
    if !cfg.errors.is_empty() {
        println!();
        for e in &cfg.errors {
            println!("error: {e} (the default is used)");
        }
        anyhow::bail!("{} error(s) in {}", cfg.errors.len(), show(cfg.path.clone()));
    }
    Ok(())
}

/// What runs the CPU flow's f32 projections here, with a hint where the system's OpenBLAS
/// would be used but is missing.
fn cpu_flow_gemm() -> String {
    use lectern_kernels::gemm::blas as cpu_blas;
    let described = lectern_kernels::gemm::sgemm::describe();
    let turned_off = std::env::var(cpu_blas::ENV_VAR).is_ok_and(|v| v == "0");
    if cpu_blas::openblas().is_some() || !cpu_blas::cpu_has_avx512() || turned_off {
        return described;
    }
    match cpu_blas::system_openblas() {
        Some(found) => format!(
            "{described} (the system's OpenBLAS runs its {} kernels, not AVX-512 ones: is \
             OPENBLAS_CORETYPE set?)",
            found.core
        ),
        None => format!(
            "{described} (this CPU has AVX-512: with the system's OpenBLAS installed, e.g. \
             libopenblas0-pthread, the f32 flow runs faster)"
        ),
    }
}

/// What `lectern export` was asked for, besides the project.
struct ExportArgs {
    out: PathBuf,
    split_chapters: bool,
    format: ExportFormatArg,
    bits: u32,
    loudness: Option<f64>,
    allow_stale: bool,
}

fn run_export(project: &std::path::Path, args: ExportArgs) -> Result<()> {
    use store::export::{ExportFormat, ExportOptions, SampleFormat};
    let sample_format = match args.bits {
        16 => SampleFormat::Int16,
        24 => SampleFormat::Int24,
        32 => SampleFormat::Float32,
        other => anyhow::bail!("--bits {other}: use 16, 24 or 32"),
    };
    let format = match args.format {
        ExportFormatArg::Flac => ExportFormat::Flac,
        _ => ExportFormat::Wav,
    };
    let project = open_for_export(project)?;
    let opts = ExportOptions {
        out: args.out,
        format,
        sample_format,
        split_chapters: args.split_chapters,
        loudness_lufs: args.loudness,
        allow_stale: args.allow_stale,
    };
    let report = store::export::export(&project, &opts)?;
    for s in &report.stale {
        eprintln!("warning: stale take exported (--allow-stale) for {s}");
    }
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

/// Opens the project of `project` (a project directory or its manuscript) for export; given
/// the manuscript, syncs it first, so edits since the last render show up as stale or missing
/// segments instead of the old text exported silently.
fn open_for_export(project: &std::path::Path) -> Result<store::Project> {
    let dir = if project.is_file() {
        store::Project::dir_for_manuscript(project)
    } else {
        project.to_path_buf()
    };
    anyhow::ensure!(dir.join(store::DB_FILE).is_file(), "no Lectern project at {}", dir.display());
    if project.is_file() {
        crate::session::resync_for_export(project, &dir)?;
    }
    Ok(store::Project::open(&dir)?)
}

/// What `lectern export` was asked for when it writes delivery files.
struct DeliveryRun {
    project: PathBuf,
    out: Option<PathBuf>,
    split: Option<ExportSplit>,
    format: Option<ExportFormatArg>,
    preset: Option<ExportPreset>,
    delivery: DeliveryArgs,
    loudness: Option<f64>,
    allow_stale: bool,
}

/// The manuscript's name without `.lectern` or extension, for default titles and outputs.
fn book_stem(project: &std::path::Path) -> String {
    project.file_stem().map_or_else(
        || "book".to_string(),
        |s| s.to_string_lossy().trim_end_matches(".lectern").to_string(),
    )
}

fn run_delivery(cfg: &Config, run: DeliveryRun) -> Result<()> {
    use crate::deliver::{self, DeliveryFormat, DeliveryOptions, RoomToneSource};
    let acx = run.preset == Some(ExportPreset::Acx);
    if acx && run.loudness.is_some() {
        anyhow::bail!(
            "--preset acx sets its own levels (RMS −23…−18 dB, peaks ≤ −3 dB): leave out --loudness"
        );
    }
    if run.loudness.is_some() {
        anyhow::bail!(
            "--loudness applies to wav and flac; mp3 and m4b are mastered to RMS −20 dB with peaks ≤ −3 dB"
        );
    }
    let format = match run.format {
        None | Some(ExportFormatArg::Mp3) => DeliveryFormat::Mp3,
        Some(ExportFormatArg::M4b) if !acx => DeliveryFormat::M4b,
        Some(other) => anyhow::bail!(
            "--preset acx delivers MP3 files; --format {} cannot be combined with it",
            format!("{other:?}").to_lowercase()
        ),
    };
    let d = run.delivery;
    let stem = book_stem(&run.project);
    let room_tone = match (d.room_tone.clone(), d.room_tone_db) {
        (Some(p), _) => RoomToneSource::Recording(p),
        (None, Some(level_db)) => RoomToneSource::Noise { level_db },
        (None, None) => RoomToneSource::default(),
    };
    let project = open_for_export(&run.project)?;
    let flags = deliver::MetaFlags {
        title: d.title.clone(),
        author: d.author.clone(),
        narrator: d.narrator.clone(),
        cover: d.cover.clone(),
    };
    let book = project.book()?;
    let meta = deliver::BookMeta::resolve(&flags, &book, project.dir(), &cfg.settings.book, &stem);
    let sample = sample_span(&d)?;
    let spoken = spoken_credits(&project, &meta, &d, &cfg.settings.book)?;
    let opts = DeliveryOptions {
        out_dir: run.out.unwrap_or_else(|| output_dir(cfg).join(&stem)),
        format,
        split_chapters: acx || run.split.is_some(),
        meta,
        room_tone,
        opening_credits: d.opening_credits.or_else(|| spoken.opening.clone()),
        closing_credits: d.closing_credits.or_else(|| spoken.closing.clone()),
        sample,
        enforce_acx: acx,
        allow_stale: run.allow_stale,
        ..DeliveryOptions::default()
    };
    let report = deliver::export(&project, &opts)?;
    for s in &report.stale {
        eprintln!("warning: stale take exported (--allow-stale) for {s}");
    }
    for f in &report.files {
        eprintln!("wrote {} ({:.1} s)", f.path.display(), f.samples as f64 / 44_100.0);
    }
    // Files of an earlier export (another chapter list) would be uploaded or checked with
    // these; they are not removed, but named.
    let written: std::collections::HashSet<&std::path::Path> =
        report.files.iter().map(|f| f.path.as_path()).collect();
    for other in deliver::check::delivery_files(&opts.out_dir).unwrap_or_default() {
        if !written.contains(other.as_path()) {
            eprintln!("warning: {} is not from this export (left as it was)", other.display());
        }
    }
    let checks: Vec<_> = report.files.iter().map(|f| f.check.clone()).collect();
    print_checks(&checks, d.json)?;
    Ok(())
}

/// `CH:SEG`, both whole numbers from 1.
fn parse_chapter_segment(text: &str) -> std::result::Result<(u32, u32), String> {
    let bad = || format!("`{text}`: write CHAPTER:SEGMENT, both from 1 (e.g. 3:12)");
    let (ch, seg) = text.split_once(':').ok_or_else(bad)?;
    let ch: u32 = ch.trim().parse().map_err(|_| bad())?;
    let seg: u32 = seg.trim().parse().map_err(|_| bad())?;
    if ch == 0 || seg == 0 {
        return Err(bad());
    }
    Ok((ch, seg))
}

/// `m:ss`, `h:mm:ss` or seconds (fractions allowed), as seconds.
pub fn parse_clock(text: &str) -> std::result::Result<f64, String> {
    let bad = || format!("`{text}`: write m:ss, h:mm:ss or seconds (e.g. 4:30 or 270)");
    let mut seconds = 0.0;
    let parts: Vec<&str> = text.trim().split(':').collect();
    if parts.len() > 3 {
        return Err(bad());
    }
    for (i, part) in parts.iter().enumerate() {
        let value: f64 = part.parse().map_err(|_| bad())?;
        let last = i + 1 == parts.len();
        if !value.is_finite() || value < 0.0 || (!last && value.fract() != 0.0) {
            return Err(bad());
        }
        if i > 0 && value >= 60.0 {
            return Err(bad());
        }
        seconds = seconds * 60.0 + value;
    }
    Ok(seconds)
}

/// The retail sample asked for: `--sample N`, `--sample-from CH:SEG` or `--sample-start TIME`,
/// with `--sample-length` (which alone is an error: it needs a start).
fn sample_span(d: &DeliveryArgs) -> Result<Option<crate::deliver::SampleSpan>> {
    use crate::deliver::{SampleSpan, SampleStart};
    let start = match (d.sample, d.sample_from, d.sample_start) {
        (Some(chapter), ..) => SampleStart::Segment { chapter, segment: 1 },
        (_, Some((chapter, segment)), _) => SampleStart::Segment { chapter, segment },
        (.., Some(seconds)) => SampleStart::Time { seconds },
        (None, None, None) if d.sample_length.is_some() => {
            anyhow::bail!(
                "--sample-length needs a start: --sample N, --sample-from CH:SEG or --sample-start TIME"
            )
        }
        (None, None, None) => return Ok(None),
    };
    let length_s = d.sample_length.unwrap_or(crate::deliver::check::acx::SAMPLE_MAX_S);
    Ok(Some(SampleSpan { start, length_s }))
}

/// The credits to speak: a side with a recording is not spoken; a side's template is its flag,
/// else config.toml's `[book]`, else ACX's wording, when `--credits` asks for both.
fn spoken_credits(
    project: &store::Project,
    meta: &crate::deliver::BookMeta,
    d: &DeliveryArgs,
    config: &crate::config::BookDefaults,
) -> Result<crate::deliver::credits::SpokenCredits> {
    use crate::deliver::credits::{DEFAULT_CLOSING, DEFAULT_OPENING, render_both};
    let template = |flag: &Option<String>, file: &Option<String>, default: &'static str| {
        flag.clone().or_else(|| d.credits.then(|| file.clone().unwrap_or(default.to_string())))
    };
    let opening = match d.opening_credits {
        Some(_) => None,
        None => template(&d.opening_credits_text, &config.opening_credits, DEFAULT_OPENING),
    };
    let closing = match d.closing_credits {
        Some(_) => None,
        None => template(&d.closing_credits_text, &config.closing_credits, DEFAULT_CLOSING),
    };
    render_both(project, meta, opening.as_deref(), closing.as_deref())
}

/// Prints checks as a table (stdout) or JSON.
fn print_checks(checks: &[crate::deliver::check::FileCheck], json: bool) -> Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(checks)?);
    } else {
        print!("{}", crate::deliver::check::table(checks));
    }
    Ok(())
}

/// `lectern check`: exits non-zero when a file fails.
fn run_check(path: &std::path::Path, json: bool) -> Result<()> {
    let checks = crate::deliver::check::check_dir(path).map_err(anyhow::Error::msg)?;
    print_checks(&checks, json)?;
    let failing = checks.iter().filter(|c| !c.passes()).count();
    anyhow::ensure!(failing == 0, "{failing} of {} file(s) fail ACX's requirements", checks.len());
    Ok(())
}

fn run_voice(action: VoiceCommand) -> Result<()> {
    match action {
        VoiceCommand::List => {
            let dir = crate::voices::voices_dir();
            let voices = lectern_voice::list(&dir)?;
            if voices.is_empty() {
                println!("no voices in {} yet (`lectern voice add` makes one)", dir.display());
            }
            let line = |m: &lectern_voice::Manifest, note: &str| {
                let secs = m.prompt_tokens as f64 / lectern_voice::TOKENS_PER_SECOND;
                println!(
                    "{:<20} {:>6.2} s  {:>5} tokens  {}{note}",
                    m.name, secs, m.prompt_tokens, m.model.name
                );
            };
            for m in &voices {
                line(m, "");
            }
            let demo = crate::assets::DEMO_VOICE;
            if !voices.iter().any(|m| m.name == demo) {
                if let Some(d) = crate::voices::demo_voice_dir(demo) {
                    if let Ok(v) = lectern_voice::Voice::load_dir(&d) {
                        line(&v.manifest, "  (demo voice, for the demo model)");
                    }
                }
            }
            Ok(())
        }
        VoiceCommand::Show { name } => {
            println!("{}", crate::voices::load(&name)?.describe());
            Ok(())
        }
        VoiceCommand::Add { reference, text, name, model, force, allow_non_speech } => {
            let model = crate::session::ModelChoice::resolve(model.as_deref())?;
            let req = lectern_voice::add::AddRequest {
                reference,
                text,
                name,
                model_dir: model.dir.clone(),
                voices_dir: crate::voices::voices_dir(),
                force,
                allow_non_speech,
            };
            let added = lectern_voice::add::add_voice(&req)?;
            for w in &added.warnings {
                eprintln!("warning: {w}");
            }
            let v = &added.voice;
            println!("{}", v.describe());
            println!(
                "aligned:      {} of {} tokens, {} of {} mel frames",
                v.manifest.prompt_tokens,
                added.raw_tokens,
                v.manifest.prompt_mel_frames,
                added.raw_mel_frames
            );
            if model.bundled_tiny {
                println!("note:         {}", crate::session::TINY_NOTICE);
            }
            Ok(())
        }
    }
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
    fn flags_beat_config_which_beats_defaults() {
        let path = std::path::Path::new("/c/config.toml");
        let text = "nfe = 4\nlanes = 2\nprecision = \"f16\"\ntheme = \"light\"\nlanes_x = 1\n";
        let (settings, errors) = crate::config::parse(text, path);
        assert_eq!(errors.len(), 1, "the unknown key: {errors:?}");
        let cfg = Config { path: Some(path.into()), exists: true, settings, errors };
        let cli = Cli::try_parse_from(["lectern", "--lanes", "3", "--theme", "dark"]).unwrap();
        let w = &cli.workstation;
        let eff = w.synth.effective(&cfg, &w.ui.extra());
        let file = Source::File(path.into());
        assert_eq!((eff.nfe.value, &eff.nfe.source), (4, &file));
        assert_eq!((eff.lanes.value, &eff.lanes.source), (3, &Source::Flag));
        assert_eq!((eff.precision.value, &eff.precision.source), (Precision::F16, &file));
        assert_eq!((eff.theme.value.as_str(), &eff.theme.source), ("dark", &Source::Flag));
        assert_eq!((eff.group_target.value, &eff.group_target.source), (2000, &Source::Default));
        let p = eff.params(&w.synth);
        assert_eq!((p.nfe, p.lanes, p.precision), (4, 3, Precision::F16));
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
        let Some(Command::Bench { wl, .. }) = cli.command else { panic!("bench") };
        assert!(wl.no_overlap);
        assert!(Cli::try_parse_from(["lectern"]).unwrap().workstation.synth.params().overlap);
    }

    #[test]
    fn stage_benches_take_their_sweep_from_the_flags() {
        let parse = |args: &[&str]| {
            let cli = Cli::try_parse_from([&["lectern", "bench"], args].concat()).unwrap();
            let Some(Command::Bench { wl, .. }) = cli.command else { panic!("bench") };
            wl
        };
        let wl = parse(&["--stage", "lm", "--lanes", "1,3", "--steps", "64", "--precision", "f32"]);
        let o = wl.stage_options(candle::Device::Cpu, false);
        assert_eq!(o.lanes, Some(vec![1, 3]));
        assert_eq!((o.steps, o.precision), (Some(64), Some(lectern_model::lm::LmPrecision::F32)));
        let o = parse(&["--stage", "lm"]).stage_options(candle::Device::Cpu, true);
        assert_eq!((o.lanes, o.steps, o.precision, o.quick), (None, None, None, true));
        // A workload still defaults to 8 lanes and f32.
        let wl = parse(&["--workload", "smoke", "--flow-matmul", "tf32x3", "--no-lm-kernels"]);
        let o = wl.options(bench::workload::Workload::Smoke, candle::Device::Cpu, true);
        assert_eq!((o.lanes, o.precision), (vec![8], Precision::F32));
        assert_eq!(
            (o.flow_matmul, o.lm_kernels, o.flow_kernels),
            (Some(FlowMatmul::Tf32x3), false, true)
        );
    }
}
