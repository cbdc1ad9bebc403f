//! Tests of optional system libraries and CPU features: they skip where the library or the
//! feature is missing, unless the machine promised it (CI installs the library, reads the CPU's
//! flags, and sets the variables), so a CI run never passes by skipping.

/// The variable that makes a missing system OpenBLAS a failure instead of a skip.
pub const REQUIRE_OPENBLAS: &str = "LECTERN_REQUIRE_OPENBLAS";

/// `found` (the system's OpenBLAS, as the caller loaded it); `None` means "skip this test",
/// said on stderr, and panics instead where [`REQUIRE_OPENBLAS`] is set.
pub fn openblas_or_skip<T>(found: Option<T>) -> Option<T> {
    if found.is_none() {
        assert!(
            std::env::var_os(REQUIRE_OPENBLAS).is_none(),
            "{REQUIRE_OPENBLAS} is set, but no libopenblas loads"
        );
        eprintln!("no system OpenBLAS on this machine: skipped");
    }
    found
}

/// The variable listing the CPU features the machine has, comma-separated, named as in
/// `/proc/cpuinfo`'s flags (`avx2`, `fma`, `avx512f`, `avx512_bf16`, `amx_bf16`, …): a kernel
/// test that finds one of them missing fails instead of skipping.
pub const REQUIRE_CPU: &str = "LECTERN_REQUIRE_CPU";

/// Whether a test of a kernel that needs the CPU `features` runs: `found` is what the kernel's
/// own detection says. A miss is a skip, said on stderr, unless [`REQUIRE_CPU`] names every one
/// of `features`: then the machine has them and the kernel's detection is wrong, so it panics.
pub fn cpu_or_skip(features: &[&str], found: bool) -> bool {
    if !found {
        let promised = std::env::var(REQUIRE_CPU).unwrap_or_default();
        let promised: Vec<&str> = promised.split(',').map(str::trim).collect();
        assert!(
            !features.iter().all(|f| promised.contains(f)),
            "{REQUIRE_CPU} says this CPU has {features:?}, but the kernel does not run here"
        );
        eprintln!("this CPU has no {}: skipped", features.join(" + "));
    }
    found
}
