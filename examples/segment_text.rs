//! Prints a manuscript's chapters and segments (span, pause, hash, text).
//!
//! `cargo run --example segment_text -- FILE [MODEL_DIR]` — MODEL_DIR gives the tokenizer
//! (default: the fixture BPE in fixtures/text).

use std::path::PathBuf;

use lectern_text::{Manuscript, ParseOptions, Tokenizer};

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let file =
        PathBuf::from(args.next().ok_or_else(|| anyhow::anyhow!("usage: FILE [MODEL_DIR]"))?);
    let model = args.next().map_or_else(|| PathBuf::from("fixtures/text"), PathBuf::from);
    let tok = Tokenizer::from_model_dir(&model)?;
    eprintln!("tokenizer: {}", tok.describe());
    let m = Manuscript::load(&file, &ParseOptions::default().with_tokenizer(&tok))?;
    for c in &m.chapters {
        println!("== {}", c.title.as_deref().unwrap_or("(untitled)"));
        for s in &c.segments {
            println!(
                "{:>4} {:>3}:{:<3}-{:>3}:{:<3} {:>5}ms {:>3}tok {:016x} {:?}",
                s.id,
                s.span.start.line,
                s.span.start.column,
                s.span.end.line,
                s.span.end.column,
                s.pause_after_ms,
                tok.count(&s.text),
                s.hash,
                s.text
            );
        }
    }
    Ok(())
}
