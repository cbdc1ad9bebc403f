//! X-SAMPA → IPA (John Wells' ASCII rendering of the IPA), so both alphabets SSML and PLS name
//! go through one converter. Covered: every X-SAMPA vowel and pulmonic consonant, the stress,
//! length and syllable marks, `=` (syllabic), `~` (nasal), `)` (tie), the diacritics `_h _j
//! _w _~ _0 _d _^ _= _}`, and the tone letters `_T _H _M _L _B`. `-` separates symbols and says
//! nothing. Anything else is an error naming it.

use super::IpaError;

/// X-SAMPA → IPA. Longer keys are tried first (`r\`` before `r\` before `r`).
const TABLE: &[(&str, &str)] = &[
    // Suprasegmentals and separators.
    ("\"", "ˈ"),
    ("%", "ˌ"),
    (":\\", "ˑ"),
    (":", "ː"),
    (".", "."),
    ("-", ""),
    (" ", " "),
    // Diacritics and tones.
    ("_h", "ʰ"),
    ("_j", "ʲ"),
    ("_w", "ʷ"),
    ("_~", "\u{303}"),
    ("~", "\u{303}"),
    ("_0", "\u{325}"),
    ("_d", "\u{32A}"),
    ("_^", "\u{32F}"),
    ("_=", "\u{329}"),
    ("=", "\u{329}"),
    ("_}", "\u{31A}"),
    (")", "\u{361}"),
    ("_T", "˥"),
    ("_H", "˦"),
    ("_M", "˧"),
    ("_L", "˨"),
    ("_B", "˩"),
    // Backslash and backtick symbols.
    ("r\\`", "ɻ"),
    ("r\\", "ɹ"),
    ("s\\", "ɕ"),
    ("z\\", "ʑ"),
    ("h\\", "ɦ"),
    ("j\\", "ʝ"),
    ("l\\", "ɺ"),
    ("x\\", "ɧ"),
    ("G\\", "ɢ"),
    ("N\\", "ɴ"),
    ("R\\", "ʀ"),
    ("p\\", "ɸ"),
    ("I\\", "ᵻ"),
    ("U\\", "ᵿ"),
    ("@\\", "ɘ"),
    ("?\\", "ʕ"),
    ("s`", "ʂ"),
    ("z`", "ʐ"),
    ("t`", "ʈ"),
    ("d`", "ɖ"),
    ("n`", "ɳ"),
    ("l`", "ɭ"),
    ("r`", "ɽ"),
    ("@`", "ɚ"),
    ("3`", "ɝ"),
    // Vowels.
    ("A", "ɑ"),
    ("{", "æ"),
    ("6", "ɐ"),
    ("Q", "ɒ"),
    ("E", "ɛ"),
    ("@", "ə"),
    ("3", "ɜ"),
    ("I", "ɪ"),
    ("O", "ɔ"),
    ("2", "ø"),
    ("9", "œ"),
    ("&", "ɶ"),
    ("U", "ʊ"),
    ("}", "ʉ"),
    ("V", "ʌ"),
    ("Y", "ʏ"),
    ("1", "ɨ"),
    ("7", "ɤ"),
    ("8", "ɵ"),
    ("M", "ɯ"),
    // Consonants.
    ("B", "β"),
    ("C", "ç"),
    ("D", "ð"),
    ("G", "ɣ"),
    ("H", "ɥ"),
    ("J", "ɲ"),
    ("K", "ɬ"),
    ("L", "ʎ"),
    ("N", "ŋ"),
    ("P", "ʋ"),
    ("R", "ʁ"),
    ("S", "ʃ"),
    ("T", "θ"),
    ("W", "ʍ"),
    ("X", "χ"),
    ("Z", "ʒ"),
    ("4", "ɾ"),
    ("5", "ɫ"),
    ("?", "ʔ"),
    ("g", "ɡ"),
];

/// X-SAMPA → IPA; lower-case letters other than `g` are the same in both.
pub fn xsampa_to_ipa(xsampa: &str) -> Result<String, IpaError> {
    let mut out = String::new();
    let mut rest = xsampa.trim();
    while let Some(c) = rest.chars().next() {
        let found = TABLE.iter().filter(|(k, _)| rest.starts_with(k)).max_by_key(|(k, _)| k.len());
        let n = match found {
            Some((k, ipa)) => {
                out.push_str(ipa);
                k.len()
            }
            None if c.is_ascii_lowercase() || c.is_whitespace() => {
                out.push(if c.is_whitespace() { ' ' } else { c });
                c.len_utf8()
            }
            None => {
                let symbol = rest.split_whitespace().next().unwrap_or(rest);
                let symbol: String = symbol.chars().take(3).collect();
                return Err(IpaError::XSampa(symbol));
            }
        };
        rest = &rest[n..];
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xsampa_becomes_ipa() {
        for (xs, ipa) in [
            ("t@\"meItoU", "təˈmeɪtoʊ"),
            ("\"wUst@`", "ˈwʊstɚ"),
            ("S@\"vO:n", "ʃəˈvɔːn"),
            ("\"b2n=", "ˈbøn\u{329}"),
            ("dZVdZ", "dʒʌdʒ"),
            ("t_hIN", "tʰɪŋ"),
            ("r\\Ed", "ɹɛd"),
            ("ts`_hUN_M_H", "tʂʰʊŋ˧˦"),
            ("s\\i-\"eI", "ɕiˈeɪ"),
        ] {
            assert_eq!(xsampa_to_ipa(xs).as_deref(), Ok(ipa), "{xs}");
        }
        assert_eq!(xsampa_to_ipa("ka$"), Err(IpaError::XSampa("$".into())));
        assert_eq!(xsampa_to_ipa("a_X"), Err(IpaError::XSampa("_X".into())));
    }
}
