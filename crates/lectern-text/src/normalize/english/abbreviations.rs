//! Abbreviations: titles (`Mr.`, `Dr.`, `Capt.`), `St.` as "Saint" or "Street" by context,
//! reference words before a number (`p. 2` → "page two", `No. 5` → "number five"), US states
//! after a place (`Savannah, Ga.` → "Savannah, Georgia", `Atlanta, GA 30303` → "Atlanta,
//! Georgia three oh three oh three") and compass points (`N.E.` → "northeast").

use super::codes::zip_after;
use super::{At, Reading, dot_ends_sentence, said};

/// What must follow an abbreviation for it to be one.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Needs {
    /// Anything that is not a letter or digit.
    Nothing,
    /// A number (digits or a roman numeral) after a space: `p. 2`, `vol. xlviii`.
    Number,
    /// A capitalised word after a space: `Ft. Worth`.
    Name,
}

/// (abbreviation, spoken form, whether its dot may also end a sentence, what must follow).
const ABBREVIATIONS: &[(&str, &str, bool, Needs)] = &[
    ("Mr.", "Mister", false, Needs::Nothing),
    ("Mrs.", "Missus", false, Needs::Nothing),
    ("Ms.", "Miz", false, Needs::Nothing),
    ("Dr.", "Doctor", false, Needs::Nothing),
    ("St.", "Street", true, Needs::Nothing),
    ("St", "Saint", false, Needs::Name),
    ("Prof.", "Professor", false, Needs::Nothing),
    ("Capt.", "Captain", false, Needs::Nothing),
    ("Gen.", "General", false, Needs::Nothing),
    ("Lt.", "Lieutenant", false, Needs::Nothing),
    ("Col.", "Colonel", false, Needs::Nothing),
    ("Sgt.", "Sergeant", false, Needs::Nothing),
    ("Rev.", "Reverend", false, Needs::Nothing),
    ("Mt.", "Mount", false, Needs::Nothing),
    ("Mts.", "Mountains", true, Needs::Nothing),
    ("Ft.", "Fort", false, Needs::Name),
    ("Gov.", "Governor", false, Needs::Name),
    ("Pres.", "President", false, Needs::Name),
    ("Sen.", "Senator", false, Needs::Name),
    ("Hon.", "Honourable", false, Needs::Name),
    ("Messrs.", "Messieurs", false, Needs::Nothing),
    ("Mme.", "Madame", false, Needs::Nothing),
    ("Jr.", "Junior", true, Needs::Nothing),
    ("Sr.", "Senior", true, Needs::Nothing),
    ("Esq.", "Esquire", true, Needs::Nothing),
    ("Bros.", "Brothers", true, Needs::Nothing),
    ("Ave.", "Avenue", true, Needs::Nothing),
    ("Rd.", "Road", true, Needs::Nothing),
    ("Blvd.", "Boulevard", true, Needs::Nothing),
    ("Inc.", "Incorporated", true, Needs::Nothing),
    ("Ltd.", "Limited", true, Needs::Nothing),
    ("Corp.", "Corporation", true, Needs::Nothing),
    ("Co.", "Company", true, Needs::Nothing),
    ("vs.", "versus", false, Needs::Nothing),
    ("etc.", "et cetera", true, Needs::Nothing),
    ("e.g.", "for example", false, Needs::Nothing),
    ("i.e.", "that is", false, Needs::Nothing),
    ("cf.", "compare", false, Needs::Nothing),
    ("viz.", "namely", false, Needs::Nothing),
    ("approx.", "approximately", false, Needs::Nothing),
    ("a.m.", "AM", true, Needs::Nothing),
    ("p.m.", "PM", true, Needs::Nothing),
    ("No.", "number", false, Needs::Number),
    ("Nos.", "numbers", false, Needs::Number),
    ("no.", "number", false, Needs::Number),
    ("pp.", "pages", false, Needs::Number),
    ("p.", "page", false, Needs::Number),
    ("vols.", "volumes", false, Needs::Number),
    ("Vols.", "volumes", false, Needs::Number),
    ("vol.", "volume", false, Needs::Number),
    ("Vol.", "Volume", false, Needs::Number),
    ("ch.", "chapter", false, Needs::Number),
    ("Ch.", "Chapter", false, Needs::Number),
    ("chap.", "chapter", false, Needs::Number),
    ("Chap.", "Chapter", false, Needs::Number),
    ("fig.", "figure", false, Needs::Number),
    ("Fig.", "Figure", false, Needs::Number),
    ("ca.", "circa", false, Needs::Number),
];

/// Whether a number follows after one space: digits or a roman numeral.
fn number_follows(after: &str) -> bool {
    let Some(next) = after.strip_prefix(' ') else { return false };
    let word = &next[..next.bytes().take_while(u8::is_ascii_alphanumeric).count()];
    word.starts_with(|c: char| c.is_ascii_digit()) || super::roman::roman_value(word).is_some()
}

