//! Read-along editions: an EPUB 3 book rewritten with its narration and Media Overlays, so a
//! reading system highlights each segment's text while its audio plays.
//!
//! The book's own files are kept; each content document that holds narrated text gains a
//! `<span id>` around each segment's text (`anchors`) and a link to a small style sheet for
//! the active class, and a SMIL document of `<par>`s pairing those ids with clips of the
//! audio. The package document gains the audio, overlays and style sheet in its manifest,
//! `media-overlay` on the documents, and `media:duration` (per overlay and in total),
//! `media:active-class`, `media:narrator` and the synthetic-narration disclosure in its
//! metadata. Every other entry is copied as it was stored.

mod anchors;
mod opf;
mod smil;
mod tree;

use std::collections::{BTreeMap, HashSet};
use std::io::Write;
use std::path::Path;

use zip::write::SimpleFileOptions;

use super::package::Package;
use super::rootfile;
use crate::archive::{Archive as Container, ArchiveError, ArchiveKind};
use anchors::{Doc, Found};
use opf::{NewItem, NewMeta, PackageEdit};

/// One audio file of the edition (a chapter, or a part of one), in reading order.
#[derive(Debug, Clone)]
pub struct OverlayAudio {
    /// Its file name (kept to ASCII letters, digits and `-` in the book).
    pub name: String,
    /// `audio/mpeg` or `audio/mp4` (EPUB's core audio types).
    pub media_type: String,
    pub bytes: Vec<u8>,
}

/// A segment heard in the audio: its printed text, the audio file (index into
/// [`ReadAlong::audio`]) and its clip there, seconds.
#[derive(Debug, Clone)]
pub struct OverlayClip {
    pub text: String,
    pub audio: usize,
    pub begin_s: f64,
    pub end_s: f64,
}

/// What a read-along edition is made of besides the book.
#[derive(Debug, Clone, Default)]
pub struct ReadAlong {
    pub audio: Vec<OverlayAudio>,
    /// The segments in reading order.
    pub clips: Vec<OverlayClip>,
    /// Who narrates (`media:narrator`), where known.
    pub narrator: Option<String>,
    /// The synthetic-narration disclosure: (name, value) pairs, each written as a
    /// `lectern:NAME` meta (the vocabulary [`VOCABULARY`] declares).
    pub disclosure: Vec<(String, String)>,
}

/// Where a segment's text was anchored.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Anchor {
    /// The clip's index in [`ReadAlong::clips`].
    pub clip: usize,
    /// The content document (its path in the container) and the fragment id.
    pub document: String,
    pub id: String,
}

/// What was written.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct ReadAlongReport {
    pub anchors: Vec<Anchor>,
    /// Clips whose text was not found in the book (heard, but not highlighted).
    pub unanchored: Vec<usize>,
    /// The SMIL documents written (paths in the container).
    pub overlays: Vec<String>,
}

/// The vocabulary of Lectern's own package metadata (the disclosure).
pub const VOCABULARY: (&str, &str) = ("lectern", "https://lectern.invalid/vocab#");
/// The class a reading system gives the text being read (`media:active-class`).
pub const ACTIVE_CLASS: &str = "-epub-media-overlay-active";
/// Folder of the edition's own files, beside the package document.
const FOLDER: &str = "lectern";

/// Writes the read-along edition of the EPUB `source` to `out`; see the module docs.
pub fn write(source: &Path, out: &Path, book: &ReadAlong) -> Result<ReadAlongReport, ArchiveError> {
    let mut container = Container::open(source, ArchiveKind::Epub)?;
    let opf_path = rootfile(&mut container)?;
    let opf_text = container.text(&opf_path, "the package document")?;
    let pkg =
        Package::parse(&opf_text, &opf_path).map_err(|r| container.entry_error(&opf_path, r))?;
    let (mut docs, names) = content_documents(&mut container, &pkg)?;
    let texts: Vec<&str> = book.clips.iter().map(|c| c.text.as_str()).collect();
    let found = anchors::find_all(&docs, &texts);
    let edition = Edition::new(&opf_path);
    let mut report = ReadAlongReport::default();
    let mut rewritten = BTreeMap::new();
    for (d, doc) in docs.iter_mut().enumerate() {
        let anchored = anchor_document(doc, d, &names[d], &found, &edition);
        if let Some((xhtml, anchors)) = anchored {
            rewritten.insert(names[d].clone(), xhtml.into_bytes());
            report.anchors.extend(anchors);
        }
    }
    let anchored: HashSet<usize> = report.anchors.iter().map(|a| a.clip).collect();
    report.unanchored = (0..book.clips.len()).filter(|k| !anchored.contains(k)).collect();
    let (overlays, edit) = edition.overlays(&report.anchors, book);
    report.overlays = overlays.iter().map(|(path, _)| path.clone()).collect();
    let opf_new = opf::rewrite(&opf_text, &opf_path, &edit)
        .map_err(|r| container.entry_error(&opf_path, r))?;
    rewritten.insert(opf_path.clone(), opf_new.into_bytes());
    let mut added: Vec<(String, Vec<u8>)> =
        overlays.into_iter().map(|(p, s)| (p, s.into_bytes())).collect();
    added.push((edition.css.clone(), STYLE_SHEET.as_bytes().to_vec()));
    for (k, audio) in book.audio.iter().enumerate() {
        added.push((edition.audio_path(k, audio), audio.bytes.clone()));
    }
    write_zip(source, out, &rewritten, &added).map_err(|reason| ArchiveError::Entry {
        path: out.to_path_buf(),
        entry: "(the read-along edition being written)".into(),
        reason,
    })?;
    Ok(report)
}

