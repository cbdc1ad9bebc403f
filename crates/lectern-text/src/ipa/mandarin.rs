//! Mandarin IPA → CosyVoice3 pinyin units: a syllable's initial (`[zh]`, `[q]`, `[y]`, `[w]`,
//! …) then its final with the tone mark (`[óng]`, `[ìng]`; no mark for the neutral tone), as
//! pypinyin splits them with `strict=False` (`yào` → `[y][ào]`, `jué` → `[j][ué]`).
//!
//! The subset read: Standard Mandarin as dictionaries and Wiktionary transcribe it (broad or
//! Sinological IPA). Initials `p pʰ m f t tʰ n l k kʰ x tɕ tɕʰ ɕ ʈʂ ʈʂʰ ʂ ʐ ts tsʰ s` (also `tʂ`,
//! `ɻ`, `h`, `χ`, `ʨ`, `ʦ`); finals with glides written `i u y` or `j w ɥ`, `ɑ`/`a`, `ɤ`/`ə`,
//! `ʊŋ`, the apical vowels `ɨ ɻ̩ ʐ̩ z̩ ɹ̩ ɿ ʅ`, `ɑɻ`/`ɚ` for er. Tones as Chao tone letters
//! (`˥`, `˧˥`, `˨˩˦`, `˥˩`) or numbers (`⁵⁵`/`55`, `³⁵`, `²¹⁴` or `²¹`, `⁵¹`); a sandhi `²¹⁴⁻³⁵`
//! reads the tone after the `⁻`; no tone, `⁰`, or a single tone letter or superscript digit is
//! the neutral tone; a single plain digit is refused (pinyin's `ma1` is not IPA). Syllables are
//! separated by spaces, `.`, or their tones. Refused: erhua suffixes, Cantonese and other
//! varieties, and a syllable whose toned final CosyVoice3 has no unit for (there is no `[ǖ]`).

use super::{IGNORED, IpaError};
use crate::tokenizer::is_special_token_at;

/// IPA initials → pinyin, longest first.
const INITIALS: &[(&str, &str)] = &[
    ("ʈʂʰ", "ch"),
    ("tʂʰ", "ch"),
    ("tɕʰ", "q"),
    ("tsʰ", "c"),
    ("ʈʂ", "zh"),
    ("tʂ", "zh"),
    ("tɕ", "j"),
    ("ʨʰ", "q"),
    ("ʦʰ", "c"),
    ("ts", "z"),
    ("pʰ", "p"),
    ("tʰ", "t"),
    ("kʰ", "k"),
    ("ʨ", "j"),
    ("ʦ", "z"),
    ("ʂ", "sh"),
    ("ʐ", "r"),
    ("ɻ", "r"),
    ("ɕ", "x"),
    ("s", "s"),
    ("p", "b"),
    ("t", "d"),
    ("k", "g"),
    ("m", "m"),
    ("f", "f"),
    ("n", "n"),
    ("l", "l"),
    ("x", "h"),
    ("χ", "h"),
    ("h", "h"),
];

/// The apical ("empty") vowel of zi, ci, si, zhi, chi, shi, ri: pinyin writes it `i`.
const APICAL: &str = "-i";

