//! `lectern check-project` (every take's audio against its recorded hash) and `lectern clean`
//! (orphans, damaged and interrupted files, old playback files), over a project's store.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use super::common::output_dir;
use super::{CheckProjectArgs, CleanArgs};
use crate::config::Config;
use crate::store::{self, Project};

/// The manuscript (when `book` is one) and the project directory the command works on; a
/// directory that holds no project is refused rather than created.
fn locate(book: &Path, project: Option<&PathBuf>) -> Result<(Option<PathBuf>, PathBuf)> {
    let (manuscript, dir) = if book.is_dir() {
        (None, book.to_path_buf())
    } else {
        let dir = project.cloned().unwrap_or_else(|| Project::dir_for_manuscript(book));
        (Some(book.to_path_buf()), dir)
    };
    if !dir.join(store::DB_FILE).is_file() && !dir.join(store::rebuild::REBUILD_FILE).is_file() {
        bail!(
            "no project at {}: render the manuscript first (or name the project with --project)",
            dir.display()
        );
    }
    Ok((manuscript, dir))
}

/// What to tell the narrator to run to make damaged takes again.
fn render_hint(manuscript: Option<&Path>, dir: &Path) -> String {
    match manuscript {
        Some(m) => format!("lectern render {}", m.display()),
        None => format!("lectern render MANUSCRIPT --project {}", dir.display()),
    }
}

/// `lectern check-project`: exits non-zero when a take was damaged (it is then quarantined).
pub(super) fn check_project(args: CheckProjectArgs) -> Result<()> {
    let (manuscript, dir) = locate(&args.book, args.project.as_ref())?;
    let mut project =
        Project::open(&dir).with_context(|| format!("opening the project {}", dir.display()))?;
    let opened = project.open_report().clone();
    let check = project.verify_audio()?;
    if args.json {
        let value = serde_json::json!({ "open": {
            "damaged_quarantined": opened.damaged_quarantined,
            "missing": opened.missing_files,
        }, "audio": check });
        println!("{}", serde_json::to_string_pretty(&value)?);
    } else {
        print_check(&opened, &check);
    }
    let damaged = check.damaged.len() + opened.damaged_quarantined.len();
    if damaged > 0 {
        bail!(
            "{damaged} damaged take file(s) moved to {}; run `{}` to make them again",
            dir.join(store::TAKES_DIR).join(store::QUARANTINE_DIR).display(),
            render_hint(manuscript.as_deref(), &dir)
        );
    }
    Ok(())
}

fn print_check(opened: &store::OpenReport, check: &store::check::AudioCheck) {
    for path in &opened.damaged_quarantined {
        println!("damaged (wrong size), quarantined: {}", path.display());
    }
    for d in &check.damaged {
        let moved =
            d.quarantined.as_ref().map_or(String::new(), |p| format!("; moved to {}", p.display()));
        println!("take {} \"{}\": {}{moved}", d.take, d.text, d.cause);
    }
    println!(
        "{} take file(s) checked, {} damaged; {} already missing",
        check.checked,
        check.damaged.len() + opened.damaged_quarantined.len(),
        check.already_missing + opened.missing_files.len()
    );
    if check.to_regenerate() + check.to_rerender() > 0 {
        println!(
            "the next render regenerates {} chosen take(s) from their records (the same audio) \
             and renders {} segment(s) anew (their record holds no tokens to regenerate from)",
            check.to_regenerate(),
            check.to_rerender()
        );
    }
}

/// `lectern clean`: removes (or with `--dry-run` lists) the project's leftovers.
pub(super) fn clean(args: CleanArgs) -> Result<()> {
    let (manuscript, dir) = locate(&args.book, args.project.as_ref())?;
    let project =
        Project::open(&dir).with_context(|| format!("opening the project {}", dir.display()))?;
    let outputs = [output_dir(&Config::load_default())];
    let leftovers = project.leftovers(manuscript.as_deref(), &outputs)?;
    if !args.dry_run {
        store::clean::remove(&leftovers)?;
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&leftovers)?);
        return Ok(());
    }
    for l in &leftovers {
        println!("{:<18} {:>12}  {}", l.kind.label(), l.bytes, l.path.display());
    }
    let bytes: u64 = leftovers.iter().map(|l| l.bytes).sum();
    let verb = if args.dry_run { "would remove" } else { "removed" };
    println!("{verb} {} file(s), {:.1} MB", leftovers.len(), bytes as f64 / 1e6);
    Ok(())
}