/// The linear content documents of the spine, parsed, with their paths (a navigation document
/// in the spine too: where the book reads it, its entries are segments).
fn content_documents(
    container: &mut Container,
    pkg: &Package,
) -> Result<(Vec<Doc>, Vec<String>), ArchiveError> {
    let mut docs = Vec::new();
    let mut names = Vec::new();
    for item in pkg.spine.iter().filter(|i| i.linear) {
        let xml = container.text(&item.href, "the spine lists it")?;
        let tree = tree::parse(&xml).map_err(|r| container.entry_error(&item.href, r))?;
        docs.push(Doc::new(tree));
        names.push(item.href.clone());
    }
    Ok((docs, names))
}

/// Anchors the segments `found` in document `d` (at `name`) and links the style sheet: the
/// rewritten XHTML and its anchors, or `None` when no segment is in it (it stays as it was).
fn anchor_document(
    doc: &mut Doc,
    d: usize,
    name: &str,
    found: &[Option<Found>],
    edition: &Edition,
) -> Option<(String, Vec<Anchor>)> {
    let here: Vec<(usize, Found)> = found
        .iter()
        .enumerate()
        .filter_map(|(k, f)| f.filter(|f| f.doc == d).map(|f| (k, f)))
        .collect();
    if here.is_empty() {
        return None;
    }
    let ids = anchors::anchor(doc, &here);
    link_style_sheet(&mut doc.tree, &smil::relative(name, &edition.css));
    let mut xhtml = String::new();
    doc.tree.write(&mut xhtml);
    let list =
        ids.into_iter().map(|(clip, id)| Anchor { clip, document: name.to_string(), id }).collect();
    Some((xhtml, list))
}

/// The style sheet of the active class: the text being read, highlighted.
const STYLE_SHEET: &str =
    ".-epub-media-overlay-active { background-color: #fff0a0; color: inherit; }\n";

/// Where the edition's own files go, beside the package document.
struct Edition {
    /// The package document's folder, with its `/` (empty at the root).
    base: String,
    opf_path: String,
    css: String,
}

impl Edition {
    fn new(opf_path: &str) -> Self {
        let base = opf_path.rfind('/').map_or(String::new(), |k| opf_path[..=k].to_string());
        Self { css: format!("{base}{FOLDER}/read-along.css"), base, opf_path: opf_path.into() }
    }

    fn audio_path(&self, k: usize, audio: &OverlayAudio) -> String {
        let stem: String = audio
            .name
            .rsplit_once('.')
            .map_or(audio.name.as_str(), |(s, _)| s)
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' })
            .collect();
        let ext = if audio.media_type == "audio/mpeg" { "mp3" } else { "m4a" };
        // Delivered names are numbered and unique; the number keeps a renamed one unique too.
        let stem = stem.trim_matches('-');
        match stem.split_once('-') {
            Some((n, _)) if n.chars().all(|c| c.is_ascii_digit()) => {
                format!("{}{FOLDER}/audio/{stem}.{ext}", self.base)
            }
            _ => format!("{}{FOLDER}/audio/{:02}-{stem}.{ext}", self.base, k + 1),
        }
    }

    /// The SMIL documents (path, text) of the anchored documents, in reading order, and the
    /// package edit that lists them with the audio, style sheet and metadata.
    fn overlays(
        &self,
        anchors: &[Anchor],
        book: &ReadAlong,
    ) -> (Vec<(String, String)>, PackageEdit) {
        let mut edit = PackageEdit {
            overlays: Vec::new(),
            items: Vec::new(),
            metas: Vec::new(),
            prefix: (VOCABULARY.0.into(), VOCABULARY.1.into()),
        };
        let mut files = Vec::new();
        let mut total_ms = 0;
        for (k, (doc, list)) in by_document(anchors).iter().enumerate() {
            let id = format!("lectern-mo-{}", k + 1);
            let path = format!("{}{FOLDER}/overlays/{:03}.smil", self.base, k + 1);
            let pars: Vec<smil::Par> = list.iter().map(|a| self.par(&path, doc, a, book)).collect();
            // An overlay lasts as long as its clips; the book, as its overlays.
            let duration: u64 = pars.iter().map(|p| p.end_ms.saturating_sub(p.begin_ms)).sum();
            total_ms += duration;
            edit.metas.push(meta("media:duration", Some(&id), smil::clock(duration)));
            files.push((path.clone(), smil::document(&pars)));
            edit.items.push(self.item(&id, &path, "application/smil+xml"));
            edit.overlays.push((doc.clone(), id));
        }
        for (k, audio) in book.audio.iter().enumerate() {
            let id = format!("lectern-audio-{}", k + 1);
            edit.items.push(self.item(&id, &self.audio_path(k, audio), &audio.media_type));
        }
        edit.items.push(self.item("lectern-read-along-css", &self.css, "text/css"));
        edit.metas.insert(0, meta("media:duration", None, smil::clock(total_ms)));
        edit.metas.extend(book_metas(book));
        (files, edit)
    }

