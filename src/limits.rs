//! Bounds of the numeric settings a narrator can give: flow steps (NFE), LM lanes, flow group
//! target, export loudness and the seed.
//!
//! They live in one place so that every way of setting them agrees: the CLI parses its flags with
//! the `parse_*` functions (clap `value_parser`s), the workstation's live controls clamp to the
//! same constants (`tui::app`), and a config file would call the `validate_*` functions. A value
//! outside its range is refused with a message that says what is accepted and why, never clamped
//! in silence: an NFE of 0 or a NaN loudness used to give a take or an export that was wrong
//! without a word (issue #17).

/// Fewest flow Euler steps: 0 steps would return the initial noise.
pub const NFE_MIN: usize = 1;
/// Most flow Euler steps. Upstream uses 10; past a few dozen the result stops changing while the
/// flow's cost grows linearly.
pub const NFE_MAX: usize = 64;

/// Fewest LM lanes decoded together.
pub const LANES_MIN: usize = 1;
/// Most LM lanes. Each lane holds its own KV cache (about 100 MiB for a long segment of the
/// full-size model in f32), and past 32 one decode step no longer gets cheaper per lane.
pub const LANES_MAX: usize = 32;

/// Smallest non-zero flow group target, mel frames (50 frames = 1 s of audio). Any target below
/// one segment's length already means one segment per group, which `0` says plainly.
pub const GROUP_MIN_FRAMES: usize = 50;
/// Largest flow group target, mel frames (160 s of audio). DiT attention is quadratic in the
/// group's length: 8000 frames already need about 16 times the memory of the default 2000.
pub const GROUP_MAX_FRAMES: usize = 8000;

/// Quietest export loudness target, LUFS: EBU R128's absolute gate. A quieter target would gain
/// speech down into what the meter itself ignores as silence.
pub const LOUDNESS_MIN_LUFS: f64 = -70.0;
/// Loudest export loudness target, LUFS. Speech normalised louder than this clips on most
/// peaks (ACX asks for −23…−18 RMS, streaming for about −16…−14 LUFS).
pub const LOUDNESS_MAX_LUFS: f64 = -5.0;

/// Most CPU threads per logical CPU. Past one per logical CPU the math only gets slower, but a
/// few times that leaves room for a container's quota that hides CPUs; thousands of threads
/// (`--threads 100000`) would spend the machine on creating them.
pub const THREADS_PER_CPU: usize = 4;

/// Most CPU threads on this machine: [`THREADS_PER_CPU`] per logical CPU.
#[must_use]
pub fn threads_max() -> usize {
    THREADS_PER_CPU * std::thread::available_parallelism().map_or(1, std::num::NonZero::get)
}

/// What `--threads` accepts.
fn threads_rule() -> String {
    format!(
        "CPU threads must be a whole number from 1 to {} ({THREADS_PER_CPU} per logical CPU \
         of this machine; the default is one per core)",
        threads_max()
    )
}

/// Checks a CPU thread count against this machine.
pub fn validate_threads(setting: &str, threads: usize) -> Result<usize, LimitError> {
    let ok = (1..=threads_max()).contains(&threads);
    if ok { Ok(threads) } else { Err(LimitError::new(setting, threads, threads_rule())) }
}

/// A setting outside its accepted range. The message names the setting, the value and the range.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{setting} {value}: {why}")]
pub struct LimitError {
    /// The setting's name as the user spells it (`--nfe`, `nfe` in a config file).
    pub setting: String,
    /// The value as given.
    pub value: String,
    /// What is accepted.
    pub why: String,
}

impl LimitError {
    fn new(setting: &str, value: impl ToString, why: impl Into<String>) -> Self {
        Self { setting: setting.into(), value: value.to_string(), why: why.into() }
    }
}

/// What `--nfe` accepts.
fn nfe_rule() -> String {
    format!("flow steps must be a whole number from {NFE_MIN} to {NFE_MAX} (upstream uses 10)")
}

/// What `--lanes` accepts.
fn lanes_rule() -> String {
    format!("LM lanes must be a whole number from {LANES_MIN} to {LANES_MAX} (default 8)")
}

/// What `--group-target` accepts.
fn group_rule() -> String {
    format!(
        "use 0 (one segment per flow group) or {GROUP_MIN_FRAMES} to {GROUP_MAX_FRAMES} mel \
         frames (50 frames = 1 s; default 2000)"
    )
}

/// What `--loudness` accepts.
fn loudness_rule() -> String {
    format!(
        "the target loudness must be a number of LUFS from {LOUDNESS_MIN_LUFS} to \
         {LOUDNESS_MAX_LUFS} (e.g. -18 for ACX-style speech, -23 for EBU R128)"
    )
}

/// Checks a flow step count.
pub fn validate_nfe(setting: &str, nfe: usize) -> Result<usize, LimitError> {
    let ok = (NFE_MIN..=NFE_MAX).contains(&nfe);
    if ok { Ok(nfe) } else { Err(LimitError::new(setting, nfe, nfe_rule())) }
}

/// Checks an LM lane count.
pub fn validate_lanes(setting: &str, lanes: usize) -> Result<usize, LimitError> {
    let ok = (LANES_MIN..=LANES_MAX).contains(&lanes);
    if ok { Ok(lanes) } else { Err(LimitError::new(setting, lanes, lanes_rule())) }
}

