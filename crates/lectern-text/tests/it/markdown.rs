//! Markdown block structure (pulldown-cmark): headings, quotes, lists, code and exact spans.

use lectern_text::{Format, Manuscript, ParseOptions, Segment, SegmentKind, TextError};

fn parse(src: &str) -> Manuscript {
    Manuscript::parse(src, &ParseOptions::default().with_format(Format::Markdown)).unwrap()
}

fn titles(m: &Manuscript) -> Vec<Option<String>> {
    m.chapters.iter().map(|c| c.title.clone()).collect()
}

fn all_text(m: &Manuscript) -> String {
    m.segments().map(|s| s.text.as_str()).collect::<Vec<_>>().join(" ")
}

fn segment_with<'m>(m: &'m Manuscript, word: &str) -> &'m Segment {
    m.segments().find(|s| s.text.contains(word)).unwrap_or_else(|| panic!("no `{word}`"))
}

#[test]
fn setext_headings_open_chapters_at_both_levels() {
    let m = parse(
        "Part *One*\n==========\n\nThe harbour slept.\n\nThe Scene\n---------\n\nMore words.\n",
    );
    assert_eq!(titles(&m), [Some("Part One".to_string()), Some("The Scene".to_string())]);
    for chapter in &m.chapters {
        assert_eq!(chapter.segments[0].kind, SegmentKind::Heading);
        assert!(!chapter.segments[0].text.contains(['=', '-', '*']), "{:?}", chapter.segments[0]);
    }
    assert_eq!(m.chapters[0].segments[1].kind, SegmentKind::Body);
}

#[test]
fn setext_dashes_under_text_make_a_heading_not_a_break() {
    let m = parse("Before the storm\n---\n\nThe harbour slept.\n");
    assert_eq!(titles(&m), [Some("Before the storm".to_string())]);
    let heading = &m.chapters[0].segments[0];
    assert_eq!(heading.kind, SegmentKind::Heading);
    assert_eq!(heading.source, "Before the storm");
    // A `---` after a blank line is still a thematic break: skipped, no chapter.
    let m = parse("One line.\n\n---\n\nAnother line.\n");
    assert_eq!(titles(&m), [None]);
    assert!(!all_text(&m).contains('-'));
}

#[test]
fn a_multi_line_setext_heading_is_one_title() {
    let m = parse("The Long\nTitle\n=====\n\nBody.\n");
    assert_eq!(titles(&m), [Some("The Long Title".to_string())]);
}

#[test]
fn spans_after_a_setext_heading_are_exact() {
    let src = "Title\n=====\n\nA quiet *harbour* slept.\n";
    let m = parse(src);
    let s = segment_with(&m, "harbour");
    assert_eq!((s.span.start.line, s.span.start.column), (4, 1));
    assert_eq!(s.source, src[s.span.bytes.clone()]);
    assert!(s.source.starts_with("A quiet *harbour*"), "{:?}", s.source);
    let e = Manuscript::parse(
        "Title\n=====\n\nFirst line.\nThen [pause:soon] more.\n",
        &ParseOptions::default().with_format(Format::Markdown),
    )
    .unwrap_err();
    match e {
        TextError::Markup { line, column, .. } => assert_eq!((line, column), (5, 6)),
        other => panic!("{other}"),
    }
}

#[test]
fn fenced_and_indented_code_are_skipped() {
    let m =
        parse("Intro.\n\n```rust\nfenced never read\n```\n\n    indented never read\n\nAfter.\n");
    let all = all_text(&m);
    assert!(!all.contains("never read"), "{all}");
    assert!(all.contains("Intro") && all.contains("After"), "{all}");
}

#[test]
fn block_quotes_and_list_items_are_read_as_paragraphs() {
    let src = "> Quoted *words* here.\n> Second `line\n> goes` on.\nlazy end.\n\n- One item.\n- Two\n  continued.\n";
    let m = parse(src);
    let all = all_text(&m);
    assert!(!all.contains(['>', '`', '*']), "markup read: {all}");
    for word in ["Quoted words here", "Second", "goes on", "lazy end", "One item", "continued"] {
        assert!(all.contains(word), "`{word}` lost: {all}");
    }
    let quote = segment_with(&m, "Quoted");
    assert_eq!((quote.span.start.line, quote.span.start.column), (1, 3));
    let item = segment_with(&m, "Two");
    assert_eq!((item.span.start.line, item.span.start.column), (7, 3));
    // Each list item is a paragraph of its own.
    assert!(!segment_with(&m, "One item").text.contains("Two"));
}

#[test]
fn html_comments_are_skipped_and_html_blocks_read_without_tags() {
    let m = parse("<!-- a note\nnever read -->\n\n<div>\nInside the box.\n</div>\n\nAfter.\n");
    let all = all_text(&m);
    assert!(!all.contains("never read") && !all.contains("div"), "{all}");
    assert!(all.contains("Inside the box") && all.contains("After"), "{all}");
}

#[test]
fn escapes_and_closing_hashes_in_headings() {
    let m = parse("## \\*Starred\\* title ##\n\nBody.\n");
    assert_eq!(titles(&m), [Some("*Starred* title".to_string())]);
}

/// Markup is lexed in one place: a heading's title leaves all of it out (pauses too), a
/// Markdown link beside it stays a link, and CosyVoice3 tokens are text.
#[test]
fn markup_beside_markdown_and_special_tokens() {
    let m = parse("# The *End* [pause:2s]\n\n[lang:de_CH]Grüezi[/lang] [breath] a [note](x).\n");
    assert_eq!(titles(&m), [Some("The End".to_string())]);
    let heading = &m.chapters[0].segments[0];
    assert_eq!((heading.text.as_str(), heading.pause_after_ms), ("The End.", 2000));
    let body = &m.chapters[0].segments[1];
    assert_eq!(body.text, "Grüezi [breath] a note.");
    assert_eq!(body.language.as_deref(), Some("de_ch"));
}
