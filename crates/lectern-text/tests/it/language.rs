//! Languages of Latin-script text: `[lang:…]` markup, the document's language (the caller's,
//! or a Markdown front matter's), else English.

use lectern_text::{Format, Manuscript, ParseOptions, TextError};

fn opts() -> ParseOptions<'static> {
    ParseOptions::default().with_lead_sentence(false)
}

/// (normalised text, language) of every segment.
fn read(src: &str, opts: &ParseOptions<'_>) -> Vec<(String, Option<String>)> {
    let book = Manuscript::parse(src, opts).unwrap();
    book.segments().map(|s| (s.text.clone(), s.language.clone())).collect()
}

fn seg(text: &str, language: Option<&str>) -> (String, Option<String>) {
    (text.to_string(), language.map(str::to_string))
}

#[test]
fn markup_sets_the_language_until_its_end_or_the_paragraphs() {
    let src = "In 1999 he said [lang:fr]Il a 3 ans, né le 12 mai 1999. Après, St. Jean.[/lang] \
               Then 4 more.\n\n[lang:de]Es kostet 5 € für 2 Äpfel.\n\nBack to 2 words.";
    assert_eq!(
        read(src, &opts()),
        vec![
            seg(
                "In nineteen ninety-nine he said Il a trois ans, né le douze mai mille neuf cent \
                 quatre-vingt-dix-neuf. Après, St. Jean. Then four more.",
                Some("fr")
            ),
            seg("Es kostet fünf Euro für zwei Äpfel.", Some("de")),
            seg("Back to two words.", None),
        ]
    );
}

#[test]
fn the_document_language_reads_latin_text_in_that_language() {
    let src = "Le 3 mai 1999, M. Dupont a payé 4,50 € — ±3°C dehors 🎉.";
    let fr = opts().with_language(Some("fr-FR".into()));
    assert_eq!(
        read(src, &fr),
        vec![seg(
            "Le trois mai mille neuf cent quatre-vingt-dix-neuf, M. Dupont a payé quatre euros \
             cinquante — ±trois degrés Celsius dehors.",
            Some("fr-fr")
        )]
    );
    // English markup inside a French book gets English rules; Chinese stays Chinese.
    let mixed = "Il a dit [lang:en]I have 2 cats[/lang] puis 我有3个苹果。";
    assert_eq!(
        read(mixed, &fr),
        vec![seg("Il a dit I have two cats puis 我有三个苹果。", Some("fr-fr"))]
    );
    // A Chinese or English book's Latin text is English.
    for lang in ["zh-CN", "en-GB", "ja"] {
        let o = opts().with_language(Some(lang.into()));
        assert_eq!(read("He has 2 cats.", &o), vec![seg("He has two cats.", None)], "{lang}");
    }
    // `[lang:zh]` reads all of its span as Chinese.
    assert_eq!(
        read("[lang:zh]第3版 2024 edition[/lang]", &opts()),
        vec![seg("第三版二千零二十四edition.", Some("zh"))]
    );
}

/// The front matter's book metadata (#19): title, author, narrator, cover path as written;
/// other keys and empty values are left alone, and nothing of it is read aloud.
#[test]
fn markdown_front_matter_gives_the_book_metadata() {
    let src = "---\ntitle: \"The Lighthouse: A Tale\"\nauthor: Ada Byron\nnarrator: 'Sam Reed'\n\
               cover: art/cover.jpg\ntags: [a, b]\nsubtitle:\n---\n\nThe lamp turned.\n";
    let book = Manuscript::parse(src, &opts().with_format(Format::Markdown)).unwrap();
    let info = &book.info;
    assert_eq!(info.title.as_deref(), Some("The Lighthouse: A Tale"));
    assert_eq!(info.author.as_deref(), Some("Ada Byron"));
    assert_eq!(info.narrator.as_deref(), Some("Sam Reed"));
    assert_eq!(info.cover_path.as_deref(), Some("art/cover.jpg"));
    assert_eq!(info.language, None);
    let texts: Vec<_> = book.segments().map(|s| s.text.as_str()).collect();
    assert_eq!(texts, vec!["The lamp turned."]);
    // Plain text has no front matter: the same lines are text.
    let plain = Manuscript::parse(src, &opts().with_format(Format::Plain)).unwrap();
    assert_eq!(plain.info.title, None);
}

#[test]
fn markdown_front_matter_gives_the_language_and_is_not_read() {
    let src = "---\ntitle: Le Livre\nlang: \"fr\"\n---\n\n# Chapitre 1\n\nIl avait 20 ans.\n";
    let o = opts().with_format(Format::Markdown);
    let book = Manuscript::parse(src, &o).unwrap();
    let texts: Vec<_> = book.segments().map(|s| (s.text.as_str(), s.language.as_deref())).collect();
    assert_eq!(texts, vec![("Chapitre un.", Some("fr")), ("Il avait vingt ans.", Some("fr"))]);
    assert_eq!(book.chapters[0].title.as_deref(), Some("Chapitre 1"));
    assert_eq!(book.info.language.as_deref(), Some("fr"));
    // The caller's language wins over the front matter.
    let en = o.clone().with_language(Some("en".into()));
    let texts: Vec<_> =
        Manuscript::parse(src, &en).unwrap().segments().map(|s| s.text.clone()).collect();
    assert_eq!(texts, vec!["Chapitre one.", "Il avait twenty ans."]);
    // Markup in a heading is not part of the chapter title.
    let titled = Manuscript::parse("# [lang:fr]Les 3 mousquetaires[/lang]\n\nText.", &o).unwrap();
    assert_eq!(titled.chapters[0].title.as_deref(), Some("Les 3 mousquetaires"));
    assert_eq!(titled.chapters[0].segments[0].text, "Les trois mousquetaires.");
}

#[test]
fn bad_language_markup_names_line_and_column() {
    let err = |src: &str| match Manuscript::parse(src, &opts()) {
        Err(e @ TextError::Markup { .. }) => e.to_string(),
        other => panic!("expected a markup error, got {other:?}"),
    };
    assert_eq!(
        err("Fine.\n\nSo [lang:français]oui[/lang]."),
        "<text>:3:4: bad language `[lang:français]`: write a BCP 47 tag, as in [lang:fr], [lang:de-CH]"
    );
    assert_eq!(
        err("One [lang:fr]deux.\n\nThree[/lang]."),
        "<text>:3:6: `[/lang]` closes no `[lang:…]` in this paragraph"
    );
}

#[test]
fn a_language_change_changes_the_segment_language_and_not_its_text() {
    let en = read("Bonjour Paul.", &opts());
    let fr = read("[lang:fr]Bonjour Paul.", &opts());
    assert_eq!(en[0].0, fr[0].0);
    assert_eq!((en[0].1.as_deref(), fr[0].1.as_deref()), (None, Some("fr")));
    // Upstream's frontend knows no languages: markup is dropped, text read as before.
    let up = opts().with_frontend(lectern_text::Frontend::Upstream);
    assert_eq!(read("He is [lang:fr]3[/lang].", &up), vec![seg("He is three.", None)]);
}
