//! Proofing from the command line — `takes`, `reseed`, `choose`, `approve`, `note`,
//! `pickups` — on the session pipeline the workstation drives ([`crate::session::proof`]), for
//! narrators on a remote machine and for scripts. Segments and takes are numbered as the list
//! numbers them; every refusal names the command that fixes it.

use std::collections::HashSet;
use std::path::Path;

use anyhow::{Context, Result, bail};

use super::ExtraFlags;
use super::args::{
    ApproveArgs, BookArgs, ChooseArgs, NoteArgs, PickupsArgs, ReseedArgs, TakesArgs,
};
use super::common::print_stdout;
use crate::config::Config;
use crate::review::Review;
use crate::session::proof::{self, ListedSegment, Listing, ProofOpen, Proofing};
use crate::session::{ProjectChoice, SegmentView};
use lectern_engine::Engine;
use lectern_engine::protocol::SegmentId;

/// Opens the book's project for proofing with the base seed of its default seeds.
fn open(book: &BookArgs, base_seed: u64) -> Result<Proofing> {
    let how = ProofOpen { project: choice(book), base_seed, ..Default::default() };
    let p = proof::open(&book.book, &how)?;
    say_what_moved(&p);
    Ok(p)
}

/// What opening the project did with the narrator's work on edited text (stderr).
fn say_what_moved(p: &Proofing) {
    if let Some(line) = p.session.carry_summary() {
        eprintln!("{line}");
    }
    for line in p.session.left_behind() {
        eprintln!("{line}");
    }
}

fn choice(book: &BookArgs) -> ProjectChoice {
    book.project.clone().map_or(ProjectChoice::NextToManuscript, ProjectChoice::Dir)
}

/// Segment numbers from `3` and `3-5` arguments, each checked against the book, in the order
/// given, without repeats.
fn segment_numbers(args: &[String], count: usize, book: &Path) -> Result<Vec<usize>> {
    let mut out = Vec::new();
    for arg in args {
        let (first, last) = match arg.split_once('-') {
            Some((a, b)) => (number(a, arg)?, number(b, arg)?),
            None => (number(arg, arg)?, number(arg, arg)?),
        };
        if first > last {
            bail!("segment range `{arg}` runs backwards: write it as {last}-{first}");
        }
        for n in first..=last {
            in_book(n, count, book)?;
            if !out.contains(&n) {
                out.push(n);
            }
        }
    }
    Ok(out)
}

fn number(text: &str, arg: &str) -> Result<usize> {
    text.trim().parse::<usize>().ok().filter(|&n| n > 0).with_context(|| {
        format!("`{arg}` is not a segment number: segments are numbered from 1 (as `lectern takes` lists them)")
    })
}

fn in_book(n: usize, count: usize, book: &Path) -> Result<()> {
    if n == 0 || n > count {
        bail!(
            "there is no segment {n}: {} has {count} segments (`lectern takes {}` lists them)",
            book.display(),
            book.display()
        );
    }
    Ok(())
}

/// The view of segment `n` (checked against the book).
fn view_at<'a>(views: &'a [SegmentView], n: &str, book: &Path) -> Result<&'a SegmentView> {
    let n = number(n, n)?;
    in_book(n, views.len(), book)?;
    Ok(&views[n - 1])
}

pub(super) fn takes(args: TakesArgs) -> Result<()> {
    let p = open(&args.book, args.base.seed)?;
    let views = p.views()?;
    let book = &args.book.book;
    let mut listing = p.listing(&views);
    if let Some(n) = &args.segment {
        let v = view_at(&views, n, book)?;
        listing.segments.retain(|s| s.segment == v.number());
    }
    let text = if args.json {
        serde_json::to_string_pretty(&listing)? + "\n"
    } else if args.segment.is_some() {
        segment_detail(&listing.segments[0], book)
    } else {
        book_table(&listing)
    };
    print_stdout(&text)
}

/// The review column: the state, or "edited" for one edited since approval.
fn review_label(s: &ListedSegment) -> &'static str {
    if s.edited_since_approval { "edited" } else { s.review.as_str() }
}

/// The whole book: one line per segment (number, review, chosen take of how many, text) and
/// its note below it.
fn book_table(listing: &Listing) -> String {
    let mut out = String::from(" seg  review    take   text\n");
    for s in &listing.segments {
        let take = match (s.chosen, s.ready) {
            (Some(k), true) => format!("{k}/{}", s.takes.len()),
            (Some(k), false) => format!("{k}/{}!", s.takes.len()),
            (None, _) => "-".to_string(),
        };
        let retried = s
            .chosen
            .and_then(|k| s.takes.get(k - 1))
            .and_then(|t| t.retry)
            .map_or(String::new(), |t| format!(" [retry {t}]"));
        out.push_str(&format!(
            "{:>4}  {:<9} {:<6} {}{retried}\n",
            s.segment,
            review_label(s),
            take,
            s.text
        ));
        if !s.note.is_empty() {
            out.push_str(&format!("      note: {}\n", s.note));
        }
    }
    let approved = listing.segments.iter().filter(|s| s.review == Review::Approved).count();
    let pickups = listing.segments.iter().filter(|s| s.review == Review::Pickup).count();
    out.push_str(&format!(
        "{approved} of {} approved, {pickups} pickup(s) (`!`: the chosen take is stale or \
         missing: `lectern render` makes it again)\n",
        listing.segments.len()
    ));
    out
}

