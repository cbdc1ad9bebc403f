//! The settings a run uses: flags, else `config.toml`, else the defaults (`lectern config`
//! prints them, with where each came from); and the `--device` parser.

use std::path::PathBuf;

use anyhow::Result;
use lectern_engine::protocol::{MinLenRule, Precision, RenderParams};

use super::SynthArgs;
use crate::config::{Config, Setting, Source, pick};

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
        let device = pick(self.device.clone(), f.device.clone(), p, "cpu".into());
        let cuda = device.value.starts_with("cuda");
        Effective {
            model: pick(self.model.clone().map(Some), f.model.clone().map(Some), p, None),
            voice: pick(self.voice.clone().map(Some), f.voice.clone().map(Some), p, None),
            device,
            nfe: pick(self.nfe, f.nfe, p, defaults.nfe),
            group_target: pick(self.group_target, f.group_target, p, defaults.group_target_frames),
            lanes: pick(self.lanes, f.lanes, p, RenderParams::default_lanes(cuda)),
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

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::cli::Cli;

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
    fn lanes_default_by_device_unless_set() {
        let lanes = |args: &[&str], text: &str| {
            let path = std::path::Path::new("/c/config.toml");
            let (settings, _) = crate::config::parse(text, path);
            let cfg = Config { path: Some(path.into()), exists: true, settings, errors: vec![] };
            let cli = Cli::try_parse_from([&["lectern"], args].concat()).unwrap();
            let w = &cli.workstation;
            let eff = w.synth.effective(&cfg, &w.ui.extra());
            (eff.lanes.value, eff.lanes.source)
        };
        assert_eq!(lanes(&[], ""), (8, Source::Default));
        assert_eq!(lanes(&["--device", "cuda"], ""), (32, Source::Default));
        assert_eq!(lanes(&[], "device = \"cuda:1\"\n"), (32, Source::Default));
        assert_eq!(lanes(&["--device", "cuda", "--lanes", "8"], "").0, 8);
        assert_eq!(lanes(&["--device", "cuda"], "lanes = 16\n").0, 16);
        assert_eq!(lanes(&["--device", "metal"], "").0, 8);
    }
}
