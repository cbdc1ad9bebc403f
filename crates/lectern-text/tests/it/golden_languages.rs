//! Golden readings of real public-domain text in French and German, numbers and dates
//! spelled in the language (reviewed by hand; `INSTA_UPDATE=always` rewrites them).

use lectern_text::{Format, Manuscript, ParseOptions};

fn outline(src: &str) -> String {
    let opts = ParseOptions::default().with_format(Format::Markdown).with_lead_sentence(false);
    let book = Manuscript::parse(src, &opts).unwrap();
    book.segments()
        .map(|s| format!("{} | {}", s.language.as_deref().unwrap_or("-"), s.text))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Jules Verne, *Le Tour du monde en quatre-vingts jours* (1872), the opening.
const VERNE: &str = "---\nlang: fr\n---\n\n# Chapitre I\n\nEn l’année 1872, la maison portant le \
numéro 7 de Saville-row, Burlington Gardens — maison dans laquelle Sheridan mourut en 1814 —, \
était habitée par Phileas Fogg, esq., l’un des membres les plus singuliers et les plus \
remarqués du Reform-Club de Londres, bien qu’il semblât prendre à tâche de ne rien faire qui \
pût attirer l’attention.\n\nLe pari fut conclu le mercredi 2 octobre, et Phileas Fogg devait \
être de retour le samedi 21 décembre, à 8 h 45 du soir, après un voyage de 80 jours, ayant \
déposé 20 000 £ chez Baring frères.\n";

/// Franz Kafka, *Die Verwandlung* (1915), the opening; then the edition's dates.
const KAFKA: &str = "---\nlang: de\n---\n\n# Die Verwandlung\n\nAls Gregor Samsa eines Morgens \
aus unruhigen Träumen erwachte, fand er sich in seinem Bett zu einem ungeheueren Ungeziefer \
verwandelt. Er lag auf seinem panzerartig harten Rücken und sah, wenn er den Kopf ein wenig \
hob, seinen gewölbten, braunen, von bogenförmigen Versteifungen geteilten Bauch.\n\n\
Geschrieben vom 17. November bis 7. Dezember 1912. Erstdruck im Oktober 1915 in den \
»Weißen Blättern«, 2. Jahrgang, Heft 10; als Buch 1915 bei Kurt Wolff, Leipzig, 73 Seiten, \
Preis 0,80 Mark.\n";

#[test]
fn a_french_chapter_reads_its_numbers_in_french() {
    insta::assert_snapshot!("golden_french_verne", outline(VERNE));
}

#[test]
fn a_german_chapter_reads_its_numbers_in_german() {
    insta::assert_snapshot!("golden_german_kafka", outline(KAFKA));
}

/// English full of the traps real books set (sentences after Conan Doyle, Dickens, Melville
/// and the 1911 Britannica, with the numbers, dates, titles and units they print).
const ENGLISH: &str = "# BOOK I. CHAPTER XII.\n\nOn 14 March 2023 we called at 221B Baker St. It \
weighed 3 kg, and the thermometer stood at 40° F. at 21:00. Louis XVI was crowned in 1774; \
the war of 1788-1789 is told in vol. xlviii, p. 173, and World War I in Part II.\n\n\
March 14, 2023 fell on a Tuesday; AUGUST 3d was hot. The bill came to £5 10s. 6d., and \
⅔ of the 1½ miles lay at 30° 31′ 39″ N. Write to ann@example.org or see \
http://www.example.com/books, or call at No. 5, St. Paul's Churchyard, Atlanta, GA 30303.\n";

#[test]
fn an_english_chapter_full_of_traps_reads_as_a_narrator_says_it() {
    insta::assert_snapshot!("golden_english_traps", outline(ENGLISH));
}