/// One segment: where it is, its state and note, and each take.
fn segment_detail(s: &ListedSegment, book: &Path) -> String {
    let mut out = format!(
        "segment {} · chapter {} · line {} · {}\n{}\n",
        s.segment,
        s.chapter,
        s.line,
        if s.edited_since_approval { "edited since approval" } else { s.review.as_str() },
        s.text
    );
    if !s.note.is_empty() {
        out.push_str(&format!("note: {}\n", s.note));
    }
    if s.takes.is_empty() {
        out.push_str(&format!("no takes yet: `lectern render {}` renders it\n", book.display()));
    }
    for t in &s.takes {
        let mut flags = Vec::new();
        if t.chosen {
            flags.push("chosen".to_string());
        }
        if !t.current {
            flags.push("stale".to_string());
        }
        if t.missing {
            flags.push("file missing".to_string());
        }
        if let Some(n) = t.retry {
            flags.push(format!("retry {n}: an earlier seed gave no speech"));
        }
        out.push_str(&format!(
            "  take {:>2}  seed {:>6}  {:>6.2} s  {}\n",
            t.take,
            t.seed,
            t.seconds,
            flags.join(", ")
        ));
    }
    out
}

pub(super) fn reseed(args: ReseedArgs) -> Result<()> {
    let cfg = Config::load_default();
    cfg.check()?;
    let synth = args.synth.effective(&cfg, &ExtraFlags::default()).synth_options(&args.synth)?;
    let how = ProofOpen {
        project: choice(&args.book),
        base_seed: synth.base_seed,
        model: args.synth.model.clone(),
        voice: args.synth.voice.clone(),
    };
    let book = args.book.book.as_path();
    let mut p = proof::open(book, &how)?;
    say_what_moved(&p);
    let views = p.views()?;
    let numbers = segment_numbers(&args.segments, views.len(), book)?;
    let mut specs = Vec::new();
    for &n in &numbers {
        specs.push(p.session.reseed_spec(views[n - 1].planned.key)?);
    }
    p.session.measure_with(crate::quality::QualityProbe::load(&p.model.dir, &p.voice)?)?;
    let backend = crate::session::backend(
        &p.model,
        &p.session.voices(),
        &synth.device,
        synth.params.precision,
        synth.flow_matmul,
    )?;
    let handle = Engine::spawn(backend, p.voice.manifest.name.clone(), synth.params.clone());
    let quiet = args.quiet;
    let rendered = proof::render_with_retries(&mut p.session, &handle, specs, |line| {
        if !quiet {
            eprintln!("{line}");
        }
    });
    handle.shutdown();
    let rendered = rendered?;
    let views = p.views()?;
    for saved in &rendered.saved {
        if let Some(v) = views.iter().find(|v| v.planned.key == saved.key) {
            println!("{}", new_take_line(v, saved.id, book));
        }
    }
    if !rendered.failed.is_empty() {
        bail!(reseed_failures(&p, &rendered.failed, book));
    }
    Ok(())
}

/// "segment 3: take 2 (seed 123456, 2.40 s) — choose it with `lectern choose BOOK 3 2`".
fn new_take_line(v: &SegmentView, id: lectern_engine::protocol::TakeId, book: &Path) -> String {
    let n = v.number();
    let Some(k) = v.take_number(id) else { return format!("segment {n}: take saved") };
    let t = &v.takes[k - 1];
    let secs = t.num_samples as f64 / f64::from(crate::store::SAMPLE_RATE_HZ);
    let mut line = format!("segment {n}: take {k} (seed {}, {secs:.2} s)", t.record.seed);
    if let Some(why) = crate::session::implausible(&t.record.text, t.record.tokens.len()) {
        line.push_str(&format!(" [{why}]"));
    }
    if v.chosen == Some(id) {
        line.push_str(" — chosen: the segment had no usable take");
    } else {
        line.push_str(&format!(" — choose it with `lectern choose {} {n} {k}`", book.display()));
    }
    line
}

/// Why segments got no new take, each with what to do.
fn reseed_failures(p: &Proofing, failed: &[(SegmentId, String)], book: &Path) -> String {
    let mut lines = vec![format!("{} segment(s) got no new take:", failed.len())];
    for (id, why) in failed {
        let n = p
            .session
            .segments()
            .iter()
            .find(|s| s.key as SegmentId == *id)
            .map_or(0, proof::segment_number);
        let fix = crate::session::retry::failure_fix(book, n, why);
        lines.push(format!("  segment {n}: {fix}"));
    }
    lines.join("\n")
}

