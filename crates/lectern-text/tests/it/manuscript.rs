//! Manuscript parsing, segmentation and the tokenizer, on fixtures/text/.

use std::path::Path;

use lectern_text::manuscript::normalized_runs;
use lectern_text::segment::estimate_tokens;
use lectern_text::{
    Format, Lang, Manuscript, ParseOptions, SegmentKind, SegmentLimits, TextError, Tokenizer,
    TokenizerKind,
};

fn fixture_tokenizer() -> Tokenizer {
    Tokenizer::from_model_dir(Path::new("../../fixtures/text")).expect("fixture BPE")
}

fn squash(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace()).collect()
}

/// Every segment within the hard limit, and segments reproduce the normalised text exactly.
fn check_invariants(m: &Manuscript, src: &str, format: Format, opts: &ParseOptions<'_>) {
    let limits = SegmentLimits::default();
    for s in m.segments() {
        let len = match s.lang {
            Lang::Zh => s.text.chars().count(),
            Lang::En => {
                opts.tokenizer.map_or_else(|| estimate_tokens(&s.text), |t| t.count(&s.text))
            }
        };
        assert!(len <= limits.hard_max(), "segment {} has length {len}: {:?}", s.id, s.text);
        assert!(!s.text.trim().is_empty());
        assert!(s.span.bytes.start <= s.span.bytes.end && s.span.bytes.end <= src.len());
        assert!(s.span.start <= s.span.end);
    }
    let segs: String = m.segments().map(|s| s.text.as_str()).collect();
    let runs: String = normalized_runs(src, format, opts).unwrap().concat();
    assert_eq!(squash(&segs), squash(&runs), "segments lost or duplicated text");
}

#[test]
fn passage_132_segments() {
    let tok = fixture_tokenizer();
    let opts = ParseOptions::default().with_tokenizer(&tok);
    let path = Path::new("../../fixtures/text/passage-132.txt");
    let src = std::fs::read_to_string(path).unwrap();
    let m = Manuscript::load(path, &opts).unwrap();
    check_invariants(&m, &src, Format::Plain, &opts);
    assert_eq!(m.chapters.len(), 1);
    let segs: Vec<_> = m.segments().collect();
    assert!(segs.len() >= 3, "{} segments", segs.len());
    // No numbers in the passage: every segment is its source text verbatim.
    for s in &segs {
        assert_eq!(&src[s.span.bytes.clone()], s.text);
    }
    assert_eq!((segs[0].span.start.line, segs[0].span.start.column), (1, 1));
    assert!(segs[0].text.starts_with("The lighthouse keeper"));
    assert_eq!(segs.last().unwrap().pause_after_ms, 0);
    assert!(segs[..segs.len() - 1].iter().all(|s| s.pause_after_ms == 200));
    // Hashes are stable content hashes.
    let again = Manuscript::load(path, &opts).unwrap();
    let h: Vec<_> = again.segments().map(|s| s.hash).collect();
    assert_eq!(h, segs.iter().map(|s| s.hash).collect::<Vec<_>>());
}

#[test]
fn lead_sentence_splits_only_the_first_segment() {
    // The estimate measure (as the benchmarks segment): the passage's first segment holds
    // two sentences. (The fixture BPE counts more tokens per word: its first segment is the
    // first sentence already.)
    let path = Path::new("../../fixtures/text/passage-132.txt");
    let src = std::fs::read_to_string(path).unwrap();
    let fast = ParseOptions::default();
    assert!(fast.lead_sentence, "fast start is the default");
    let plain = ParseOptions::default().with_lead_sentence(false);
    let (m_fast, m_plain) =
        (Manuscript::load(path, &fast).unwrap(), Manuscript::load(path, &plain).unwrap());
    check_invariants(&m_fast, &src, Format::Plain, &fast);
    check_invariants(&m_plain, &src, Format::Plain, &plain);
    let texts = |m: &Manuscript| m.segments().map(|s| s.text.clone()).collect::<Vec<_>>();
    let (f, p) = (texts(&m_fast), texts(&m_plain));
    assert_eq!(
        f[0],
        "The lighthouse keeper climbed the spiral stairs for the last time that autumn."
    );
    assert_eq!(f.len(), p.len() + 1);
    // The opener and its remainder are the plain first segment; the rest is unchanged.
    assert_eq!(format!("{} {}", f[0], f[1]), p[0]);
    assert_eq!(f[2..], p[1..]);
    assert_eq!(m_fast.segments().next().unwrap().pause_after_ms, 200);
    // A one-sentence first segment (a heading) is left whole.
    let m =
        Manuscript::parse("# Title\n\nOne. Two.\n", &fast.clone().with_format(Format::Markdown))
            .unwrap();
    let t = texts(&m);
    assert_eq!(t[0], "Title.");
    assert_eq!(t[1], "One. Two.");
}

