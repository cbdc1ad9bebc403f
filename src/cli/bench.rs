//! `lectern bench`: a stage, or an end-to-end workload, on full-size random weights.

use anyhow::Result;

use super::{BenchArgs, parse_device};
use crate::bench;

pub(super) fn run(args: BenchArgs) -> Result<()> {
    let BenchArgs { stage, workload, wl, device, json, quick } = args;
    let device = parse_device(&device)?;
    let report = match (stage, workload) {
        (_, Some(w)) => bench::run(&wl.options(w, device, json))?,
        (Some(stage), None) => lectern_bench::run_stage(stage, &wl.stage_options(device, quick))?,
        (None, None) => anyhow::bail!("give --stage or --workload"),
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    }
    Ok(())
}
