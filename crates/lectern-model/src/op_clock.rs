//! Wall time per named step of the flow's CPU math, summed over the calls made while it runs:
//! `bench --stage flow`'s breakdown of one whole estimator call.
//!
//! Why: the bench's other figures time a block's parts one at a time, each alone and repeated on
//! the same block's weights, and neither their sum nor a block timed alone matches a block inside
//! a real call. This clock times the steps inside the real call, the way `torch.profiler` does
//! upstream's, so the two tables can be read side by side.
//!
//! Off unless a bench turns it on: a step then costs one relaxed atomic load. On the CPU every
//! step has finished when it returns, so its wall time is its cost; on CUDA a step returns once
//! its kernels are queued, so the bench reads this clock on the CPU only.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

static ON: AtomicBool = AtomicBool::new(false);
static TOTALS: Mutex<Vec<StepTotal>> = Mutex::new(Vec::new());

/// One step's total over the timed calls.
#[derive(Debug, Clone, PartialEq)]
pub struct StepTotal {
    pub name: &'static str,
    pub seconds: f64,
    pub calls: u64,
}

/// Runs `f`; while the clock runs, adds its wall time to `name`'s total. Steps are not nested:
/// a step inside another would be counted twice.
pub fn step<T>(name: &'static str, f: impl FnOnce() -> T) -> T {
    if !ON.load(Ordering::Relaxed) {
        return f();
    }
    let start = Instant::now();
    let out = f();
    add(name, start.elapsed().as_secs_f64());
    out
}

fn add(name: &'static str, seconds: f64) {
    let mut totals = TOTALS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    match totals.iter_mut().find(|s| s.name == name) {
        Some(total) => {
            total.seconds += seconds;
            total.calls += 1;
        }
        None => totals.push(StepTotal { name, seconds, calls: 1 }),
    }
}

/// Clears the totals and starts the clock.
pub fn start() {
    TOTALS.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clear();
    ON.store(true, Ordering::Relaxed);
}

/// Stops the clock; the totals, in the order their steps first ran.
pub fn stop() -> Vec<StepTotal> {
    ON.store(false, Ordering::Relaxed);
    std::mem::take(&mut *TOTALS.lock().unwrap_or_else(std::sync::PoisonError::into_inner))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One test for the clock's whole life: it is process-wide, and tests run in parallel (other
    /// tests' flow steps may land in the totals while it runs, so only this test's names count).
    #[test]
    fn sums_steps_by_name_only_while_running() {
        assert_eq!(step("before", || 1), 1);
        start();
        let slept = |ms| step("sleep", || std::thread::sleep(std::time::Duration::from_millis(ms)));
        slept(20);
        step("other", || ());
        slept(10);
        let totals = stop();
        step("after", || ());
        let mine = ["before", "sleep", "other", "after"];
        let names: Vec<_> =
            totals.iter().filter(|s| mine.contains(&s.name)).map(|s| (s.name, s.calls)).collect();
        assert_eq!(names, [("sleep", 2), ("other", 1)]);
        let sleep = totals.iter().find(|s| s.name == "sleep").map_or(0.0, |s| s.seconds);
        assert!(sleep >= 0.030, "{totals:?}");
        assert!(stop().iter().all(|s| !mine.contains(&s.name)), "stop takes the totals");
    }
}
