//! Lectern's architecture check: no module cycle beyond the committed baseline (issue #48).
//!
//! A module cycle — `flow` uses `flow::kernels`, which reaches back into `flow` through
//! `super::` — makes the architecture unreadable: none of the modules in it can be read, tested,
//! moved to another crate or deleted on its own, and each cycle lets the next one in unnoticed.
//! The rule is that dependencies point one way; a piece two modules share belongs in a leaf
//! module both of them use (or in the parent, with the child never reaching back).
//!
//! What it checks, per crate of the workspace (the root package and each `crates/*`):
//!
//! - **Modules**: the crate root (`src/lib.rs`, or `src/main.rs` without a library; named
//!   `crate`), every `mod x;` followed to its file the way rustc finds it (`x.rs`, `x/mod.rs`,
//!   `#[path = "..."]`), and every inline `mod x { ... }`; named by their path from the root
//!   (`flow::dit`). Modules and items under `#[cfg(test)]` are left out (unit tests reach into
//!   their parents by design), and nothing under `tests/`, `examples/` or `benches/` is read.
//! - **Edges**: every path in a module's code — `use` trees (a `pub use child::X` re-export
//!   too), paths in expressions, types, patterns, attributes' paths, a macro's own path and the
//!   `a::b` paths in its tokens (`macro_rules!` bodies are skipped) — resolved from its first
//!   segment: `crate::`, `self::`, `super::` (repeatable), or a bare name that is a child module
//!   or a name a `use` (or a glob `use`) brought in. The resolved path is mapped to its longest
//!   prefix that is a module; a different module than the current one is an edge. Declaring a
//!   child (`mod x;`) is no edge.
//! - **Knots**: the strongly connected components (Tarjan) of more than one module. Each is
//!   reported with its modules and, for each edge inside it, the first `file:line` it is used
//!   at: the places to cut.
//!
//! `module-cycles.baseline` (next to this crate's manifest) lists today's knots, one per line
//! (`crate-name: mod_a mod_b ...`, sorted). `tests/module_cycles.rs` fails on a knot that is not
//! inside a baseline line of its crate (a new cycle, or one that grew) and on a baseline line
//! whose cycle is gone ("remove this line from the baseline"), so the baseline only shrinks and
//! stays true; a knot that only shrank is a note. `LECTERN_ARCH_BLESS=1 cargo test -p
//! lectern-arch` rewrites the baseline from the current knots, `-- --nocapture` prints each
//! crate's modules, edges and knots, and `LECTERN_ARCH_EDGES=crate-name` every edge of a crate.
//!
//! A parent using its own descendants is no edge for the check ([`Graph::without_descending_edges`]):
//! a parent is the facade of its children (it declares, re-exports and drives them), so only the
//! edges that go up or across can close a cycle. A child reaching up (`use super::Error`) is
//! fine; two siblings reaching into each other, or a module reaching into a cousin that reaches
//! back, is a knot: the piece they share belongs in a leaf module both use.
//!
//! The resolution is syntactic (no type or macro expansion): a name brought in by a macro, or a
//! path built inside a `macro_rules!` body (`$crate::...`), is not seen. It errs on the side of
//! missing an edge, never of inventing one.

mod baseline;
mod graph;
mod workspace;

pub use baseline::{
    BLESS, BaselineKnot, CrateKnot, Verdict, compare, parse_baseline, render_baseline,
};
pub use graph::{Edge, Graph, Knot, KnotEdge, Location, ROOT, module_graph, module_graph_from};
pub use workspace::{Member, package_name, workspace_members};