/// Checks a flow group target: 0 (one segment per group) or a frame count in range.
pub fn validate_group_target(setting: &str, frames: usize) -> Result<usize, LimitError> {
    let ok = frames == 0 || (GROUP_MIN_FRAMES..=GROUP_MAX_FRAMES).contains(&frames);
    if ok { Ok(frames) } else { Err(LimitError::new(setting, frames, group_rule())) }
}

/// Checks an export loudness target: finite and within the range.
pub fn validate_loudness(setting: &str, lufs: f64) -> Result<f64, LimitError> {
    let ok = lufs.is_finite() && (LOUDNESS_MIN_LUFS..=LOUDNESS_MAX_LUFS).contains(&lufs);
    if ok { Ok(lufs) } else { Err(LimitError::new(setting, lufs, loudness_rule())) }
}

/// Parses and checks a count. Text that is not a whole number ≥ 0 (`-1`, `ten`) gets the same
/// rule as an out-of-range number. The error is the rule alone: clap already prints
/// `invalid value 'V' for '--flag <FLAG>'` before it.
fn parse_count(
    setting: &str,
    text: &str,
    validate: fn(&str, usize) -> Result<usize, LimitError>,
    rule: fn() -> String,
) -> Result<usize, String> {
    let n: usize = text.trim().parse().map_err(|_| rule())?;
    validate(setting, n).map_err(|e| e.why)
}

/// `--threads` (clap `value_parser`).
pub fn parse_threads(text: &str) -> Result<usize, String> {
    parse_count("--threads", text, validate_threads, threads_rule)
}

/// `--nfe` (clap `value_parser`).
pub fn parse_nfe(text: &str) -> Result<usize, String> {
    parse_count("--nfe", text, validate_nfe, nfe_rule)
}

/// `--lanes` (clap `value_parser`).
pub fn parse_lanes(text: &str) -> Result<usize, String> {
    parse_count("--lanes", text, validate_lanes, lanes_rule)
}

/// `--group-target` (clap `value_parser`).
pub fn parse_group_target(text: &str) -> Result<usize, String> {
    parse_count("--group-target", text, validate_group_target, group_rule)
}

/// `--loudness` (clap `value_parser`). `NaN`, `inf` and out-of-range values are refused: they
/// used to export silence or fully clipped audio with exit status 0.
pub fn parse_loudness(text: &str) -> Result<f64, String> {
    let lufs: f64 = text.trim().parse().map_err(|_| loudness_rule())?;
    validate_loudness("--loudness", lufs).map_err(|e| e.why)
}

/// `--seed` (clap `value_parser`, with negative numbers let through to it): a seed is a whole
/// number from 0 to 2⁶⁴−1. A negative seed (often "random" elsewhere) gets a message of its own,
/// not clap's hint to write `-- -1`, which would make `-1` a manuscript path.
pub fn parse_seed(text: &str) -> Result<u64, String> {
    let text = text.trim();
    if let Ok(seed) = text.parse::<u64>() {
        return Ok(seed);
    }
    let rule = "a seed is a whole number from 0 to 18446744073709551615";
    if text.starts_with('-') {
        return Err(format!(
            "{rule}; there is no random seed (a take must be reproducible from its record): \
             pick any non-negative number"
        ));
    }
    Err(rule.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_checked_against_their_ranges() {
        assert_eq!(parse_nfe("10"), Ok(10));
        assert!(parse_nfe("0").unwrap_err().contains("1 to 64"));
        assert!(parse_nfe("65").is_err());
        assert!(parse_nfe("-1").unwrap_err().contains("1 to 64"));
        assert_eq!(parse_lanes("32"), Ok(32));
        assert!(parse_lanes("0").unwrap_err().contains("1 to 32"));
        assert!(parse_lanes("33").is_err());
        assert_eq!(parse_group_target("0"), Ok(0));
        assert_eq!(parse_group_target("8000"), Ok(8000));
        assert!(parse_group_target("10").unwrap_err().contains("use 0"));
        assert!(parse_group_target("8001").is_err());
        assert!(parse_nfe("ten").is_err());
    }

    #[test]
    fn threads_are_bounded_by_the_machine() {
        let max = threads_max();
        assert_eq!(parse_threads("1"), Ok(1));
        assert_eq!(parse_threads(&max.to_string()), Ok(max));
        let e = parse_threads(&(max + 1).to_string()).unwrap_err();
        assert!(e.contains(&format!("1 to {max}")), "{e}");
        assert!(parse_threads("0").is_err());
        assert!(parse_threads("100000").is_err());
    }

    #[test]
    fn loudness_must_be_finite_and_in_range() {
        assert_eq!(parse_loudness("-18"), Ok(-18.0));
        assert_eq!(parse_loudness("-70"), Ok(-70.0));
        assert_eq!(parse_loudness("-5"), Ok(-5.0));
        for bad in ["NaN", "nan", "inf", "-inf", "-1e308", "10", "-4.9", "-70.1", "loud"] {
            let e = parse_loudness(bad).unwrap_err();
            assert!(e.contains("-70 to -5"), "{bad}: {e}");
        }
    }

    #[test]
    fn a_negative_seed_is_explained() {
        assert_eq!(parse_seed("0"), Ok(0));
        assert_eq!(parse_seed("18446744073709551615"), Ok(u64::MAX));
        assert!(parse_seed("-1").unwrap_err().contains("no random seed"));
        assert!(parse_seed("x").unwrap_err().contains("whole number"));
    }
}
