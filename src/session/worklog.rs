//! What a sync says about the narrator's work it moved ([`crate::store::CarriedWork`]): one
//! summary line for the log ("1 segment edited since approval; 2 notes carried") and a line for
//! each removed segment whose work had nowhere to go, so nothing the narrator wrote disappears
//! without a word.

use crate::review::Review;
use crate::store::CarriedWork;

/// The log's summary of the work a sync moved; `None` when it moved nothing.
#[must_use]
pub fn summary(carried: &[CarriedWork], edited_since_approval: usize) -> Option<String> {
    let moved = carried.iter().filter(|c| !c.to.is_empty());
    let notes = moved.clone().filter(|c| !c.note.trim().is_empty()).count();
    let pickups = moved.filter(|c| c.review == Review::Pickup).count();
    let parts: Vec<String> = [
        (edited_since_approval, "segment edited since approval", "segments edited since approval"),
        (notes, "note carried", "notes carried"),
        (pickups, "pickup flag carried", "pickup flags carried"),
    ]
    .into_iter()
    .filter(|(n, _, _)| *n > 0)
    .map(|(n, one, many)| format!("{n} {}", if n == 1 { one } else { many }))
    .collect();
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// A line for each removed segment whose work no segment received.
#[must_use]
pub fn left_behind(carried: &[CarriedWork]) -> Vec<String> {
    carried
        .iter()
        .filter(|c| c.left_behind)
        .map(|c| {
            let what = match (c.review, c.note.trim().is_empty()) {
                (_, false) => format!("its note “{}”", c.note.trim()),
                (Review::Approved, true) => "its approval".to_string(),
                _ => format!("its {} state", c.review.as_str()),
            };
            format!(
                "the segment that was at line {} (“{}”) is no longer in the manuscript: {what} \
                 stays with that text (restoring it brings it back)",
                c.line,
                shorten(&c.text)
            )
        })
        .collect()
}

fn shorten(text: &str) -> String {
    const SHOWN: usize = 40;
    let mut out: String = text.chars().take(SHOWN).collect();
    if text.chars().count() > SHOWN {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn work(review: Review, note: &str, to: &[u64], left_behind: bool) -> CarriedWork {
        CarriedWork {
            text: "Mara went to the mill and stayed there until the night came.".into(),
            line: 7,
            review,
            note: note.into(),
            to: to.to_vec(),
            left_behind,
        }
    }

    #[test]
    fn the_summary_counts_what_moved() {
        let carried = [
            work(Review::Approved, "Breath noise", &[3], false),
            work(Review::Pickup, "redo", &[4, 5], false),
            work(Review::Pickup, "", &[], true),
        ];
        assert_eq!(
            summary(&carried, 1).as_deref(),
            Some("1 segment edited since approval; 2 notes carried; 1 pickup flag carried")
        );
        assert_eq!(summary(&[], 0), None);
    }

    #[test]
    fn work_left_behind_is_named() {
        let lines = left_behind(&[
            work(Review::Heard, "too fast", &[], true),
            work(Review::Approved, "", &[], true),
            work(Review::Heard, "kept", &[2], false),
        ]);
        assert_eq!(lines.len(), 2);
        assert!(lines[0].contains("its note “too fast”") && lines[0].contains("line 7"));
        assert!(lines[0].contains("“Mara went to the mill and stayed there u…”"), "{}", lines[0]);
        assert!(lines[1].contains("its approval"));
    }
}
