//! What `export` says about the book before it writes: how much of it the narrator approved,
//! what waits for a pickup or a first listen — and, with `--require-approved`, a refusal that
//! names what is not approved yet.

use anyhow::{Result, bail};

use crate::review::Review;
use crate::store::Project;

/// Segments by review state, in manuscript order.
#[derive(Debug, Default)]
pub(super) struct BookState {
    pub total: usize,
    pub approved: usize,
    pub pickups: Vec<(usize, String)>,
    pub unheard: usize,
    /// Segments not approved: (number from 1, text).
    pub not_approved: Vec<(usize, String, Review)>,
}

impl BookState {
    pub fn of(project: &Project) -> Result<Self> {
        let mut state = Self::default();
        for (i, p) in project.proofed_segments()?.into_iter().enumerate() {
            let number = i + 1;
            state.total += 1;
            match p.review {
                Review::Approved => state.approved += 1,
                Review::Pickup => state.pickups.push((number, p.segment.text.clone())),
                Review::Unheard => state.unheard += 1,
                _ => {}
            }
            if p.review != Review::Approved {
                state.not_approved.push((number, p.segment.text, p.review));
            }
        }
        Ok(state)
    }

    /// One line: `12/13 approved · 1 pickup · 0 unheard`.
    pub fn summary(&self) -> String {
        let plural = if self.pickups.len() == 1 { "" } else { "s" };
        format!(
            "book: {}/{} approved · {} pickup{plural} · {} unheard",
            self.approved,
            self.total,
            self.pickups.len(),
            self.unheard
        )
    }

    /// `--require-approved`: refuses a book with anything not approved, naming the first few.
    pub fn require_approved(&self, book: &std::path::Path) -> Result<()> {
        if self.not_approved.is_empty() {
            return Ok(());
        }
        let named: Vec<String> = self
            .not_approved
            .iter()
            .take(5)
            .map(|(n, text, review)| {
                format!("{n} ({}: \u{201c}{}\u{201d})", review.as_str(), short(text))
            })
            .collect();
        let more = self.not_approved.len().saturating_sub(named.len());
        bail!(
            "--require-approved: {} of {} segments are not approved — segment {}{}; approve them \
             in the workstation or with `lectern approve {} SEGMENT…`",
            self.not_approved.len(),
            self.total,
            named.join(", "),
            if more > 0 { format!(" and {more} more") } else { String::new() },
            book.display()
        )
    }
}

/// `export --report`: the book's state, each segment's review and note, and the files written.
pub(super) fn report_json(
    project: &Project,
    files: &[std::path::PathBuf],
) -> Result<serde_json::Value> {
    let state = BookState::of(project)?;
    let segments: Vec<serde_json::Value> = project
        .proofed_segments()?
        .into_iter()
        .enumerate()
        .map(|(i, p)| {
            serde_json::json!({
                "number": i + 1,
                "chapter": p.segment.chapter,
                "text": p.segment.text,
                "review": p.review.as_str(),
                "note": (!p.note.is_empty()).then_some(p.note),
            })
        })
        .collect();
    Ok(serde_json::json!({
        "book": {
            "segments": state.total,
            "approved": state.approved,
            "pickups": state.pickups.len(),
            "unheard": state.unheard,
        },
        "segments": segments,
        "files": files,
    }))
}

fn short(text: &str) -> String {
    const MAX: usize = 40;
    if text.chars().count() <= MAX {
        return text.to_string();
    }
    let cut: String = text.chars().take(MAX).collect();
    format!("{}…", cut.trim_end())
}
