//! Small quick-xml helpers for WordprocessingML parts. Elements and attributes are matched by
//! local name, so documents that bind the main namespace to another prefix (or use the Strict
//! namespace) read the same. Errors are reasons; the caller names the entry.

use quick_xml::Reader;
use quick_xml::events::{BytesRef, BytesStart};

/// A reader over a part's text.
pub(super) fn reader(xml: &str) -> Reader<&[u8]> {
    Reader::from_reader(xml.as_bytes())
}

/// A failure inside one XML part, as a reason with the byte offset.
pub(super) fn xml_error(reader: &Reader<&[u8]>, e: &quick_xml::Error) -> String {
    format!("malformed XML at byte {}: {e}", reader.error_position())
}

/// The element's local name (`w:p` → `p`).
pub(super) fn local(e: &BytesStart<'_>) -> String {
    AsRef::<str>::as_ref(&e.local_name()).to_string()
}

/// An attribute's value (entities resolved), by local name (`w:val` → `val`).
pub(super) fn attr(e: &BytesStart<'_>, name: &str) -> Option<String> {
    e.attributes().flatten().find(|a| AsRef::<str>::as_ref(&a.key.local_name()) == name).and_then(
        |a| a.normalized_value(quick_xml::XmlVersion::Implicit1_0).ok().map(|v| v.into_owned()),
    )
}

/// An OOXML on/off property (`<w:vanish/>`, `<w:tblHeader w:val="false"/>`): on unless its
/// `val` says otherwise.
pub(super) fn is_on(e: &BytesStart<'_>) -> bool {
    !matches!(attr(e, "val").as_deref(), Some("false" | "0" | "off"))
}

/// The text an entity or character reference stands for.
pub(super) fn resolve_ref(r: &BytesRef<'_>) -> Result<String, String> {
    if let Some(c) = r.resolve_char_ref().map_err(|e| format!("bad character reference: {e}"))? {
        return Ok(c.to_string());
    }
    quick_xml::escape::resolve_predefined_entity(r)
        .map(str::to_string)
        .ok_or_else(|| format!("unknown entity `&{};`", &**r))
}
