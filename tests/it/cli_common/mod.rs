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

/// Copies a directory's files, following links (the fixture links its ONNX models).
pub fn copy_dir(src: &std::path::Path, dst: &std::path::Path) {
    std::fs::create_dir_all(dst).unwrap();
    for e in std::fs::read_dir(src).unwrap() {
        let p = e.unwrap().path();
        let to = dst.join(p.file_name().unwrap());
        if p.is_dir() {
            copy_dir(&p, &to);
        } else {
            std::fs::copy(&p, &to).unwrap();
        }
    }
}

/// Paragraphs of several segments each, so flow groups hold several takes and a kill can land
/// between them: sentences of 62 LM tokens (Qwen2 BPE), over upstream's 60-token minimum, so
/// no two share a segment (80 tokens at most).
pub fn grouped_book_text() -> String {
    // Four paragraphs of two sentences, a segment each: groups of two segments.
    (1..=4)
        .map(|p| {
            (1..=2)
                .map(|i| {
                    format!(
                        "Paragraph {p} sentence {i} tells of the sea and the keeper, of the long \
                         grey evenings on the rock, of the ships that passed far out beyond the \
                         reef, of the lamp that burned all night above the water, of the storms \
                         of winter, and of the letters that came with the supply boat in spring. "
                    )
                })
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}
