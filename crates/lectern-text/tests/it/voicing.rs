//! Voicing markup (#22): `[voice:…]` switches, `[as:…]` spans and cast `NAME:` paragraphs,
//! `[style:…]` and `[pace:…]` per paragraph, and their errors with line and column.

use std::path::Path;

use lectern_text::manuscript::normalized_runs;
use lectern_text::{
    Boundary, DocBlock, DocChapter, Document, Format, Manuscript, ParseOptions, TextError, Voicing,
};

/// A cast of two, one of them with a space in her name.
fn cast() -> Vec<String> {
    vec!["Anna".to_string(), "Mrs Hale".to_string()]
}

fn opts() -> ParseOptions<'static> {
    ParseOptions::default().with_lead_sentence(false).with_characters(cast())
}

fn md() -> ParseOptions<'static> {
    opts().with_format(Format::Markdown)
}

/// (normalised text, voicing) of every segment.
fn read(src: &str, opts: &ParseOptions<'_>) -> Vec<(String, Voicing)> {
    let book = Manuscript::parse(src, opts).unwrap();
    book.segments().map(|s| (s.text.clone(), s.voicing.clone())).collect()
}

fn seg(text: &str, voicing: Voicing) -> (String, Voicing) {
    (text.to_string(), voicing)
}

fn book_voice() -> Voicing {
    Voicing::default()
}

fn voice(name: &str) -> Voicing {
    Voicing { voice: Some(name.to_string()), ..Voicing::default() }
}

fn character(name: &str) -> Voicing {
    Voicing { character: Some(name.to_string()), ..Voicing::default() }
}

/// The markup error's (line, column, reason).
fn markup_error(src: &str, opts: &ParseOptions<'_>) -> (usize, usize, String) {
    match Manuscript::parse(src, opts) {
        Err(TextError::Markup { line, column, reason, .. }) => (line, column, reason),
        other => panic!("expected a markup error for {src:?}, got {other:?}"),
    }
}

#[test]
fn voice_switches_hold_across_paragraphs_until_the_next_chapter() {
    let src = "Plain start.\n\n[voice:anna]She spoke first.\n\nStill her.\n\n\
               Then [voice:bob_2.v1] Bob took over.\n\n# Two\n\nThe book's voice again.\n";
    assert_eq!(
        read(src, &md()),
        vec![
            seg("Plain start.", book_voice()),
            seg("She spoke first.", voice("anna")),
            seg("Still her.", voice("anna")),
            seg("Then.", voice("anna")),
            seg("Bob took over.", voice("bob_2.v1")),
            seg("Two.", book_voice()),
            seg("The book's voice again.", book_voice()),
        ]
    );
    let book = Manuscript::parse(src, &md()).unwrap();
    let then = book.segments().find(|s| s.text == "Then.").unwrap();
    assert_eq!(then.boundary, Boundary::Voice);
    assert_eq!(then.pause_after_ms, 200, "a voicing cut adds no pause beyond a sentence's");
    assert_eq!(then.source, "Then");
    assert_eq!(Boundary::Voice.describe(), "voice or style change");
}

#[test]
fn bare_voice_returns_to_the_books_voice() {
    let src = "[voice:anna]One.\n\nTwo [voice] three.\n\nFour.";
    assert_eq!(
        read(src, &opts()),
        vec![
            seg("One.", voice("anna")),
            seg("Two.", voice("anna")),
            seg("three.", book_voice()),
            seg("Four.", book_voice()),
        ]
    );
}

/// A heading's own `[voice:…]` carries into its chapter; its title leaves the markup out.
#[test]
fn a_headings_voice_carries_into_its_chapter() {
    let src = "[voice:anna]Before.\n\n# The End [voice:tom]\n\nAfter.\n";
    let book = Manuscript::parse(src, &md()).unwrap();
    assert_eq!(book.chapters[1].title.as_deref(), Some("The End"));
    let got: Vec<_> = book.segments().map(|s| (s.text.clone(), s.voicing.clone())).collect();
    assert_eq!(
        got,
        vec![
            seg("Before.", voice("anna")),
            seg("The End.", book_voice()),
            seg("After.", voice("tom")),
        ]
    );
}

#[test]
fn a_character_span_cuts_its_paragraph_into_segments() {
    let src = "He turned. [as:anna]Leave now![/as] she said, and left.";
    let book = Manuscript::parse(src, &opts()).unwrap();
    let got: Vec<_> = book
        .segments()
        .map(|s| (s.text.as_str(), s.voicing.clone(), s.source.as_str(), s.boundary))
        .collect();
    assert_eq!(
        got,
        vec![
            ("He turned.", book_voice(), "He turned.", Boundary::Voice),
            // The cast's spelling is recorded, whatever the markup's case.
            ("Leave now!", character("Anna"), "Leave now!", Boundary::Voice),
            ("she said, and left.", book_voice(), "she said, and left.", Boundary::End),
        ]
    );
    let span = &book.chapters[0].segments[1].span;
    assert_eq!((span.start.line, span.start.column, span.end.column), (1, 21, 31));
}

