//! The session pipeline on the bundled tiny model's files with the engine's fake backend:
//! the seed policy, the take key (staleness by content, not settings), the plan's groups,
//! all-or-nothing group saves, and damaged or deleted takes regenerated bit for bit.

use crate::session_common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use lectern::review::{Review, TakeStatus};
use lectern::session::{ProjectChoice, Session};
use lectern::tui::desk::read_manuscript;
use lectern_engine::protocol::{RenderParams, TakeSettings};
use lectern_voice::Voice;
use session_common::{copy_voice, open_session, render_all, tiny};

const BOOK: &str = "# One\n\nThe lamp was lit. The keeper climbed the stairs.\n\n\
                    Rain fell on the roof all night long.\n\nShe turned the page.\n";

fn book_in(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("book.md");
    std::fs::write(&path, text).unwrap();
    path
}

fn seeds_by_text(s: &Session) -> HashMap<String, u64> {
    s.segments().iter().map(|p| (p.text.clone(), p.default_seed)).collect()
}

fn chosen_hashes(s: &Session) -> Vec<String> {
    s.segments()
        .iter()
        .map(|p| s.project().chosen_of_key(p.key).unwrap().expect("chosen").audio_hash)
        .collect()
}

#[test]
fn inserting_a_sentence_changes_no_other_seed() {
    let dir = tempfile::tempdir().unwrap();
    let path = book_in(dir.path(), BOOK);
    let before = seeds_by_text(&open_session(&path, 1000));
    std::fs::write(&path, BOOK.replace("She turned", "A new sentence arrives.\n\nShe turned"))
        .unwrap();
    let after = seeds_by_text(&open_session(&path, 1000));
    assert_eq!(after.len(), before.len() + 1);
    for (text, seed) in &before {
        assert_eq!(after[text], *seed, "{text}");
    }
    let other_base = seeds_by_text(&open_session(&path, 1001));
    assert!(other_base.iter().any(|(t, s)| after[t] != *s), "the base seed matters");
}

#[test]
fn a_rendered_project_renders_nothing_and_an_edit_renders_only_its_segment() {
    let dir = tempfile::tempdir().unwrap();
    let path = book_in(dir.path(), BOOK);
    let mut s = open_session(&path, 1000);
    let n = s.segments().len();
    assert_eq!(render_all(&mut s, RenderParams::default()).len(), n);
    let first = chosen_hashes(&s);
    drop(s);
    let mut s = open_session(&path, 1000);
    assert!(s.work().unwrap().is_empty(), "everything is stored");
    drop(s);
    std::fs::write(&path, BOOK.replace("all night long", "until dawn")).unwrap();
    let mut s = open_session(&path, 1000);
    let work = s.work().unwrap();
    assert_eq!(work.render.len(), 1);
    assert!(work.render[0].text.contains("until dawn"));
    assert!(work.render[0].group_break_after, "alone in its paragraph");
    render_all(&mut s, RenderParams::default());
    let second = chosen_hashes(&s);
    let changed = (0..n).filter(|&i| first[i] != second[i]).count();
    assert_eq!(changed, 1, "only the edited segment has a new take");
}

#[test]
fn the_same_plan_gives_the_same_takes_in_a_fresh_project() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let mut sa = open_session(&book_in(a.path(), BOOK), 1000);
    let mut sb = open_session(&book_in(b.path(), BOOK), 1000);
    render_all(&mut sa, RenderParams::default());
    // Another lane count and the LM without overlap: the same groups, the same takes.
    let other = RenderParams { lanes: 1, overlap: false, ..RenderParams::default() };
    render_all(&mut sb, other);
    assert_eq!(chosen_hashes(&sa), chosen_hashes(&sb));
}

