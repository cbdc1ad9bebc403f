//! `config.toml`: the narrator's defaults, in the platform's configuration directory
//! ([`crate::assets::config_dir`]). Command-line flags beat the file, the file beats the
//! built-in defaults. Numbers go through the same rules as the flags ([`crate::limits`]).
//!
//! A bad file never goes unnoticed: every error names the file, the line and the key. `render`
//! and `export` refuse to run; the workstation shows a banner and runs on the built-in default
//! of each key in error (the other keys still apply).

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use crate::limits;
use lectern_engine::protocol::Precision;

/// The configuration file's name in the configuration directory.
pub const CONFIG_FILE: &str = "config.toml";
/// The keymap overrides' file name in the configuration directory.
pub const KEYMAP_FILE: &str = "keymap.toml";
/// The user themes' folder in the configuration directory.
pub const THEMES_DIR: &str = "themes";

/// What a new configuration file says: every key, commented out, at its default.
pub const TEMPLATE: &str = "\
# Lectern configuration. Command-line flags beat these settings; unset keys keep the built-in
# defaults shown here. `lectern config` prints the effective settings and where each came from.

# Upstream CosyVoice3 model directory (default: the demo tiny random-weight model).
# model = \"/path/to/Fun-CosyVoice3-0.5B\"
# Voice name (`lectern voice list`) or voice directory (default: tiny-demo on the demo model).
# voice = \"narrator\"
# cpu, cuda, cuda:N or metal.
# device = \"cpu\"
# Flow Euler steps, 1-64.
# nfe = 10
# Target mel frames per flow group: 0 (one segment per group) or 50-8000.
# group_target = 2000
# LM lanes decoded together, 1-32 (default 8; 32 on cuda).
# lanes = 8
# LM weight precision: f32, f16, bf16 or q8_0.
# precision = \"f32\"
# Workstation theme: dark, light, or a file's name in the themes/ folder beside this file.
# theme = \"dark\"
# Audio output: \"default\", a device name or cpal id, or \"file\" (write playback to a WAV).
# playback_device = \"default\"
# Folder for `render` and `export` when --out is not given (default: the current directory).
# output_dir = \"~/Audiobooks\"

# Book metadata for delivery files (ID3/M4B tags, credits) when neither the flags nor the
# manuscript (EPUB metadata, Markdown front matter) give it.
# [book]
# narrator = \"Your Name\"
# author = \"Author Name\"
# publisher = \"Your Imprint\"
# rights = \"© 2026 Your Name\"
# Credits spoken in the book's voice by `export --credits` ({title}, {author}, {narrator},
# {voice}: the synthetic voice's name).
# opening_credits = \"{title}. Written by {author}. Narrated by {narrator}.\"
# closing_credits = \"The end. {title}. Written by {author}. Narrated by {narrator}.\"
";

/// The keys a configuration file may set.
pub const KEYS: &[&str] = &[
    "model",
    "voice",
    "device",
    "nfe",
    "group_target",
    "lanes",
    "precision",
    "theme",
    "playback_device",
    "output_dir",
    "book",
];

/// The keys of the `[book]` table.
pub const BOOK_KEYS: &[&str] =
    &["narrator", "author", "publisher", "rights", "opening_credits", "closing_credits"];

/// `[book]`: defaults for the book metadata of delivery files, and the credits' templates.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BookDefaults {
    pub narrator: Option<String>,
    pub author: Option<String>,
    /// The publisher (an imprint every book of yours shares).
    pub publisher: Option<String>,
    /// The rights statement (`© 2026 Your Name`).
    pub rights: Option<String>,
    pub opening_credits: Option<String>,
    pub closing_credits: Option<String>,
}

