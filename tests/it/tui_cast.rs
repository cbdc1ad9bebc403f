//! Casting in the workstation (#22): the narrator's choice of a segment's voice or style is
//! kept in the project, makes exactly that segment's takes stale and its new take current, and
//! survives reopening; the keys that make it send the right commands and requests; the list,
//! the detail panel and the voices panel show who speaks.

use crate::session_common;

use std::path::{Path, PathBuf};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use lectern::cast::Cast;
use lectern::review::{CastingOverride, Review};
use lectern::session::{ProjectChoice, Session};
use lectern::tui::app::{App, AppConfig, Command, Mode, Msg, RowInit};
use lectern::tui::casting::{CastView, CharacterEntry, RowCasting, VoiceEntry};
use lectern::tui::desk::{Desk, read_manuscript};
use lectern::tui::keymap::KeyMap;
use lectern::tui::theme::Theme;
use lectern::tui::view;
use lectern_engine::protocol::{Casting, Mode as SpeechMode, RenderParams, Request, SegmentState};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use session_common::{copy_voice, render_all, tiny};

const BOOK: &str =
    "The lamp was lit.\n\nAnna: Is anyone there?\n\nThe keeper climbed the stairs.\n";

/// A copy of the demo voice named `name`, with its own transcript (so its own content).
fn second_voice(dir: &Path, name: &str) -> PathBuf {
    let (_, voice, _) = tiny();
    let transcript = format!("A recording of {name}, another voice.");
    copy_voice(&voice, dir, name, Some(&transcript)).dir
}

/// A manuscript with a cast: Anna speaks with the voice `alto` (by directory).
fn cast_book(dir: &Path) -> PathBuf {
    let alto = second_voice(dir, "alto");
    let cast = format!("[characters.Anna]\nvoice = {:?}\nstyle = \"Speak softly.\"\n", alto);
    std::fs::write(dir.join("cast.toml"), cast).unwrap();
    let path = dir.join("book.md");
    std::fs::write(&path, BOOK).unwrap();
    path
}

/// A session on the book's project with its cast, synced.
fn cast_session(path: &Path) -> Session {
    let (model, voice, tokenizer) = tiny();
    let mut s =
        Session::open(&ProjectChoice::NextToManuscript, path, &voice, &model.dir, 1000).unwrap();
    s.set_cast(Cast::beside(path, "").unwrap()).unwrap();
    s.sync(&read_manuscript(path, &tokenizer).unwrap(), &tokenizer).unwrap();
    s
}

fn to_render(s: &mut Session) -> Vec<u64> {
    s.work().unwrap().render.iter().map(|spec| spec.id).collect()
}