#[test]
fn groups_close_at_paragraphs_and_after_the_opener() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = open_session(&book_in(dir.path(), BOOK), 1000);
    let work = s.work().unwrap();
    let breaks: Vec<(String, bool)> =
        work.render.iter().map(|w| (w.text.clone(), w.group_break_after)).collect();
    // Heading (its own paragraph), then "The lamp was lit." (the opener split is not applied
    // after a heading, so both sentences may share a segment); every paragraph end breaks.
    assert!(breaks.iter().filter(|(_, b)| *b).count() >= 4, "{breaks:?}");
    assert!(breaks.last().unwrap().1);
    render_all(&mut s, RenderParams::default());
    for p in s.segments() {
        let t = s.project().chosen_of_key(p.key).unwrap().unwrap();
        let members = &t.record.group.segment_ids;
        let positions: Vec<usize> = members
            .iter()
            .map(|id| s.segments().iter().find(|q| q.key as u64 == *id).unwrap().position)
            .collect();
        // Members of a group are consecutive and only the last may end a paragraph.
        for w in positions.windows(2) {
            assert_eq!(w[1], w[0] + 1);
        }
        for id in &members[..members.len() - 1] {
            let q = s.segments().iter().find(|q| q.key as u64 == *id).unwrap();
            assert!(!q.ends_paragraph && q.position != 0, "group crosses a break: {members:?}");
        }
    }
}

#[test]
fn a_voice_with_other_content_makes_takes_stale_a_renamed_one_does_not() {
    let dir = tempfile::tempdir().unwrap();
    let path = book_in(dir.path(), BOOK);
    let mut s = open_session(&path, 1000);
    render_all(&mut s, RenderParams::default());
    let n = s.segments().len();
    drop(s);
    let (model, voice, tokenizer) = tiny();
    let reopen = |voice: &Voice| {
        let mut s = Session::open(&ProjectChoice::NextToManuscript, &path, voice, &model.dir, 1000)
            .unwrap();
        s.sync(&read_manuscript(&path, &tokenizer).unwrap(), &tokenizer).unwrap();
        s
    };
    let renamed = copy_voice(&voice, dir.path(), "renamed", None);
    assert!(reopen(&renamed).work().unwrap().is_empty(), "a name is not content");
    let other = copy_voice(&voice, dir.path(), "other", Some("Another transcript entirely."));
    let mut s = reopen(&other);
    assert_eq!(s.work().unwrap().render.len(), n, "every take is stale");
    // Export refuses stale takes, naming them.
    let err = lectern::store::export::export(s.project(), &export_opts(dir.path())).unwrap_err();
    assert!(err.to_string().contains("other content"), "{err}");
    assert!(err.to_string().contains("segment 1 at line 1"), "{err}");
    // `--allow-stale` exports them anyway and the report names every one.
    let opts =
        lectern::store::export::ExportOptions { allow_stale: true, ..export_opts(dir.path()) };
    let report = lectern::store::export::export(s.project(), &opts).unwrap();
    assert_eq!(report.stale.len(), n);
    assert!(report.total_samples > 0);
    // The stale takes stay in the history.
    let key = s.segments()[0].key;
    assert_eq!(s.project().takes_of_key(key).unwrap().len(), 1);
}

/// `lectern export book.md` exports what the manuscript says now: a sentence added after the
/// render is named (line and text) and nothing is written, instead of the old version.
#[test]
fn export_of_an_edited_manuscript_names_the_new_sentence() {
    use clap::Parser;
    let dir = tempfile::tempdir().unwrap();
    let path = book_in(dir.path(), BOOK);
    let mut s = open_session(&path, 1000);
    render_all(&mut s, RenderParams::default());
    drop(s);
    let export = |out: &str| {
        let cli = lectern::cli::Cli::try_parse_from([
            "lectern",
            "export",
            path.to_str().unwrap(),
            "-o",
            dir.path().join(out).to_str().unwrap(),
        ])
        .unwrap();
        lectern::cli::run(cli)
    };
    export("before.wav").unwrap();
    assert!(dir.path().join("before.wav").is_file());

    let edited = BOOK.replacen("\n\n", "\n\nA sentence the narrator added later.\n\n", 1);
    std::fs::write(&path, &edited).unwrap();
    let line = edited.lines().position(|l| l.starts_with("A sentence the narrator")).unwrap() + 1;
    let err = export("after.wav").unwrap_err();
    let message = format!("{err:#}");
    assert!(message.contains("no take yet"), "{message}");
    assert!(message.contains(&format!("at line {line}: \"A sentence the narrator")), "{message}");
    assert!(!dir.path().join("after.wav").exists());
    // The takes are all still there; rendering the edit makes the export work again.
    let mut s = open_session(&path, 1000);
    assert_eq!(s.work().unwrap().render.len(), 1);
    render_all(&mut s, RenderParams::default());
    drop(s);
    export("after.wav").unwrap();
    assert!(dir.path().join("after.wav").is_file());
}