/// IPA finals (glides already written `i u y`) → pinyin finals (`ü` for the front rounded
/// vowel, [`APICAL`] for the apical one).
const FINALS: &[(&str, &str)] = &[
    ("a", "a"),
    ("ɑ", "a"),
    ("o", "o"),
    ("ɔ", "o"),
    ("ɤ", "e"),
    ("ə", "e"),
    ("aɪ", "ai"),
    ("ai", "ai"),
    ("eɪ", "ei"),
    ("ei", "ei"),
    ("ɑʊ", "ao"),
    ("aʊ", "ao"),
    ("ɑu", "ao"),
    ("au", "ao"),
    ("ɑo", "ao"),
    ("ao", "ao"),
    ("oʊ", "ou"),
    ("ou", "ou"),
    ("əʊ", "ou"),
    ("ɤʊ", "ou"),
    ("an", "an"),
    ("ən", "en"),
    ("en", "en"),
    ("ɑŋ", "ang"),
    ("aŋ", "ang"),
    ("ɤŋ", "eng"),
    ("əŋ", "eng"),
    ("ʊŋ", "ong"),
    ("uŋ", "ong"),
    ("oŋ", "ong"),
    ("ɑɻ", "er"),
    ("aɻ", "er"),
    ("əɻ", "er"),
    ("ɐɻ", "er"),
    ("ɤɻ", "er"),
    ("ɚ", "er"),
    ("i", "i"),
    ("ɨ", APICAL),
    ("ɻ̩", APICAL),
    ("ʐ̩", APICAL),
    ("z̩", APICAL),
    ("ɹ̩", APICAL),
    ("ɿ", APICAL),
    ("ʅ", APICAL),
    ("ia", "ia"),
    ("iɑ", "ia"),
    ("iɛ", "ie"),
    ("ie", "ie"),
    ("iɑʊ", "iao"),
    ("iaʊ", "iao"),
    ("iɑu", "iao"),
    ("iau", "iao"),
    ("iao", "iao"),
    ("ioʊ", "iu"),
    ("iou", "iu"),
    ("iəʊ", "iu"),
    ("iɤʊ", "iu"),
    ("iɛn", "ian"),
    ("ian", "ian"),
    ("iæn", "ian"),
    ("in", "in"),
    ("iən", "in"),
    ("iɑŋ", "iang"),
    ("iaŋ", "iang"),
    ("iŋ", "ing"),
    ("iəŋ", "ing"),
    ("iʊŋ", "iong"),
    ("iuŋ", "iong"),
    ("ioŋ", "iong"),
    ("yʊŋ", "iong"),
    ("u", "u"),
    ("ua", "ua"),
    ("uɑ", "ua"),
    ("uɔ", "uo"),
    ("uo", "uo"),
    ("uaɪ", "uai"),
    ("uai", "uai"),
    ("ueɪ", "ui"),
    ("uei", "ui"),
    ("uan", "uan"),
    ("uən", "un"),
    ("un", "un"),
    ("uɑŋ", "uang"),
    ("uaŋ", "uang"),
    ("uɤŋ", "ueng"),
    ("uəŋ", "ueng"),
    ("y", "ü"),
    ("yɛ", "üe"),
    ("ye", "üe"),
    ("yœ", "üe"),
    ("yɛn", "üan"),
    ("yan", "üan"),
    ("yæn", "üan"),
    ("yn", "ün"),
    ("yən", "ün"),
];

/// Chao tone letters, high to low.
const TONE_LETTERS: [(char, u8); 5] = [('˥', 5), ('˦', 4), ('˧', 3), ('˨', 2), ('˩', 1)];
const SUPERSCRIPTS: [char; 6] = ['⁰', '¹', '²', '³', '⁴', '⁵'];

/// Mandarin IPA → pinyin units, syllables run together.
pub(super) fn to_pinyin(ipa: &str) -> Result<String, IpaError> {
    // Aspiration tells b from p here; Wiktionary writes the open central a as `ä`.
    let cleaned: String = ipa
        .chars()
        .filter(|c| *c == 'ʰ' || !IGNORED.contains(c))
        .map(|c| if c == 'ä' { 'a' } else { c })
        .collect();
    let mut out = String::new();
    for (body, tone_run) in syllables(&cleaned) {
        let err =
            |reason: String| IpaError::Syllable { syllable: format!("{body}{tone_run}"), reason };
        let tone = tone(&tone_run).map_err(err)?;
        out.push_str(&syllable(&body, tone)?);
    }
    Ok(out)
}

fn is_tone_char(c: char) -> bool {
    c.is_ascii_digit() || SUPERSCRIPTS.contains(&c) || TONE_LETTERS.iter().any(|(l, _)| *l == c)
}

