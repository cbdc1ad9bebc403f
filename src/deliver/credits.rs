//! Spoken credits: opening and closing credits rendered by the model in the book's voice from a
//! text template filled with the book's metadata, as an alternative to recordings the narrator
//! supplies. ACX asks for both: the opening names the title, author and narrator; the closing
//! says the book has ended and names them again. Both default templates also say, in words,
//! that a synthetic voice narrated the book and name it (`{voice}`): the files' tags say so
//! for machines, the credits for the listener.
//!
//! A credit is rendered like a one-line manuscript by `render` (a scratch project, the model and
//! voice the project was last rendered with, the settings of its takes, a fixed base seed), so
//! the same project and template give the same samples, and the delivery the same bytes.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

use super::BookMeta;
use crate::render::{self, RenderOptions};
use crate::session::ProjectChoice;
use crate::store::Project;
use crate::synth::SynthOptions;
use lectern_engine::protocol::RenderParams;

/// ACX's opening credits, with the synthetic voice disclosed.
pub const DEFAULT_OPENING: &str = "{title}. Written by {author}. Narrated by {narrator}. \
                                   This audiobook is narrated by a synthetic voice, {voice}.";
/// ACX's closing credits, with the synthetic voice disclosed.
pub const DEFAULT_CLOSING: &str = "The end. {title}. Written by {author}. Narrated by \
                                   {narrator}. This audiobook was narrated by a synthetic \
                                   voice, {voice}.";
/// Base seed of the credits' takes (the command line's default base seed).
pub const CREDITS_BASE_SEED: u64 = 1000;

/// Fills `{title}`, `{author}`, `{narrator}` and `{voice}` (the synthetic voices' names) in
/// `template`. A placeholder whose value is
/// missing, or an unknown one, is an error that says where the value can come from.
pub fn fill(template: &str, meta: &BookMeta, which: &str) -> Result<String, String> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let close = after.find('}').ok_or_else(|| {
            format!("{which} credits template `{template}`: a `{{` is not closed")
        })?;
        let name = &after[..close];
        let voices = meta.disclosure.voices.join(" and ");
        let value = match name {
            "title" => &meta.title,
            "author" => &meta.author,
            "narrator" => &meta.narrator,
            "voice" if voices.is_empty() => {
                return Err(format!(
                    "the {which} credits name the voice ({{voice}} in `{template}`), and no take \
                     records one: render the book first"
                ));
            }
            "voice" => &voices,
            other => {
                return Err(format!(
                    "{which} credits template `{template}`: unknown `{{{other}}}` (use {{title}}, \
                     {{author}}, {{narrator}}, {{voice}})"
                ));
            }
        };
        if value.trim().is_empty() {
            return Err(format!(
                "the {which} credits need the book's {name} ({{{name}}} in `{template}`): pass \
                 --{name}, put `{name}:` in the Markdown front matter, or set `{name}` in \
                 config.toml's [book]"
            ));
        }
        out.push_str(value.trim());
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    if out.trim().is_empty() {
        return Err(format!("the {which} credits template is empty"));
    }
    Ok(out)
}

/// Renders `text` in the voice and with the model `project` was last rendered with, into a
/// 24 kHz WAV at `out`.
pub fn render_credit(project: &Project, text: &str, out: &Path) -> anyhow::Result<()> {
    let sources = project.sources()?.with_context(|| {
        format!(
            "spoken credits need the model and voice the project {} was rendered with, and it \
             does not record them (made by an older Lectern): render it once, or supply \
             recordings with --opening-credits/--closing-credits",
            project.dir().display()
        )
    })?;
    let scratch = tempfile::Builder::new().prefix("lectern-credits-").tempdir()?;
    let manuscript = scratch.path().join("credits.txt");
    std::fs::write(&manuscript, text)
        .with_context(|| format!("writing {}", manuscript.display()))?;
    let opts = RenderOptions {
        manuscript,
        out: out.to_path_buf(),
        split_chapters: false,
        synth: SynthOptions {
            model: Some(sources.model_dir.clone()),
            voice: Some(sources.voice_dir.to_string_lossy().into_owned()),
            device: candle::Device::Cpu,
            params: book_params(project)?,
            flow_matmul: None,
            base_seed: CREDITS_BASE_SEED,
            cross_lingual: false,
        },
        progress: false,
        project: ProjectChoice::Off,
        dry_run: false,
        rerender_settings: false,
        read: crate::reading::ReadOptions::default(),
        scope: crate::render::RenderScope::default(),
    };
    render::render(&opts).context("rendering the credits")?;
    Ok(())
}