#[test]
fn a_character_span_ends_with_its_paragraph() {
    let src = "[voice:narrator]He waited. [as:MRS HALE]I told you so.\n\nThe end.";
    assert_eq!(
        read(src, &opts()),
        vec![
            seg("He waited.", voice("narrator")),
            seg(
                "I told you so.",
                Voicing {
                    voice: Some("narrator".into()),
                    character: Some("Mrs Hale".into()),
                    ..Voicing::default()
                }
            ),
            seg("The end.", voice("narrator")),
        ]
    );
}

#[test]
fn a_cast_name_and_colon_opens_a_characters_paragraph() {
    let src = "Anna: Where were you?\n\nNote: the clock had stopped.\n\nmrs hale: Out.\n\n\
               ANNA:Fine. [as:Mrs Hale]Fine?[/as] Yes.";
    let book = Manuscript::parse(src, &opts()).unwrap();
    let got: Vec<_> = book.segments().map(|s| (s.text.clone(), s.voicing.clone())).collect();
    assert_eq!(
        got,
        vec![
            seg("Where were you?", character("Anna")),
            seg("Note: the clock had stopped.", book_voice()),
            seg("Out.", character("Mrs Hale")),
            seg("Fine.", character("Anna")),
            seg("Fine?", character("Mrs Hale")),
            seg("Yes.", character("Anna")),
        ]
    );
    // The name is not read, and the segment's span starts after it.
    let first = &book.chapters[0].segments[0];
    assert_eq!(first.source, "Where were you?");
    assert_eq!((first.span.start.line, first.span.start.column), (1, 7));
    assert_eq!(first.boundary, Boundary::Paragraph);
    // Without a cast, or in a heading, a name and colon are text.
    let plain = ParseOptions::default().with_lead_sentence(false);
    assert_eq!(read("Anna: Hi.", &plain), vec![seg("Anna: Hi.", book_voice())]);
    assert_eq!(
        read("# Anna: A Life\n\nShe was born.", &md()),
        vec![seg("Anna: A Life.", book_voice()), seg("She was born.", book_voice())]
    );
}

#[test]
fn style_and_pace_hold_to_the_paragraphs_end() {
    let src = "[style:whispering][pace:0.8]Come closer. Closer.[break]Still close.\n\
               Yes.\n\nNormal again. [style:cold ]Cold [pace:1.25]and slow.[style] Warm.";
    let whisper =
        Voicing { style: Some("whispering".into()), pace: Some(0.8), ..Voicing::default() };
    assert_eq!(
        read(src, &opts()),
        vec![
            seg("Come closer. Closer.", whisper.clone()),
            seg("Still close. Yes.", whisper),
            seg("Normal again.", book_voice()),
            seg("Cold.", Voicing { style: Some("cold".into()), ..Voicing::default() }),
            seg(
                "and slow.",
                Voicing { style: Some("cold".into()), pace: Some(1.25), ..Voicing::default() }
            ),
            seg("Warm.", Voicing { pace: Some(1.25), ..Voicing::default() }),
        ]
    );
}

/// Markup that repeats the voicing in effect is skipped, not a cut.
#[test]
fn markup_that_changes_nothing_does_not_cut() {
    let src = "[voice:anna]One.\n\n[voice:anna]Two, he said [style:calm]yes [style:calm]twice.";
    let calm = Voicing { style: Some("calm".into()), ..voice("anna") };
    assert_eq!(
        read(src, &opts()),
        vec![
            seg("One.", voice("anna")),
            seg("Two, he said.", voice("anna")),
            seg("yes twice.", calm),
        ]
    );
    // Markup alone is silence: it does not change what a markup-free text reads.
    let bare = Manuscript::parse("One. Two.\n\nThree.", &opts()).unwrap();
    let marked = Manuscript::parse("[voice]One. [pace]Two.\n\n[style]Three.", &opts());
    let marked = marked.unwrap();
    let key = |m: &Manuscript| {
        m.segments().map(|s| (s.text.clone(), s.hash, s.boundary, s.pause_after_ms)).collect()
    };
    let (a, b): (Vec<_>, Vec<_>) = (key(&bare), key(&marked));
    assert_eq!(a, b);
}

#[test]
fn pauses_and_voicing_changes_cut_together() {
    let src = "[voice:anna]Hi.[pause:1s] [voice]Bye.";
    let book = Manuscript::parse(src, &opts()).unwrap();
    let got: Vec<_> = book
        .segments()
        .map(|s| (s.text.as_str(), s.voicing.clone(), s.pause_after_ms, s.boundary))
        .collect();
    assert_eq!(
        got,
        vec![
            ("Hi.", voice("anna"), 1000, Boundary::Pause),
            ("Bye.", book_voice(), 0, Boundary::End),
        ]
    );
}

/// Voicing is not part of the text's hash (the app puts it in the take's key).
#[test]
fn the_same_text_in_another_voice_keeps_its_hash() {
    let book = Manuscript::parse("[as:Anna]Hello.\n\nHello.", &opts()).unwrap();
    let segs: Vec<_> = book.segments().collect();
    assert_ne!(segs[0].voicing, segs[1].voicing);
    assert_eq!(segs[0].hash, segs[1].hash);
}

