//! `lectern check`: delivery files against ACX's audio requirements.

use anyhow::Result;

use super::CheckArgs;
use super::common::print_checks;

/// `lectern check`: exits non-zero when a file fails.
pub(super) fn run(args: CheckArgs) -> Result<()> {
    let CheckArgs { path, json } = args;
    let checks = crate::deliver::check::check_dir(&path).map_err(anyhow::Error::msg)?;
    print_checks(&checks, json)?;
    let failing = checks.iter().filter(|c| !c.passes()).count();
    anyhow::ensure!(failing == 0, "{failing} of {} file(s) fail ACX's requirements", checks.len());
    Ok(())
}
