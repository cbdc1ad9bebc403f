//! A book's own pronunciations reach the LM as phone ids: its PLS lexicon (listed in the
//! manifest) and its `ssml:ph` attributes become CosyVoice3 unit tokens in the segment text,
//! the project's `pronunciations.txt` wins over the lexicon, and what cannot be converted is a
//! warning on the book, never a silent drop.

use std::path::Path;

use lectern_test_support::epub::write_epub;
use lectern_text::{Manuscript, ParseOptions, Pronunciations, ReadPolicy, Tokenizer, epub};

/// Ids of the first CMU phone (`[AA]`) and the first pinyin unit (`[a]`), spec §5.3.
const FIRST_PHONE_ID: u32 = 151_664;
const FIRST_PINYIN_ID: u32 = 151_748;
const LAST_PINYIN_ID: u32 = 151_923;

const OPF: &str = r#"<package xmlns="http://www.idpf.org/2007/opf" version="3.0">
  <metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:language>en</dc:language></metadata>
  <manifest>
    <item id="a" href="text/a.xhtml" media-type="application/xhtml+xml"/>
    <item id="pls" href="lexicon/en.pls" media-type="application/pls+xml"/>
    <item id="pls-zh" href="lexicon/zh.pls" media-type="application/pls+xml"/>
  </manifest>
  <spine><itemref idref="a"/></spine></package>"#;

const LEXICON_EN: &str = r#"<?xml version="1.0" encoding="utf-8"?>
<lexicon version="1.0" alphabet="ipa" xml:lang="en"
    xmlns="http://www.w3.org/2005/01/pronunciation-lexicon">
  <lexeme><grapheme>Nguyen</grapheme><phoneme>ŋwiən</phoneme></lexeme>
  <lexeme><grapheme>Siobhan</grapheme><phoneme alphabet="x-sampa">S@"vO:n</phoneme></lexeme>
  <lexeme><grapheme>Worcester</grapheme><phoneme>ˈwʊstər</phoneme></lexeme>
  <lexeme><grapheme>WHO</grapheme><alias>World Health Organization</alias></lexeme>
  <lexeme><grapheme>Ngaio</grapheme><phoneme>ˈnaɪʘ</phoneme></lexeme>
</lexicon>"#;

const LEXICON_ZH: &str = r#"<lexicon version="1.0" alphabet="ipa" xml:lang="zh-CN"
    xmlns="http://www.w3.org/2005/01/pronunciation-lexicon">
  <lexeme><grapheme>重庆</grapheme><phoneme>ʈʂʰʊŋ³⁵ tɕʰiŋ⁵¹</phoneme></lexeme>
</lexicon>"#;

const BODY: &str = r#"<p>Nguyen met Siobhan in Worcester for the WHO.</p>
<p>The ship sailed 30° <span ssml:ph="nɔrθ">N.</span> It reached <span ssml:ph="ˈmoʊbil">Mobile</span> Bay.</p>
<p ssml:alphabet="x-sampa">Then <span ssml:ph='"tEn@si'>Tenn.</span> and Ngaio.</p>
<p>Bad: <span ssml:ph="ʘa">Xq</span>.</p>
<p xml:lang="zh">他去了<span ssml:ph="ʈʂʰʊŋ³⁵ tɕʰiŋ⁵¹">重庆</span>。</p>"#;

fn book_file(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("book.epub");
    let a = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<html xmlns="http://www.w3.org/1999/xhtml" xmlns:ssml="http://www.w3.org/2001/10/synthesis"
      ssml:alphabet="ipa" xml:lang="en"><head><title>T</title></head><body>{BODY}</body></html>"#
    );
    write_epub(
        &path,
        "p.opf",
        &[
            ("p.opf", OPF.as_bytes()),
            ("text/a.xhtml", a.as_bytes()),
            ("lexicon/en.pls", LEXICON_EN.as_bytes()),
            ("lexicon/zh.pls", LEXICON_ZH.as_bytes()),
        ],
    );
    path
}

fn tokenizer() -> Tokenizer {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/qwen2-tokenizer");
    Tokenizer::from_model_dir(&dir).unwrap()
}