#[test]
fn markdown_chapter() {
    let tok = fixture_tokenizer();
    let opts = ParseOptions::default().with_tokenizer(&tok);
    let path = Path::new("../../fixtures/text/chapter.md");
    let src = std::fs::read_to_string(path).unwrap();
    let m = Manuscript::load(path, &opts).unwrap();
    check_invariants(&m, &src, Format::Markdown, &opts);
    let titles: Vec<_> = m.chapters.iter().map(|c| c.title.clone().unwrap_or_default()).collect();
    assert_eq!(titles, ["Chapter One: The Lighthouse", "Chapter Two", "第三章 混合"]);
    let all: String = m.segments().map(|s| s.text.as_str()).collect::<Vec<_>>().join(" ");
    assert!(!all.contains("never read"), "code block was read");
    assert!(!all.contains("example.com") && all.contains("the notice"), "link not read as text");
    assert!(!all.contains('*') && !all.contains('`'));
    assert!(all.contains("Mister Abernathy") && all.contains("nineteen eighty-four"));
    assert!(all.contains("three dollars and fifty cents") && all.contains("seven thirty PM"));
    assert!(all.contains("\"Will you stay?\""), "quote split from its sentence: {all}");
    // Headings are segments of their own with the heading pause; chapters end with the chapter pause.
    let first = &m.chapters[0].segments[0];
    assert_eq!(first.kind, SegmentKind::Heading);
    assert_eq!(first.pause_after_ms, 1000);
    assert_eq!(m.chapters[0].segments.last().unwrap().pause_after_ms, 2000);
    // The explicit [pause:1.5s] after "last year."
    let s = m.segments().find(|s| s.text.ends_with("than last year.")).expect("segment");
    assert_eq!(s.pause_after_ms, 1500);
    assert_eq!(src[s.span.bytes.clone()].lines().count(), 1);
    assert_eq!(s.span.end.line, 6);
    // The 400-word sentence without punctuation is cut into legal pieces, in order.
    let long: Vec<_> =
        m.chapters[1].segments.iter().filter(|s| s.kind == SegmentKind::Body).collect();
    assert!(long.len() >= 4, "{} segments", long.len());
    let long_words: usize = long
        .iter()
        .take_while(|s| !s.text.contains("She wrote"))
        .map(|s| s.text.split_whitespace().count())
        .sum();
    assert_eq!(long_words, 400);
    // [break] and [pause] inside the block quote.
    let quote = m.segments().find(|s| s.text.contains("Come home soon")).unwrap();
    assert_eq!(quote.pause_after_ms, 500);
    let and_he = m.segments().find(|s| s.text.starts_with("And he did")).unwrap();
    assert_eq!(and_he.pause_after_ms, 700);
    // Mixed Chinese/English paragraph takes the Chinese branch.
    let zh: Vec<_> =
        m.chapters[2].segments.iter().filter(|s| s.kind == SegmentKind::Body).collect();
    assert!(zh.iter().all(|s| s.lang == Lang::Zh));
    let zh_text: String = zh.iter().map(|s| s.text.as_str()).collect();
    assert!(
        zh_text.contains("二零二四年")
            && zh_text.contains("百分之五十")
            && zh_text.contains("lighthouse")
    );
    assert!(zh_text.contains("十点三十分") && zh_text.contains("负五度"), "{zh_text}");
    // No segment starts or ends with whitespace.
    assert!(m.segments().all(|s| s.text.trim() == s.text));
    // Spans point at the source.
    let title = &m.chapters[2].segments[0];
    assert_eq!(title.span.start.line, src.lines().position(|l| l.contains("第三章")).unwrap() + 1);
}

