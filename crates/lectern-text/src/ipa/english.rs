//! English IPA → CMU phones with stress digits, the way the CMU Pronouncing Dictionary (and so
//! CosyVoice3's training text) writes them.
//!
//! The table covers General American and RP transcriptions as dictionaries and Wiktionary
//! write them: vowels and diphthongs (`eɪ` EY, `aɪ` AY, `ɔɪ` OY, `aʊ` AW, `oʊ`/`əʊ` OW; RP
//! centring `ɛə`/`eə` EH and `ʊə` UH), r-coloured vowels (`ɚ`, `ɝ`, `ɜ`, and `ər`/`ɜr` before
//! no vowel mark, ER), consonants and affricates (`tʃ` CH, `dʒ` JH). Approximations, where
//! English has no such phone: `ɒ` AA (GA merges it), `ɾ` and `ʔ` T, `x` K (`loch`), `ç` HH,
//! `ʁ` R, `ɲ` N Y, `ʎ` L Y, `y` Y (as American lexicons write /j/), a nasal vowel is the vowel
//! then N, a syllabic consonant (`n̩`) is AH0 before it. `ŋ` starting a word is N (English never
//! starts a word with NG, so the model never heard one). Length marks, tie bars, syllable dots
//! and aspiration are ignored; whitespace, `-`, `|` and `‖` separate words.

use super::{IGNORED, IpaError};