impl BookDefaults {
    /// The keys that are set, as `config.toml` names them, with their values (for
    /// `lectern config`).
    #[must_use]
    pub fn entries(&self) -> Vec<(&'static str, &str)> {
        [
            ("narrator", &self.narrator),
            ("author", &self.author),
            ("publisher", &self.publisher),
            ("rights", &self.rights),
            ("opening_credits", &self.opening_credits),
            ("closing_credits", &self.closing_credits),
        ]
        .into_iter()
        .filter_map(|(key, value)| value.as_deref().map(|v| (key, v)))
        .collect()
    }
}

/// One error in a configuration file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}:{line}: {key}: {message}", file.display())]
pub struct ConfigError {
    pub file: PathBuf,
    /// 1-based.
    pub line: usize,
    /// The key in error (`(file)` for a file that does not parse).
    pub key: String,
    pub message: String,
}

/// What a configuration file sets; `None`: not set (or in error).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FileSettings {
    pub model: Option<PathBuf>,
    pub voice: Option<String>,
    pub device: Option<String>,
    pub nfe: Option<usize>,
    pub group_target: Option<usize>,
    pub lanes: Option<usize>,
    pub precision: Option<Precision>,
    pub theme: Option<String>,
    pub playback_device: Option<String>,
    pub output_dir: Option<PathBuf>,
    pub book: BookDefaults,
}

/// A configuration file read: its settings, and the keys that were in error.
#[derive(Debug, Clone, Default)]
pub struct Config {
    /// The file (`None`: no configuration directory on this platform).
    pub path: Option<PathBuf>,
    /// Whether the file exists.
    pub exists: bool,
    pub settings: FileSettings,
    pub errors: Vec<ConfigError>,
}

impl Config {
    /// The default file: `CONFIG/config.toml`.
    pub fn default_path() -> Option<PathBuf> {
        crate::assets::config_dir().map(|d| d.join(CONFIG_FILE))
    }

    /// Reads the default file; a missing file is an empty configuration.
    pub fn load_default() -> Self {
        match Self::default_path() {
            Some(p) => Self::load(&p),
            None => Self::default(),
        }
    }

    /// Reads `path`; a missing file is an empty configuration.
    pub fn load(path: &Path) -> Self {
        match std::fs::read_to_string(path) {
            Ok(text) => {
                let (settings, errors) = parse(&text, path);
                Self { path: Some(path.to_path_buf()), exists: true, settings, errors }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                Self { path: Some(path.to_path_buf()), ..Self::default() }
            }
            Err(e) => Self {
                path: Some(path.to_path_buf()),
                exists: true,
                settings: FileSettings::default(),
                errors: vec![ConfigError {
                    file: path.to_path_buf(),
                    line: 1,
                    key: "(file)".into(),
                    message: format!("cannot read: {e}"),
                }],
            },
        }
    }

    /// Errors as one message, for the commands that refuse a bad file.
    pub fn check(&self) -> anyhow::Result<()> {
        if self.errors.is_empty() {
            return Ok(());
        }
        let lines: Vec<String> = self.errors.iter().map(ToString::to_string).collect();
        anyhow::bail!("bad configuration file:\n  {}", lines.join("\n  "))
    }

    /// Writes the commented template where the default file belongs, if there is none, with an
    /// empty `themes/` folder beside it. Returns the file written.
    pub fn create_default() -> std::io::Result<Option<PathBuf>> {
        let Some(dir) = crate::assets::config_dir() else { return Ok(None) };
        std::fs::create_dir_all(dir.join(THEMES_DIR))?;
        let path = dir.join(CONFIG_FILE);
        if path.exists() {
            return Ok(None);
        }
        std::fs::write(&path, TEMPLATE)?;
        Ok(Some(path))
    }
}