fn export_opts(dir: &Path) -> lectern::store::export::ExportOptions {
    lectern::store::export::ExportOptions {
        out: dir.join("out.wav"),
        format: Default::default(),
        sample_format: lectern::store::export::SampleFormat::Float32,
        split_chapters: false,
        loudness_lufs: None,
        allow_stale: false,
        book: None,
        cover: None,
    }
}

#[test]
fn settings_are_not_staleness() {
    let dir = tempfile::tempdir().unwrap();
    let path = book_in(dir.path(), BOOK);
    let mut s = open_session(&path, 1000);
    render_all(&mut s, RenderParams::default());
    let n = s.segments().len();
    let same = TakeSettings {
        nfe: 10,
        precision: Default::default(),
        min_len_rule: Default::default(),
        backend: "cpu".into(),
        flow_matmul: "f32".into(),
    };
    assert!(s.other_settings(&same).unwrap().is_empty());
    let more_steps = TakeSettings { nfe: 12, ..same };
    let other = s.other_settings(&more_steps).unwrap();
    assert_eq!(other.len(), n, "counted…");
    assert!(s.work().unwrap().is_empty(), "…but kept: settings are not staleness");
    // An approved take is reported as such (render never replaces it).
    let key = s.segments()[0].key;
    s.set_review(key, Review::Approved).unwrap();
    let other = s.other_settings(&more_steps).unwrap();
    assert!(other.iter().any(|(k, approved)| *k == key && *approved));
}

#[test]
fn an_approved_choice_is_locked() {
    let dir = tempfile::tempdir().unwrap();
    let path = book_in(dir.path(), BOOK);
    let mut s = open_session(&path, 1000);
    render_all(&mut s, RenderParams::default());
    let key = s.segments()[1].key;
    let chosen = s.project().chosen_of_key(key).unwrap().unwrap().id;
    // A second take of the segment.
    let spec = s.reseed_spec(key).unwrap();
    assert_ne!(spec.seed, s.segments()[1].default_seed);
    assert!(spec.group_break_after);
    let h = session_common::fake_engine(RenderParams::default());
    h.tx.send(lectern_engine::protocol::Request::Reseed(Box::new(spec))).unwrap();
    let take = loop {
        if let lectern_engine::protocol::EngineEvent::TakeReady(t) =
            h.rx.recv_timeout(std::time::Duration::from_secs(30)).unwrap()
        {
            break *t;
        }
    };
    h.shutdown();
    let saved = s.accept(take).unwrap();
    assert_eq!(saved.len(), 1);
    assert_eq!(s.project().chosen_of_key(key).unwrap().unwrap().id, chosen, "not chosen by itself");
    s.set_review(key, Review::Approved).unwrap();
    assert!(s.choose(key, saved[0].id).is_err(), "locked");
    s.set_review(key, Review::Heard).unwrap();
    s.choose(key, saved[0].id).unwrap();
    s.set_note(key, "breath at the end").unwrap();
    let view = s.views().unwrap().into_iter().find(|v| v.planned.key == key).unwrap();
    assert_eq!((view.chosen, view.note.as_str()), (Some(saved[0].id), "breath at the end"));
}