/// Splits at spaces and `.`, and after each tone: (segmental body, tone run).
fn syllables(s: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let (mut body, mut tone) = (String::new(), String::new());
    for c in s.chars() {
        if is_tone_char(c) || (!tone.is_empty() && matches!(c, '⁻' | '-' | '⁽' | '⁾' | '(' | ')'))
        {
            tone.push(c);
            continue;
        }
        if !tone.is_empty() || c.is_whitespace() || c == '.' {
            if !body.is_empty() || !tone.is_empty() {
                out.push((std::mem::take(&mut body), std::mem::take(&mut tone)));
            }
            if c.is_whitespace() || c == '.' {
                continue;
            }
        }
        body.push(c);
    }
    if !body.is_empty() || !tone.is_empty() {
        out.push((body, tone));
    }
    out
}

/// A tone run → 1–4, or 5 for the neutral tone.
fn tone(run: &str) -> Result<u8, String> {
    // A sandhi `²¹⁴⁻³⁵` is said as its last contour; `²¹⁽⁴⁾` as written outside the brackets.
    let last = run.rsplit(['⁻', '-']).next().unwrap_or("");
    let mut digits = Vec::new();
    let (mut letters, mut plain, mut depth) = (false, false, 0usize);
    for c in last.chars() {
        match c {
            '⁽' | '(' => depth += 1,
            '⁾' | ')' => depth = depth.saturating_sub(1),
            _ if depth > 0 => {}
            _ => {
                if let Some(&(_, d)) = TONE_LETTERS.iter().find(|(l, _)| *l == c) {
                    letters = true;
                    digits.push(d);
                } else if let Some(d) = SUPERSCRIPTS.iter().position(|s| *s == c) {
                    digits.push(d as u8);
                } else if let Some(d) = c.to_digit(10) {
                    plain = true;
                    digits.push(d as u8);
                }
            }
        }
    }
    match digits.as_slice() {
        [] | [0] => Ok(5),
        [_] if plain => Err(format!(
            "a single digit `{run}` is ambiguous: write the tone's contour (55, 35, 214, 51) or \
             Chao letters (˥, ˧˥, ˨˩˦, ˥˩)"
        )),
        // A lone high letter is the high level tone (`ma˥`); a lone lower letter or superscript
        // digit is how Sinological IPA writes the neutral tone's pitch (`tsz̩⁵`, `ma˨`).
        [d] if letters && *d >= 4 => Ok(1),
        [_] => Ok(5),
        [a, b, rest @ ..] => contour(*a, *b, rest.first().copied())
            .ok_or_else(|| format!("the contour `{run}` is not a Mandarin tone")),
    }
}

/// Tone of a contour from its first two points (and a third, for the dipping tone).
fn contour(a: u8, b: u8, c: Option<u8>) -> Option<u8> {
    match (a, b) {
        _ if a > 5 || b > 5 => None,
        _ if a == b => (a >= 4).then_some(1),
        _ if a < b => Some(2),
        _ if c.is_some_and(|c| c > b) => Some(3),
        _ if a >= 4 => Some(4),
        _ => Some(3),
    }
}

/// One syllable's units.
fn syllable(body: &str, tone: u8) -> Result<String, IpaError> {
    let err = |reason: String| IpaError::Syllable { syllable: body.to_string(), reason };
    if body.is_empty() {
        return Err(err("a tone without a syllable".into()));
    }
    let body = body.strip_prefix('ʔ').unwrap_or(body);
    let (initial, rest) = split_initial(body);
    let rest = glides_as_vowels(rest);
    let fin = FINALS
        .iter()
        .find(|(k, _)| *k == rest)
        .map(|(_, f)| *f)
        .ok_or_else(|| err(format!("`{rest}` is not a Mandarin final this converter knows")))?;
    let (initial, spelled) = spell(initial, fin).map_err(err)?;
    let toned = with_tone(&spelled, tone);
    let mut out = String::new();
    for unit in initial.into_iter().map(str::to_string).chain([toned]) {
        let token = format!("[{unit}]");
        if is_special_token_at(&token) != Some(token.len()) {
            return Err(err(format!("CosyVoice3 has no pinyin unit `{token}`")));
        }
        out.push_str(&token);
    }
    Ok(out)
}

