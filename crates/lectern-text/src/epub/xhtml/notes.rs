//! The notes of a content document, collected before the book's documents are read so a note
//! can be read where it is referred to ([`crate::NotesPolicy::Inline`], `ChapterEnd`).

use quick_xml::events::Event;

use super::BLOCKS;
use crate::epub::package::{attr, local, reader, resolve_ref, xml_error};
use crate::epub::semantics;
use crate::policy::ReadPolicy;

/// The notes of a content document by id (`footnote`, `endnote`, `rearnote`, `note`), their
/// text without backlinks, markers or page numbers.
pub(crate) fn collect_notes(xml: &str) -> Result<Vec<(String, String)>, String> {
    let mut r = reader(xml);
    let mut out = Vec::new();
    // The note being read: (its depth, id, text); and the depth of a skipped subtree.
    let mut note: Option<(usize, String, String)> = None;
    let mut skip_from: Option<usize> = None;
    let mut depth = 0usize;
    let policy = ReadPolicy::default();
    loop {
        let event = r.read_event().map_err(|e| xml_error(&r, &e))?;
        match event {
            Event::Start(e) => {
                depth += 1;
                let name = local(&e);
                let m = semantics::meaning(&e, &name, &policy);
                if note.is_none() && m.note {
                    if let Some(id) = attr(&e, "id") {
                        note = Some((depth, id, String::new()));
                    }
                } else if note.is_some()
                    && skip_from.is_none()
                    && (m.silent || m.never.is_some() || m.noteref)
                {
                    skip_from = Some(depth);
                } else if note.is_some() && BLOCKS.contains(&name.as_str()) {
                    if let Some((_, _, t)) = note.as_mut() {
                        t.push(' ');
                    }
                }
            }
            Event::End(_) => {
                if skip_from == Some(depth) {
                    skip_from = None;
                }
                if note.as_ref().is_some_and(|(d, _, _)| *d == depth) {
                    let (_, id, text) = note.take().expect("a note");
                    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
                    if !text.is_empty() {
                        out.push((id, text));
                    }
                }
                depth = depth.saturating_sub(1);
            }
            Event::Text(t) if skip_from.is_none() => {
                if let Some((_, _, text)) = note.as_mut() {
                    text.push_str(&t.xml10_content());
                }
            }
            Event::GeneralRef(g) if skip_from.is_none() => {
                if let Some((_, _, text)) = note.as_mut() {
                    text.push_str(&resolve_ref(&g)?);
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    Ok(out)
}
