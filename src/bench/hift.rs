//! `lectern bench --stage hift` (to be written).

use super::BenchOptions;

pub fn run(_opts: &BenchOptions) -> anyhow::Result<serde_json::Value> {
    anyhow::bail!("the hift benchmark is not implemented yet")
}
