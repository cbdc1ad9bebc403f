//! Media Overlay documents (SMIL 3.0 as EPUB 3 profiles it), their clock values, and the
//! relative hrefs between entries of the container.

use percent_encoding::{AsciiSet, CONTROLS, utf8_percent_encode};

/// One `<par>`: the text's href (`doc.xhtml#id`, relative to the SMIL file), the audio's href,
/// and the clip, milliseconds.
pub(super) struct Par {
    pub text: String,
    pub audio: String,
    pub begin_ms: u64,
    pub end_ms: u64,
}

/// The SMIL document of one content document: its pars in reading order, straight in the
/// body (a `<seq>` would need a fragment of the document to point at, and adds nothing here).
pub(super) fn document(pars: &[Par]) -> String {
    let mut out = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <smil xmlns=\"http://www.w3.org/ns/SMIL\" xmlns:epub=\"http://www.idpf.org/2007/ops\" \
         version=\"3.0\">\n<body>\n",
    );
    for (k, p) in pars.iter().enumerate() {
        out.push_str(&format!(
            "<par id=\"par{}\"><text src=\"{}\"/><audio src=\"{}\" clipBegin=\"{}\" \
             clipEnd=\"{}\"/></par>\n",
            k + 1,
            attr(&p.text),
            attr(&p.audio),
            clock(p.begin_ms),
            clock(p.end_ms)
        ));
    }
    out.push_str("</body>\n</smil>\n");
    out
}

/// A SMIL full clock value, `H:MM:SS.mmm`.
pub(super) fn clock(ms: u64) -> String {
    let (s, ms) = (ms / 1000, ms % 1000);
    format!("{}:{:02}:{:02}.{ms:03}", s / 3600, s / 60 % 60, s % 60)
}

/// Milliseconds of seconds, to the nearest.
pub(super) fn millis(seconds: f64) -> u64 {
    (seconds * 1000.0).round().max(0.0) as u64
}

fn attr(value: &str) -> String {
    quick_xml::escape::escape(value).into_owned()
}

/// What a path segment of an href escapes (a space, `#`, `%`, `?`, quotes and brackets).
const HREF: &AsciiSet =
    &CONTROLS.add(b' ').add(b'"').add(b'#').add(b'%').add(b'<').add(b'>').add(b'?').add(b'`');

/// The href from the entry `from` to the entry `to` (both full paths in the container),
/// percent-encoded.
pub(super) fn relative(from: &str, to: &str) -> String {
    let from_dir: Vec<&str> = from.split('/').rev().skip(1).collect::<Vec<_>>();
    let from_dir: Vec<&str> = from_dir.into_iter().rev().collect();
    let to_parts: Vec<&str> = to.split('/').collect();
    let common =
        from_dir.iter().zip(&to_parts[..to_parts.len() - 1]).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<String> = vec!["..".to_string(); from_dir.len() - common];
    parts.extend(to_parts[common..].iter().map(|p| utf8_percent_encode(p, HREF).to_string()));
    parts.join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_values_are_full_clock_values() {
        assert_eq!(clock(0), "0:00:00.000");
        assert_eq!(clock(3_723_045), "1:02:03.045");
        assert_eq!(millis(1.2345), 1235);
    }

    #[test]
    fn hrefs_are_relative_and_encoded() {
        assert_eq!(
            relative("OEBPS/lectern/a.smil", "OEBPS/text/ch 1.xhtml"),
            "../text/ch%201.xhtml"
        );
        assert_eq!(relative("OEBPS/content.opf", "OEBPS/lectern/a.mp3"), "lectern/a.mp3");
        assert_eq!(relative("content.opf", "text/c.xhtml"), "text/c.xhtml");
        assert_eq!(relative("a/b/c.smil", "a/b/d.mp3"), "d.mp3");
    }
}
