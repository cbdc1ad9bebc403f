//! Table-driven normalisation tests (English and Chinese TN, special tokens untouched).

use lectern_text::normalize::normalize_str;
use lectern_text::{Frontend, Manuscript, ParseOptions};

const CASES: &[(&str, &str)] = &[
    // English cardinals
    ("1", "one"),
    ("7 cats", "seven cats"),
    ("13", "thirteen"),
    ("42", "forty-two"),
    ("100", "one hundred"),
    ("112", "one hundred and twelve"),
    ("1,234", "one thousand two hundred and thirty-four"),
    ("1,000,000", "one million"),
    ("2,500 people", "two thousand five hundred people"),
    ("1005 days", "one thousand and five days"),
    ("10000", "ten thousand"),
    ("0", "zero"),
    ("007", "zero zero seven"),
    ("Room 101", "Room one hundred and one"),
    ("abc123", "abc123"),
    // ordinals
    ("1st", "first"),
    ("2nd", "second"),
    ("3rd", "third"),
    ("4th", "fourth"),
    ("12th", "twelfth"),
    ("21st", "twenty-first"),
    ("100th", "one hundredth"),
    ("the 33rd floor", "the thirty-third floor"),
    // years and decades
    ("1984", "nineteen eighty-four"),
    ("1900", "nineteen hundred"),
    ("1905", "nineteen oh five"),
    ("2005", "two thousand and five"),
    ("in 2024.", "in twenty twenty-four."),
    ("the 1980s", "the nineteen eighties"),
    // decimals
    ("3.14", "three point one four"),
    ("0.5", "zero point five"),
    // currency
    ("$5", "five dollars"),
    ("$1", "one dollar"),
    ("$3.50", "three dollars and fifty cents"),
    ("$0.99", "ninety-nine cents"),
    ("$5 million", "five million dollars"),
    ("£20", "twenty pounds"),
    ("€1.5 billion", "one point five billion euros"),
    // percentages
    ("50%", "fifty percent"),
    ("3.5%", "three point five percent"),
    // times
    ("7:30", "seven thirty"),
    ("7:05", "seven oh five"),
    ("7:00", "seven o'clock"),
    ("7:30 pm", "seven thirty PM"),
    ("10:00am", "ten AM"),
    // abbreviations
    ("Mr. Smith", "Mister Smith"),
    ("Mrs. Smith", "Missus Smith"),
    ("Dr. Lee", "Doctor Lee"),
    ("St. Paul", "Saint Paul"),
    ("Baker St.", "Baker Street."),
    ("e.g. apples", "for example apples"),
    ("i.e. none", "that is none"),
    ("apples, pears, etc.", "apples, pears, et cetera."),
    ("Tom vs. Jerry", "Tom versus Jerry"),
    ("No. 5", "number five"),
    // signs, fractions, ranges, symbols
    ("-5 degrees", "minus five degrees"),
    ("3/4 cup", "three quarters cup"),
    ("1/2", "one half"),
    ("pages 10–12", "pages ten to twelve"),
    ("Tom & Jerry", "Tom and Jerry"),
    // whitespace
    ("line one\nline two", "line one line two"),
    ("a   b", "a b"),
    // CosyVoice3 special tokens pass untouched
    ("[breath] 5 apples", "[breath] five apples"),
    ("<strong>2</strong> dogs", "<strong>two</strong> dogs"),
    ("<|endofprompt|>3", "<|endofprompt|>three"),
    ("[AA1] [iàng] [laughter]", "[AA1] [iàng] [laughter]"),
    ("<laughter>ha</laughter>", "<laughter>ha</laughter>"),
    // Chinese numerals and clean-ups
    ("我有3本书", "我有三本书"),
    ("一共123元", "一共一百二十三元"),
    ("10个", "十个"),
    ("2024年", "二零二四年"),
    ("1005人", "一千零五人"),
    ("20300人", "二万零三百人"),
    ("有100000000个", "有一亿个"),
    ("3.5公斤", "三点五公斤"),
    ("50%的人", "百分之五十的人"),
    ("10:30开会", "十点三十分开会"),
    ("价格$5", "价格五美元"),
    ("你好 世界", "你好世界"),
    ("你好 hello world", "你好hello world"),
    ("面积5m²", "面积五m平方"),
    ("（括号）【注】", "括号注"),
    ("好的，，", "好的。"),
    ("他说——好", "他说 好"),
    ("A - B中", "A，B中"),
    ("好.坏", "好。坏"),
    ("第一行\n第二行", "第一行第二行"),
    ("[breath]我有2个", "[breath]我有二个"),
    ("温度是-5度", "温度是负五度"),
];

