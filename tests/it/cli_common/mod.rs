//! What the tests that run the `lectern` binary share.

/// The developer's configuration and data stay out of the test: `HOME` and the XDG folders in
/// the build's temp dir (the demo model is materialised there once).
pub fn isolated_env() -> Vec<(&'static str, std::path::PathBuf)> {
    let home = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("lectern-test-home");
    vec![
        ("XDG_CONFIG_HOME", home.join(".config")),
        ("XDG_DATA_HOME", home.join(".local/share")),
        ("HOME", home),
    ]
}