/// A known abbreviation ([`ABBREVIATIONS`]) at the cursor, if what follows allows it.
pub(super) fn abbreviation(at: At<'_>) -> Option<Reading> {
    let &(abbr, spoken, can_end, _) = ABBREVIATIONS.iter().find(|(abbr, _, _, needs)| {
        let Some(after) = at.rest.strip_prefix(abbr) else { return false };
        let next_is_name =
            after.strip_prefix(' ').is_some_and(|t| t.starts_with(char::is_uppercase));
        !after.starts_with(char::is_alphanumeric)
            && match needs {
                Needs::Nothing => true,
                Needs::Number => number_follows(after),
                Needs::Name => next_is_name,
            }
    })?;
    let after = &at.rest[abbr.len()..];
    let spoken = if abbr == "St." { saint_or_street(at) } else { spoken };
    let dot = if can_end && spoken != "Saint" && dot_ends_sentence(after) { "." } else { "" };
    Some(said(abbr.len(), format!("{spoken}{dot}")))
}

/// `St.` before a name is "Saint" ("St. Paul"), except after a house number and a street's
/// name ("221B Baker St. Then…"); elsewhere ("Baker St.") it is "Street".
fn saint_or_street(at: At<'_>) -> &'static str {
    let after = &at.rest["St.".len()..];
    let name_follows = after.strip_prefix(' ').is_some_and(|t| t.starts_with(char::is_uppercase));
    let mut words = at.before.split_whitespace().rev();
    let street_name = words.next().is_some_and(|w| w.starts_with(char::is_uppercase));
    let house_number = words.next().is_some_and(|w| w.starts_with(|c: char| c.is_ascii_digit()));
    if name_follows && !(street_name && house_number) { "Saint" } else { "Street" }
}

/// Old-style US state abbreviations, as an address or a dateline writes them.
const STATES: &[(&str, &str)] = &[
    ("Ala.", "Alabama"),
    ("Ariz.", "Arizona"),
    ("Ark.", "Arkansas"),
    ("Calif.", "California"),
    ("Cal.", "California"),
    ("Colo.", "Colorado"),
    ("Conn.", "Connecticut"),
    ("Del.", "Delaware"),
    ("Fla.", "Florida"),
    ("Ga.", "Georgia"),
    ("Ill.", "Illinois"),
    ("Ind.", "Indiana"),
    ("Kans.", "Kansas"),
    ("Kan.", "Kansas"),
    ("Ky.", "Kentucky"),
    ("La.", "Louisiana"),
    ("Md.", "Maryland"),
    ("Mass.", "Massachusetts"),
    ("Mich.", "Michigan"),
    ("Minn.", "Minnesota"),
    ("Miss.", "Mississippi"),
    ("Mo.", "Missouri"),
    ("Mont.", "Montana"),
    ("Nebr.", "Nebraska"),
    ("Neb.", "Nebraska"),
    ("Nev.", "Nevada"),
    ("N.H.", "New Hampshire"),
    ("N.J.", "New Jersey"),
    ("N.M.", "New Mexico"),
    ("N.Y.", "New York"),
    ("N.C.", "North Carolina"),
    ("N.D.", "North Dakota"),
    ("Okla.", "Oklahoma"),
    ("Oreg.", "Oregon"),
    ("Ore.", "Oregon"),
    ("Pa.", "Pennsylvania"),
    ("Penn.", "Pennsylvania"),
    ("R.I.", "Rhode Island"),
    ("S.C.", "South Carolina"),
    ("S.D.", "South Dakota"),
    ("Tenn.", "Tennessee"),
    ("Tex.", "Texas"),
    ("Vt.", "Vermont"),
    ("W.Va.", "West Virginia"),
    ("Va.", "Virginia"),
    ("Wash.", "Washington"),
    ("Wis.", "Wisconsin"),
    ("Wyo.", "Wyoming"),
];

/// Two-letter postal codes, read as states only before a ZIP code.
const POSTAL: &[(&str, &str)] = &[
    ("AL", "Alabama"),
    ("AK", "Alaska"),
    ("AZ", "Arizona"),
    ("AR", "Arkansas"),
    ("CA", "California"),
    ("CO", "Colorado"),
    ("CT", "Connecticut"),
    ("DE", "Delaware"),
    ("DC", "D C"),
    ("FL", "Florida"),
    ("GA", "Georgia"),
    ("HI", "Hawaii"),
    ("ID", "Idaho"),
    ("IL", "Illinois"),
    ("IN", "Indiana"),
    ("IA", "Iowa"),
    ("KS", "Kansas"),
    ("KY", "Kentucky"),
    ("LA", "Louisiana"),
    ("ME", "Maine"),
    ("MD", "Maryland"),
    ("MA", "Massachusetts"),
    ("MI", "Michigan"),
    ("MN", "Minnesota"),
    ("MS", "Mississippi"),
    ("MO", "Missouri"),
    ("MT", "Montana"),
    ("NE", "Nebraska"),
    ("NV", "Nevada"),
    ("NH", "New Hampshire"),
    ("NJ", "New Jersey"),
    ("NM", "New Mexico"),
    ("NY", "New York"),
    ("NC", "North Carolina"),
    ("ND", "North Dakota"),
    ("OH", "Ohio"),
    ("OK", "Oklahoma"),
    ("OR", "Oregon"),
    ("PA", "Pennsylvania"),
    ("RI", "Rhode Island"),
    ("SC", "South Carolina"),
    ("SD", "South Dakota"),
    ("TN", "Tennessee"),
    ("TX", "Texas"),
    ("UT", "Utah"),
    ("VT", "Vermont"),
    ("VA", "Virginia"),
    ("WA", "Washington"),
    ("WV", "West Virginia"),
    ("WI", "Wisconsin"),
    ("WY", "Wyoming"),
];

/// A state after a place name and a comma: `Savannah, Ga.` → "Savannah, Georgia", `New
/// Orleans, La."` → "New Orleans, Louisiana.\"", `Atlanta, GA 30303` → "Atlanta, Georgia three
/// oh three oh three". Elsewhere the same letters are other words ("Mass.", "Miss.", "IN").
pub(super) fn state(at: At<'_>) -> Option<Reading> {
    let place = at.before.strip_suffix(", ")?;
    let last_word = place.rsplit(' ').next().unwrap_or(place);
    if !last_word.starts_with(char::is_uppercase) {
        return None;
    }
    if let Some(&(abbr, name)) = STATES.iter().find(|(a, _)| at.rest.starts_with(a)) {
        let after = &at.rest[abbr.len()..];
        if after.starts_with(char::is_alphanumeric) {
            return None;
        }
        let mut reading = said(abbr.len(), name);
        match zip_after(after) {
            Some(zip) => reading.push(zip),
            None if dot_ends_sentence(after) => reading[0].1.push('.'),
            None => {}
        }
        return Some(reading);
    }
    let &(code, name) = POSTAL.iter().find(|(c, _)| at.rest.starts_with(c))?;
    let zip = zip_after(&at.rest[code.len()..])?;
    Some(vec![(code.len(), name.to_string()), zip])
}

/// A compass point at the cursor: its letters (`N.E.` → "NE") and length with the dots.
fn compass_at(s: &str) -> Option<(String, usize)> {
    let mut letters = String::new();
    let mut n = 0;
    while let [c @ (b'N' | b'S' | b'E' | b'W'), b'.', ..] = s.as_bytes()[n..] {
        letters.push(c as char);
        n += 2;
    }
    let valid = match letters.as_bytes() {
        [_] => true,
        [a, b] => matches!(a, b'N' | b'S') && matches!(b, b'E' | b'W'),
        [a, b, c] => matches!(b, b'N' | b'S') && matches!(c, b'E' | b'W') && (a == b || a == c),
        _ => false,
    };
    (valid && !s[n..].starts_with(char::is_alphanumeric)).then_some((letters, n))
}

fn compass_word(c: char) -> &'static str {
    match c {
        'N' => "north",
        'S' => "south",
        'E' => "east",
        _ => "west",
    }
}

