//! Hostile documents (issue #49): every archive entry and image is read within
//! [`lectern_text::InputLimits`], so a small file that inflates to gigabytes is refused, naming
//! the entry, before it is inflated; a cover that is no JPEG or PNG is left out with a warning.

use std::io::Write;
use std::path::Path;

use lectern_test_support::epub::{PNG, write_epub, xhtml};
use lectern_text::ReadPolicy;
use zip::write::SimpleFileOptions;

const OPF: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="id">
  <metadata xmlns:dc="http://purl.org/dc/elements/1.1/">
    <dc:identifier id="id">urn:uuid:1</dc:identifier><dc:title>Bomb</dc:title>
    <dc:language>en</dc:language>
  </metadata>
  <manifest>
    <item id="cover" href="cover.png" media-type="image/png" properties="cover-image"/>
    <item id="c1" href="c1.xhtml" media-type="application/xhtml+xml"/>
  </manifest>
  <spine><itemref idref="c1"/></spine>
</package>"#;

/// A deflated entry of `n` zero bytes, written without holding them in memory.
fn zeros_entry(zip: &mut zip::ZipWriter<std::fs::File>, name: &str, n: usize) {
    let opts = SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .large_file(n > u32::MAX as usize);
    zip.start_file(name, opts).unwrap();
    let block = vec![0u8; 1 << 20];
    for _ in 0..n >> 20 {
        zip.write_all(&block).unwrap();
    }
}

/// An EPUB whose `bomb` entry is `n` zeros; the other entries are a small valid book.
fn bomb_epub(path: &Path, bomb: &str, n: usize) {
    let mut zip = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
    let stored = SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    zip.start_file("mimetype", stored).unwrap();
    zip.write_all(b"application/epub+zip").unwrap();
    let small = |zip: &mut zip::ZipWriter<std::fs::File>, name: &str, bytes: &[u8]| {
        zip.start_file(name, SimpleFileOptions::default()).unwrap();
        zip.write_all(bytes).unwrap();
    };
    small(
        &mut zip,
        "META-INF/container.xml",
        br#"<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles><rootfile full-path="content.opf" media-type="application/oebps-package+xml"/></rootfiles></container>"#,
    );
    small(&mut zip, "content.opf", OPF.as_bytes());
    for (name, bytes) in
        [("cover.png", PNG.to_vec()), ("c1.xhtml", xhtml("One", "<p>Hello.</p>").into_bytes())]
    {
        if name == bomb {
            zeros_entry(&mut zip, name, n);
        } else {
            small(&mut zip, name, &bytes);
        }
    }
    zip.finish().unwrap();
}

#[test]
fn an_entry_that_inflates_a_thousandfold_is_refused_by_name() {
    let tmp = tempfile::tempdir().unwrap();
    for entry in ["c1.xhtml", "cover.png"] {
        let book = tmp.path().join("bomb.epub");
        bomb_epub(&book, entry, 256 << 20);
        assert!(std::fs::metadata(&book).unwrap().len() < 1 << 20, "a small file");
        let err = lectern_text::epub::read(&book, &ReadPolicy::default()).unwrap_err().to_string();
        assert!(err.contains(&format!("entry `{entry}`")), "{err}");
        assert!(err.contains("inflates") && err.contains("LECTERN_MAX_RATIO"), "{err}");
    }
}

#[test]
fn a_cover_that_is_no_jpeg_or_png_is_left_out_with_a_warning() {
    let tmp = tempfile::tempdir().unwrap();
    let book = tmp.path().join("book.epub");
    let chapter = xhtml("One", "<p>Hello there.</p>");
    write_epub(
        &book,
        "content.opf",
        &[
            ("content.opf", OPF.as_bytes()),
            ("cover.png", b"GIF89a not really a png"),
            ("c1.xhtml", chapter.as_bytes()),
        ],
    );
    let doc = lectern_text::epub::read(&book, &ReadPolicy::default()).unwrap();
    assert!(doc.info.cover.is_none());
    assert_eq!(doc.info.warnings.len(), 1, "{:?}", doc.info.warnings);
    assert!(doc.info.warnings[0].contains("not a JPEG or PNG"), "{:?}", doc.info.warnings);
}

#[test]
fn a_manuscript_must_be_a_regular_file_of_bounded_size() {
    let opts = lectern_text::ParseOptions::default();
    let err = lectern_text::Manuscript::load(Path::new("/dev/zero"), &opts).unwrap_err();
    assert!(err.to_string().contains("not a regular file (a device)"), "{err}");
    let tmp = tempfile::tempdir().unwrap();
    let fifo = tmp.path().join("book.txt");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    // Refused without opening it: opening a FIFO with no writer would block.
    let err = lectern_text::Manuscript::load(&fifo, &opts).unwrap_err();
    assert!(err.to_string().contains("(a FIFO)"), "{err}");
}
