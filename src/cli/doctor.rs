//! `lectern doctor`: one screen of what this machine will use and why — configuration and
//! folders, model, tokenizer, voice, device, CPU features and kernels, audio output, ffmpeg —
//! each line OK, WARN (works, but there is something to do) or FAIL (something a render needs
//! is missing), with what to do. Exits non-zero only on a FAIL.

use std::path::Path;
use std::process::Command;

use anyhow::Result;
use serde::Serialize;

use super::{DoctorArgs, ExtraFlags};
use crate::config::Config;
use crate::model_dir::{self, ModelUse};
use crate::session::ModelChoice;

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "UPPERCASE")]
enum Status {
    Ok,
    Warn,
    Fail,
}

/// One line of the report.
#[derive(Debug, Clone, Serialize)]
struct Check {
    section: &'static str,
    status: Status,
    what: String,
    /// What to do about a WARN or FAIL.
    #[serde(skip_serializing_if = "Option::is_none")]
    fix: Option<String>,
}

impl Check {
    fn ok(section: &'static str, what: impl Into<String>) -> Self {
        Self { section, status: Status::Ok, what: what.into(), fix: None }
    }
    fn warn(section: &'static str, what: impl Into<String>, fix: impl Into<String>) -> Self {
        Self { section, status: Status::Warn, what: what.into(), fix: Some(fix.into()) }
    }
    fn fail(section: &'static str, what: impl Into<String>, fix: impl Into<String>) -> Self {
        Self { section, status: Status::Fail, what: what.into(), fix: Some(fix.into()) }
    }
}

pub(super) fn run(args: DoctorArgs) -> Result<()> {
    let cfg = Config::load_default();
    let extra = ExtraFlags { playback_device: args.playback_device.clone(), ..Default::default() };
    let eff = args.synth.effective(&cfg, &extra);
    let mut checks = config_checks(&cfg);
    let model = model_checks(eff.model.value.as_deref(), &eff.model.source, &mut checks);
    if let Some(model) = &model {
        checks.push(tokenizer_check(model));
        checks.push(voice_check(eff.voice.value.as_deref(), model));
    }
    checks.extend(device_checks(&eff.device.value, &eff.device.source));
    checks.extend(cpu_checks());
    checks.push(audio_check(&eff.playback_device.value));
    checks.push(ffmpeg_check());
    let failed = checks.iter().filter(|c| c.status == Status::Fail).count();
    if args.json {
        let report = serde_json::json!({ "ok": failed == 0, "checks": checks });
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", table(&checks));
    }
    anyhow::ensure!(failed == 0, "{failed} check(s) failed: see FAIL above");
    Ok(())
}

/// `STATUS  section     what` lines, with `→ fix` under a WARN or FAIL.
fn table(checks: &[Check]) -> String {
    let mut out = String::new();
    for c in checks {
        let status = match c.status {
            Status::Ok => "OK",
            Status::Warn => "WARN",
            Status::Fail => "FAIL",
        };
        let mut lines = c.what.lines();
        out.push_str(&format!("{status:<5} {:<10} {}\n", c.section, lines.next().unwrap_or("")));
        for more in lines {
            out.push_str(&format!("{:<16} {more}\n", ""));
        }
        if let Some(fix) = &c.fix {
            out.push_str(&format!("{:<16} → {fix}\n", ""));
        }
    }
    out
}

fn config_checks(cfg: &Config) -> Vec<Check> {
    let show = |p: Option<std::path::PathBuf>| {
        p.map_or_else(|| "(none on this platform)".into(), |p| p.display().to_string())
    };
    let mut out = Vec::new();
    let file = show(cfg.path.clone());
    out.push(if !cfg.errors.is_empty() {
        let errors: Vec<String> = cfg.errors.iter().map(ToString::to_string).collect();
        Check::fail("config", format!("{file}:\n{}", errors.join("\n")), "fix the lines named")
    } else if cfg.exists {
        Check::ok("config", file)
    } else {
        Check::ok("config", format!("{file} (not there: built-in defaults)"))
    });
    match crate::assets::data_dir() {
        Some(d) => out.push(Check::ok("folders", format!("data {}", d.display()))),
        None => out.push(Check::fail(
            "folders",
            "no data directory on this platform",
            "set HOME (the demo model, voices and samples live there)",
        )),
    }
    out.push(Check::ok("folders", format!("voices {}", crate::voices::voices_dir().display())));
    out
}

