//! Small Word documents built in the test: a ZIP container with `[Content_Types].xml`, the
//! package and main-part relationships, `word/document.xml` and whichever of the styles,
//! notes, comments and core properties the test gives, as Word lays them out.

use std::io::Write;
use std::path::Path;

use zip::write::SimpleFileOptions;

/// The WordprocessingML main namespace, bound to `w:` in every part written here.
pub const W_NS: &str = "http://schemas.openxmlformats.org/wordprocessingml/2006/main";

/// The parts of a document; `body` is the content of `<w:body>`.
#[derive(Debug, Default, Clone, Copy)]
pub struct DocxParts<'a> {
    pub body: &'a str,
    /// Whole `word/styles.xml`; see [`STYLES`].
    pub styles: Option<&'a str>,
    /// Whole `word/footnotes.xml`; see [`notes_xml`].
    pub footnotes: Option<&'a str>,
    pub endnotes: Option<&'a str>,
    /// Whole `word/comments.xml`; see [`comments_xml`].
    pub comments: Option<&'a str>,
    /// Whole `docProps/core.xml`; see [`core_xml`].
    pub core: Option<&'a str>,
}

/// Writes a `.docx` of these parts.
pub fn write_docx(path: &Path, parts: &DocxParts<'_>) {
    let file = std::fs::File::create(path).expect("create docx");
    let mut zip = zip::ZipWriter::new(file);
    let deflated =
        SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    let mut put = |name: &str, text: &str| {
        zip.start_file(name, deflated).unwrap();
        zip.write_all(text.as_bytes()).unwrap();
    };
    put("[Content_Types].xml", CONTENT_TYPES);
    let core_rel = if parts.core.is_some() {
        r#"<Relationship Id="rId2" Type="http://schemas.openxmlformats.org/package/2006/relationships/metadata/core-properties" Target="docProps/core.xml"/>"#
    } else {
        ""
    };
    put(
        "_rels/.rels",
        &format!(
            r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/>{core_rel}</Relationships>"#
        ),
    );
    let optional = [
        ("styles", "styles.xml", parts.styles),
        ("footnotes", "footnotes.xml", parts.footnotes),
        ("endnotes", "endnotes.xml", parts.endnotes),
        ("comments", "comments.xml", parts.comments),
    ];
    let mut rels = String::new();
    for (k, (kind, name, text)) in optional.iter().enumerate() {
        if let Some(text) = text {
            rels.push_str(&format!(
                r#"<Relationship Id="rId{}" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/{kind}" Target="{name}"/>"#,
                k + 1
            ));
            put(&format!("word/{name}"), text);
        }
    }
    rels.push_str(r#"<Relationship Id="rId9" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/hyperlink" Target="https://example.org/" TargetMode="External"/>"#);
    put(
        "word/_rels/document.xml.rels",
        &format!(
            r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">{rels}</Relationships>"#
        ),
    );
    put(
        "word/document.xml",
        &format!(
            r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:document xmlns:w="{W_NS}" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><w:body>{}<w:sectPr/></w:body></w:document>"#,
            parts.body
        ),
    );
    if let Some(core) = parts.core {
        put("docProps/core.xml", core);
    }
    zip.finish().unwrap();
}

const CONTENT_TYPES: &str = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>"#;

/// A paragraph of one run, with a paragraph style id when given.
pub fn p(style: Option<&str>, text: &str) -> String {
    let ppr =
        style.map(|s| format!(r#"<w:pPr><w:pStyle w:val="{s}"/></w:pPr>"#)).unwrap_or_default();
    format!(r#"<w:p>{ppr}<w:r><w:t xml:space="preserve">{text}</w:t></w:r></w:p>"#)
}

/// Styles as a German Word writes them: localised ids (`berschrift1`, `Titel`), English
/// built-in names (`heading 1`, `Title`); a custom `Kapitel` style based on heading 1, a
/// `Teil` style with only an outline level (level 2), a hidden character style `Geheim`, and
/// the default language `de-DE`.
pub const STYLES: &str = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:styles xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">
<w:docDefaults><w:rPrDefault><w:rPr><w:lang w:val="de-DE" w:eastAsia="en-US"/></w:rPr></w:rPrDefault></w:docDefaults>
<w:style w:type="paragraph" w:default="1" w:styleId="Standard"><w:name w:val="Normal"/></w:style>
<w:style w:type="paragraph" w:styleId="berschrift1"><w:name w:val="heading 1"/><w:basedOn w:val="Standard"/><w:pPr><w:outlineLvl w:val="0"/></w:pPr></w:style>
<w:style w:type="paragraph" w:styleId="berschrift2"><w:name w:val="heading 2"/><w:basedOn w:val="Standard"/><w:pPr><w:outlineLvl w:val="1"/></w:pPr></w:style>
<w:style w:type="paragraph" w:styleId="berschrift3"><w:name w:val="heading 3"/><w:basedOn w:val="Standard"/></w:style>
<w:style w:type="paragraph" w:styleId="Kapitel"><w:name w:val="Kapitel"/><w:basedOn w:val="berschrift1"/></w:style>
<w:style w:type="paragraph" w:styleId="Teil"><w:name w:val="Teil"/><w:basedOn w:val="Standard"/><w:pPr><w:outlineLvl w:val="1"/></w:pPr></w:style>
<w:style w:type="paragraph" w:styleId="Titel"><w:name w:val="Title"/><w:basedOn w:val="Standard"/></w:style>
<w:style w:type="character" w:styleId="Geheim"><w:name w:val="Geheim"/><w:rPr><w:vanish/></w:rPr></w:style>
</w:styles>"#;

/// `word/footnotes.xml` (`kind` `footnote`) or `word/endnotes.xml` (`endnote`): Word's two
/// separators (ids -1 and 0), then one note per (id, text).
pub fn notes_xml(kind: &str, notes: &[(&str, &str)]) -> String {
    let mut out = format!(
        r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:{kind}s xmlns:w="{W_NS}"><w:{kind} w:type="separator" w:id="-1"><w:p><w:r><w:separator/></w:r></w:p></w:{kind}><w:{kind} w:type="continuationSeparator" w:id="0"><w:p><w:r><w:continuationSeparator/></w:r></w:p></w:{kind}>"#
    );
    for (id, text) in notes {
        out.push_str(&format!(
            r#"<w:{kind} w:id="{id}"><w:p><w:r><w:{kind}Ref/></w:r><w:r><w:t xml:space="preserve"> {text}</w:t></w:r></w:p></w:{kind}>"#
        ));
    }
    out.push_str(&format!("</w:{kind}s>"));
    out
}

/// `word/comments.xml` with one comment per (id, text).
pub fn comments_xml(comments: &[(&str, &str)]) -> String {
    let mut out = format!(
        r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:comments xmlns:w="{W_NS}">"#
    );
    for (id, text) in comments {
        out.push_str(&format!(
            r#"<w:comment w:id="{id}" w:author="Ed" w:initials="E"><w:p><w:r><w:annotationRef/></w:r><w:r><w:t>{text}</w:t></w:r></w:p></w:comment>"#
        ));
    }
    out.push_str("</w:comments>");
    out
}

/// `docProps/core.xml` with the given title, creator and language (each left out when `None`).
pub fn core_xml(title: Option<&str>, creator: Option<&str>, language: Option<&str>) -> String {
    let field = |name: &str, v: Option<&str>| {
        v.map(|v| format!("<dc:{name}>{v}</dc:{name}>")).unwrap_or_default()
    };
    format!(
        r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:dcterms="http://purl.org/dc/terms/">{}{}{}<cp:lastModifiedBy>Someone Else</cp:lastModifiedBy></cp:coreProperties>"#,
        field("title", title),
        field("creator", creator),
        field("language", language)
    )
}
