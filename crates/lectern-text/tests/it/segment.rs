//! Segment boundaries and their reasons, sized with the real Qwen2 tokenizer
//! (`fixtures/qwen2-tokenizer/`).

use std::path::Path;
use std::sync::OnceLock;

use lectern_text::{Boundary, Format, Manuscript, ParseOptions, SegmentLimits, Tokenizer};

fn qwen2() -> &'static Tokenizer {
    static TOK: OnceLock<Tokenizer> = OnceLock::new();
    TOK.get_or_init(|| {
        Tokenizer::from_model_dir(Path::new("../../fixtures/qwen2-tokenizer")).expect("Qwen2 BPE")
    })
}

fn parse(src: &str, format: Format, lead_sentence: bool) -> Manuscript {
    let opts = ParseOptions::default()
        .with_tokenizer(qwen2())
        .with_format(format)
        .with_lead_sentence(lead_sentence);
    Manuscript::parse(src, &opts).unwrap()
}

fn boundaries(m: &Manuscript) -> Vec<Boundary> {
    m.segments().map(|s| s.boundary).collect()
}

/// Sentences of 8 to 30 tokens, 12 of them in one paragraph.
const STORY: &str = "The keeper climbed the stairs at dusk. He lit the lamp and watched the sea \
    for a while, thinking of nothing in particular. A ship passed far out, its lights low on the \
    water. The wind turned. Somewhere below, a door banged twice and then was still, as if \
    someone had closed it carefully from the other side. He went down to look. Nobody was \
    there, only the smell of salt and old paint. He climbed back up and sat by the lamp until \
    morning, counting the flashes of the far buoy. At six the relief boat came. The new man \
    asked whether anything had happened. Nothing, said the keeper. Nothing ever does.";

#[test]
fn the_qwen2_fixture_is_the_real_vocabulary() {
    let tok = qwen2();
    assert_eq!(tok.kind(), lectern_text::TokenizerKind::Qwen2);
    // Ids as Qwen2's tokenizer gives them.
    assert_eq!(tok.encode("Hello world").unwrap(), [9707, 1879]);
    assert_eq!(tok.encode("[breath]").unwrap(), [151_647]);
}

#[test]
fn sentences_that_fit_are_never_cut() {
    let m = parse(STORY, Format::Plain, false);
    let segs: Vec<_> = m.segments().collect();
    assert!(segs.len() >= 2, "the paragraph is merged into several segments");
    let limits = SegmentLimits::default();
    for s in &segs {
        assert!(qwen2().count(&s.text) <= limits.hard_max(), "{s:?}");
        assert!(s.text.ends_with(['.', '?', '!']), "segment ends inside a sentence: {:?}", s.text);
        assert!(!s.boundary.splits_sentence(), "{:?}", s.boundary);
    }
    // Every sentence of the source lies whole in one segment.
    for sentence in STORY.split_inclusive(". ").map(str::trim) {
        let sentence = sentence.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            segs.iter().any(|s| s.text.contains(&sentence)),
            "sentence split across segments: {sentence:?}"
        );
    }
    let b = boundaries(&m);
    assert_eq!(b.last(), Some(&Boundary::End));
    assert!(b[..b.len() - 1].iter().all(|&x| x == Boundary::Sentence), "{b:?}");
}

#[test]
fn a_sentence_over_the_limit_is_cut_at_commas_then_between_words() {
    let clause = "the lamp turned slowly above the water while the keeper counted the seconds";
    assert!(qwen2().count(clause) < 40);
    let with_commas = format!("{}.", [clause; 9].join(", "));
    let no_commas = format!("{}.", [clause; 9].join(" and "));
    let max = SegmentLimits::default().token_max_n;
    for (text, cut) in [(&with_commas, Boundary::Comma), (&no_commas, Boundary::Word)] {
        assert!(qwen2().count(text) > max, "the sentence must be over the limit");
        let m = parse(text, Format::Plain, false);
        let segs: Vec<_> = m.segments().collect();
        assert!(segs.len() >= 2);
        for s in &segs[..segs.len() - 1] {
            assert_eq!(s.boundary, cut, "{:?}", s.text);
            assert!(
                qwen2().count(&s.text) <= max,
                "{} tokens: {:?}",
                qwen2().count(&s.text),
                s.text
            );
            if cut == Boundary::Comma {
                assert!(s.text.ends_with(','), "{:?}", s.text);
            }
        }
        assert_eq!(segs.last().unwrap().boundary, Boundary::End);
    }
}

#[test]
fn a_clause_mark_can_end_a_segment() {
    // A first clause of 61–80 tokens closed by a semicolon, then a sentence that does not fit
    // beside it: upstream flushes at the semicolon.
    let words = "the keeper watched the lamp turn above the dark water every night of the year";
    let first = format!("{}; ", [words; 4].join(" while "));
    let n = qwen2().count(first.trim_end());
    assert!((61..=80).contains(&n), "first clause has {n} tokens");
    let second = "then the relief boat came in at six in the morning, bringing bread, letters, \
        oil for the lamp and news of the town across the bay.";
    let m2 = qwen2().count(second);
    assert!((21..=80).contains(&m2) && n + m2 > 80, "second sentence has {m2} tokens");
    let text = format!("{first}{second}");
    let m = parse(&text, Format::Plain, false);
    assert_eq!(boundaries(&m), [Boundary::Clause, Boundary::End]);
}

#[test]
fn structure_and_markup_reasons() {
    let src = "# One\n\nFirst line. [pause:1s] After the pause. [break] After the break.\n\n\
               A second paragraph.\n\n# Two\n\nThe last words.\n";
    let m = parse(src, Format::Markdown, true);
    let got: Vec<_> = m.segments().map(|s| (s.text.as_str(), s.boundary)).collect();
    assert_eq!(
        got,
        [
            ("One.", Boundary::Heading),
            ("First line.", Boundary::Pause),
            ("After the pause.", Boundary::Break),
            ("After the break.", Boundary::Paragraph),
            ("A second paragraph.", Boundary::Chapter),
            ("Two.", Boundary::Heading),
            ("The last words.", Boundary::End),
        ]
    );
}

#[test]
fn the_opening_sentence_stands_alone_for_a_fast_start() {
    let m = parse(STORY, Format::Plain, true);
    let first = m.segments().next().unwrap();
    assert_eq!(first.text, "The keeper climbed the stairs at dusk.");
    assert_eq!(first.boundary, Boundary::FirstSentence);
}

#[test]
fn a_segment_keeps_its_source_text() {
    let src = "In 1999 the **keeper** left.\n";
    let m = parse(src, Format::Markdown, false);
    let s = m.segments().next().unwrap();
    assert_eq!(s.source, "In 1999 the **keeper** left.");
    assert_eq!(s.text, "In nineteen ninety-nine the keeper left.");
    assert_eq!(&src[s.span.bytes.clone()], s.source);
}