/// The narrator's voice for a segment is kept in the project: the segment's take made before
/// is stale (kept in the history), its new take current; reopened, nothing renders and the
/// segment is still cast as chosen. A voice the session does not hold is refused.
#[test]
fn a_recast_segment_persists_and_only_its_take_goes_stale() {
    let dir = tempfile::tempdir().unwrap();
    let path = cast_book(dir.path());
    let mut s = cast_session(&path);
    render_all(&mut s, RenderParams::default());
    assert!(to_render(&mut s).is_empty());
    let voices: Vec<String> = s.voices().iter().map(|v| v.manifest.name.clone()).collect();
    assert_eq!(voices, ["tiny-demo", "alto"]);
    let third = s.segments()[2].key;
    let before = s.segments()[2].content.key();

    let err = s
        .set_casting_override(third, &CastingOverride { voice: Some("bass".into()), style: None })
        .unwrap_err();
    assert!(format!("{err:#}").contains("`bass` is not a voice of this session (tiny-demo, alto)"));

    let over = CastingOverride { voice: Some("alto".into()), style: Some(" Slowly. ".into()) };
    s.set_casting_override(third, &over).unwrap();
    let (_, _, tokenizer) = tiny();
    s.sync(&read_manuscript(&path, &tokenizer).unwrap(), &tokenizer).unwrap();
    let planned = &s.segments()[2];
    assert_eq!(
        planned.casting,
        Casting { voice: "alto".into(), mode: SpeechMode::Instruct("Slowly.".into()), pace: 1.0 }
    );
    assert_ne!(planned.content.key(), before, "voice and instruction are content");
    assert_eq!(to_render(&mut s), [third as u64], "exactly the recast segment");
    let takes = render_all(&mut s, RenderParams::default());
    assert_eq!(takes[0].record.voice_id, "alto");
    assert!(to_render(&mut s).is_empty(), "the new take is current");
    let history = s.project().takes_of_key(third).unwrap();
    assert_eq!(history.len(), 2, "the old take stays in the history");
    assert_eq!(history[0].content_key, before);
    drop(s);

    let mut s = cast_session(&path);
    assert!(to_render(&mut s).is_empty(), "reopened: the choice and its take hold");
    assert_eq!(s.segments()[2].recast.voice.as_deref(), Some("alto"));
    assert_eq!(s.segments()[2].recast.style.as_deref(), Some("Slowly."));
    // Given back to the manuscript: cast as written again (its first take is current again,
    // but the chosen one is not: it renders).
    s.set_casting_override(third, &CastingOverride::default()).unwrap();
    s.sync(&read_manuscript(&path, &tokenizer).unwrap(), &tokenizer).unwrap();
    assert_eq!(s.segments()[2].content.key(), before);
    assert!(s.segments()[2].recast.is_empty());

    // A chosen voice that is gone (the cast no longer names it) is an error naming the line
    // and the voice, not the manuscript's voice instead.
    s.set_casting_override(third, &CastingOverride { voice: Some("alto".into()), style: None })
        .unwrap();
    drop(s);
    std::fs::write(dir.path().join("cast.toml"), "").unwrap();
    let (model, voice, tokenizer) = tiny();
    let mut s =
        Session::open(&ProjectChoice::NextToManuscript, &path, &voice, &model.dir, 1000).unwrap();
    s.set_cast(Cast::beside(&path, "").unwrap()).unwrap();
    let err = s.sync(&read_manuscript(&path, &tokenizer).unwrap(), &tokenizer).unwrap_err();
    let err = format!("{err:#}");
    assert!(err.contains("book.md:5: the voice `alto` was chosen for this segment"), "{err}");
}

/// The desk keeps the choice and sends the segment's new spec alone, with its chosen take's
/// seed and the new casting; the App gets the rows again, the old take stale.
#[test]
fn the_desk_sends_the_recast_segments_new_take() {
    let dir = tempfile::tempdir().unwrap();
    let path = cast_book(dir.path());
    let mut s = cast_session(&path);
    render_all(&mut s, RenderParams::default());
    let (_, _, tokenizer) = tiny();
    let mut desk = Desk::open(s, &path, tokenizer).unwrap();
    let rows = desk.rows().unwrap();
    assert_eq!(rows[1].cast.character.as_deref(), Some("Anna"));
    let first = rows[0].id;
    let seed = rows[0].takes[0].record.seed;
    let (tx, rx) = std::sync::mpsc::channel();
    let over = CastingOverride { voice: Some("alto".into()), style: None };
    let msgs = desk.handle(Command::Recast { segment: first, over }, &tx);
    let sent: Vec<Request> = rx.try_iter().collect();
    let [Request::Reseed(spec)] = sent.as_slice() else { panic!("one new take: {sent:?}") };
    assert_eq!((spec.id, spec.seed, spec.group_break_after), (first, seed, true));
    assert_eq!(spec.casting, Casting { voice: "alto".into(), ..Casting::default() });
    let Some(Msg::Replanned { rows, queued }) = msgs.first() else { panic!("{msgs:?}") };
    assert_eq!(queued, &[first]);
    assert!(rows[0].takes[0].stale, "the take in the book's voice is stale now");
    assert!(rows[1..].iter().all(|r| r.takes.iter().all(|t| !t.stale)), "no other");
    assert!(msgs.iter().any(|m| matches!(m, Msg::Seeded { segment, .. } if *segment == first)));

    // An approved segment is locked: refused, nothing sent, nothing kept.
    let second = rows[1].id;
    desk.handle(Command::SetReview { segment: second, review: Review::Approved }, &tx);
    let over = CastingOverride { voice: None, style: Some("Shout.".into()) };
    let msgs = desk.handle(Command::Recast { segment: second, over }, &tx);
    assert!(
        matches!(&msgs[..], [Msg::Refused { why, .. }] if why.contains("approved")),
        "{msgs:?}"
    );
    assert_eq!(rx.try_iter().count(), 0);
    assert!(desk.rows().unwrap()[1].cast.recast.is_empty());
}