#[test]
fn a_group_is_saved_all_or_nothing() {
    struct FailSecond(usize);
    impl lectern::store::takes::TakeWriter for FailSecond {
        fn write_wav(
            &mut self,
            path: &Path,
            samples: &[f32],
            record: &[u8],
        ) -> std::io::Result<()> {
            self.0 += 1;
            if self.0 == 2 {
                return Err(std::io::Error::other("disk trouble"));
            }
            lectern::store::takes::FsWriter.write_wav(path, samples, record)
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let path = book_in(dir.path(), "One sentence here. And a second one after it.\n");
    let mut s = open_session(&path, 1000);
    let keys: Vec<i64> = s.segments().iter().map(|p| p.key).collect();
    let takes: Vec<_> = keys
        .iter()
        .map(|k| {
            let mut t = session_common::synthetic_take(*k);
            t.record.content = s.segments().iter().find(|p| p.key == *k).unwrap().content.clone();
            t
        })
        .collect();
    let group: Vec<(i64, &_)> = keys.iter().copied().zip(takes.iter()).collect();
    let project_dir = dir.path().join("book.lectern");
    let err = s.project_mut().save_group_with(&group, &mut FailSecond(0));
    assert!(err.is_err());
    for k in &keys {
        assert!(s.project().takes_of_key(*k).unwrap().is_empty(), "no take of the group saved");
    }
    let files = lectern::store::takes::take_files(&project_dir).unwrap();
    assert!(files.is_empty(), "no file left behind: {files:?}");
}

#[test]
fn damaged_and_deleted_takes_are_regenerated_bit_for_bit() {
    let dir = tempfile::tempdir().unwrap();
    let path = book_in(dir.path(), BOOK);
    let mut s = open_session(&path, 1000);
    render_all(&mut s, RenderParams::default());
    let want = chosen_hashes(&s);
    let damaged = s.project().chosen_of_key(s.segments()[1].key).unwrap().unwrap();
    let deleted = s.project().chosen_of_key(s.segments()[2].key).unwrap().unwrap();
    // Damage one file's samples (same length), delete another.
    let mut bytes = std::fs::read(&damaged.wav_path).unwrap();
    let data = bytes.windows(4).position(|w| w == b"data").unwrap() + 8;
    bytes[data..data + 8].copy_from_slice(&[0x11; 8]);
    std::fs::write(&damaged.wav_path, bytes).unwrap();
    std::fs::remove_file(&deleted.wav_path).unwrap();
    let err = s.load_samples(damaged.id).unwrap_err().to_string();
    assert!(err.contains("quarantine"), "{err}");
    assert_eq!(s.project().take(damaged.id).unwrap().status, TakeStatus::Missing);
    drop(s);
    let mut s = open_session(&path, 1000);
    let work = s.work().unwrap();
    assert_eq!(work.regenerate.len(), 2, "{work:?}");
    assert!(work.render.is_empty());
    render_all(&mut s, RenderParams::default());
    assert_eq!(chosen_hashes(&s), want, "the same audio, the same takes");
    for id in [damaged.id, deleted.id] {
        assert_eq!(s.project().take(id).unwrap().status, TakeStatus::Ok);
        s.load_samples(id).unwrap();
    }
}

/// The texts of the segments a session must render.
fn to_render(s: &mut Session) -> Vec<String> {
    s.work().unwrap().render.iter().map(|r| r.text.clone()).collect()
}

const NAMES: &str = "# Names\n\nNguyen opened the door.\n\nThe rain kept falling.\n\n\
                     Later that night Nguyen wrote a letter.\n\nShe slept.\n";

#[test]
fn editing_one_pronunciation_makes_exactly_the_segments_with_its_word_stale() {
    let dir = tempfile::tempdir().unwrap();
    let path = book_in(dir.path(), NAMES);
    let prons = dir.path().join("pronunciations.txt");
    std::fs::write(&prons, "# names\nNguyen = Win\nrain = rayn\n").unwrap();
    let mut s = open_session(&path, 1000);
    render_all(&mut s, RenderParams::default());
    let texts: Vec<_> = s.segments().iter().map(|p| p.text.clone()).collect();
    assert!(texts.contains(&"Win opened the door.".to_string()), "{texts:?}");
    let before = chosen_hashes(&s);
    drop(s);
    // One entry edited to phone units: the two segments with the word, and only they.
    std::fs::write(&prons, "# names\nNguyen = [N][W][IY1][N]\nrain = rayn\n").unwrap();
    let mut s = open_session(&path, 1000);
    assert_eq!(
        to_render(&mut s),
        ["[N][W][IY1][N] opened the door.", "Later that night [N][W][IY1][N] wrote a letter."]
    );
    render_all(&mut s, RenderParams::default());
    let after = chosen_hashes(&s);
    let changed: Vec<_> = (0..after.len()).filter(|&i| before[i] != after[i]).collect();
    assert_eq!(changed.len(), 2, "{changed:?}");
    drop(s);
    // A bad entry stops the read with the file and line, and the project keeps its takes.
    std::fs::write(&prons, "Nguyen = [N][W][IY9][N]\n").unwrap();
    let (_, _, tokenizer) = session_common::tiny();
    let err = read_manuscript(&path, &tokenizer).unwrap_err();
    let msg = format!("{err:#}");
    assert!(msg.contains("pronunciations.txt:1: bad pronunciation entry: `[IY9]`"), "{msg}");
}

#[test]
fn a_language_change_makes_exactly_its_segments_stale() {
    let dir = tempfile::tempdir().unwrap();
    let book = "# Un\n\nBonjour Paul.\n\nThe rain kept falling.\n\nAu revoir Paul.\n";
    let path = book_in(dir.path(), book);
    let mut s = open_session(&path, 1000);
    render_all(&mut s, RenderParams::default());
    drop(s);
    // The same words under French markup: the text ids are the same, the content is not.
    let marked = book.replace("Bonjour Paul.", "[lang:fr]Bonjour Paul.[/lang]");
    std::fs::write(&path, marked).unwrap();
    let mut s = open_session(&path, 1000);
    assert_eq!(to_render(&mut s), ["Bonjour Paul."]);
    render_all(&mut s, RenderParams::default());
    drop(s);
    // A French front matter makes every Latin segment French, hence stale, but the one
    // already marked French.
    let front = format!("---\nlang: fr\n---\n{}", std::fs::read_to_string(&path).unwrap());
    std::fs::write(&path, front).unwrap();
    let mut s = open_session(&path, 1000);
    assert_eq!(to_render(&mut s), ["Un.", "The rain kept falling.", "Au revoir Paul."]);
}

/// The workstation's chapter status (#19): once every segment of a chapter has a chosen take,
/// the chapter is mastered and measured off the UI thread, and its figures are those of the
/// chapter's file from `export --preset acx` (the same mastering; the export's are measured
/// after MP3 encoding, whose low-pass takes a little energy: within 0.5 dB); an unchanged
/// chapter is not checked again.
#[test]
fn a_chapter_with_all_takes_chosen_gets_the_exports_acx_figures() {
    use lectern::tui::app::{ChapterAcx, Msg};
    let tmp = tempfile::tempdir().unwrap();
    let text = "# One\n\nThe lamp was lit. The keeper climbed.\n\n# Two\n\nShe turned the page.\n";
    let book = book_in(tmp.path(), text);
    let mut s = open_session(&book, 7);
    render_all(&mut s, RenderParams::default());
    drop(s);
    let mut desk = session_common::open_desk(&book, 7);
    let chapters = desk.session().segments().last().unwrap().chapter + 1;
    assert_eq!(chapters, 2);
    let asked = desk.check_chapters(None);
    assert_eq!(asked.len(), chapters);
    assert!(
        asked
            .iter()
            .all(|m| matches!(m, Msg::ChapterStatus { status: Some(ChapterAcx::Checking), .. }))
    );
    assert!(desk.check_chapters(None).is_empty(), "unchanged chapters are not checked again");
    let mut checked = std::collections::BTreeMap::new();
    while checked.len() < chapters {
        for m in desk.wait_checks() {
            let Msg::ChapterStatus { chapter, status: Some(ChapterAcx::Checked(c)) } = m else {
                panic!("{m:?}")
            };
            checked.insert(chapter, c);
        }
    }
    let project = desk.session().project();
    let out = tmp.path().join("acx");
    let opts = lectern::deliver::DeliveryOptions {
        out_dir: out,
        enforce_acx: false,
        ..Default::default()
    };
    let report = lectern::deliver::export(project, &opts).unwrap();
    assert_eq!(report.files.len(), chapters);
    for (file, (_, c)) in report.files.iter().zip(&checked) {
        assert!(c.passes(), "{:?}", c.failures);
        assert!(
            (c.levels.rms_db - file.check.levels.rms_db).abs() < 0.5,
            "{} vs {}",
            c.levels.rms_db,
            file.check.levels.rms_db
        );
        assert!((c.duration_s - file.check.duration_s).abs() < 0.1);
        assert!((c.levels.noise_floor_db - file.check.levels.noise_floor_db).abs() < 1.0);
    }
}

#[test]
fn the_workstation_rows_carry_the_source_text_beside_the_spoken_text() {
    let dir = tempfile::tempdir().unwrap();
    let path = book_in(dir.path(), "In 1999 the **keeper** left.\n");
    let desk = session_common::open_desk(&path, 1000);
    let rows = desk.rows().unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].source, "In 1999 the **keeper** left.");
    assert_eq!(rows[0].text, "In nineteen ninety-nine the keeper left.");
}
