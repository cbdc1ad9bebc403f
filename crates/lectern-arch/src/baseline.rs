//! The committed baseline of accepted knots (`module-cycles.baseline`), and a workspace's
//! knots held against it.

use std::collections::BTreeSet;
use std::path::Path;

use crate::graph::Knot;

/// How the baseline is rewritten from today's knots.
pub const BLESS: &str = "LECTERN_ARCH_BLESS=1 cargo test -p lectern-arch";

/// A knot found in a crate of the workspace.
#[derive(Clone, Debug)]
pub struct CrateKnot {
    /// The package name (`lectern-model`).
    pub krate: String,
    pub knot: Knot,
}

/// One line of the baseline: `crate-name: module module ...`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BaselineKnot {
    pub krate: String,
    pub modules: BTreeSet<String>,
    /// 1-based, in the baseline file.
    pub line: usize,
}

impl BaselineKnot {
    fn text(&self) -> String {
        let modules: Vec<&str> = self.modules.iter().map(String::as_str).collect();
        format!("{}: {}", self.krate, modules.join(" "))
    }
}

/// The knots of a baseline's text; `#` comments and blank lines are skipped.
pub fn parse_baseline(text: &str) -> Result<Vec<BaselineKnot>, String> {
    let mut knots = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((krate, modules)) = line.split_once(':').filter(|(_, m)| !m.starts_with(':'))
        else {
            return Err(format!(
                "line {}: `{line}` is not `crate-name: module module ...`",
                index + 1
            ));
        };
        let modules: BTreeSet<String> = modules.split_whitespace().map(str::to_string).collect();
        if krate.trim().is_empty() || modules.len() < 2 {
            return Err(format!(
                "line {}: `{line}`: a crate name and two modules or more",
                index + 1
            ));
        }
        knots.push(BaselineKnot { krate: krate.trim().to_string(), modules, line: index + 1 });
    }
    Ok(knots)
}

