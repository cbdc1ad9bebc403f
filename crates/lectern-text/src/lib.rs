//! Text frontend: manuscript → normalised, segmented text → token ids.
//!
//! Pure Rust (no candle). The pipeline, following spec/COSYVOICE3.md §5.2–§5.3:
//!
//! 1. [`manuscript`]: read plain text or Markdown (headings start chapters, emphasis and links are
//!    read as text, code blocks are skipped), UTF-8 checked with an error naming the line; pause
//!    markup `[pause]`, `[pause:1.5s]`, `[pause:300ms]`, `[break]`; voicing markup (`[voice:…]`,
//!    `[as:…]…[/as]`, cast `NAME:` paragraphs, `[style:…]`, `[pace:…]`) gives each segment its
//!    [`Voicing`].
//! 2. [`pronounce`]: the project's pronunciation overrides (`word = spoken form`).
//! 3. [`normalize`]: English numbers, ordinals, years, decimals, currency, percentages, times and
//!    abbreviations; Chinese numerals and the upstream Chinese clean-ups. CosyVoice3 special
//!    tokens (`<|…|>`, `[breath]`, `<strong>`, the CMU phones and pinyin units) pass untouched.
//!    [`spell`]: numbers, dates, times, currency and units in French, German, Spanish, Italian
//!    and Russian runs; Japanese and Korean runs read as written ([`manuscript`]'s language
//!    pass decides each run's language by markup, EPUB `xml:lang`, script or the book's).
//! 4. [`segment`]: upstream `split_paragraph` (token_max_n 80, token_min_n 60, merge_len 20),
//!    closing quotes kept with their sentence, over-long sentences split at commas, then spaces,
//!    then characters, so no segment exceeds [`segment::SegmentLimits::hard_max`]; each segment
//!    says why it ends ([`segment::Boundary`]).
//! 5. [`tokenizer`]: the Qwen2 byte-level BPE from `CosyVoice-BlankEN` plus the 278 CosyVoice3
//!    special tokens (ids from 151646), or a clearly labelled byte fallback for tiny test models.
//!
//! Public API used by the engine:
//!
//! ```no_run
//! use lectern_text::{Manuscript, ParseOptions, Tokenizer};
//! let tok = Tokenizer::from_model_dir("fixtures/cosyvoice3-tiny-a/model".as_ref())?;
//! let cast = vec!["Anna".to_string(), "Mrs Hale".to_string()]; // cast.toml's characters
//! let opts = ParseOptions::default().with_tokenizer(&tok).with_characters(cast);
//! let book = Manuscript::load("book.md".as_ref(), &opts)?;
//! for chapter in &book.chapters {
//!     for seg in &chapter.segments {
//!         let ids = tok.encode(&seg.text)?; // the segment's text ids
//!         let _ = (seg.id, seg.span.start.line, seg.hash, seg.pause_after_ms, ids);
//!         let _ = (&seg.voicing.voice, &seg.voicing.character, &seg.voicing.style);
//!     }
//! }
//! let prompt_ids = tok.prompt_ids("Transcript of the voice prompt.")?;
//! # Ok::<(), lectern_text::TextError>(())
//! ```

#![forbid(unsafe_code)]

pub mod archive;
pub mod cjk;
pub mod document;
pub mod docx;
pub mod epub;
pub mod hashing;
pub mod ipa;
pub mod kind;
pub mod limits;
pub mod manuscript;
pub mod mapped;
pub mod markup;
pub mod normalize;
pub mod policy;
pub mod pronounce;
pub mod reading_report;
pub mod segment;
pub mod spell;
pub mod table;
pub mod tokenizer;

use std::path::PathBuf;

pub use document::{BookInfo, Cover, DocBlock, DocChapter, DocMark, DocSkip, Document};
pub use kind::SegmentKind;
pub use limits::InputLimits;
pub use manuscript::{
    Chapter, Format, Frontend, Manuscript, Mark, ParseOptions, PauseDefaults, Position, Segment,
    Skipped, Span, Unspoken, UnspokenPolicy, Voicing,
};
pub use normalize::Lang;
pub use policy::{NotesPolicy, ReadPolicy, SkipReason};
pub use pronounce::Pronunciations;
pub use segment::{Boundary, SegmentLimits};
pub use tokenizer::{Tokenizer, TokenizerKind};

/// Errors of the text frontend. Every input error names the file and, where it has one, the line.
#[derive(Debug, thiserror::Error)]
pub enum TextError {
    // The cause is in the message, so it is no `source` (a field of that name would be one, and
    // `{:#}` would print it twice: "… (os error 2): No such file … (os error 2)").
    #[error("cannot read {path}: {cause}")]
    Io { path: PathBuf, cause: std::io::Error },
    #[error("{path}: looks like a binary file (NUL byte at byte {offset}), not a manuscript")]
    Binary { path: PathBuf, offset: usize },
    #[error("{path}: invalid UTF-8 at line {line}, column {column} (byte {offset})")]
    InvalidUtf8 { path: PathBuf, line: usize, column: usize, offset: usize },
    #[error("{path}: the manuscript is empty (nothing to read aloud)")]
    Empty { path: PathBuf },
    #[error("{path}:{line}:{column}: {reason}")]
    Markup { path: PathBuf, line: usize, column: usize, reason: String },
    #[error("{path}:{line}: bad pronunciation entry: {reason}")]
    Pronunciation { path: PathBuf, line: usize, reason: String },
    #[error("tokenizer: {0}")]
    Tokenizer(String),
    #[error(transparent)]
    Limit(#[from] limits::LimitError),
}

pub type Result<T> = std::result::Result<T, TextError>;

/// The stable hash of segment contents ([`crate::hashing::stable_hash`]).
pub use crate::hashing::stable_hash;