/// The initial (as pinyin) and the rest; `ɻ`/`ʐ` before a syllabic mark is the final itself
/// (日 written `ɻ̩`), so it is r with the apical vowel.
fn split_initial(body: &str) -> (Option<&'static str>, String) {
    if matches!(body, "ɻ̩" | "ʐ̩") {
        return (Some("r"), "ʐ̩".to_string());
    }
    let found = INITIALS.iter().filter(|(k, _)| body.starts_with(k)).max_by_key(|(k, _)| k.len());
    match found {
        Some((k, p)) if body.len() > k.len() => (Some(*p), body[k.len()..].to_string()),
        _ => (None, body.to_string()),
    }
}

/// Glides as the vowels pinyin spells them: `j` → i, `w` → u, `ɥ` → y (`ji` and `wu` are
/// one vowel).
fn glides_as_vowels(rest: String) -> String {
    for (glide, vowel) in [('j', 'i'), ('w', 'u'), ('ɥ', 'y')] {
        if let Some(after) = rest.strip_prefix(glide) {
            return if after.starts_with(vowel) {
                after.to_string()
            } else {
                format!("{vowel}{after}")
            };
        }
    }
    rest
}

/// Pinyin spelling of a final after its initial: the zero initial writes `y`/`w`, j q x
/// write ü as u, b p m f write uo as o.
fn spell(
    initial: Option<&'static str>,
    fin: &str,
) -> Result<(Option<&'static str>, String), String> {
    let sibilant = matches!(initial, Some("z" | "c" | "s" | "zh" | "ch" | "sh" | "r"));
    if fin == APICAL {
        return if sibilant {
            Ok((initial, "i".into()))
        } else {
            Err("the apical vowel follows only z, c, s, zh, ch, sh or r".into())
        };
    }
    let Some(init) = initial else { return Ok(zero_initial(fin)) };
    let spelled = match (init, fin) {
        ("j" | "q" | "x", f) if f.starts_with('ü') => f.replacen('ü', "u", 1),
        ("b" | "p" | "m" | "f", "uo") => "o".into(),
        (_, "ueng") => return Err("`ueng` has no initial in Mandarin (weng)".into()),
        (_, f) => f.to_string(),
    };
    Ok((Some(init), spelled))
}

/// A syllable without an initial: i- finals take `y`, u- finals `w`, ü- finals `yu`, as pinyin
/// writes them (ia → ya, iu → you, ui → wei, un → wen).
fn zero_initial(fin: &str) -> (Option<&'static str>, String) {
    let (initial, spelled): (&'static str, String) = match fin {
        "i" | "in" | "ing" => ("y", fin.into()),
        "iu" => ("y", "ou".into()),
        "u" => ("w", "u".into()),
        "ui" => ("w", "ei".into()),
        "un" => ("w", "en".into()),
        _ => {
            if let Some(after) = fin.strip_prefix('i') {
                ("y", after.into())
            } else if let Some(after) = fin.strip_prefix('ü') {
                ("y", format!("u{after}"))
            } else if let Some(after) = fin.strip_prefix('u') {
                ("w", after.into())
            } else {
                return (None, fin.to_string());
            }
        }
    };
    (Some(initial), spelled)
}

/// The final with its tone mark on the vowel pinyin puts it on: a or e, else the o of ou, else
/// the last vowel. `üe` with a mark is written `ve`, as CosyVoice3's unit `[vè]` is.
fn with_tone(fin: &str, tone: u8) -> String {
    if !(1..=4).contains(&tone) {
        return fin.to_string();
    }
    let chars: Vec<char> = fin.chars().collect();
    let vowel = |c: &char| matches!(c, 'a' | 'e' | 'i' | 'o' | 'u' | 'ü');
    let at = chars
        .iter()
        .position(|c| *c == 'a' || *c == 'e')
        .or_else(|| fin.find("ou").map(|_| chars.iter().position(|c| *c == 'o').unwrap_or(0)))
        .or_else(|| chars.iter().rposition(vowel));
    let Some(at) = at else { return fin.to_string() };
    let mut out: Vec<char> = chars.clone();
    out[at] = toned(chars[at], tone);
    if out.len() > 1 && out[0] == 'ü' {
        out[0] = 'v';
    }
    out.into_iter().collect()
}