fn key(c: char) -> Msg {
    Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE))
}

fn code(c: KeyCode) -> Msg {
    Msg::Key(KeyEvent::new(c, KeyModifiers::NONE))
}

fn cast_view() -> CastView {
    let voice = |name: &str| VoiceEntry { name: name.into(), ..VoiceEntry::default() };
    CastView {
        voices: vec![
            voice("narrator"),
            VoiceEntry { pace: Some(0.95), language: Some("en".into()), ..voice("alto") },
            VoiceEntry { cross_lingual: true, ..voice("bass") },
        ],
        characters: vec![
            CharacterEntry {
                name: "Anna".into(),
                voice: "alto".into(),
                style: Some("Speak softly.".into()),
                pace: Some(1.1),
            },
            CharacterEntry { name: "Tom".into(), voice: "bass".into(), style: None, pace: None },
        ],
        file: Some("cast.toml".into()),
    }
}

fn row(id: u64, text: &str, cast: RowCasting) -> RowInit {
    RowInit {
        id,
        chapter: 0,
        text: text.into(),
        source: text.into(),
        pause_after_ms: 0,
        default_seed: 1000 + id,
        takes: Vec::new(),
        chosen: None,
        review: Review::Unheard,
        edited_since_approval: false,
        note: String::new(),
        cast,
    }
}

fn cast(voice: &str, character: Option<&str>, mode: SpeechMode, pace: f64) -> RowCasting {
    RowCasting {
        casting: Casting { voice: voice.into(), mode, pace },
        character: character.map(str::to_string),
        recast: CastingOverride::default(),
    }
}

fn rows() -> Vec<RowInit> {
    let soft = SpeechMode::Instruct("Speak softly.".into());
    let mut chosen = cast("bass", None, SpeechMode::CrossLingual, 1.0);
    chosen.recast.voice = Some("bass".into());
    vec![
        row(1, "The lamp was lit.", cast("narrator", None, SpeechMode::ZeroShot, 1.0)),
        row(2, "Is anyone there?", cast("alto", Some("Anna"), soft, 1.1)),
        row(3, "Who asks?", cast("bass", Some("Tom"), SpeechMode::CrossLingual, 1.0)),
        row(4, "The keeper climbed.", cast("narrator", None, SpeechMode::ZeroShot, 0.9)),
        row(5, "The boats came home.", chosen),
    ]
}

fn app() -> App {
    let cfg = AppConfig {
        manuscript: "lighthouse.md".into(),
        voice: "narrator".into(),
        model: "tiny".into(),
        autoplay: false,
        ..AppConfig::default()
    };
    let mut app = App::new(cfg, KeyMap::default());
    app.cast = cast_view();
    app.set_rows(rows());
    app
}

/// The instruction typed in the open style prompt.
fn style_draft(app: &App) -> String {
    let Mode::Style(p) = &app.mode else { panic!("no style prompt: {:?}", app.mode) };
    p.input.value().to_string()
}

