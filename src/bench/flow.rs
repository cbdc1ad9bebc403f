//! `lectern bench --stage flow` (to be written).

use super::BenchOptions;

pub fn run(_opts: &BenchOptions) -> anyhow::Result<serde_json::Value> {
    anyhow::bail!("the flow benchmark is not implemented yet")
}
