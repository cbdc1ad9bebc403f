//! Tests of optional system libraries: they skip where the library is missing, unless the
//! machine promised it (CI installs it and sets the variable), so a CI run never passes by
//! skipping.

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