/// `v` picks a voice (the first choice gives it back to the manuscript), `i` types a style
/// (empty: as written); each becomes the session command with the whole override.
#[test]
fn the_voice_and_style_keys_send_the_narrators_casting() {
    let mut app = app();
    app.update(key('v'));
    assert!(matches!(app.mode, Mode::Voice(_)), "{:?}", app.mode);
    assert_eq!(app.voice_choices(), ["as written", "narrator", "alto", "bass"]);
    app.update(code(KeyCode::Right));
    app.update(code(KeyCode::Right));
    let cmds = app.update(code(KeyCode::Enter));
    assert_eq!(app.mode, Mode::Normal);
    let [Command::Recast { segment: 1, over }] = cmds.as_slice() else { panic!("{cmds:?}") };
    assert_eq!(over, &CastingOverride { voice: Some("alto".into()), style: None });
    assert!(app.rows[0].play_when_ready, "the new take plays when saved");

    // The session's answer: the row recast, its new take queued.
    let mut recast = rows();
    recast[0].cast.recast = over.clone();
    recast[0].cast.casting.voice = "alto".into();
    app.update(Msg::Replanned { rows: recast.clone(), queued: vec![1] });
    assert_eq!(app.rows[0].state, SegmentState::Queued);

    app.update(key('i'));
    assert_eq!(style_draft(&app), "", "zero-shot: no instruction to edit");
    for c in "Whisper.".chars() {
        app.update(key(c));
    }
    let cmds = app.update(code(KeyCode::Enter));
    let [Command::Recast { segment: 1, over }] = cmds.as_slice() else { panic!("{cmds:?}") };
    assert_eq!(over.voice.as_deref(), Some("alto"), "the voice chosen before stays");
    assert_eq!(over.style.as_deref(), Some("Whisper."));

    // The picker's first choice drops the voice; Esc changes nothing.
    app.update(key('v'));
    assert!(
        matches!(app.mode, Mode::Voice(p) if p.at == 2),
        "the picker opens at the chosen voice: {:?}",
        app.mode
    );
    app.update(code(KeyCode::Esc));
    assert_eq!(app.mode, Mode::Normal);
    app.update(key('v'));
    app.update(code(KeyCode::Up));
    app.update(code(KeyCode::Up));
    let cmds = app.update(code(KeyCode::Enter));
    let [Command::Recast { over, .. }] = cmds.as_slice() else { panic!("{cmds:?}") };
    assert!(over.is_empty(), "{over:?}");

    // Anna's style, prefilled; cleared, it goes back to as written — which it already is.
    app.update(code(KeyCode::Down));
    app.update(key('i'));
    assert_eq!(style_draft(&app), "Speak softly.");
    for _ in 0.."Speak softly.".len() {
        app.update(code(KeyCode::Backspace));
    }
    assert!(app.update(code(KeyCode::Enter)).is_empty(), "nothing changed");

    // An approved segment is locked.
    let mut approved = recast;
    approved[2].review = Review::Approved;
    app.set_rows(approved);
    app.update(code(KeyCode::Down));
    app.update(key('v'));
    assert_eq!(app.mode, Mode::Normal);
    assert!(app.log.back().unwrap().contains("approved (locked)"));
}

fn screen(app: &App, w: u16, h: u16) -> String {
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    t.draw(|f| view::draw(app, &Theme::plain(), f)).unwrap();
    let buf = t.backend().buffer().clone();
    (0..buf.area.height)
        .map(|y| {
            let line: String =
                (0..buf.area.width).map(|x| buf[(x, y)].symbol().to_string()).collect();
            line.trim_end().to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The list tags who speaks each segment that is not the book's voice plain; the detail panel
/// spells out the selected segment's casting.
#[test]
fn the_list_shows_who_speaks_and_the_details_the_casting() {
    let mut app = app();
    app.update(code(KeyCode::Down));
    insta::assert_snapshot!("cast_list_120x30", screen(&app, 120, 30));
}

/// `V` lists the cast: the book's voice, each voice with its defaults, each character with
/// its voice, style and pace, and how many segments each speaks.
#[test]
fn the_voices_panel_lists_the_cast() {
    let mut app = app();
    app.update(key('V'));
    assert_eq!(app.mode, Mode::Voices);
    insta::assert_snapshot!("voices_panel_100x30", screen(&app, 100, 30));
    app.update(key('x'));
    assert_eq!(app.mode, Mode::Normal, "any key closes it");
}