#[test]
fn empty_paragraphs_and_pause_only_text() {
    let opts = ParseOptions::default();
    let m = Manuscript::parse("[pause:2s]\n\n   \n\nHello there.\n\n\n\n[pause]\n", &opts).unwrap();
    let segs: Vec<_> = m.segments().collect();
    assert_eq!(segs.len(), 1);
    assert_eq!(m.lead_in_ms, 2000);
    assert_eq!(segs[0].pause_after_ms, 500);
    assert_eq!(segs[0].span.start.line, 5);
    assert!(Manuscript::parse("", &opts).unwrap().chapters.is_empty());
}

#[test]
fn bad_pause_names_the_line() {
    let e = Manuscript::parse("ok.\nthen [pause:soon] more", &ParseOptions::default()).unwrap_err();
    match e {
        TextError::Markup { line, column, .. } => assert_eq!((line, column), (2, 6)),
        other => panic!("{other}"),
    }
}

#[test]
fn binary_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("a.txt");
    std::fs::write(&p, b"\x7fELF\x02\x01\x01\x00\x00\x00binary").unwrap();
    let e = Manuscript::load(&p, &ParseOptions::default()).unwrap_err();
    assert!(matches!(e, TextError::Binary { .. }), "{e}");
    assert!(e.to_string().contains("binary"));
}

#[test]
fn empty_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    for (name, body) in [("empty.txt", ""), ("blank.md", "\n   \n\n```\ncode\n```\n")] {
        let p = dir.path().join(name);
        std::fs::write(&p, body).unwrap();
        let e = Manuscript::load(&p, &ParseOptions::default()).unwrap_err();
        assert!(matches!(e, TextError::Empty { .. }), "{name}: {e}");
    }
}

#[test]
fn invalid_utf8_names_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bad.txt");
    std::fs::write(&p, b"line one\nline two\nbad \xff here\n").unwrap();
    let e = Manuscript::load(&p, &ParseOptions::default()).unwrap_err();
    match &e {
        TextError::InvalidUtf8 { line, column, .. } => assert_eq!((*line, *column), (3, 5)),
        other => panic!("{other}"),
    }
    assert!(e.to_string().contains("line 3"), "{e}");
}

#[test]
fn five_megabyte_single_line() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("big.txt");
    let unit = "the keeper climbed 112 stairs over the dark harbour ";
    let body = unit.repeat(5 * 1024 * 1024 / unit.len() + 1);
    std::fs::write(&p, &body).unwrap();
    let tok = fixture_tokenizer();
    let opts = ParseOptions::default().with_tokenizer(&tok);
    let m = Manuscript::load(&p, &opts).unwrap();
    let limits = SegmentLimits::default();
    let mut words = 0;
    for (i, s) in m.segments().enumerate() {
        // Tokenising all 5 MB again would dominate the test: every 101st segment is checked.
        if i % 101 == 0 {
            assert!(tok.count(&s.text) <= limits.hard_max());
        }
        assert_eq!(s.span.start.line, 1);
        words += s.text.split_whitespace().count();
    }
    // "112" reads as three words ("one hundred and twelve") in place of one.
    assert_eq!(words, body.split_whitespace().count() + 3 * (body.len() / unit.len()));
}

#[test]
fn one_megabyte_without_spaces() {
    let body = "ab".repeat(512 * 1024);
    let m = Manuscript::parse(&body, &ParseOptions::default()).unwrap();
    let total: usize = m.segments().map(|s| s.text.trim_end_matches('.').len()).sum();
    assert_eq!(total, body.len());
    assert!(m.segments().all(|s| estimate_tokens(&s.text) <= SegmentLimits::default().hard_max()));
}