/// Sets `model` in the configuration file at `path` to `model` (`lectern model download`):
/// a missing file starts from the commented template, and the file's comments and other keys
/// are kept. The template's commented-out `# model = …` line gets the setting right below it.
pub fn record_model(path: &Path, model: &Path) -> anyhow::Result<()> {
    use anyhow::Context;
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => TEMPLATE.to_string(),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let value = toml_edit::Value::from(model.display().to_string());
    let mut doc: toml_edit::DocumentMut = text.parse().with_context(|| {
        format!("{} is not valid TOML: set model = {value} in it by hand", path.display())
    })?;
    let commented = "# model = ";
    let updated = if doc.contains_key("model") || !text.lines().any(|l| l.starts_with(commented)) {
        doc["model"] = toml_edit::value(value);
        doc.to_string()
    } else {
        let mut out = String::with_capacity(text.len() + 80);
        let mut placed = false;
        for line in text.split_inclusive('\n') {
            out.push_str(line);
            if !placed && line.starts_with(commented) {
                out.push_str(&format!("model = {value}\n"));
                placed = true;
            }
        }
        out
    };
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    // Written beside it and renamed over it: an interrupted write leaves the old file whole.
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    std::io::Write::write_all(&mut tmp, updated.as_bytes())?;
    tmp.persist(path).with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// 1-based line of byte offset `at` in `text`.
fn line_of(text: &str, at: usize) -> usize {
    text[..at.min(text.len())].bytes().filter(|&b| b == b'\n').count() + 1
}

/// Parses a configuration file's text. Each bad key is reported and left unset; a file that is
/// not TOML sets nothing.
pub fn parse(text: &str, path: &Path) -> (FileSettings, Vec<ConfigError>) {
    let mut out = FileSettings::default();
    let mut errors = Vec::new();
    let table: BTreeMap<String, toml::Spanned<toml::Value>> = match toml::from_str(text) {
        Ok(t) => t,
        Err(e) => {
            let line = e.span().map_or(1, |s| line_of(text, s.start));
            errors.push(ConfigError {
                file: path.to_path_buf(),
                line,
                key: "(file)".into(),
                message: format!("not valid TOML: {}", e.message()),
            });
            return (out, errors);
        }
    };
    for (key, value) in table {
        let line = line_of(text, value.span().start);
        if let Err(message) = apply(&mut out, &key, value.get_ref()) {
            errors.push(ConfigError { file: path.to_path_buf(), line, key, message });
        }
    }
    errors.sort_by_key(|e| e.line);
    (out, errors)
}

fn string(v: &toml::Value) -> Result<String, String> {
    match v {
        toml::Value::String(s) if !s.trim().is_empty() => Ok(s.clone()),
        toml::Value::String(_) => Err("must not be empty".into()),
        other => Err(format!("must be a string, not {}", other.type_str())),
    }
}

fn count(v: &toml::Value, parse: fn(&str) -> Result<usize, String>) -> Result<usize, String> {
    match v {
        toml::Value::Integer(n) => parse(&n.to_string()),
        other => Err(format!("must be a whole number, not {}", other.type_str())),
    }
}

/// `~/…` is the home directory.
fn path(v: &toml::Value) -> Result<PathBuf, String> {
    let s = string(v)?;
    Ok(match s.strip_prefix("~/") {
        Some(rest) => dirs::home_dir().map_or_else(|| PathBuf::from(&s), |h| h.join(rest)),
        None => PathBuf::from(s),
    })
}

/// Parses a precision as the flag spells it.
pub fn parse_precision(s: &str) -> Result<Precision, String> {
    Ok(match s {
        "f32" => Precision::F32,
        "f16" => Precision::F16,
        "bf16" => Precision::Bf16,
        "q8_0" | "q8-0" => Precision::Q8_0,
        other => return Err(format!("`{other}`: use f32, f16, bf16 or q8_0")),
    })
}

fn apply(out: &mut FileSettings, key: &str, v: &toml::Value) -> Result<(), String> {
    match key {
        "model" => out.model = Some(path(v)?),
        "voice" => out.voice = Some(string(v)?),
        "device" => {
            let d = string(v)?;
            let ok = matches!(d.as_str(), "cpu" | "cuda" | "metal")
                || d.strip_prefix("cuda:").is_some_and(|n| n.parse::<usize>().is_ok());
            if !ok {
                return Err(format!("`{d}`: use cpu, cuda, cuda:N or metal"));
            }
            out.device = Some(d);
        }
        "nfe" => out.nfe = Some(count(v, limits::parse_nfe)?),
        "group_target" => out.group_target = Some(count(v, limits::parse_group_target)?),
        "lanes" => out.lanes = Some(count(v, limits::parse_lanes)?),
        "precision" => out.precision = Some(parse_precision(&string(v)?)?),
        "theme" => out.theme = Some(string(v)?),
        "playback_device" => out.playback_device = Some(string(v)?),
        "output_dir" => out.output_dir = Some(path(v)?),
        "book" => out.book = book(v)?,
        other => {
            return Err(format!("unknown key `{other}` (known: {})", KEYS.join(", ")));
        }
    }
    Ok(())
}

/// The `[book]` table; an unknown or bad key is an error naming it (`book.narrator: …`).
fn book(v: &toml::Value) -> Result<BookDefaults, String> {
    let toml::Value::Table(table) = v else {
        return Err(format!("must be a table (`[book]`), not {}", v.type_str()));
    };
    let mut out = BookDefaults::default();
    for (key, value) in table {
        let text = string(value).map_err(|e| format!("book.{key}: {e}"))?;
        match key.as_str() {
            "narrator" => out.narrator = Some(text),
            "author" => out.author = Some(text),
            "publisher" => out.publisher = Some(text),
            "rights" => out.rights = Some(text),
            "opening_credits" => out.opening_credits = Some(text),
            "closing_credits" => out.closing_credits = Some(text),
            other => {
                return Err(format!(
                    "unknown key `book.{other}` (known: {})",
                    BOOK_KEYS.join(", ")
                ));
            }
        }
    }
    Ok(out)
}

/// Where an effective setting came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Default,
    File(PathBuf),
    Flag,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Default => f.write_str("default"),
            Self::File(p) => write!(f, "{}", p.display()),
            Self::Flag => f.write_str("command line"),
        }
    }
}