#[test]
fn normalisation_table() {
    assert!(CASES.len() >= 60);
    let mut failures = Vec::new();
    for (input, want) in CASES {
        let got = normalize_str(input);
        if got != *want {
            failures.push(format!("{input:?}: got {got:?}, want {want:?}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        CASES.len(),
        failures.join("\n")
    );
}

#[test]
fn overrides_apply_before_normalisation() {
    use lectern_text::{Lang, Pronunciations, normalize::normalize};
    let p = Pronunciations::parse("Nguyen = Win\nSQL = sequel\n", "p.txt".as_ref()).unwrap();
    let out = normalize("Nguyen ran 3 SQL queries", Lang::En, &p);
    assert_eq!(out.text, "Win ran three sequel queries");
}

/// Exact normalised text of one paragraph under each frontend.
fn normalised(text: &str, frontend: Frontend) -> String {
    let opts = ParseOptions::default().with_frontend(frontend).with_lead_sentence(false);
    let book = Manuscript::parse(text, &opts).unwrap();
    book.segments().map(|s| s.text.as_str()).collect::<Vec<_>>().join(" | ")
}

#[test]
fn mixed_paragraphs_are_normalised_per_run() {
    let para = "她说：« À demain, Paul. » I bought 4 pens in 1999 for $3.50 and 2024年有3个。";
    assert_eq!(
        normalised(para, Frontend::Lectern),
        "她说：« À demain, Paul. » I bought four pens in nineteen ninety-nine for three dollars \
         and fifty cents and 二零二四年有三个。"
    );
    // Upstream's rule reads the whole paragraph as Chinese.
    let upstream = normalised(para, Frontend::Upstream);
    assert!(upstream.contains("«Àdemain"), "{upstream}");
    assert!(upstream.contains("四 pens") || upstream.contains("四pens"), "{upstream}");
    assert_eq!(normalised("Pens (4) and 笔", Frontend::Lectern), "Pens (four) and 笔。");
}

#[test]
fn symbols_and_units_are_read_in_the_runs_language_and_emoji_dropped() {
    let en = |t| normalised(t, Frontend::Lectern);
    assert_eq!(en("It was ±3°C outside."), "It was plus or minus three degrees Celsius outside.");
    assert_eq!(en("Set 2 × 3 → 6, about 50%."), "Set two times three to six, about fifty percent.");
    assert_eq!(en("It costs 5 € here."), "It costs five euros here.");
    assert_eq!(en("Great day 🎉👍🏽 indeed."), "Great day indeed.");
    assert_eq!(
        en("Boiling: 212°F or 100 ℃."),
        "Boiling: two hundred and twelve degrees Fahrenheit or one hundred degrees Celsius."
    );
    assert_eq!(en("气温±3°C。"), "气温正负三摄氏度。");
}

/// A pronunciation file's error for one bad entry.
fn pron_error(src: &str) -> String {
    let e = lectern_text::Pronunciations::parse(src, "book/pronunciations.txt".as_ref());
    e.expect_err("a bad entry").to_string()
}

#[test]
fn pronunciations_give_phones_and_pinyin_units_as_special_token_ids() {
    use lectern_text::{Pronunciations, Tokenizer};
    let tok = Tokenizer::from_model_dir("../../fixtures/text".as_ref()).unwrap();
    let src = "# names\nNguyen = [N][W][IY1][N]\n重庆 = [ch][óng][q][ìng]\nSQL = sequel\n";
    let prons = Pronunciations::parse(src, "pronunciations.txt".as_ref()).unwrap();
    let opts = ParseOptions::default().with_pronunciations(prons).with_lead_sentence(false);
    let book = Manuscript::parse("Nguyen flew to 重庆 with 2 SQL books. 我在重庆住了3年。", &opts)
        .unwrap();
    let texts: Vec<_> = book.segments().map(|s| s.text.as_str()).collect();
    // One segment: sized per run, the Chinese sentence is shorter than upstream's merge length.
    assert_eq!(
        texts,
        [
            "[N][W][IY1][N] flew to [ch][óng][q][ìng] with two sequel books. 我在[ch][óng][q][ìng]住了三年。"
        ]
    );
    // Each unit is one id, the one upstream's tokenizer gives it: the special tokens are
    // numbered from 151646 in cosyvoice3_special_tokens.txt's order.
    let upstream = [
        ("[N]", 151_719),
        ("[W]", 151_744),
        ("[IY1]", 151_713),
        ("[ch]", 151_755),
        ("[óng]", 151_880),
        ("[q]", 151_806),
        ("[ìng]", 151_872),
    ];
    for (unit, id) in upstream {
        assert_eq!(tok.special_id(unit), Some(id), "{unit}");
    }
    let ids = tok.encode(&texts.concat()).unwrap();
    assert_eq!(ids[..4], [151_719, 151_744, 151_713, 151_719]);
    let chongqing = [151_755, 151_880, 151_806, 151_872];
    assert_eq!(ids.windows(4).filter(|w| *w == chongqing).count(), 2, "{ids:?}");
}

#[test]
fn a_bad_pronunciation_entry_names_the_file_and_line() {
    assert_eq!(
        pron_error("Nguyen = [N][W][IY7][N]\n"),
        "book/pronunciations.txt:1: bad pronunciation entry: `[IY7]` is not a CosyVoice3 unit: \
         write CMU phones as in [N][W][IY1][N] or pinyin as in [ch][óng][q][ìng] (the units are \
         listed in crates/lectern-text/src/cosyvoice3_special_tokens.txt)"
    );
    assert_eq!(
        pron_error("# ok\nA = b\n\n重庆 = [chong2]\n"),
        "book/pronunciations.txt:4: bad pronunciation entry: `[chong2]` is not a CosyVoice3 \
         unit: write CMU phones as in [N][W][IY1][N] or pinyin as in [ch][óng][q][ìng] (the \
         units are listed in crates/lectern-text/src/cosyvoice3_special_tokens.txt)"
    );
    assert_eq!(
        pron_error("X = [N] W]\n"),
        "book/pronunciations.txt:1: bad pronunciation entry: a `]` without its `[`"
    );
    assert_eq!(
        pron_error("-dash = minus\n"),
        "book/pronunciations.txt:1: bad pronunciation entry: `-dash` must start with a letter, \
         digit or ideograph"
    );
}
