//! The argument groups that commands flatten in: the workstation's own, what of a manuscript
//! is read, the UI, where the takes are kept, and synthesis (model, voice, device, engine).

use std::path::PathBuf;

use lectern_engine::protocol::Precision;
use lectern_model::flow::FlowMatmul;

use crate::cli::ExtraFlags;
use crate::limits;

/// `lectern [MANUSCRIPT] [--voice V] [--model DIR]`: open the workstation.
#[derive(Debug, Clone, clap::Args)]
pub struct WorkstationArgs {
    /// Manuscript (plain text, Markdown, EPUB or DOCX) [default: the sample manuscript]
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

/// What of a manuscript is read, for the workstation and `render` alike. The kinds are EPUB 3
/// structural-semantics names ([`lectern_text::policy`]); the flags change the default policy,
/// which skips what a publisher put in the book and reads what the author wrote.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ReadArgs {
    /// Leave out every front-matter section of an EPUB or DOCX: cover, title page, copyright,
    /// contents, and also dedication, epigraph, foreword, preface, prologue, introduction,
    /// acknowledgments (`--read KIND` still reads one of them).
    #[arg(long)]
    pub skip_front_matter: bool,
    /// Also skip these kinds, comma-separated (e.g. `dedication,epigraph`, `index`,
    /// `appendix`, `table`). Skipped by default: cover, half-title and title pages,
    /// copyright-page, imprint, colophon, seriespage, toc, loi, lot, code.
    #[arg(long = "skip", value_name = "KIND,…", value_delimiter = ',', value_parser = parse_kind)]
    pub skip_kinds: Vec<String>,
    /// Read these kinds after all, comma-separated (e.g. `code`, `titlepage`); wins over
    /// `--skip` and `--skip-front-matter`. Read by default: everything the author wrote,
    /// front matter included (dedication, epigraph, foreword, preface, prologue,
    /// introduction), tables row by row. Page numbers, navigation and hidden text are never
    /// read.
    #[arg(long = "read", value_name = "KIND,…", value_delimiter = ',', value_parser = parse_kind)]
    pub read_kinds: Vec<String>,
    /// Notes: `skip` (markers and notes beside the text are not read; a "Notes" chapter the
    /// contents list is read as a chapter), `inline` (each note after the paragraph that refers
    /// to it), `chapter-end` (a chapter's notes at its end) [default: skip]
    #[arg(long, value_enum)]
    pub notes: Option<NotesArg>,
    /// Which contents level makes chapters, 1 (the top) to 6 [default: decided per book: parts
    /// become marks, their chapters chapters]
    #[arg(long, value_parser = clap::value_parser!(u8).range(1..=6))]
    pub chapter_level: Option<u8>,
    /// `lectern`: CJK runs are read as Chinese and the rest as English, each with its own
    /// numbers and punctuation; `upstream`: one language per paragraph, Chinese if it holds
    /// any ideograph (CosyVoice3's rule) [default: lectern]
    #[arg(long, value_enum)]
    pub frontend: Option<FrontendArg>,
    /// Text in a language CosyVoice3 does not speak (it speaks Chinese, English, Japanese,
    /// Korean, German, Spanish, French, Italian and Russian; Arabic, Hebrew, Greek, Hindi,
    /// Thai, … are found by script, any other language by its `[lang:…]`/`xml:lang` tag):
    /// `refuse` the book, naming where (`--dry-run` lists it all), `skip` such text (listed
    /// as skipped), or `read` it anyway, at your risk [default: refuse]
    #[arg(long, value_enum, value_name = "refuse|skip|read")]
    pub unspoken_languages: Option<UnspokenArg>,
}

/// `--unspoken-languages`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum UnspokenArg {
    Refuse,
    Skip,
    Read,
}

impl From<UnspokenArg> for lectern_text::UnspokenPolicy {
    fn from(u: UnspokenArg) -> Self {
        match u {
            UnspokenArg::Refuse => Self::Refuse,
            UnspokenArg::Skip => Self::Skip,
            UnspokenArg::Read => Self::Read,
        }
    }
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum FrontendArg {
    Lectern,
    Upstream,
}

/// `--notes`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum NotesArg {
    Skip,
    Inline,
    ChapterEnd,
}

impl From<NotesArg> for lectern_text::NotesPolicy {
    fn from(n: NotesArg) -> Self {
        match n {
            NotesArg::Skip => Self::Skip,
            NotesArg::Inline => Self::Inline,
            NotesArg::ChapterEnd => Self::ChapterEnd,
        }
    }
}

/// A kind of `--skip`/`--read`: one word, lower-cased (`Dedication` → `dedication`).
fn parse_kind(s: &str) -> Result<String, String> {
    let kind = s.trim().to_ascii_lowercase();
    if kind.is_empty() || kind.contains(char::is_whitespace) {
        return Err(format!(
            "`{s}` is not a kind: give structural names like `dedication,epigraph`"
        ));
    }
    Ok(kind)
}

impl ReadArgs {
    pub fn options(&self) -> crate::reading::ReadOptions {
        let frontend = match self.frontend {
            Some(FrontendArg::Upstream) => lectern_text::Frontend::Upstream,
            Some(FrontendArg::Lectern) | None => lectern_text::Frontend::Lectern,
        };
        crate::reading::ReadOptions {
            // Folded into the policy below, so that `--read` can take a kind back from it.
            skip_front_matter: false,
            frontend,
            policy: self.policy(),
            unspoken_languages: self.unspoken_languages.map(Into::into).unwrap_or_default(),
        }
    }

    /// The default policy, then `--skip-front-matter`, `--skip`, `--read`, in that order.
    fn policy(&self) -> lectern_text::ReadPolicy {
        let base = lectern_text::ReadPolicy::default();
        let base = if self.skip_front_matter { base.skipping_front_matter() } else { base };
        base.skipping(&self.skip_kinds)
            .reading(&self.read_kinds)
            .with_notes(self.notes.map(Into::into).unwrap_or_default())
            .with_chapter_level(self.chapter_level.map(usize::from))
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
    /// Key overrides: a TOML file with a `[bindings]` table of `"KEY" = "ACTION"` lines, e.g.
    /// `"ctrl-r" = "reseed"`; a listed key replaces its default, `"none"` unbinds it [default:
    /// keymap.toml in the configuration directory, if there is one]
    #[arg(long)]
    pub keymap: Option<PathBuf>,
}

impl UiArgs {
    pub(in crate::cli) fn extra(&self) -> ExtraFlags {
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
    /// LM lanes decoded together, 1–32 [default: 8; on CUDA 32]
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
    /// How the flow's large matmuls run. Each take records which ran [default: bf16 on CUDA,
    /// f32 elsewhere]
    #[arg(long, value_enum)]
    pub flow_matmul: Option<FlowMatmulArg>,
    /// Speak the book's voice in cross-lingual mode (text in another language than its
    /// reference recording); a cast's voices say it in `cast.toml`.
    #[arg(long)]
    pub cross_lingual: bool,
}

/// `--flow-matmul`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum FlowMatmulArg {
    /// Plain f32 products
    F32,
    /// Three TF32 tensor-core products per f32 product, as exact as f32 (CUDA)
    Tf32x3,
    /// bf16 inputs and f32 sums: a reduced precision, its deviation published
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