    /// The `<par>` of an anchor, in the SMIL document at `smil_path`.
    fn par(&self, smil_path: &str, doc: &str, anchor: &Anchor, book: &ReadAlong) -> smil::Par {
        let clip = &book.clips[anchor.clip];
        let audio = self.audio_path(clip.audio, &book.audio[clip.audio]);
        smil::Par {
            text: format!("{}#{}", smil::relative(smil_path, doc), anchor.id),
            audio: smil::relative(smil_path, &audio),
            begin_ms: smil::millis(clip.begin_s),
            end_ms: smil::millis(clip.end_s),
        }
    }

    fn item(&self, id: &str, path: &str, media_type: &str) -> NewItem {
        NewItem {
            id: id.into(),
            href: smil::relative(&self.opf_path, path),
            media_type: media_type.into(),
        }
    }
}

/// The anchors grouped by document, in reading order.
fn by_document(anchors: &[Anchor]) -> Vec<(String, Vec<&Anchor>)> {
    let mut by_doc: Vec<(String, Vec<&Anchor>)> = Vec::new();
    for a in anchors {
        match by_doc.last_mut() {
            Some((doc, list)) if *doc == a.document => list.push(a),
            _ => by_doc.push((a.document.clone(), vec![a])),
        }
    }
    by_doc
}

/// The book's metadata besides durations: the active class, the narrator, the disclosure.
fn book_metas(book: &ReadAlong) -> Vec<NewMeta> {
    let mut metas = vec![meta("media:active-class", None, ACTIVE_CLASS.into())];
    if let Some(narrator) = book.narrator.as_ref().filter(|n| !n.trim().is_empty()) {
        metas.push(meta("media:narrator", None, narrator.clone()));
    }
    for (name, value) in &book.disclosure {
        metas.push(meta(&format!("{}:{name}", VOCABULARY.0), None, value.clone()));
    }
    metas
}

fn meta(property: &str, refines: Option<&str>, value: String) -> NewMeta {
    NewMeta { property: property.into(), refines: refines.map(str::to_string), value }
}

/// Adds `<link rel="stylesheet">` to the style sheet at `href` in the document's head.
fn link_style_sheet(root: &mut tree::Element, href: &str) {
    let Some(path) = root.find_path("head") else { return };
    if let Some(head) = root.at_mut(&path) {
        let href = quick_xml::escape::escape(href);
        head.children.push(tree::Node::Raw(format!(
            "<link rel=\"stylesheet\" type=\"text/css\" href=\"{href}\"/>"
        )));
    }
}

/// Writes the edition: `mimetype` first and stored (as OCF requires), every entry of
/// `source` (the `rewritten` ones with their new bytes, the others copied as stored), then
/// the `added` ones.
fn write_zip(
    source: &Path,
    out: &Path,
    rewritten: &BTreeMap<String, Vec<u8>>,
    added: &[(String, Vec<u8>)],
) -> Result<(), String> {
    let reader = std::fs::File::open(source).map_err(|e| e.to_string())?;
    let mut input = zip::ZipArchive::new(reader).map_err(|e| e.to_string())?;
    let file = std::fs::File::create(out).map_err(|e| format!("cannot create it: {e}"))?;
    let mut zip = zip::ZipWriter::new(file);
    let stored = SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    let deflated =
        SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    let z = |e: zip::result::ZipError| e.to_string();
    zip.start_file("mimetype", stored).map_err(z)?;
    zip.write_all(b"application/epub+zip").map_err(|e| e.to_string())?;
    for k in 0..input.len() {
        let entry = input.by_index_raw(k).map_err(z)?;
        let name = entry.name().map_err(z)?.into_owned();
        if name == "mimetype" || added.iter().any(|(a, _)| *a == name) {
            if name != "mimetype" {
                return Err(format!("the book already has an entry `{name}`"));
            }
            continue;
        }
        match rewritten.get(&name) {
            Some(bytes) => {
                drop(entry);
                zip.start_file(name, deflated).map_err(z)?;
                zip.write_all(bytes).map_err(|e| e.to_string())?;
            }
            None => zip.raw_copy_file(entry).map_err(z)?,
        }
    }
    for (name, bytes) in added {
        // Audio does not shrink; text does.
        let how = if name.ends_with(".smil") || name.ends_with(".css") { deflated } else { stored };
        zip.start_file(name.as_str(), how).map_err(z)?;
        zip.write_all(bytes).map_err(|e| e.to_string())?;
    }
    zip.finish().map_err(z)?;
    Ok(())
}
