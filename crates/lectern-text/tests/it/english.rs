//! English read completely, as a narrator says it: table-driven cases (written → spoken) for
//! roman numerals, dates, codes, units, abbreviations, fractions, angles, times, old British
//! money, web addresses and signs.

use lectern_text::normalize::normalize_str;

/// Checks every case and reports all failures at once.
fn check(cases: &[(&str, &str)]) {
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|(input, want)| {
            let got = normalize_str(input);
            (got != *want).then(|| format!("{input:?}: got {got:?}, want {want:?}"))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn roman_numerals_are_read_where_the_context_makes_them_numbers() {
    check(&[
        ("Louis XVI was king.", "Louis the Sixteenth was king."),
        ("Henry VIII had six wives", "Henry the Eighth had six wives"),
        ("under George III, the", "under George the Third, the"),
        ("Pope Pius XII", "Pope Pius the Twelfth"),
        ("Henry I of England", "Henry the First of England"),
        ("BOOK I.", "BOOK one."),
        ("Part II", "Part two"),
        ("vol. xlviii", "volume forty-eight"),
        ("SECTION IV", "SECTION four"),
        ("Chapter XII", "Chapter twelve"),
        ("Act III, Scene ii", "Act three, Scene two"),
        ("CANTO XXXIV", "CANTO thirty-four"),
        ("IV.", "four."),
        ("XXIV", "twenty-four"),
        ("I. The Rabbi and the Diadem", "one. The Rabbi and the Diadem"),
        ("see p. xiv", "see page fourteen"),
        ("World War I", "World War one"),
        ("after World War II.", "after World War two."),
    ]);
}

#[test]
fn words_that_look_roman_are_left_alone() {
    check(&[
        ("I think so.", "I think so."),
        ("I.", "one."),
        ("Then I went home.", "Then I went home."),
        ("Henry I went home.", "Henry I went home."),
        ("for my part I think", "for my part I think"),
        ("the book I read", "the book I read"),
        ("I'll MIX it, DID you?", "I'll MIX it, DID you?"),
        ("a CIVIL war, mi amor, dim light", "a CIVIL war, mi amor, dim light"),
        ("Washington DC and a CD", "Washington DC and a CD"),
        ("I. M. Pei", "I. M. Pei"),
        ("Section VX", "Section VX"),
        ("CD", "CD"),
        ("Joseph M. Terrell", "Joseph M. Terrell"),
    ]);
}

#[test]
fn dates_are_read_in_the_order_they_are_written() {
    check(&[
        ("On 14 March 2023 we left.", "On the fourteenth of March, twenty twenty-three we left."),
        ("3 May", "the third of May"),
        ("March 14, 2023", "March fourteenth, twenty twenty-three"),
        ("January 3, 2009", "January third, two thousand nine"),
        ("on July 4th", "on July fourth"),
        ("Sept. 3, 1939", "September third, nineteen thirty-nine"),
        ("2023-03-14", "March fourteenth, twenty twenty-three"),
        ("AUGUST 3d", "AUGUST third"),
        ("the 2d regiment", "the second regiment"),
        ("the 22d of June", "the twenty-second of June"),
        ("1788-1789", "seventeen eighty-eight to seventeen eighty-nine"),
        ("1788–89", "seventeen eighty-eight to eighty-nine"),
        ("1901–05", "nineteen oh one to oh five"),
        ("the 1920s", "the nineteen twenties"),
        ("the 1800s", "the eighteen hundreds"),
        ("May I come?", "May I come?"),
    ]);
}

#[test]
fn codes_house_numbers_and_digit_strings() {
    check(&[
        ("221B Baker St.", "two twenty-one B Baker Street."),
        ("1600 Pennsylvania Avenue", "sixteen hundred Pennsylvania Avenue"),
        ("3D glasses", "three D glasses"),
        ("A4 paper", "A four paper"),
        ("2H2O", "two H two O"),
        ("CO2 levels", "C O two levels"),
        ("Atlanta, GA 30303", "Atlanta, Georgia three oh three oh three"),
        ("#2701", "number two seven oh one"),
        ("a .373 rifle", "a point three seven three rifle"),
        ("version 0.5.3", "version zero point five point three"),
        ("call (800) 998-9938 now", "call eight oh oh, nine nine eight, nine nine three eight now"),
        ("call 555-123-4567", "call five five five, one two three, four five six seven"),
        ("abc123", "abc123"),
    ]);
}

#[test]
fn abbreviations_by_context() {
    check(&[
        ("St. Paul", "Saint Paul"),
        ("St Paul's", "Saint Paul's"),
        ("Baker St.", "Baker Street."),
        ("221B Baker St. Then we", "two twenty-one B Baker Street. Then we"),
        (
            "Savannah, Ga., to Apalachicola, Fla., and to New Orleans, La.\"",
            "Savannah, Georgia, to Apalachicola, Florida, and to New Orleans, Louisiana.\"",
        ),
        ("Albany, N.Y., is", "Albany, New York, is"),
        ("(Water Resources, p. 2)", "(Water Resources, page two)"),
        ("pp. 10–12", "pages ten to twelve"),
        ("No. 5", "number five"),
        ("Mt. Everest", "Mount Everest"),
        ("Capt. Ahab and Col. Brandon", "Captain Ahab and Colonel Brandon"),
        (
            "Rev. Jones, Prof. Lee, Gen. Grant, Lt. Dan",
            "Reverend Jones, Professor Lee, General Grant, Lieutenant Dan",
        ),
        ("near the N.E. corner", "near the northeast corner"),
        ("extends S.S.E. to", "extends south-southeast to"),
        ("bounded N. by Tennessee", "bounded north by Tennessee"),
        ("Carolina, E. by South Carolina", "Carolina, east by South Carolina"),
        ("touching the W. boundary", "touching the west boundary"),
        ("Abram S. Isaacs", "Abram S. Isaacs"),
        ("the Blue Ridge Mts. are", "the Blue Ridge Mountains are"),
    ]);
}

#[test]
fn units_after_numbers() {
    check(&[
        ("1 kg", "one kilogram"),
        ("5 kg", "five kilograms"),
        ("250g of flour", "two hundred and fifty grams of flour"),
        ("10 km", "ten kilometres"),
        ("100 m", "one hundred metres"),
        ("60 km/h", "sixty kilometres per hour"),
        ("30 mph", "thirty miles per hour"),
        ("2 lbs. of", "two pounds of"),
        ("8 oz", "eight ounces"),
        ("falls 96 ft. in less", "falls ninety-six feet in less"),
        ("is 49.3 in.; the", "is forty-nine point three inches; the"),
        ("1 ft", "one foot"),
        ("45 m. long", "forty-five miles long"),
        (
            "59,265 sq. m., of which",
            "fifty-nine thousand two hundred and sixty-five square miles, of which",
        ),
        ("5 in the box", "five in the box"),
        ("40° F. and below", "forty degrees Fahrenheit and below"),
        ("1°", "one degree"),
        ("50%", "fifty percent"),
    ]);
}

#[test]
fn fractions_and_angles() {
    check(&[
        ("⅔ of them", "two thirds of them"),
        ("½", "one half"),
        ("1½ miles", "one and a half miles"),
        ("2¾", "two and three quarters"),
        ("2⁄3", "two thirds"),
        ("22⁄3 m. long", "two and two thirds miles long"),
        ("2/3 of the vote", "two thirds of the vote"),
        ("3/4/2020", "three/four/twenty twenty"),
        ("31° 39′ 12″", "thirty-one degrees thirty-nine minutes twelve seconds"),
        ("30° 31′ 39″ N.", "thirty degrees thirty-one minutes thirty-nine seconds north."),
        (
            "85° 53′ 38″ W. It is",
            "eighty-five degrees fifty-three minutes thirty-eight seconds west. It is",
        ),
        ("35° N., and", "thirty-five degrees north, and"),
    ]);
}

#[test]
fn times_on_both_clocks() {
    check(&[
        ("21:00", "twenty-one hundred"),
        ("21:30", "twenty-one thirty"),
        ("09:05", "oh nine oh five"),
        ("00:30", "zero thirty"),
        ("7:30", "seven thirty"),
        ("7:00", "seven o'clock"),
        ("7:30 pm", "seven thirty PM"),
        ("at 6 p.m. Then", "at six PM. Then"),
    ]);
}

#[test]
fn old_british_money() {
    check(&[
        ("£5 10s. 6d.", "five pounds ten shillings and sixpence."),
        ("£5 10s. 6d. a week", "five pounds ten shillings and sixpence a week"),
        ("3s. 6d. each", "three shillings and sixpence each"),
        ("it cost 6d. a day", "it cost sixpence a day"),
        ("1s. 1d. was", "one shilling and one penny was"),
        ("L100,000 a year", "one hundred thousand pounds a year"),
        ("£20", "twenty pounds"),
    ]);
}

#[test]
fn web_and_email_addresses() {
    check(&[
        ("See http://example.com/path.", "See example dot com slash path."),
        ("(http://my.safaribooksonline.com)", "(my dot safaribooksonline dot com)"),
        ("www.example.com", "w w w dot example dot com"),
        ("https://example.com/a-b?x=1", "example dot com slash a dash b"),
        ("mail ann@example.org.", "mail ann at example dot org."),
        ("corporate@oreilly.com or", "corporate at oreilly dot com or"),
        ("on oreilly.com today", "on oreilly dot com today"),
        ("e.g. this", "for example this"),
    ]);
}

#[test]
fn signs_are_words() {
    check(&[
        ("Tom & Jerry", "Tom and Jerry"),
        ("AT&T", "AT and T"),
        ("2 + 2 = 4", "two plus two equals four"),
        ("3 × 4", "three times four"),
        ("see § 5", "see section five"),
        ("§§ 4–6", "sections four to six"),
        ("¶ 3", "paragraph three"),
        ("Smith† and Jones‡", "Smith and Jones"),
        ("+5", "plus five"),
        ("-5", "minus five"),
    ]);
}
