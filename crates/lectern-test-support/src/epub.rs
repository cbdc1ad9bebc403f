//! Real EPUB files built in the test: a ZIP container with `mimetype` stored first, then
//! `META-INF/container.xml`, the package document and the content documents, deflated.

use std::io::Write;
use std::path::Path;

use zip::write::SimpleFileOptions;

/// Writes an EPUB of `entries` (name, content); `mimetype` and the container come first.
pub fn write_epub(path: &Path, opf_path: &str, entries: &[(&str, &[u8])]) {
    let file = std::fs::File::create(path).expect("create epub");
    let mut zip = zip::ZipWriter::new(file);
    let stored = SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    let deflated =
        SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    zip.start_file("mimetype", stored).unwrap();
    zip.write_all(b"application/epub+zip").unwrap();
    zip.start_file("META-INF/container.xml", deflated).unwrap();
    let container = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">
  <rootfiles><rootfile full-path="{opf_path}" media-type="application/oebps-package+xml"/></rootfiles>
</container>"#
    );
    zip.write_all(container.as_bytes()).unwrap();
    for (name, bytes) in entries {
        zip.start_file(*name, deflated).unwrap();
        zip.write_all(bytes).unwrap();
    }
    zip.finish().unwrap();
}

/// An XHTML content document with `body` inside `<body>` (EPUB 3 namespaces declared).
pub fn xhtml(title: &str, body: &str) -> String {
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE html>
<html xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops">
<head><title>{title}</title><link rel="stylesheet" href="style.css"/></head>
<body>{body}</body>
</html>"#
    )
}

/// The header of a 1×1 JPEG (start of image, a baseline frame header, end of image): what a
/// cover's checks read (its type and size), not a picture to decode.
pub const JPEG_HEADER: &[u8] = &[
    0xff, 0xd8, 0xff, 0xc0, 0x00, 0x11, 0x08, 0x00, 0x01, 0x00, 0x01, 0x03, 0x01, 0x22, 0x00, 0x02,
    0x11, 0x01, 0x03, 0x11, 0x01, 0xff, 0xd9,
];

/// A 1×1 PNG (the cover).
pub const PNG: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d, 0x49, 0x48, 0x44, 0x52, 0, 0, 0,
    1, 0, 0, 0, 1, 8, 6, 0, 0, 0, 0x1f, 0x15, 0xc4, 0x89, 0, 0, 0, 0x0a, 0x49, 0x44, 0x41, 0x54,
    0x78, 0x9c, 0x63, 0, 1, 0, 0, 5, 0, 1, 0x0d, 0x0a, 0x2d, 0xb4, 0, 0, 0, 0, 0x49, 0x45, 0x4e,
    0x44, 0xae, 0x42, 0x60, 0x82,
];

