//! Documents read by a container format (EPUB, in the app): chapters of headings and
//! paragraphs, already free of markup, plus the book's metadata.
//!
//! [`Document::source_text`] lays a document out as plain text (a chapter's blocks one per
//! paragraph, blank lines between), and [`super::Manuscript::from_document`] segments that text:
//! segment spans point into it, so line numbers of an EPUB's segments are lines of this text
//! (what `render --dry-run` shows), not of the XHTML files.

use super::kind::SegmentKind;

/// What a book says about itself (EPUB `dc:title`, `dc:creator`, `dc:language`, its cover; a
/// Markdown front matter's `title:`, `author:`, `narrator:`, `lang:` and `cover:`).
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct BookInfo {
    pub title: Option<String>,
    /// Creators in the order the book lists them, joined with ", ".
    pub author: Option<String>,
    /// Who reads the audiobook (Markdown front matter `narrator:`).
    #[serde(default)]
    pub narrator: Option<String>,
    /// BCP 47 tag (`en`, `fr-CA`, `zh-Hans`).
    pub language: Option<String>,
    #[serde(skip)]
    pub cover: Option<Cover>,
    /// The cover image's path as a Markdown front matter writes it (`cover: art/cover.jpg`,
    /// relative to the manuscript); the caller reads it into [`Self::cover`].
    #[serde(skip)]
    pub cover_path: Option<String>,
}

/// A cover image, as stored in the book.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cover {
    pub media_type: String,
    pub bytes: Vec<u8>,
}

impl Cover {
    /// The usual file extension of the image type (`jpg`, `png`, ...).
    pub fn extension(&self) -> &'static str {
        match self.media_type.as_str() {
            "image/jpeg" | "image/jpg" => "jpg",
            "image/png" => "png",
            "image/gif" => "gif",
            "image/webp" => "webp",
            "image/svg+xml" => "svg",
            _ => "img",
        }
    }
}

/// A heading or paragraph of plain text (inner line breaks are kept, as poetry needs them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocBlock {
    pub kind: SegmentKind,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DocChapter {
    pub title: Option<String>,
    /// Cover, title page, copyright, contents, dedication...: skipped on request.
    pub front_matter: bool,
    pub blocks: Vec<DocBlock>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Document {
    pub info: BookInfo,
    pub chapters: Vec<DocChapter>,
}

/// A block laid out in [`Document::source_text`]: its byte range there and, when it opens a
/// chapter, that chapter's title (`Some(None)` for an untitled chapter).
pub(crate) struct LaidOutBlock {
    pub kind: SegmentKind,
    pub range: std::ops::Range<usize>,
    pub opens_chapter: Option<Option<String>>,
}

impl Document {
    /// The document as plain text, and where each block lies in it. Front matter is left out
    /// when `skip_front_matter`; chapters without blocks are left out.
    pub(crate) fn source_text(&self, skip_front_matter: bool) -> (String, Vec<LaidOutBlock>) {
        let mut text = String::new();
        let mut blocks = Vec::new();
        let chapters = self.chapters.iter().filter(|c| !(skip_front_matter && c.front_matter));
        for chapter in chapters {
            for (i, block) in chapter.blocks.iter().enumerate() {
                let body = block.text.trim();
                if body.is_empty() {
                    continue;
                }
                if !text.is_empty() {
                    text.push_str("\n\n");
                }
                let start = text.len();
                text.push_str(body);
                // A chapter opens at its first block, titled or not, so chapters stay apart.
                let opens_chapter = (!blocks_before_in(chapter, i)).then(|| chapter.title.clone());
                blocks.push(LaidOutBlock {
                    kind: block.kind,
                    range: start..text.len(),
                    opens_chapter,
                });
            }
        }
        (text, blocks)
    }
}

/// Whether a chapter has a non-empty block before block `i`.
fn blocks_before_in(chapter: &DocChapter, i: usize) -> bool {
    chapter.blocks[..i].iter().any(|b| !b.text.trim().is_empty())
}