/// Compass points: `N.E.` → "northeast", `S.S.E.` → "south-southeast", and a single `N.`
/// only where it cannot be an initial ([`single_compass_context`]).
pub(super) fn compass(at: At<'_>) -> Option<Reading> {
    let (letters, n) = compass_at(at.rest)?;
    let after = &at.rest[n..];
    let words: Vec<&str> = letters.chars().map(compass_word).collect();
    let spoken = match words.as_slice() {
        [w] if single_compass_context(at, after) => (*w).to_string(),
        [a, b] => format!("{a}{b}"),
        [a, b, c] => format!("{a}-{b}{c}"),
        _ => return None,
    };
    let dot = if dot_ends_sentence(after) { "." } else { "" };
    Some(said(n, format!("{spoken}{dot}")))
}

/// A single `N.`, `S.`, `E.`, `W.` is a direction after "the" ("in the W. and"), or after a
/// lower-case word or a comma and before "of", "by", "to", "as", "and", "in", "or" or a comma
/// ("bounded N. by Tennessee", "Carolina, E. by", "a little S. of Augusta"); elsewhere it is
/// an initial ("Abram S. Isaacs").
fn single_compass_context(at: At<'_>, after: &str) -> bool {
    let prev = at.prev_word();
    let next = after.trim_start().split(' ').next().unwrap_or("");
    let joins = ["of", "by", "to", "as", "and", "in", "or"].contains(&next)
        || after.starts_with([',', ';']);
    prev == "the" || (joins && (prev.starts_with(char::is_lowercase) || at.before.ends_with(", ")))
}