/// The baseline's text for `knots`: a header, then one sorted line per knot.
pub fn render_baseline(knots: &[CrateKnot]) -> String {
    let mut lines: Vec<String> =
        knots.iter().map(|k| format!("{}: {}", k.krate, k.knot.modules.join(" "))).collect();
    lines.sort();
    lines.dedup();
    let mut out = String::from(
        "# Module cycles (\"knots\": modules that reach each other) accepted today, one per line:\n\
         # `crate-name: module module ...`, sorted; `crate` is the crate root.\n\
         # tests/module_cycles.rs fails on a knot that is not inside one of these lines (a new cycle,\n\
         # or one that grew) and on a line whose cycle is gone: this list only shrinks.\n",
    );
    out.push_str(&format!("# Regenerate: {BLESS}\n"));
    for line in lines {
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// What holding the current knots against the baseline found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Verdict {
    /// New or grown knots, and baseline lines whose cycle is gone.
    pub failures: Vec<String>,
    /// Baseline knots that shrank or split (not failures, but the baseline should follow).
    pub notes: Vec<String>,
}

/// Holds `current` against `baseline`: every current knot must lie inside a baseline knot of
/// its crate, and every baseline knot must still hold a cycle. File locations are written
/// relative to `base`.
pub fn compare(current: &[CrateKnot], baseline: &[BaselineKnot], base: &Path) -> Verdict {
    let mut verdict = Verdict::default();
    for found in current {
        let modules: BTreeSet<String> = found.knot.modules.iter().cloned().collect();
        let same_crate: Vec<&BaselineKnot> =
            baseline.iter().filter(|b| b.krate == found.krate).collect();
        if same_crate.iter().any(|b| modules.is_subset(&b.modules)) {
            continue;
        }
        let overlapping: Vec<&&BaselineKnot> =
            same_crate.iter().filter(|b| !b.modules.is_disjoint(&modules)).collect();
        let mut message = if overlapping.is_empty() {
            format!("new module cycle in {}: {}", found.krate, found.knot.describe(base))
        } else {
            let known: BTreeSet<&String> = overlapping.iter().flat_map(|b| &b.modules).collect();
            let new: Vec<&str> =
                modules.iter().filter(|m| !known.contains(m)).map(String::as_str).collect();
            let lines: Vec<String> =
                overlapping.iter().map(|b| format!("line {}: `{}`", b.line, b.text())).collect();
            format!(
                "module cycle in {} grew (baseline {}; modules new to it: {}): {}",
                found.krate,
                lines.join(", "),
                if new.is_empty() { "none, knots merged".to_string() } else { new.join(" ") },
                found.knot.describe(base)
            )
        };
        message.push_str(
            "\n  Cut one of these edges: move what both sides need into a leaf module both use.",
        );
        verdict.failures.push(message);
    }
    for accepted in baseline {
        let inside: Vec<&CrateKnot> = current
            .iter()
            .filter(|c| {
                c.krate == accepted.krate
                    && c.knot.modules.iter().any(|m| accepted.modules.contains(m))
            })
            .collect();
        if inside.is_empty() {
            verdict.failures.push(format!(
                "baseline line {}: `{}`: this cycle is gone, remove this line from the baseline \
                 (or rewrite it: {BLESS})",
                accepted.line,
                accepted.text()
            ));
            continue;
        }
        let all_inside =
            inside.iter().all(|c| c.knot.modules.iter().all(|m| accepted.modules.contains(m)));
        let union: BTreeSet<&String> = inside.iter().flat_map(|c| &c.knot.modules).collect();
        if all_inside && (inside.len() > 1 || union.len() < accepted.modules.len()) {
            let now: Vec<String> = inside.iter().map(|c| c.knot.modules.join(" ")).collect();
            verdict.notes.push(format!(
                "baseline line {}: `{}` shrank to `{}`: update the baseline ({BLESS})",
                accepted.line,
                accepted.text(),
                now.join("` and `")
            ));
        }
    }
    verdict
}

#[cfg(test)]
mod tests {
    use super::*;

    fn knot(krate: &str, modules: &[&str]) -> CrateKnot {
        CrateKnot {
            krate: krate.to_string(),
            knot: Knot { modules: modules.iter().map(|m| m.to_string()).collect(), edges: vec![] },
        }
    }

    #[test]
    fn parse_and_render_round_trip() {
        let knots = [knot("b-crate", &["x", "y"]), knot("a-crate", &["crate", "m::n", "z"])];
        let text = render_baseline(&knots);
        let parsed = parse_baseline(&text).unwrap();
        assert_eq!(parsed.len(), 2);
        assert_eq!(parsed[0].krate, "a-crate");
        assert_eq!(parsed[0].modules.iter().collect::<Vec<_>>(), ["crate", "m::n", "z"]);
        assert!(parse_baseline("a-crate: only").is_err());
        assert!(parse_baseline("no colon here").is_err());
    }

    #[test]
    fn new_grown_gone_and_shrunk_knots() {
        let baseline = parse_baseline("c: a b c\nc: p q\nd: x y\n").unwrap();
        let base = Path::new("");
        // Inside the baseline: nothing to say.
        let same = [knot("c", &["a", "b", "c"]), knot("c", &["p", "q"]), knot("d", &["x", "y"])];
        assert_eq!(compare(&same, &baseline, base), Verdict::default());
        // A new knot, and one that grew.
        let worse = [
            knot("c", &["a", "b", "c", "e"]),
            knot("c", &["p", "q"]),
            knot("d", &["x", "y"]),
            knot("d", &["u", "v"]),
        ];
        let verdict = compare(&worse, &baseline, base);
        assert_eq!(verdict.failures.len(), 2, "{verdict:?}");
        assert!(verdict.failures[0].contains("grew") && verdict.failures[0].contains(": e)"));
        assert!(verdict.failures[1].starts_with("new module cycle in d: u v"));
        // A knot gone is a failure; one shrunk, a note.
        let better = [knot("c", &["a", "b"]), knot("d", &["x", "y"])];
        let verdict = compare(&better, &baseline, base);
        assert_eq!(verdict.failures.len(), 1, "{verdict:?}");
        assert!(verdict.failures[0].contains("line 2: `c: p q`"));
        assert!(verdict.failures[0].contains("remove this line from the baseline"));
        assert_eq!(verdict.notes.len(), 1);
        assert!(verdict.notes[0].contains("`c: a b c` shrank to `a b`"));
    }
}