fn segments(path: &Path, prons: Pronunciations, tok: &Tokenizer) -> (Vec<String>, Vec<String>) {
    let doc = epub::read(path, &ReadPolicy::default()).unwrap();
    let opts = ParseOptions::default()
        .with_tokenizer(tok)
        .with_lead_sentence(false)
        .with_pronunciations(prons);
    let book = Manuscript::from_document(&doc, path, &opts).unwrap();
    let texts = book.segments().map(|s| s.text.clone()).collect();
    (texts, book.info.lexicon_warnings.clone())
}

#[test]
fn lexicon_and_ssml_phonemes_reach_the_lm_as_phone_ids() {
    let tmp = tempfile::tempdir().unwrap();
    let path = book_file(tmp.path());
    let tok = tokenizer();
    let (texts, warnings) = segments(&path, Pronunciations::default(), &tok);
    let all = texts.join("\n");
    for expected in [
        "[N][W][IY1][AH0][N] met [SH][AH0][V][AO1][N] in [W][UH1][S][T][ER0] for the World \
         Health Organization.",
        "[N][AO1][R][TH]. It reached [M][OW1][B][IY0][L] Bay.",
        "Then [T][EH1][N][AH0][S][IY0] and Ngaio.",
        "Bad: Xq.",
        "[ch][óng][q][ìng]",
    ] {
        assert!(all.contains(expected), "{expected:?} not in:\n{all}");
    }
    let ids: Vec<u32> = texts.iter().flat_map(|t| tok.encode(t).unwrap()).collect();
    let phone = |t: &str| tok.encode(t).unwrap()[0];
    assert!(phone("[AA]") == FIRST_PHONE_ID && phone("[a]") == FIRST_PINYIN_ID);
    for unit in ["[N]", "[W]", "[IY1]", "[AH0]", "[SH]", "[AO1]", "[TH]", "[ch]", "[óng]", "[ìng]"]
    {
        let id = phone(unit);
        assert!((FIRST_PHONE_ID..=LAST_PINYIN_ID).contains(&id), "{unit}: {id}");
        assert!(ids.contains(&id), "{unit} ({id}) not among the book's ids");
    }
    // Nguyen is five ids, one per phone, not BPE pieces of "[N][W]…".
    let nguyen = tok.encode("[N][W][IY1][AH0][N]").unwrap();
    assert_eq!(nguyen.len(), 5);
    assert!(nguyen.iter().all(|id| (FIRST_PHONE_ID..FIRST_PINYIN_ID).contains(id)));
    assert_eq!(warnings.len(), 2, "{warnings:#?}");
    assert!(warnings[0].starts_with("lexicon/en.pls: `Ngaio` not applied"), "{warnings:#?}");
    assert!(warnings[0].contains("`ʘ`"), "{warnings:#?}");
    assert!(warnings[1].starts_with("text/a.xhtml: ssml:ph=\"ʘa\""), "{warnings:#?}");
}

#[test]
fn the_projects_pronunciations_win_over_the_books() {
    let tmp = tempfile::tempdir().unwrap();
    let path = book_file(tmp.path());
    let prons = Pronunciations::parse("nguyen = Win\n", "pronunciations.txt".as_ref()).unwrap();
    let (texts, _) = segments(&path, prons, &tokenizer());
    assert!(texts[0].starts_with("Win met [SH][AH0][V][AO1][N]"), "{texts:#?}");
}

/// The accessibility sample's lexicon: every lexeme converts but `℔` (a symbol, which no
/// pronunciation key can start with), and that one is said, not dropped.
#[test]
fn the_georgia_lexicon_converts_and_names_what_it_cannot_use() {
    use lectern_test_support::epub::{corpus_book, pack_tree};
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("georgia.epub");
    pack_tree(&corpus_book("georgia-pls-ssml"), &path);
    let doc = epub::read(&path, &ReadPolicy::default()).unwrap();
    let warnings = &doc.info.lexicon_warnings;
    assert_eq!(warnings.len(), 1, "{warnings:#?}");
    assert!(warnings[0].starts_with("EPUB/lexicon/en.pls: `℔` not applied"), "{warnings:#?}");
    let lexicon = &doc.info.lexicon;
    assert_eq!(lexicon.entries().count(), 70);
    assert_eq!(
        lexicon.lookup_at("Chattahoochee", true),
        Some((13, "[CH][AE2][T][AH0][HH][UW1][CH][IY0]"))
    );
}
