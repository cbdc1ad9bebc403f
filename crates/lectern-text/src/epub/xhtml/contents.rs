//! A printed contents page inside a content document: found after the walk, from the blocks
//! whose text is only links into the book.

use super::{CONTENTS_RUN, Part, PartSkip};
use crate::SegmentKind;
use crate::document::excerpt;
use crate::epub::semantics::is_contents_heading;
use crate::policy::SkipReason;

/// Takes a printed contents page out of a part: a run of [`CONTENTS_RUN`] or more blocks that
/// are only links into the book, and the "Contents" heading right before it.
pub(super) fn drop_contents_pages(part: &mut Part) {
    let n = part.blocks.len();
    let mut drop = vec![false; n];
    let mut k = 0;
    while k < n {
        let run = part.linked[k..].iter().take_while(|l| **l).count();
        if run >= CONTENTS_RUN {
            drop[k..k + run].iter_mut().for_each(|d| *d = true);
            if k > 0
                && part.blocks[k - 1].kind == SegmentKind::Heading
                && is_contents_heading(&part.blocks[k - 1].text)
            {
                drop[k - 1] = true;
            }
        }
        k += run.max(1);
    }
    if !drop.contains(&true) {
        return;
    }
    let mut kept_before = Vec::with_capacity(n + 1);
    let mut kept = 0;
    for d in &drop {
        kept_before.push(kept);
        kept += usize::from(!d);
    }
    kept_before.push(kept);
    for s in &mut part.skips {
        s.block = kept_before[s.block.min(n)];
    }
    let mut first_dropped = None;
    let mut text = String::new();
    let blocks = std::mem::take(&mut part.blocks);
    for (i, b) in blocks.into_iter().enumerate() {
        if drop[i] {
            first_dropped.get_or_insert(kept_before[i]);
            if text.len() < 4 * crate::document::SKIP_EXCERPT_CHARS {
                text.push_str(&b.text);
                text.push_str(". ");
            }
        } else {
            part.blocks.push(b);
        }
    }
    part.linked = vec![false; part.blocks.len()];
    let chars = text.chars().filter(|c| !c.is_whitespace()).count();
    part.skips.push(PartSkip {
        block: first_dropped.unwrap_or(0),
        reason: SkipReason::Navigation,
        kind: Some("toc".into()),
        text: excerpt(&text),
        chars,
    });
    part.skips.sort_by_key(|s| s.block);
}