/// A CMU phone of the table: a vowel takes a stress digit, a consonant none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phone {
    V(&'static str),
    C(&'static str),
}

use Phone::{C, V};

/// IPA → CMU. Longer keys are tried first, so `tʃ` wins over `t`.
const TABLE: &[(&str, &[Phone])] = &[
    // Diphthongs and centring vowels.
    ("eɪ", &[V("EY")]),
    ("ɛɪ", &[V("EY")]),
    ("aɪ", &[V("AY")]),
    ("ɑɪ", &[V("AY")]),
    ("äɪ", &[V("AY")]),
    ("ʌɪ", &[V("AY")]),
    ("ɔɪ", &[V("OY")]),
    ("oɪ", &[V("OY")]),
    ("aʊ", &[V("AW")]),
    ("ɑʊ", &[V("AW")]),
    ("äʊ", &[V("AW")]),
    ("æʊ", &[V("AW")]),
    ("oʊ", &[V("OW")]),
    ("əʊ", &[V("OW")]),
    ("ɛə", &[V("EH")]),
    ("eə", &[V("EH")]),
    ("ʊə", &[V("UH")]),
    // R-coloured vowels; the `r` after a schwa or `ɜ` is part of the vowel.
    ("ər", &[V("ER")]),
    ("əɹ", &[V("ER")]),
    ("ɜr", &[V("ER")]),
    ("ɜɹ", &[V("ER")]),
    ("ɝr", &[V("ER")]),
    ("ɝɹ", &[V("ER")]),
    ("ɚr", &[V("ER")]),
    ("ɚɹ", &[V("ER")]),
    ("ɚ", &[V("ER")]),
    ("ɝ", &[V("ER")]),
    ("ɜ", &[V("ER")]),
    // Monophthongs.
    ("i", &[V("IY")]),
    ("ɪ", &[V("IH")]),
    ("ɨ", &[V("IH")]),
    ("ᵻ", &[V("IH")]),
    ("e", &[V("EH")]),
    ("ɛ", &[V("EH")]),
    ("æ", &[V("AE")]),
    ("a", &[V("AA")]),
    ("ä", &[V("AA")]),
    ("ɑ", &[V("AA")]),
    ("ɒ", &[V("AA")]),
    ("ɔ", &[V("AO")]),
    ("o", &[V("OW")]),
    ("ʊ", &[V("UH")]),
    ("u", &[V("UW")]),
    ("ʉ", &[V("UW")]),
    ("ʌ", &[V("AH")]),
    ("ə", &[V("AH")]),
    ("ɐ", &[V("AH")]),
    // Affricates.
    ("tʃ", &[C("CH")]),
    ("ʧ", &[C("CH")]),
    ("dʒ", &[C("JH")]),
    ("ʤ", &[C("JH")]),
    ("ʦ", &[C("T"), C("S")]),
    ("ʣ", &[C("D"), C("Z")]),
    // Consonants.
    ("p", &[C("P")]),
    ("b", &[C("B")]),
    ("t", &[C("T")]),
    ("d", &[C("D")]),
    ("k", &[C("K")]),
    ("ɡ", &[C("G")]),
    ("g", &[C("G")]),
    ("f", &[C("F")]),
    ("v", &[C("V")]),
    ("θ", &[C("TH")]),
    ("ð", &[C("DH")]),
    ("s", &[C("S")]),
    ("z", &[C("Z")]),
    ("ʃ", &[C("SH")]),
    ("ʒ", &[C("ZH")]),
    ("h", &[C("HH")]),
    ("ɦ", &[C("HH")]),
    ("ç", &[C("HH")]),
    ("x", &[C("K")]),
    ("m", &[C("M")]),
    ("n", &[C("N")]),
    ("ŋ", &[C("NG")]),
    ("ɲ", &[C("N"), C("Y")]),
    ("l", &[C("L")]),
    ("ɫ", &[C("L")]),
    ("ʎ", &[C("L"), C("Y")]),
    ("r", &[C("R")]),
    ("ɹ", &[C("R")]),
    ("ɻ", &[C("R")]),
    ("ʁ", &[C("R")]),
    ("ʀ", &[C("R")]),
    ("ɾ", &[C("T")]),
    ("ʔ", &[C("T")]),
    ("w", &[C("W")]),
    ("ʍ", &[C("W")]),
    ("j", &[C("Y")]),
    ("y", &[C("Y")]),
];

const PRIMARY: &[char] = &['ˈ', '\''];
const SECONDARY: char = 'ˌ';
const SYLLABIC: &[char] = &['\u{329}', '\u{30D}'];
const NASAL: char = '\u{303}';
const RHOTIC_HOOK: char = '˞';
const WORD_BREAKS: &[char] = &['-', '|', '‖'];

/// One phone as written out: its CMU name and, for a vowel, its stress (None: not marked).
struct Out {
    name: &'static str,
    vowel: bool,
    stress: Option<u8>,
}

/// English IPA → CMU phone tokens, words separated by a space.
pub(super) fn to_cmu(ipa: &str) -> Result<String, IpaError> {
    let words: Vec<String> = ipa
        .split(|c: char| c.is_whitespace() || WORD_BREAKS.contains(&c))
        .filter(|w| !w.is_empty())
        .map(word)
        .collect::<Result<_, _>>()?;
    Ok(words.into_iter().filter(|w| !w.is_empty()).collect::<Vec<_>>().join(" "))
}

/// One word's phones, stress resolved.
fn word(w: &str) -> Result<String, IpaError> {
    let w: String = w.chars().filter(|c| !IGNORED.contains(c)).collect();
    let mut out: Vec<Out> = Vec::new();
    let mut pending: Option<u8> = None;
    let mut marked = false;
    let mut rest = w.as_str();
    while let Some(c) = rest.chars().next() {
        let n = if PRIMARY.contains(&c) || c == SECONDARY {
            pending = Some(if c == SECONDARY { 2 } else { 1 });
            marked = true;
            c.len_utf8()
        } else if c == '.' {
            c.len_utf8()
        } else if let Some(n) = modifier(c, &mut out, &mut pending) {
            n
        } else {
            let (key, phones) = longest_match(rest)
                .ok_or(IpaError::Symbol { symbol: c, set: "English CMU phone" })?;
            for p in phones {
                out.push(match *p {
                    V(name) => Out { name, vowel: true, stress: pending.take() },
                    C(name) => Out { name, vowel: false, stress: None },
                });
            }
            key.len()
        };
        rest = &rest[n..];
    }
    Ok(render(out, marked))
}

/// A diacritic acting on the phone before it; its byte length when `c` is one.
fn modifier(c: char, out: &mut Vec<Out>, pending: &mut Option<u8>) -> Option<usize> {
    let last_vowel = out.last().is_some_and(|o| o.vowel);
    if SYLLABIC.contains(&c) && !last_vowel {
        // `n̩` is a syllable of its own: AH0 N, as CMU writes "button" B AH1 T AH0 N; `ɹ̩` is ER.
        let stress = pending.take();
        match out.pop() {
            Some(Out { name: "R", .. }) => out.push(Out { name: "ER", vowel: true, stress }),
            Some(consonant) => {
                out.push(Out { name: "AH", vowel: true, stress });
                out.push(consonant);
            }
            None => {}
        }
        return Some(c.len_utf8());
    }
    if c == NASAL && last_vowel {
        out.push(Out { name: "N", vowel: false, stress: None });
        return Some(c.len_utf8());
    }
    if c == RHOTIC_HOOK && last_vowel {
        let last = out.last_mut().expect("a vowel");
        if last.name == "AH" || last.name == "ER" {
            last.name = "ER";
        } else {
            out.push(Out { name: "R", vowel: false, stress: None });
        }
        return Some(c.len_utf8());
    }
    None
}

/// The longest table key `s` starts with, and its phones.
fn longest_match(s: &str) -> Option<(&'static str, &'static [Phone])> {
    TABLE.iter().filter(|(k, _)| s.starts_with(k)).max_by_key(|(k, _)| k.len()).copied()
}

/// The word's tokens: unmarked vowels are 0, or, in a word with no stress mark at all, the
/// first vowel is 1 (a word has a main stress; dictionaries leave it out of one-syllable words).
fn render(mut out: Vec<Out>, marked: bool) -> String {
    if !marked {
        if let Some(first) = out.iter_mut().find(|o| o.vowel) {
            first.stress = Some(1);
        }
    }
    if let Some(first) = out.first_mut().filter(|o| o.name == "NG") {
        first.name = "N";
    }
    out.iter()
        .map(|o| match (o.vowel, o.stress) {
            (true, s) => format!("[{}{}]", o.name, s.unwrap_or(0)),
            (false, _) => format!("[{}]", o.name),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokenizer::is_special_token_at;

    /// Real words, as dictionaries and lexicons transcribe them.
    const WORDS: &[(&str, &str, &str)] = &[
        ("Nguyen", "ŋwiən", "[N][W][IY1][AH0][N]"),
        ("Worcester", "ˈwʊstər", "[W][UH1][S][T][ER0]"),
        ("Worcester (RP)", "ˈwʊstə", "[W][UH1][S][T][AH0]"),
        ("Siobhan", "ʃɪˈvɔːn", "[SH][IH0][V][AO1][N]"),
        ("Häagen", "ˈhɑːɡən", "[HH][AA1][G][AH0][N]"),
        ("tomato (en-US)", "təˈmeɪtoʊ", "[T][AH0][M][EY1][T][OW0]"),
        ("tomato (en-GB)", "təˈmɑːtəʊ", "[T][AH0][M][AA1][T][OW0]"),
        ("Mobile", "ˈmoʊbil", "[M][OW1][B][IY0][L]"),
        ("Coosa", "kusə", "[K][UW1][S][AH0]"),
        ("Jefferson", "ˈdʒɛfərsən", "[JH][EH1][F][ER0][S][AH0][N]"),
        ("Habersham", "ˌhæbˈɜrˌʃæm", "[HH][AE2][B][ER1][SH][AE2][M]"),
        ("Apalachicola", "ˌæpəˌlætʃəˈkoʊlə", "[AE2][P][AH0][L][AE2][CH][AH0][K][OW1][L][AH0]"),
        (
            "Congregationalists",
            "ˌkɒŋgrɪˈgeɪʃənlˌɪsts",
            "[K][AA2][NG][G][R][IH0][G][EY1][SH][AH0][N][L][IH2][S][T][S]",
        ),
        ("calcareous", "kælˈkɛəriəs", "[K][AE0][L][K][EH1][R][IY0][AH0][S]"),
        ("choice", "t͡ʃɔɪs", "[CH][OY1][S]"),
        ("house", "haʊs", "[HH][AW1][S]"),
        ("thither", "ˈðɪðɚ", "[DH][IH1][DH][ER0]"),
        ("measure", "ˈmɛʒɚ", "[M][EH1][ZH][ER0]"),
        ("thing", "θɪŋ", "[TH][IH1][NG]"),
        ("church", "tʃɝːtʃ", "[CH][ER1][CH]"),
        ("button", "ˈbʌtn̩", "[B][AH1][T][AH0][N]"),
        ("bottle (glottal)", "ˈbɒʔl̩", "[B][AA1][T][AH0][L]"),
        ("volume", "ˈvɒlyum", "[V][AA1][L][Y][UW0][M]"),
        ("butter (flap)", "ˈbʌɾɚ", "[B][AH1][T][ER0]"),
        ("Bach", "bɑx", "[B][AA1][K]"),
        ("croissant", "kɹəˈsɑ̃", "[K][R][AH0][S][AA1][N]"),
        ("syllable dots", "ˈæ.pəl", "[AE1][P][AH0][L]"),
        ("thirty degrees", "ˈθɜrti dɪˈgriz", "[TH][ER1][T][IY0] [D][IH0][G][R][IY1][Z]"),
        ("two and two thirds", "tu ænd tu θɜrdz", "[T][UW1] [AE1][N][D] [T][UW1] [TH][ER1][D][Z]"),
        ("Häagen-Dazs", "ˈhɑːɡən-dɑːz", "[HH][AA1][G][AH0][N] [D][AA1][Z]"),
    ];

    #[test]
    fn real_words_become_cmu_phones() {
        for (word, ipa, cmu) in WORDS {
            assert_eq!(to_cmu(ipa).as_deref(), Ok(*cmu), "{word} /{ipa}/");
        }
    }

    #[test]
    fn every_phone_is_a_cosyvoice3_unit() {
        for (_, phones) in TABLE {
            for p in *phones {
                let t = match p {
                    V(n) => format!("[{n}1]"),
                    C(n) => format!("[{n}]"),
                };
                assert_eq!(is_special_token_at(&t), Some(t.len()), "{t}");
            }
        }
    }

    #[test]
    fn unknown_symbols_are_named() {
        for (ipa, bad) in [("ʘa", 'ʘ'), ("bɯ", 'ɯ'), ("kat3", '3'), ("BAT", 'B')] {
            match to_cmu(ipa) {
                Err(IpaError::Symbol { symbol, .. }) => assert_eq!(symbol, bad, "{ipa}"),
                other => panic!("{ipa}: {other:?}"),
            }
        }
        let e = to_cmu("ʘ").unwrap_err().to_string();
        assert!(e.contains("`ʘ` (U+0298)"), "{e}");
    }
}