#[test]
fn tokenizer_from_vocab_and_merges() {
    let tok = fixture_tokenizer();
    assert_eq!(tok.kind(), TokenizerKind::Qwen2);
    assert_eq!(tok.encode(" the").unwrap(), [258]);
    assert_eq!(tok.encode("Hello").unwrap(), [280]);
    assert_eq!(tok.encode("").unwrap(), Vec::<u32>::new()); // no BOS/EOS
    assert_eq!(tok.encode("<|endofprompt|>").unwrap(), [151_646]);
    assert_eq!(tok.encode("[breath]").unwrap(), [151_647]);
    assert_eq!(tok.encode("<|endoftext|>").unwrap(), [151_643]);
    assert_eq!(tok.encode("é").unwrap().len(), 2); // byte-level, no unk
    // Special tokens are cut out before the BPE and the regex splits around them.
    let ids = tok.encode("Hello[breath] the").unwrap();
    assert_eq!(ids, [280, 151_647, 258]);
    // The prompt convention.
    let p = tok.prompt_ids("Hello").unwrap();
    let mut want = tok.encode("You are a helpful assistant.").unwrap();
    want.push(151_646);
    want.push(280);
    assert_eq!(p, want);
    assert_eq!(tok.prompt_ids("<|endofprompt|>Hello").unwrap(), [151_646, 280]);
}

#[test]
fn tiny_model_fallback_tokenizer() {
    let tok =
        Tokenizer::from_model_dir(Path::new("../../fixtures/cosyvoice3-tiny-a/model")).unwrap();
    assert_eq!(tok.kind(), TokenizerKind::TinyFallback);
    assert!(tok.describe().contains("not the Qwen2 vocabulary"));
    assert_eq!(tok.encode("Hi").unwrap(), [72, 105]);
    assert_eq!(tok.encode("Hi<|endofprompt|>").unwrap(), [72, 105, 151_646]);
    assert!(tok.prompt_ids("x").unwrap().contains(&151_646));
}

#[test]
fn full_size_model_without_tokenizer_files_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let blank = dir.path().join("CosyVoice-BlankEN");
    std::fs::create_dir(&blank).unwrap();
    std::fs::write(blank.join("config.json"), r#"{"hidden_size": 896}"#).unwrap();
    let e = Tokenizer::from_model_dir(dir.path()).unwrap_err();
    assert!(e.to_string().contains("no tokenizer files"), "{e}");
}

#[test]
fn project_pronunciations_apply() {
    let dir = tempfile::tempdir().unwrap();
    let book = dir.path().join("book.txt");
    std::fs::write(&book, "Nguyen read 2 books.\n").unwrap();
    std::fs::write(dir.path().join("pronunciations.txt"), "# names\nNguyen = Win\n").unwrap();
    let p = lectern_text::Pronunciations::beside(&book).unwrap();
    let m = Manuscript::load(&book, &ParseOptions::default().with_pronunciations(p)).unwrap();
    let seg = m.segments().next().unwrap();
    assert_eq!(seg.text, "Win read two books.");
    assert_eq!((seg.span.start.column, seg.span.end.column), (1, 21));
}

/// A document of one chapter whose blocks are `blocks`.
fn document(blocks: Vec<lectern_text::DocBlock>) -> lectern_text::Document {
    let chapter = lectern_text::DocChapter { blocks, ..lectern_text::DocChapter::default() };
    lectern_text::Document { chapters: vec![chapter], ..lectern_text::Document::default() }
}

/// The segments of a document, read without the fast start.
fn read_document(blocks: Vec<lectern_text::DocBlock>) -> Vec<lectern_text::Segment> {
    let opts = ParseOptions::default().with_lead_sentence(false);
    let book = Manuscript::from_document(&document(blocks), Path::new("poems.epub"), &opts);
    book.unwrap().segments().cloned().collect()
}

fn spoken(segments: &[lectern_text::Segment]) -> String {
    segments.iter().map(|s| s.text.as_str()).collect::<Vec<_>>().join(" ")
}