/// The render settings of the book's takes (NFE, precision, min-length rule), so the credits
/// sound like the book; the defaults for a project without takes.
fn book_params(project: &Project) -> anyhow::Result<RenderParams> {
    let mut params = RenderParams::default();
    if let Some(take) = project.all_takes()?.into_iter().next() {
        params.nfe = take.record.nfe;
        params.precision = take.record.precision;
        params.min_len_rule = take.record.min_len_rule;
    }
    Ok(params)
}

/// Spoken credits to deliver: where each was rendered (None: not asked for).
#[derive(Debug, Default)]
pub struct SpokenCredits {
    pub opening: Option<PathBuf>,
    pub closing: Option<PathBuf>,
    /// What each rendering says (the filled template), for the delivery's spans.
    pub opening_text: Option<String>,
    pub closing_text: Option<String>,
    /// Holds the rendered files until the export is written.
    _dir: Option<tempfile::TempDir>,
}

/// Fills both templates first (so a missing value fails before any rendering), then renders
/// each.
pub fn render_both(
    project: &Project,
    meta: &BookMeta,
    opening: Option<&str>,
    closing: Option<&str>,
) -> anyhow::Result<SpokenCredits> {
    let texts = [(opening, "opening"), (closing, "closing")]
        .map(|(t, which)| t.map(|t| fill(t, meta, which)).transpose());
    let [opening_text, closing_text] = texts;
    let (opening_text, closing_text) =
        (opening_text.map_err(anyhow::Error::msg)?, closing_text.map_err(anyhow::Error::msg)?);
    if opening_text.is_none() && closing_text.is_none() {
        return Ok(SpokenCredits::default());
    }
    let dir = tempfile::Builder::new().prefix("lectern-credits-").tempdir()?;
    let render_one = |text: Option<String>, name: &str| -> anyhow::Result<Option<PathBuf>> {
        let Some(text) = text else { return Ok(None) };
        let path = dir.path().join(format!("{name}.wav"));
        eprintln!("speaking the {name} credits: \"{text}\"");
        render_credit(project, &text, &path)?;
        Ok(Some(path))
    };
    let opening = render_one(opening_text.clone(), "opening")?;
    let closing = render_one(closing_text.clone(), "closing")?;
    if opening.is_none() && closing.is_none() {
        bail!("no credits to render");
    }
    Ok(SpokenCredits { opening, closing, opening_text, closing_text, _dir: Some(dir) })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta() -> BookMeta {
        BookMeta {
            title: "The Lighthouse".into(),
            author: "Ada Writer".into(),
            narrator: "Nell Reader".into(),
            disclosure: crate::audio::tags::Disclosure::lectern(vec!["nell".into()]),
            ..BookMeta::default()
        }
    }

    #[test]
    fn the_acx_templates_name_the_book_and_its_people() {
        assert_eq!(
            fill(DEFAULT_OPENING, &meta(), "opening").unwrap(),
            "The Lighthouse. Written by Ada Writer. Narrated by Nell Reader. This audiobook is \
             narrated by a synthetic voice, nell."
        );
        assert_eq!(
            fill(DEFAULT_CLOSING, &meta(), "closing").unwrap(),
            "The end. The Lighthouse. Written by Ada Writer. Narrated by Nell Reader. This \
             audiobook was narrated by a synthetic voice, nell."
        );
        assert_eq!(fill("Read by {narrator}", &meta(), "x").unwrap(), "Read by Nell Reader");
    }

    #[test]
    fn missing_metadata_and_bad_templates_are_named() {
        let no_narrator = BookMeta { narrator: String::new(), ..meta() };
        let err = fill(DEFAULT_OPENING, &no_narrator, "opening").unwrap_err();
        assert!(err.contains("opening credits need the book's narrator"), "{err}");
        assert!(err.contains("--narrator") && err.contains("[book]"), "{err}");
        let err = fill("By {writer}", &meta(), "closing").unwrap_err();
        assert!(err.contains("unknown `{writer}`"), "{err}");
        assert!(fill("By {author", &meta(), "closing").unwrap_err().contains("not closed"));
        assert!(fill("  ", &meta(), "closing").unwrap_err().contains("empty"));
        let no_voice = BookMeta { disclosure: Default::default(), ..meta() };
        let err = fill(DEFAULT_CLOSING, &no_voice, "closing").unwrap_err();
        assert!(err.contains("closing credits name the voice"), "{err}");
        // The narrator may leave the disclosure out of their own template.
        assert_eq!(fill("{title}.", &no_voice, "opening").unwrap(), "The Lighthouse.");
    }
}
