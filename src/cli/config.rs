//! `lectern config`: the effective settings, where each came from, and the folders used.

use std::path::PathBuf;

use anyhow::Result;

use super::ConfigArgs;
use crate::config::Config;

pub(super) fn run(args: ConfigArgs) -> Result<()> {
    let ConfigArgs { synth, ui } = &args;
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
    let mut out = String::new();
    let mut line = |text: String| {
        out.push_str(&text);
        out.push('\n');
    };
    line(format!("config file   {}{}", show(cfg.path.clone()), state(&cfg.path)));
    line(format!("keymap file   {}{}", show(keymap.clone()), state(&keymap)));
    line(format!("themes        {}{}", show(themes.clone()), state(&themes)));
    line(format!("data          {}", show(crate::assets::data_dir())));
    line(format!("voices        {}", crate::voices::voices_dir().display()));
    line(format!("cpu f32 flow  {}", cpu_flow_gemm()));
    line(String::new());
    for (k, v, s) in eff.lines() {
        line(format!("{k:<16} {v:<32} ({s})"));
    }
    for (k, v) in cfg.settings.book.entries() {
        let key = format!("book.{k}");
        line(format!("{key:<16} {v:<32} ({})", show(cfg.path.clone())));
    }
    if !cfg.errors.is_empty() {
        line(String::new());
        for e in &cfg.errors {
            line(format!("error: {e} (the default is used)"));
        }
    }
    super::common::print_stdout(&out)?;
    if !cfg.errors.is_empty() {
        anyhow::bail!("{} error(s) in {}", cfg.errors.len(), show(cfg.path.clone()));
    }
    Ok(())
}

/// What runs the CPU flow's f32 projections here, with a hint where the system's OpenBLAS
/// would be used but is missing.
pub(super) fn cpu_flow_gemm() -> String {
    use lectern_kernels::gemm::blas;
    let described = lectern_kernels::gemm::sgemm::describe();
    let turned_off = std::env::var(blas::ENV_VAR).is_ok_and(|v| v == "0");
    if blas::openblas().is_some() || !lectern_kernels::simd::has_avx512_skylake_x() || turned_off {
        return described;
    }
    match blas::system_openblas() {
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