fn toned(v: char, tone: u8) -> char {
    let marks: [char; 4] = match v {
        'a' => ['ā', 'á', 'ǎ', 'à'],
        'e' => ['ē', 'é', 'ě', 'è'],
        'i' => ['ī', 'í', 'ǐ', 'ì'],
        'o' => ['ō', 'ó', 'ǒ', 'ò'],
        'u' => ['ū', 'ú', 'ǔ', 'ù'],
        'ü' => ['ǖ', 'ǘ', 'ǚ', 'ǜ'],
        _ => return v,
    };
    marks[usize::from(tone - 1)]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Real words, in the IPA of dictionaries (Wiktionary's Sinological IPA, Chao letters).
    const WORDS: &[(&str, &str, &str)] = &[
        ("重庆", "ʈʂʰʊŋ³⁵ tɕʰiŋ⁵¹", "[ch][óng][q][ìng]"),
        ("重庆 (run together)", "ʈ͡ʂʰʊŋ³⁵t͡ɕʰiŋ⁵¹", "[ch][óng][q][ìng]"),
        ("你好", "ni²¹⁴⁻³⁵ xɑʊ̯²¹⁴⁻²¹⁽⁴⁾", "[n][í][h][ǎo]"),
        ("北京", "peɪ̯²¹⁴ tɕiŋ⁵⁵", "[b][ěi][j][īng]"),
        ("中国 (Chao letters)", "ʈʂʊŋ˥ kwo˧˥", "[zh][ōng][g][uó]"),
        ("学", "ɕɥɛ³⁵", "[x][ué]"),
        ("月", "ɥɛ⁵¹", "[y][uè]"),
        ("绿", "ly⁵¹", "[l][ǜ]"),
        ("略", "lɥɛ⁵¹", "[l][vè]"),
        ("是", "ʂʐ̩⁵¹", "[sh][ì]"),
        ("日", "ɻ̩⁵¹", "[r][ì]"),
        ("字", "tsz̩⁵¹", "[z][ì]"),
        ("的 (neutral)", "tə", "[d][e]"),
        ("我", "wɔ²¹⁴", "[w][ǒ]"),
        ("要", "jɑʊ̯⁵¹", "[y][ào]"),
        ("一", "i⁵⁵", "[y][ī]"),
        ("有", "joʊ̯²¹⁴", "[y][ǒu]"),
        ("为", "weɪ̯⁵¹", "[w][èi]"),
        ("远", "ɥɛn²¹⁴", "[y][uǎn]"),
        ("二", "ɑɻ⁵¹", "[èr]"),
        ("爱", "aɪ̯⁵¹", "[ài]"),
        ("波", "pu̯ɔ⁵⁵", "[b][ō]"),
        ("对", "tu̯eɪ̯⁵¹", "[d][uì]"),
        ("六", "li̯oʊ̯⁵¹", "[l][iù]"),
        ("女", "ny²¹⁴", "[n][ǚ]"),
        ("去", "tɕʰy⁵¹", "[q][ù]"),
        ("雄", "ɕi̯ʊŋ³⁵", "[x][ióng]"),
        ("安 (Wiktionary ä)", "än⁵⁵", "[ān]"),
        ("妈 (a lone ˥)", "ma˥", "[m][ā]"),
        ("子 (neutral ⁵)", "tsz̩⁵", "[z][i]"),
    ];

    #[test]
    fn real_words_become_pinyin_units() {
        for (word, ipa, units) in WORDS {
            assert_eq!(to_pinyin(ipa).as_deref(), Ok(*units), "{word} /{ipa}/");
        }
    }

    #[test]
    fn what_cannot_be_read_is_refused() {
        for (ipa, needle) in [
            ("ma1", "ambiguous"),
            ("ma33", "not a Mandarin tone"),
            ("pak⁵", "`ak`"),
            ("ʂ⁵¹", "`ʂ`"),
            ("ly⁵⁵", "[ǖ]"),
            ("kɨ⁵¹", "apical"),
        ] {
            let e = to_pinyin(ipa).unwrap_err().to_string();
            assert!(e.contains(needle), "{ipa}: {e}");
        }
    }
}