pub(super) fn choose(args: ChooseArgs) -> Result<()> {
    let mut p = open(&args.book, args.base.seed)?;
    let views = p.views()?;
    let book = args.book.book.as_path();
    let v = view_at(&views, &args.segment, book)?;
    let n = v.number();
    let shown = book.display();
    if v.review == Review::Approved {
        bail!(
            "segment {n} is approved, so its chosen take is locked: take the approval back with \
             `lectern approve {shown} {n} --undo`, then choose"
        );
    }
    let Some(take) = v.take_by_number(args.take) else {
        if v.takes.is_empty() {
            bail!("segment {n} has no takes yet: `lectern render {shown}` renders it");
        }
        bail!(
            "segment {n} has no take {}: it has {} (`lectern takes {shown} {n}` lists them)",
            args.take,
            v.takes.len()
        );
    };
    if !v.is_current(take) {
        bail!(
            "take {} of segment {n} was made for other content (its text, voice, casting or \
             the model changed since): `lectern reseed {shown} {n}` makes a current one",
            args.take
        );
    }
    p.session.choose(v.planned.key, take.id)?;
    println!("segment {n}: take {} chosen (seed {})", args.take, take.record.seed);
    Ok(())
}

pub(super) fn approve(args: ApproveArgs) -> Result<()> {
    let mut p = open(&args.book, args.base.seed)?;
    let views = p.views()?;
    let book = args.book.book.as_path();
    let numbers = segment_numbers(&args.segments, views.len(), book)?;
    if !args.undo {
        for &n in &numbers {
            refuse_unready(&views[n - 1], book)?;
        }
    }
    let review = if args.undo { Review::Heard } else { Review::Approved };
    for &n in &numbers {
        let v = &views[n - 1];
        if args.undo && v.review != Review::Approved {
            continue;
        }
        p.session.set_review(v.planned.key, review)?;
    }
    let approved = p.views()?.iter().filter(|v| v.review == Review::Approved).count();
    let list: Vec<String> = numbers.iter().map(ToString::to_string).collect();
    let done = if args.undo { "approval taken back" } else { "approved" };
    println!("segment(s) {}: {done} ({approved} of {} approved)", list.join(", "), views.len());
    Ok(())
}

/// Refuses to approve a segment without a usable chosen take, naming what makes one.
fn refuse_unready(v: &SegmentView, book: &Path) -> Result<()> {
    if v.has_usable_choice() {
        return Ok(());
    }
    let (n, shown) = (v.number(), book.display());
    let current =
        v.takes.iter().position(|t| v.is_current(t) && t.status == crate::review::TakeStatus::Ok);
    match current {
        Some(i) => bail!(
            "segment {n}'s chosen take is not current (stale or missing): choose a current one \
             first, e.g. `lectern choose {shown} {n} {}`",
            i + 1
        ),
        None => bail!(
            "segment {n} has no take to approve: render it first with `lectern render {shown}`"
        ),
    }
}

pub(super) fn note(args: NoteArgs) -> Result<()> {
    let mut p = open(&args.book, args.base.seed)?;
    let views = p.views()?;
    let book = args.book.book.as_path();
    let v = view_at(&views, &args.segment, book)?;
    let n = v.number();
    let text = args.text.trim();
    p.session.set_note(v.planned.key, text)?;
    if args.pickup {
        if v.review == Review::Approved {
            bail!(
                "segment {n}'s note is saved, but it is approved: take the approval back with \
                 `lectern approve {} {n} --undo` to mark it for a pickup",
                book.display()
            );
        }
        p.session.set_review(v.planned.key, Review::Pickup)?;
    }
    let what = if text.is_empty() { "note cleared" } else { "note saved" };
    let flag = if args.pickup { ", marked for a pickup" } else { "" };
    println!("segment {n}: {what}{flag}");
    Ok(())
}

pub(super) fn pickups(args: PickupsArgs) -> Result<()> {
    let p = open(&args.book, args.base.seed)?;
    let views = p.views()?;
    let mut listing = p.listing(&views);
    listing.segments.retain(|s| s.review == Review::Pickup);
    if args.json {
        return print_stdout(&(serde_json::to_string_pretty(&listing)? + "\n"));
    }
    if listing.segments.is_empty() {
        return print_stdout(&format!("no pickups ({} segments)\n", views.len()));
    }
    let edited: HashSet<usize> =
        listing.segments.iter().filter(|s| s.edited_since_approval).map(|s| s.segment).collect();
    let mut out = String::new();
    for s in &listing.segments {
        let why = if edited.contains(&s.segment) { " (edited since approval)" } else { "" };
        out.push_str(&format!("segment {} · line {}{why}: {}\n", s.segment, s.line, s.text));
        if !s.note.is_empty() {
            out.push_str(&format!("    note: {}\n", s.note));
        }
    }
    let book = args.book.book.display();
    out.push_str(&format!(
        "{} pickup(s): `lectern reseed {book} N` renders a new take, `lectern approve {book} N` \
         clears one\n",
        listing.segments.len(),
    ));
    print_stdout(&out)
}
