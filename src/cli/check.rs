//! `lectern check`: delivery files against a store's audio requirements (ACX's by default).

use anyhow::Result;

use super::CheckArgs;
use super::common::print_checks;

/// `lectern check`: exits non-zero when a file fails.
pub(super) fn run(args: CheckArgs) -> Result<()> {
    let CheckArgs { path, json, preset } = args;
    let rules = preset.preset().rules;
    let checks =
        crate::deliver::check::check_dir_with(&path, &rules).map_err(anyhow::Error::msg)?;
    print_checks(&checks, json)?;
    let failing = checks.iter().filter(|c| !c.passes()).count();
    anyhow::ensure!(
        failing == 0,
        "{failing} of {} file(s) fail {}'s requirements",
        checks.len(),
        rules.store
    );
    Ok(())
}