/// The model line(s); the model when it can be used.
fn model_checks(
    dir: Option<&Path>,
    source: &crate::config::Source,
    out: &mut Vec<Check>,
) -> Option<ModelChoice> {
    let download = "`lectern model download` fetches Fun-CosyVoice3-0.5B-2512";
    let Some(dir) = dir else {
        return match ModelChoice::resolve(None) {
            Ok(m) => {
                out.push(match model_dir::check(&m.dir, ModelUse::Everything) {
                    Ok(_) => Check::warn(
                        "model",
                        format!("demo tiny model, random weights ({})", m.dir.display()),
                        format!("it proves the pipeline, not the voice: {download}"),
                    ),
                    Err(e) => {
                        Check::fail("model", e.to_string(), "delete the folder: it is rebuilt")
                    }
                });
                Some(m)
            }
            Err(e) => {
                out.push(Check::fail("model", format!("{e:#}"), download));
                None
            }
        };
    };
    let from = format!("{} (from {source})", dir.display());
    match model_dir::check(dir, ModelUse::Speech) {
        Err(e) => {
            out.push(Check::fail("model", format!("{from}\n{e}"), download));
            None
        }
        Ok(checked) => {
            let origin = checked.manifest.as_ref().map_or_else(String::new, |m| {
                format!(", downloaded from {} at {}", m.repo, short(&m.revision))
            });
            out.push(Check::ok("model", format!("{from}: complete{origin}")));
            if let Err(e) = model_dir::check(dir, ModelUse::VoiceMaking) {
                out.push(Check::warn(
                    "model",
                    format!("it can speak, but not make voices:\n{e}"),
                    "copy speech_tokenizer_v3.onnx and campplus.onnx in, for `voice add`",
                ));
            }
            Some(ModelChoice { dir: dir.to_path_buf(), bundled_tiny: false })
        }
    }
}

fn short(revision: &str) -> &str {
    revision.get(..12).unwrap_or(revision)
}

fn tokenizer_check(model: &ModelChoice) -> Check {
    match crate::session::tokenizer(model) {
        Ok(t) if t.kind() == lectern_text::TokenizerKind::Qwen2 => {
            Check::ok("tokenizer", t.describe())
        }
        Ok(t) => Check::warn(
            "tokenizer",
            t.describe(),
            "a test model's byte fallback: the real model reads CosyVoice-BlankEN's BPE",
        ),
        Err(e) => Check::fail(
            "tokenizer",
            format!("{e:#}"),
            "copy the model's CosyVoice-BlankEN/ in whole",
        ),
    }
}

fn voice_check(voice: Option<&str>, model: &ModelChoice) -> Check {
    let add = format!(
        "make one: `lectern voice add ref.wav --text \"what it says\" --name narrator --model \
         {}`, then --voice narrator or voice = \"narrator\" in config.toml",
        model.dir.display()
    );
    if voice.is_none() && !model.bundled_tiny {
        return Check::warn("voice", "none set; a real model needs one", add);
    }
    let v = match crate::session::resolve_voice(voice, model) {
        Ok(v) => v,
        Err(e) => return Check::fail("voice", format!("{e:#}"), add),
    };
    let fits = lectern_voice::ModelSignature::from_model_dir(&model.dir)
        .map_err(|e| e.to_string())
        .and_then(|sig| v.check_model(&sig).map_err(|e| e.to_string()));
    let name = &v.manifest.name;
    match fits {
        Ok(()) => Check::ok("voice", format!("{name}, made for {}", v.manifest.model.name)),
        Err(e) => Check::fail("voice", format!("{name}: {e}"), add),
    }
}

/// The device setting, whether this build can use it, and the GPU this machine has.
fn device_checks(device: &str, source: &crate::config::Source) -> Vec<Check> {
    let cuda_built = cfg!(feature = "cuda");
    let metal_built = cfg!(feature = "metal");
    let gpu = nvidia_gpu();
    let mut out = Vec::new();
    let build = format!(
        "this build: CUDA {}, Metal {}",
        if cuda_built { "yes" } else { "no" },
        if metal_built { "yes" } else { "no" }
    );
    let gpu_line = match &gpu {
        Some(g) => format!("NVIDIA GPU: {g}"),
        None => "no NVIDIA GPU found (nvidia-smi is not there or sees none)".into(),
    };
    let cuda_build = "build with `cargo build --release --features cuda` \
                      (docs/user-guide.md#gpu-builds-cuda-and-metal)";
    let setting = format!("{device} (from {source})");
    out.push(if device.starts_with("cuda") && !cuda_built {
        Check::fail("device", format!("{setting}: {build}"), cuda_build)
    } else if device == "metal" && !metal_built {
        Check::fail("device", format!("{setting}: {build}"), "build with --features metal")
    } else if device == "cpu" {
        match (&gpu, cuda_built) {
            (Some(_), true) => Check::warn(
                "device",
                format!("{setting}: {build}"),
                "this machine has a GPU: --device cuda, or device = \"cuda\" in config.toml",
            ),
            (Some(_), false) => Check::warn("device", format!("{setting}: {build}"), cuda_build),
            (None, _) => Check::ok("device", format!("{setting}: {build}")),
        }
    } else {
        match super::parse_device(device) {
            Ok(_) => Check::ok("device", format!("{setting}: opened; {build}")),
            Err(e) => Check::fail(
                "device",
                format!("{setting}: cannot be opened: {e}"),
                "check the driver (nvidia-smi), or use --device cpu",
            ),
        }
    });
    out.push(Check::ok("device", gpu_line));
    out
}