const WASTE_LAND: &str = "April is the cruellest month, breeding\nLilacs out of the dead land, \
                          mixing\nMemory and desire, stirring\nDull roots with spring rain.";

#[test]
fn a_verse_line_is_a_phrase() {
    let segs = read_document(vec![lectern_text::DocBlock::stanza(WASTE_LAND)]);
    assert_eq!(
        spoken(&segs),
        "April is the cruellest month, breeding, Lilacs out of the dead land, mixing, Memory \
         and desire, stirring, Dull roots with spring rain."
    );
    // The commas are not in the source: the stanza's span is its text, line breaks included.
    assert_eq!(segs[0].source.lines().next(), Some("April is the cruellest month, breeding"));
    assert_eq!(segs.last().unwrap().source.lines().last(), Some("Dull roots with spring rain."));
    assert_eq!(segs.last().unwrap().pause_after_ms, 0);
}

#[test]
fn a_verse_line_with_its_own_mark_gets_nothing_added() {
    let stanza = "Along the colonnade,\nthe wind; the rain:\nthe dark —\n\"the sea\"\nand then…\n\
                  the end!\nyet on,";
    let segs = read_document(vec![lectern_text::DocBlock::stanza(stanza)]);
    // No doubled marks and no full stop at a line's end, the stanza's last included.
    assert_eq!(
        spoken(&segs),
        "Along the colonnade, the wind; the rain: the dark — \"the sea\" and then… the end! yet on,"
    );
    // Markup at a line's end: the comma goes after the line's words, not after the markup.
    let stanza = "out of the dead land [lang:fr]\nla mémoire[/lang]\nand desire";
    let segs = read_document(vec![lectern_text::DocBlock::stanza(stanza)]);
    assert_eq!(spoken(&segs), "out of the dead land, la mémoire, and desire.");
    assert_eq!(segs[0].language.as_deref(), Some("fr"));
    // Chinese lines take a Chinese comma and no space.
    let segs = read_document(vec![lectern_text::DocBlock::stanza("床前明月光\n疑是地上霜")]);
    assert_eq!(spoken(&segs), "床前明月光，疑是地上霜。");
}

#[test]
fn prose_line_breaks_are_read_as_before() {
    let segs = read_document(vec![lectern_text::DocBlock::body(WASTE_LAND)]);
    assert_eq!(
        spoken(&segs),
        "April is the cruellest month, breeding Lilacs out of the dead land, mixing Memory and \
         desire, stirring Dull roots with spring rain."
    );
    let opts = ParseOptions::default().with_lead_sentence(false);
    let plain = Manuscript::parse("Roses are red\nviolets are blue\n\nSugar is sweet", &opts);
    let plain = plain.unwrap();
    let texts: Vec<_> = plain.segments().map(|s| s.text.as_str()).collect();
    assert_eq!(texts, ["Roses are red violets are blue.", "Sugar is sweet."]);
}

/// A stanza too long for one segment is cut at its lines' commas, and every segment's span
/// is its lines in the laid-out text, from a line's first word to a line's last.
#[test]
fn a_long_stanza_is_cut_at_its_line_ends() {
    let line = "the grey sea and the long black land and the yellow half moon";
    let stanza = [line; 12].join("\n");
    let doc = document(vec![lectern_text::DocBlock::stanza(stanza.clone())]);
    let opts = ParseOptions::default().with_lead_sentence(false);
    let book = Manuscript::from_document(&doc, Path::new("poems.epub"), &opts).unwrap();
    let segs: Vec<_> = book.segments().collect();
    assert!(segs.len() >= 2, "{segs:?}");
    for s in &segs {
        assert!(s.text.ends_with([',', '.']), "{:?}", s.text);
        assert!(s.source.starts_with("the grey") && s.source.ends_with("half moon"), "{s:?}");
        assert_eq!(s.source.lines().count(), s.text.matches("half moon").count(), "{s:?}");
        assert_eq!(s.span.start.column, 1);
    }
    let words: usize = segs.iter().map(|s| s.text.split_whitespace().count()).sum();
    assert_eq!(words, stanza.split_whitespace().count());
}
