//! Table-driven checks per language: the words against CLDR's spell-out rules, and the
//! expressions around numbers.

use super::{Language, spell_at};
use crate::pronounce::Pronunciations;

fn spell(language: Language, text: &str) -> String {
    spell_at(text, 0, language, &Pronunciations::default()).text
}

fn check(language: Language, cases: &[(&str, &str)]) {
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|(text, want)| {
            let got = spell(language, text);
            (got != *want).then(|| format!("{text:?}: got {got:?}, want {want:?}"))
        })
        .collect();
    assert!(failures.is_empty(), "{language:?}:\n{}", failures.join("\n"));
}

#[test]
fn french_numbers_follow_cldr() {
    check(
        Language::Fr,
        &[
            ("21", "vingt-et-un"),
            ("71", "soixante-et-onze"),
            ("80", "quatre-vingts"),
            ("91", "quatre-vingt-onze"),
            ("101", "cent un"),
            ("1000", "mille"),
            ("1999", "mille neuf cent quatre-vingt-dix-neuf"),
            ("2023", "deux mille vingt-trois"),
            ("1 000 000", "un million"),
            ("1er", "premier"),
            ("1re", "première"),
            ("2e", "deuxième"),
            ("21e", "vingt-et-unième"),
            ("Le 3 mai 1999", "Le trois mai mille neuf cent quatre-vingt-dix-neuf"),
            ("le 1er mai", "le premier mai"),
            ("3,14", "trois virgule quatorze"),
            ("9 h 30", "neuf heures trente"),
            ("21:00", "vingt-et-une heures"),
            ("12 €", "douze euros"),
            ("5,50 $", "cinq dollars cinquante"),
            ("50 %", "cinquante pour cent"),
            ("3 km", "trois kilomètres"),
            ("-5", "moins cinq"),
        ],
    );
}

#[test]
fn german_numbers_follow_cldr() {
    check(
        Language::De,
        &[
            ("21", "einundzwanzig"),
            ("71", "einundsiebzig"),
            ("101", "einhunderteins"),
            ("1000", "eintausend"),
            ("2023", "zweitausenddreiundzwanzig"),
            ("1.000.000", "eine Million"),
            ("1999", "neunzehnhundertneunundneunzig"),
            ("am 3. Mai 1999", "am dritten Mai neunzehnhundertneunundneunzig"),
            ("der 1. Band", "der erste Band"),
            ("der 21. Juni", "der einundzwanzigste Juni"),
            ("Er war 3.", "Er war drei."),
            ("2. Jahrgang", "zweiter Jahrgang"),
            ("bis 1912. Dann", "bis neunzehnhundertzwölf. Dann"),
            ("3,14", "drei Komma eins vier"),
            ("21:00", "einundzwanzig Uhr"),
            ("9:30", "neun Uhr dreißig"),
            ("12 €", "zwölf Euro"),
            ("1 €", "ein Euro"),
            ("5,50 $", "fünf Dollar fünfzig"),
            ("50 %", "fünfzig Prozent"),
            ("1 kg", "ein Kilogramm"),
        ],
    );
}

#[test]
fn spanish_numbers_follow_cldr() {
    check(
        Language::Es,
        &[
            ("21", "veintiuno"),
            ("71", "setenta y uno"),
            ("100", "cien"),
            ("101", "ciento uno"),
            ("1999", "mil novecientos noventa y nueve"),
            ("2023", "dos mil veintitrés"),
            ("1.000.000", "un millón"),
            ("1º", "primero"),
            ("1ª", "primera"),
            ("2º", "segundo"),
            ("1er", "primer"),
            ("1 de mayo", "primero de mayo"),
            ("3,14", "tres coma catorce"),
            ("21 €", "veintiún euros"),
            ("200 £", "doscientas libras"),
            ("5,50 $", "cinco dólares con cincuenta"),
            ("21:00", "veintiuna horas"),
            ("50 %", "cincuenta por ciento"),
        ],
    );
}

#[test]
fn italian_numbers_follow_cldr() {
    check(
        Language::It,
        &[
            ("21", "ventuno"),
            ("23", "ventitré"),
            ("3", "tre"),
            ("101", "centouno"),
            ("1999", "millenovecentonovantanove"),
            ("2023", "duemilaventitré"),
            ("1.000.000", "un milione"),
            ("1º", "primo"),
            ("1ª", "prima"),
            ("1 maggio", "primo maggio"),
            ("3,14", "tre virgola quattordici"),
            ("9:30", "nove e trenta"),
            ("12 €", "dodici euro"),
            ("5,50 $", "cinque dollari e cinquanta"),
            ("50 %", "cinquanta per cento"),
        ],
    );
}

#[test]
fn russian_numbers_follow_cldr() {
    check(
        Language::Ru,
        &[
            ("21", "двадцать один"),
            ("1000", "одна тысяча"),
            ("2023", "две тысячи двадцать три"),
            ("1 000 000", "один миллион"),
            ("5-й", "пятый"),
            ("2-я", "вторая"),
            ("3-го", "третьего"),
            ("3 мая", "третьего мая"),
            ("в 1999 году", "в тысяча девятьсот девяносто девятом году"),
            ("1999 г.", "тысяча девятьсот девяносто девятого года"),
            ("3,5", "три целых пять десятых"),
            ("21 рубль", "двадцать один рубль"),
            ("5 ₽", "пять рублей"),
            ("2 $", "два доллара"),
            ("1,50 €", "один евро пятьдесят центов"),
            ("21:00", "двадцать один час"),
            ("50 %", "пятьдесят процентов"),
            ("2 км", "два километра"),
        ],
    );
}

/// Roman numerals after a numbering word are numbers in the run's language; elsewhere (a
/// king's name, a lone "I", a word) they stay as written.
#[test]
fn roman_numerals_after_numbering_words() {
    check(
        Language::Fr,
        &[
            ("Chapitre I", "Chapitre premier"),
            ("Scène I", "Scène première"),
            ("Livre XII.", "Livre douze."),
            ("Louis XIV", "Louis XIV"),
            ("MIX", "MIX"),
        ],
    );
    check(Language::De, &[("Kapitel IV", "Kapitel vier"), ("Teil I", "Teil eins")]);
    check(Language::Es, &[("Capítulo II", "Capítulo dos")]);
    check(Language::It, &[("Capitolo III", "Capitolo tre")]);
    check(Language::Ru, &[("Глава V", "Глава пять")]);
}