/// A setting's value and where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Setting<T> {
    pub value: T,
    pub source: Source,
}

/// Flag, else file, else default.
pub fn pick<T>(flag: Option<T>, file: Option<T>, path: Option<&Path>, default: T) -> Setting<T> {
    match (flag, file) {
        (Some(value), _) => Setting { value, source: Source::Flag },
        (None, Some(value)) => Setting {
            value,
            source: Source::File(
                path.map_or_else(|| PathBuf::from(CONFIG_FILE), Path::to_path_buf),
            ),
        },
        (None, None) => Setting { value: default, source: Source::Default },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_template_sets_nothing_and_parses() {
        let (s, e) = parse(TEMPLATE, Path::new("config.toml"));
        assert!(e.is_empty(), "{e:?}");
        assert_eq!(s, FileSettings::default());
    }

    #[test]
    fn each_bad_key_is_named_with_its_line_and_the_rest_applies() {
        let text = "voice = \"anna\"\nnfe = 0\nlanes = \"eight\"\ncolour = 1\nprecision = \"q4\"\n";
        let (s, e) = parse(text, Path::new("/c/config.toml"));
        assert_eq!(s.voice.as_deref(), Some("anna"));
        assert_eq!((s.nfe, s.lanes, s.precision), (None, None, None));
        let got: Vec<(usize, &str)> = e.iter().map(|e| (e.line, e.key.as_str())).collect();
        assert_eq!(got, vec![(2, "nfe"), (3, "lanes"), (4, "colour"), (5, "precision")]);
        assert!(e[0].to_string().starts_with("/c/config.toml:2: nfe: "), "{}", e[0]);
        assert!(e[0].message.contains("1 to 64"), "{}", e[0].message);
    }

    #[test]
    fn the_book_table_sets_a_publisher_and_rights() {
        let text = "[book]\npublisher = \"Harbour Press\"\nrights = \"© 2026 Sam\"\n";
        let (s, e) = parse(text, Path::new("c.toml"));
        assert!(e.is_empty(), "{e:?}");
        assert_eq!(s.book.publisher.as_deref(), Some("Harbour Press"));
        assert_eq!(
            s.book.entries(),
            [("publisher", "Harbour Press"), ("rights", "© 2026 Sam")],
            "`lectern config` lists the keys that are set"
        );
        assert_eq!(s.book.rights.as_deref(), Some("© 2026 Sam"));
    }

    #[test]
    fn the_book_table_sets_metadata_defaults_and_names_bad_keys() {
        let text = "nfe = 12\n[book]\nnarrator = \"Sam Reed\"\nclosing_credits = \"The end.\"\n";
        let (s, e) = parse(text, Path::new("c.toml"));
        assert!(e.is_empty(), "{e:?}");
        assert_eq!(s.book.narrator.as_deref(), Some("Sam Reed"));
        assert_eq!(s.book.closing_credits.as_deref(), Some("The end."));
        assert_eq!((s.book.author.as_ref(), s.nfe), (None, Some(12)));
        let (_, e) = parse("[book]\nnarator = \"x\"\n", Path::new("c.toml"));
        assert_eq!(e[0].key, "book");
        assert!(e[0].message.contains("unknown key `book.narator`"), "{}", e[0].message);
        let (_, e) = parse("book = 3\n", Path::new("c.toml"));
        assert!(e[0].message.contains("must be a table"), "{}", e[0].message);
    }

    #[test]
    fn recording_the_model_keeps_the_other_keys_and_comments() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("config.toml");
        let text = "# mine\nnfe = 12 # fast\n\n[book]\nnarrator = \"Sam\"\n";
        std::fs::write(&path, text).unwrap();
        record_model(&path, Path::new("/m/Fun \"1\"")).unwrap();
        record_model(&path, Path::new("/m/Fun 2")).unwrap();
        let after = std::fs::read_to_string(&path).unwrap();
        assert!(after.contains("# mine\n") && after.contains("nfe = 12 # fast"), "{after}");
        assert_eq!(after.matches("model =").count(), 1, "{after}");
        let (s, e) = parse(&after, &path);
        assert!(e.is_empty(), "{e:?}");
        assert_eq!(s.model.as_deref(), Some(Path::new("/m/Fun 2")));
        assert_eq!((s.nfe, s.book.narrator.as_deref()), (Some(12), Some("Sam")));
    }

    #[test]
    fn a_new_file_gets_the_template_with_the_model_under_its_comment() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("lectern").join("config.toml");
        record_model(&path, Path::new("/models/Fun")).unwrap();
        let after = std::fs::read_to_string(&path).unwrap();
        assert!(
            after.contains("# model = \"/path/to/Fun-CosyVoice3-0.5B\"\nmodel = \"/models/Fun\"\n")
        );
        assert_eq!(after.len(), TEMPLATE.len() + "model = \"/models/Fun\"\n".len());
        let (s, e) = parse(&after, &path);
        assert!(e.is_empty(), "{e:?}");
        assert_eq!(s.model.as_deref(), Some(Path::new("/models/Fun")));
    }

    #[test]
    fn a_file_that_is_not_toml_names_its_line() {
        let (s, e) = parse("nfe = 12\nvoice = \n", Path::new("c.toml"));
        assert_eq!(s, FileSettings::default());
        assert_eq!((e[0].line, e[0].key.as_str()), (2, "(file)"));
    }

    #[test]
    fn flags_beat_the_file_which_beats_the_default() {
        let p = Path::new("/c/config.toml");
        assert_eq!(pick(Some(3), Some(5), Some(p), 10).value, 3);
        assert_eq!(pick(Some(3), Some(5), Some(p), 10).source, Source::Flag);
        let s = pick(None, Some(5), Some(p), 10);
        assert_eq!((s.value, s.source), (5, Source::File(p.into())));
        assert_eq!(pick(None::<u32>, None, Some(p), 10).source, Source::Default);
    }
}
