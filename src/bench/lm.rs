//! `lectern bench --stage lm` (to be written).

use super::BenchOptions;

pub fn run(_opts: &BenchOptions) -> anyhow::Result<serde_json::Value> {
    anyhow::bail!("the lm benchmark is not implemented yet")
}
