//! IPA and X-SAMPA transcriptions → CosyVoice3's own units, so a pronunciation a book or a
//! narrator writes in the phonetic alphabet reaches the LM as phone ids (spec §5.3: the 84 CMU
//! phones and the 176 pinyin units are single special tokens).
//!
//! * **English** (no language, or a tag starting `en`): CMU phones with lexical stress
//!   (`english`): `/ŋwiən/` → `[N][W][IY1][AH0][N]`. `ˈ` gives the next vowel stress 1,
//!   `ˌ` stress 2, other vowels 0; a word with no stress mark stresses its first vowel.
//! * **Mandarin** (a tag starting `zh` or `cmn`): pinyin initials and toned finals
//!   (`mandarin`): `/ʈʂʰʊŋ³⁵ tɕʰiŋ⁵¹/` → `[ch][óng][q][ìng]`.
//! * **X-SAMPA** is first rewritten to IPA ([`xsampa_to_ipa`]).
//!
//! Any other language is refused, and so is any symbol the tables do not hold: the error names
//! it. Nothing is dropped silently, because a dropped phone is a mispronounced word nobody
//! notices until the audiobook is out.

mod english;
mod mandarin;
mod xsampa;

pub use xsampa::xsampa_to_ipa;

/// The phonetic alphabet a transcription is written in (SSML `alphabet`, PLS `alphabet`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alphabet {
    Ipa,
    XSampa,
}

impl Alphabet {
    /// The alphabet an SSML or PLS `alphabet` value names (`ipa`, `x-sampa`; any case).
    pub fn from_name(name: &str) -> Option<Self> {
        match name.trim().to_ascii_lowercase().as_str() {
            "ipa" => Some(Self::Ipa),
            "x-sampa" | "xsampa" => Some(Self::XSampa),
            _ => None,
        }
    }
}

/// Which CosyVoice3 units a language's transcriptions become.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PhoneSet {
    /// CMU phones with stress digits (English).
    Cmu,
    /// Pinyin initials and finals with tone marks (Mandarin).
    Pinyin,
}

impl PhoneSet {
    /// The phone set of a BCP 47 tag; no tag means English. Other languages have none.
    pub fn for_language(tag: Option<&str>) -> Result<Self, IpaError> {
        let Some(tag) = tag.map(str::trim).filter(|t| !t.is_empty()) else {
            return Ok(Self::Cmu);
        };
        let lower = tag.to_ascii_lowercase();
        let primary = lower.split(['-', '_']).next().unwrap_or("");
        match primary {
            "en" => Ok(Self::Cmu),
            // Cantonese is written `zh-yue` in older tags; its tones are not Mandarin's.
            "zh" if !lower.starts_with("zh-yue") => Ok(Self::Pinyin),
            "cmn" => Ok(Self::Pinyin),
            _ => Err(IpaError::Language(tag.to_string())),
        }
    }
}

/// Why a transcription could not be converted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IpaError {
    #[error("`{symbol}` (U+{code:04X}) has no {set} equivalent", code = u32::from(*.symbol))]
    Symbol { symbol: char, set: &'static str },
    #[error("X-SAMPA `{0}` is not a symbol this converter knows")]
    XSampa(String),
    #[error(
        "no CosyVoice3 phone set for language `{0}` (English IPA becomes CMU phones, Mandarin \
         IPA pinyin units)"
    )]
    Language(String),
    #[error("Mandarin syllable `{syllable}`: {reason}")]
    Syllable { syllable: String, reason: String },
    #[error("the transcription is empty")]
    Empty,
}

/// Converts a transcription in `alphabet` for a text in `language` (BCP 47; `None`: English)
/// to CosyVoice3 units: English words as CMU phones separated by spaces, Mandarin syllables
/// as pinyin units run together. Enclosing `/…/` or `[…]` are accepted and removed.
pub fn to_units(
    transcription: &str,
    alphabet: Alphabet,
    language: Option<&str>,
) -> Result<String, IpaError> {
    let set = PhoneSet::for_language(language)?;
    let body = unwrap_delimiters(transcription.trim());
    let ipa = match alphabet {
        Alphabet::Ipa => body.to_string(),
        Alphabet::XSampa => xsampa_to_ipa(body)?,
    };
    let units = match set {
        PhoneSet::Cmu => english::to_cmu(&ipa)?,
        PhoneSet::Pinyin => mandarin::to_pinyin(&ipa)?,
    };
    if units.is_empty() { Err(IpaError::Empty) } else { Ok(units) }
}

/// `/…/` or `[…]` around a transcription (phonemic or phonetic brackets) are not part of it.
fn unwrap_delimiters(s: &str) -> &str {
    for (open, close) in [('/', '/'), ('[', ']')] {
        if let Some(inner) = s.strip_prefix(open).and_then(|r| r.strip_suffix(close)) {
            return inner.trim();
        }
    }
    s
}

/// Marks that change nothing CosyVoice3's units can show: length (`ː`, `ˑ`), tie bars, the
/// non-syllabic arch, aspiration, dental, voiceless and unreleased marks, the linking `‿`.
const IGNORED: &[char] = &[
    'ː', 'ˑ', '\u{361}', '\u{35C}', '\u{32F}', 'ʰ', '\u{32A}', '\u{325}', '\u{30A}', '\u{31A}',
    '‿', 'ʼ',
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn languages_pick_the_phone_set() {
        assert_eq!(PhoneSet::for_language(None), Ok(PhoneSet::Cmu));
        assert_eq!(PhoneSet::for_language(Some("en-GB")), Ok(PhoneSet::Cmu));
        assert_eq!(PhoneSet::for_language(Some("zh-Hans-CN")), Ok(PhoneSet::Pinyin));
        assert_eq!(PhoneSet::for_language(Some("cmn")), Ok(PhoneSet::Pinyin));
        assert!(PhoneSet::for_language(Some("fr")).is_err());
        assert!(PhoneSet::for_language(Some("zh-yue")).is_err());
        assert_eq!(Alphabet::from_name("X-SAMPA"), Some(Alphabet::XSampa));
        assert_eq!(Alphabet::from_name("x-microsoft-sapi"), None);
    }

    #[test]
    fn delimiters_and_alphabets() {
        let en = |s, a| to_units(s, a, Some("en-US"));
        assert_eq!(en("/ŋwiən/", Alphabet::Ipa).unwrap(), "[N][W][IY1][AH0][N]");
        assert_eq!(en("[ŋwiən]", Alphabet::Ipa).unwrap(), "[N][W][IY1][AH0][N]");
        assert_eq!(en("t@\"meItoU", Alphabet::XSampa).unwrap(), "[T][AH0][M][EY1][T][OW0]");
        assert_eq!(en("  ", Alphabet::Ipa), Err(IpaError::Empty));
        let e = to_units("bɔ̃", Alphabet::Ipa, Some("fr")).unwrap_err();
        assert!(e.to_string().contains("`fr`"), "{e}");
        let zh = to_units("ʈʂʊŋ˥ kwo˧˥", Alphabet::Ipa, Some("zh")).unwrap();
        assert_eq!(zh, "[zh][ōng][g][uó]");
    }
}