#[test]
fn markdown_and_plain_text_give_the_same_voicings() {
    let src = "Anna: [style:soft]Hush.\n\n\
               He said [as:Mrs Hale][style:cold]No[/as] and went.\n\n\
               [voice:old_tom_]Later, [pace:1.5]much later.";
    let plain = read(src, &opts());
    assert_eq!(plain, read(src, &md()));
    assert_eq!(plain.len(), 6, "{plain:?}");
    assert_eq!(
        plain[2],
        seg(
            "No.",
            Voicing {
                character: Some("Mrs Hale".into()),
                style: Some("cold".into()),
                ..Voicing::default()
            }
        )
    );
    // Text before a cut ends with a full stop unless it has a mark, as before a pause.
    assert_eq!(plain[4], seg("Later,.", voice("old_tom_")));
    // Emphasis around markup is read as text, as elsewhere.
    let emphasised = "**Anna:** [style:soft]Hush.\n\n\
                      *He* said [as:Mrs Hale][style:cold]No[/as] and _went_.\n\n\
                      [voice:old_tom_]Later, [pace:1.5]*much* later.";
    assert_eq!(read(emphasised, &md()), plain);
    // The segments still reproduce the normalised text (a manuscript invariant).
    let squash = |s: String| s.split_whitespace().collect::<String>();
    let runs = normalized_runs(src, Format::Plain, &opts()).unwrap().concat();
    let segs: String = plain.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(squash(segs), squash(runs));
}

#[test]
fn bad_markup_names_its_line_and_column() {
    let cases: &[(&str, (usize, usize), &str)] = &[
        ("One.\n\nTwo [voice:anna smith] three.", (3, 5), "bad voice `[voice:anna smith]`"),
        ("[voice:]Hi.", (1, 1), "bad voice `[voice:]`"),
        ("[voice:an/na]Hi.", (1, 1), "letters, digits, `-`, `_` and `.` only"),
        ("Fine.\n  [as:Bob]Hi.", (2, 3), "the cast has no character `Bob` (it has Anna, Mrs Hale)"),
        ("Hi [as: ] there.", (1, 4), "`[as: ]` names no character"),
        ("Hi [/as] there.", (1, 4), "`[/as]` closes no `[as:…]` in this paragraph"),
        ("[as:Anna]Open.\n\nShut[/as].", (3, 5), "`[/as]` closes no"),
        ("Slow [pace:3] down.", (1, 6), "bad pace `[pace:3]`: write a number from 0.5 to 2"),
        ("Slow [pace:fast] down.", (1, 6), "bad pace `[pace:fast]`"),
        ("Slow [pace:NaN] down.", (1, 6), "bad pace `[pace:NaN]`"),
        ("Say [style: ] it.", (1, 5), "empty style `[style: ]`"),
        ("Say [style:soft and\nlow] it.", (1, 5), "`[style:soft and` is not closed"),
        ("Say [style:soft[pause] it.", (1, 5), "holds a `[`"),
    ];
    for (src, (line, column), reason) in cases {
        let got = markup_error(src, &opts());
        assert_eq!((got.0, got.1), (*line, *column), "{src:?}: {}", got.2);
        assert!(got.2.contains(reason), "{src:?}: {}", got.2);
    }
    let no_cast = ParseOptions::default();
    let (line, column, reason) = markup_error("\n\nWell, [as:Anna]hi.", &no_cast);
    assert_eq!((line, column), (3, 7));
    assert!(reason.contains("there is no cast to say who `Anna` is"), "{reason}");
    let long = format!("[style:{}]Hi.", "a".repeat(201));
    assert!(markup_error(&long, &opts()).2.contains("too long (201 chars, at most 200)"));
    // In Markdown the column is the source's, emphasis markers counted.
    let (line, column, _) = markup_error("# Title\n\n**Anna** [pace:9] spoke.", &md());
    assert_eq!((line, column), (3, 10));
    // The error message names the file.
    let shown = Manuscript::parse("x [/as]", &opts()).unwrap_err().to_string();
    assert!(shown.starts_with("<text>:1:3: "), "{shown}");
}

/// EPUB documents are read through the same blocks: markup and cast paragraphs work there,
/// and every chapter starts in the book's voice.
#[test]
fn documents_read_voicing_markup_per_chapter() {
    let body = DocBlock::body;
    let chapter = |blocks| DocChapter { blocks, ..DocChapter::default() };
    let doc = Document {
        chapters: vec![
            chapter(vec![body("[voice:anna]One."), body("Mrs Hale: Two.")]),
            chapter(vec![body("Three.")]),
        ],
        ..Document::default()
    };
    let book = Manuscript::from_document(&doc, Path::new("book.epub"), &opts()).unwrap();
    let got: Vec<_> = book.segments().map(|s| (s.text.clone(), s.voicing.clone())).collect();
    assert_eq!(
        got,
        vec![
            seg("One.", voice("anna")),
            seg("Two.", Voicing { character: Some("Mrs Hale".into()), ..voice("anna") }),
            seg("Three.", book_voice()),
        ]
    );
}