/// `NAME, MEMORY, driver VERSION` of each GPU `nvidia-smi` lists.
fn nvidia_gpu() -> Option<String> {
    let o = Command::new("nvidia-smi")
        .args(["--query-gpu=name,memory.total,driver_version", "--format=csv,noheader"])
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    let gpus: Vec<String> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split(',').map(str::trim).collect();
            match f.as_slice() {
                [name, mem, driver] => format!("{name}, {mem}, driver {driver}"),
                _ => l.trim().to_string(),
            }
        })
        .collect();
    (!gpus.is_empty()).then(|| gpus.join("; "))
}

/// The CPU's features, and the kernels that run on them.
fn cpu_checks() -> Vec<Check> {
    use lectern_kernels::gemm::{bf16, blas};
    let mut out = vec![Check::ok("cpu", format!("features: {}", cpu_features()))];
    let bf16_kernel = match bf16::kernel() {
        Some(k) => format!("bf16 matmul {}", k.name()),
        None => "bf16 matmul: candle's (no AMX or AMD AVX512-BF16)".into(),
    };
    out.push(Check::ok(
        "cpu",
        format!(
            "kernels: flow attention {}, {bf16_kernel}, {} threads",
            lectern_kernels::attention::f32_core(64),
            rayon::current_num_threads()
        ),
    ));
    let flow = super::config::cpu_flow_gemm();
    let openblas_would_help = blas::openblas().is_none()
        && lectern_kernels::simd::has_avx512_skylake_x()
        && !std::env::var(blas::ENV_VAR).is_ok_and(|v| v == "0");
    out.push(if openblas_would_help {
        Check::warn(
            "cpu",
            format!("f32 flow: {flow}"),
            "install the system's OpenBLAS (Debian/Ubuntu: libopenblas0-pthread)",
        )
    } else {
        Check::ok("cpu", format!("f32 flow: {flow}"))
    });
    out
}

fn cpu_features() -> String {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::is_x86_feature_detected as has;
        let amx = matches!(lectern_kernels::gemm::bf16::kernel(), Some(k) if k.name() == "amx");
        let all = [
            ("AVX2", has!("avx2")),
            ("FMA", has!("fma")),
            ("AVX-512", lectern_kernels::simd::has_avx512_skylake_x()),
            ("AVX512-BF16", has!("avx512bf16")),
            ("AMX", amx),
        ];
        let names: Vec<String> = all
            .iter()
            .map(|(n, on)| if *on { (*n).to_string() } else { format!("no {n}") })
            .collect();
        names.join(", ")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        std::env::consts::ARCH.to_string()
    }
}

/// Opens the playback output as the workstation would, for a moment.
fn audio_check(setting: &str) -> Check {
    use crate::audio::player::{Playback, SinkInfo};
    use crate::audio::{DeviceChoice, Player, PlayerConfig};
    let device = match setting {
        "default" => DeviceChoice::Default,
        "file" => DeviceChoice::File,
        name => DeviceChoice::Named(name.to_string()),
    };
    let Ok(tmp) = tempfile::tempdir() else {
        return Check::fail("audio", "cannot make a temporary folder", "check TMPDIR");
    };
    let cfg = PlayerConfig {
        device,
        fallback_wav: tmp.path().join("doctor.wav"),
        ..PlayerConfig::default()
    };
    let status = match Player::open(cfg) {
        Ok(p) => p.status(),
        Err(e) => return Check::fail("audio", format!("cannot start playback: {e}"), "see above"),
    };
    match status.sink {
        SinkInfo::Device { name, rate_hz, channels, format } => {
            Check::ok("audio", format!("{name}, {rate_hz} Hz, {channels} ch, {format}"))
        }
        _ if setting == "file" => {
            Check::ok("audio", "playback to a WAV file (playback_device = file)")
        }
        _ => Check::warn(
            "audio",
            format!("no audio output device{}", why_no_device(status.notice.as_deref())),
            "playback goes to a WAV file (the workstation says where); render and export are \
             unaffected",
        ),
    }
}

/// The player's reason for the file fallback, without the temporary file's path: the
/// notice reads `no audio output: writing playback to PATH (WHY)`.
fn why_no_device(notice: Option<&str>) -> String {
    notice
        .and_then(|n| n.find(" (").map(|i| &n[i + 2..]))
        .map(|why| format!(": {}", why.trim_end_matches(')')))
        .unwrap_or_default()
}

fn ffmpeg_check() -> Check {
    let program = crate::deliver::ffmpeg::ffmpeg_program();
    let version = Command::new(&program)
        .args(["-hide_banner", "-version"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8_lossy(&o.stdout).lines().next().map(str::to_string));
    match version {
        Some(v) => Check::ok("ffmpeg", format!("{v} (for M4B)")),
        None => Check::warn(
            "ffmpeg",
            format!("`{}` cannot be run: no M4B export", program.display()),
            "install ffmpeg (Debian/Ubuntu: sudo apt install ffmpeg; macOS: brew install ffmpeg) \
             or set LECTERN_FFMPEG",
        ),
    }
}