/// An EPUB 3 book: a cover page (non-linear), a title page (front matter by landmarks),
/// chapter 1 over two files, chapters 2 and 3 in one file (the nav points at an anchor), a
/// notes page (non-linear), a nav document, metadata and a cover image.
pub fn epub3(path: &Path) {
    let opf = r#"<?xml version="1.0" encoding="UTF-8"?>
<package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="id">
  <metadata xmlns:dc="http://purl.org/dc/elements/1.1/">
    <dc:identifier id="id">urn:uuid:1234</dc:identifier>
    <dc:title>The Test of Time</dc:title>
    <dc:creator>Ada Writer</dc:creator>
    <dc:creator>Bo Second</dc:creator>
    <dc:language>en</dc:language>
  </metadata>
  <manifest>
    <item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>
    <item id="cover-img" href="images/cover.png" media-type="image/png" properties="cover-image"/>
    <item id="cover" href="text/cover.xhtml" media-type="application/xhtml+xml"/>
    <item id="title" href="text/title.xhtml" media-type="application/xhtml+xml"/>
    <item id="c1a" href="text/ch1a.xhtml" media-type="application/xhtml+xml"/>
    <item id="c1b" href="text/ch1%20b.xhtml" media-type="application/xhtml+xml"/>
    <item id="c23" href="text/ch23.xhtml" media-type="application/xhtml+xml"/>
    <item id="notes" href="text/notes.xhtml" media-type="application/xhtml+xml"/>
  </manifest>
  <spine>
    <itemref idref="cover" linear="no"/>
    <itemref idref="title"/>
    <itemref idref="c1a"/>
    <itemref idref="c1b"/>
    <itemref idref="c23"/>
    <itemref idref="notes" linear="no"/>
  </spine>
</package>"#;
    let nav = xhtml(
        "Contents",
        r#"<nav epub:type="toc" id="toc"><h1>Contents</h1><ol>
  <li><a href="text/title.xhtml">Title Page</a></li>
  <li><a href="text/ch1a.xhtml">Chapter 1: <em>Arrival</em></a></li>
  <li><a href="text/ch23.xhtml">Chapter 2</a>
    <ol><li><a href="text/ch23.xhtml#c3">Chapter 3</a></li></ol></li>
</ol></nav>
<nav epub:type="landmarks"><ol>
  <li><a epub:type="titlepage" href="text/title.xhtml">Title</a></li>
  <li><a epub:type="bodymatter" href="text/ch1a.xhtml">Start</a></li>
</ol></nav>"#,
    );
    let cover = xhtml("Cover", r#"<p><img src="../images/cover.png" alt="Cover"/></p>"#);
    let title = xhtml("Title", "<h1>The Test of Time</h1><p>by Ada Writer</p>");
    let c1a = xhtml(
        "Chapter 1",
        r##"<h1>Chapter 1: Arrival</h1><p>The train came in at dusk.<a epub:type="noteref" href="notes.xhtml#n1">1</a></p>
<p>Nobody met it.</p>"##,
    );
    let c1b = xhtml("Chapter 1", "<p>Later, the rain began.</p><p>It did not stop.</p>");
    let c23 = xhtml(
        "Chapters 2 and 3",
        r#"<section><h1>Chapter 2</h1><p>Morning was grey.</p></section>
<section id="c3"><h1>Chapter 3</h1><p>Evening was gold.</p><p>The end.</p></section>"#,
    );
    let notes =
        xhtml("Notes", r#"<aside epub:type="footnote" id="n1"><p>A real train.</p></aside>"#);
    write_epub(
        path,
        "OEBPS/content.opf",
        &[
            ("OEBPS/content.opf", opf.as_bytes()),
            ("OEBPS/nav.xhtml", nav.as_bytes()),
            ("OEBPS/images/cover.png", PNG),
            ("OEBPS/text/cover.xhtml", cover.as_bytes()),
            ("OEBPS/text/title.xhtml", title.as_bytes()),
            ("OEBPS/text/ch1a.xhtml", c1a.as_bytes()),
            ("OEBPS/text/ch1 b.xhtml", c1b.as_bytes()),
            ("OEBPS/text/ch23.xhtml", c23.as_bytes()),
            ("OEBPS/text/notes.xhtml", notes.as_bytes()),
        ],
    );
}

/// An EPUB 2 book: NCX navigation, a guide, `<meta name="cover">`, XHTML 1.1 with entities,
/// files at the container's root.
pub fn epub2(path: &Path) {
    let opf = r#"<?xml version="1.0" encoding="UTF-8"?>
<package xmlns="http://www.idpf.org/2007/opf" version="2.0" unique-identifier="id">
  <metadata xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:opf="http://www.idpf.org/2007/opf">
    <dc:title>Old &amp; New</dc:title>
    <dc:creator opf:role="aut">C. Author</dc:creator>
    <dc:language>fr</dc:language>
    <meta name="cover" content="cimg"/>
  </metadata>
  <manifest>
    <item id="ncx" href="toc.ncx" media-type="application/x-dtbncx+xml"/>
    <item id="cimg" href="cover.jpg" media-type="image/jpeg"/>
    <item id="copy" href="copyright.html" media-type="application/xhtml+xml"/>
    <item id="p1" href="part1.html" media-type="application/xhtml+xml"/>
    <item id="p2" href="part2.html" media-type="application/xhtml+xml"/>
  </manifest>
  <spine toc="ncx">
    <itemref idref="copy"/>
    <itemref idref="p1"/>
    <itemref idref="p2"/>
  </spine>
  <guide>
    <reference type="copyright-page" title="Copyright" href="copyright.html"/>
    <reference type="text" title="Start" href="part1.html"/>
  </guide>
</package>"#;
    let ncx = r#"<?xml version="1.0" encoding="UTF-8"?>
<ncx xmlns="http://www.daisy.org/z3986/2005/ncx/" version="2005-1">
  <head><meta name="dtb:uid" content="id"/></head>
  <docTitle><text>Old &amp; New</text></docTitle>
  <navMap>
    <navPoint id="n0" playOrder="1"><navLabel><text>Copyright</text></navLabel><content src="copyright.html"/></navPoint>
    <navPoint id="n1" playOrder="2"><navLabel><text>Part One</text></navLabel><content src="part1.html"/>
      <navPoint id="n2" playOrder="3"><navLabel><text>Part Two</text></navLabel><content src="part2.html#top"/></navPoint>
    </navPoint>
  </navMap>
</ncx>"#;
    let doctype = r#"<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.1//EN" "http://www.w3.org/TR/xhtml11/DTD/xhtml11.dtd">
<html xmlns="http://www.w3.org/1999/xhtml"><head><title>x</title></head><body>"#;
    let copyright =
        format!("{doctype}<p>&copy; 1901 C.&nbsp;Author. All rights reserved.</p></body></html>");
    let part1 = format!(
        "{doctype}<h2>Part One</h2><p>It began&hellip; quietly&mdash;as things do.</p>\
         <div><p>Second paragraph.</p></div></body></html>"
    );
    let part2 = format!(
        "{doctype}<div id=\"top\"><h2>Part Two</h2><p>Then it ended.</p></div></body></html>"
    );
    write_epub(
        path,
        "content.opf",
        &[
            ("content.opf", opf.as_bytes()),
            ("toc.ncx", ncx.as_bytes()),
            ("cover.jpg", JPEG_HEADER),
            ("copyright.html", copyright.as_bytes()),
            ("part1.html", part1.as_bytes()),
            ("part2.html", part2.as_bytes()),
        ],
    );
}

/// The files of an unpacked tree that are not part of the book: the extracts' notes.
const NOT_IN_BOOK: &[&str] = &["SOURCE.md", "EXPECTED.md"];

/// Zips the unpacked EPUB tree `dir` into the EPUB `out`: `mimetype` first and stored, then
/// every other file deflated, in byte order of their paths (`/`-separated), so the same tree
/// always makes the same bytes. `SOURCE.md` and `EXPECTED.md` at the top are left out.
pub fn pack_tree(dir: &Path, out: &Path) {
    fn walk(root: &Path, dir: &Path, files: &mut Vec<(String, std::path::PathBuf)>) {
        for entry in std::fs::read_dir(dir).expect("read the tree") {
            let path = entry.expect("read the tree").path();
            if path.is_dir() {
                walk(root, &path, files);
            } else {
                let rel = path.strip_prefix(root).expect("under the root");
                let name = rel
                    .components()
                    .map(|c| c.as_os_str().to_str().expect("UTF-8 file names"))
                    .collect::<Vec<_>>()
                    .join("/");
                files.push((name, path));
            }
        }
    }
    let mut files = Vec::new();
    walk(dir, dir, &mut files);
    files.retain(|(name, _)| name != "mimetype" && !NOT_IN_BOOK.contains(&name.as_str()));
    files.sort();
    let mimetype = std::fs::read(dir.join("mimetype")).expect("the tree has a mimetype");
    let file = std::fs::File::create(out).expect("create epub");
    let mut zip = zip::ZipWriter::new(file);
    let fixed = zip::DateTime::default();
    let stored = SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Stored)
        .last_modified_time(fixed);
    let deflated = SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .last_modified_time(fixed);
    zip.start_file("mimetype", stored).unwrap();
    zip.write_all(&mimetype).unwrap();
    for (name, path) in files {
        zip.start_file(name, deflated).unwrap();
        zip.write_all(&std::fs::read(&path).expect("read a file of the tree")).unwrap();
    }
    zip.finish().unwrap();
}

/// The directory of the corpus extract `name` (`fixtures/books/<name>`, an unpacked EPUB).
pub fn corpus_book(name: &str) -> std::path::PathBuf {
    corpus_dir().join(name)
}

/// `fixtures/books`: one directory per corpus extract (and `docx/`, not an EPUB).
pub fn corpus_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/books")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pack_tree_puts_the_mimetype_first_stored_and_is_deterministic() {
        let tmp = std::env::temp_dir().join(format!("lectern-pack-{}", std::process::id()));
        std::fs::create_dir_all(&tmp).unwrap();
        let (a, b) = (tmp.join("a.epub"), tmp.join("b.epub"));
        pack_tree(&corpus_book("wasteland"), &a);
        pack_tree(&corpus_book("wasteland"), &b);
        let bytes = std::fs::read(&a).unwrap();
        assert_eq!(bytes, std::fs::read(&b).unwrap());
        // The first local header names `mimetype`, stored (method 0), its content right after.
        assert_eq!(&bytes[0..4], b"PK\x03\x04");
        assert_eq!(u16::from_le_bytes([bytes[8], bytes[9]]), 0);
        assert_eq!(&bytes[30..38], b"mimetype");
        assert_eq!(&bytes[38..58], b"application/epub+zip");
        let mut zip = zip::ZipArchive::new(std::fs::File::open(&a).unwrap()).unwrap();
        let names: Vec<String> =
            (0..zip.len()).map(|i| zip.by_index(i).unwrap().name().unwrap().to_string()).collect();
        assert!(names.iter().any(|n| n == "EPUB/wasteland.opf"), "{names:?}");
        assert!(!names.iter().any(|n| n.ends_with(".md")), "{names:?}");
        assert!(zip.by_name("META-INF/container.xml").is_ok());
        std::fs::remove_dir_all(&tmp).unwrap();
    }
}
