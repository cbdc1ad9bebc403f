//! The workspace's module cycles held against `module-cycles.baseline` (the crate's doc says
//! what counts as a cycle and why none should be added). `LECTERN_ARCH_BLESS=1` rewrites the
//! baseline; `-- --nocapture` prints each crate's modules, edges and knots, and
//! `LECTERN_ARCH_EDGES=crate-name` every edge of that crate.

use std::path::Path;

use lectern_arch::{
    BLESS, CrateKnot, compare, module_graph, parse_baseline, render_baseline, workspace_members,
};

#[test]
fn no_module_cycles_beyond_the_baseline() {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let workspace = manifest_dir
        .parent()
        .and_then(Path::parent)
        .expect("lectern-arch lives in crates/ of the workspace");
    let baseline_file = manifest_dir.join("module-cycles.baseline");

    let members = workspace_members(workspace);
    assert!(
        members.iter().any(|m| m.name == "lectern-arch"),
        "no crates found under {}",
        workspace.display()
    );
    let mut current = Vec::new();
    for member in &members {
        let graph = module_graph(&member.dir).without_descending_edges();
        let knots = graph.knots();
        println!(
            "{}: {} modules, {} edges, {} knots",
            member.name,
            graph.modules.len(),
            graph.edges.len(),
            knots.len()
        );
        for problem in &graph.problems {
            println!("  warning: {problem}");
        }
        if std::env::var("LECTERN_ARCH_EDGES").is_ok_and(|c| c == member.name) {
            for (&(from, to), edge) in &graph.edges {
                println!(
                    "  edge: {} -> {}  at {} ({} uses)",
                    graph.modules[from],
                    graph.modules[to],
                    edge.first.display_from(workspace),
                    edge.uses
                );
            }
        }
        for knot in &knots {
            println!("  knot: {}", knot.describe(workspace).replace('\n', "\n  "));
        }
        current
            .extend(knots.into_iter().map(|knot| CrateKnot { krate: member.name.clone(), knot }));
    }

    if std::env::var_os("LECTERN_ARCH_BLESS").is_some_and(|v| v == "1") {
        std::fs::write(&baseline_file, render_baseline(&current))
            .unwrap_or_else(|e| panic!("{}: {e}", baseline_file.display()));
        println!("wrote {} ({} knots)", baseline_file.display(), current.len());
        return;
    }

    let text = std::fs::read_to_string(&baseline_file)
        .unwrap_or_else(|e| panic!("{}: {e} (write it with {BLESS})", baseline_file.display()));
    let baseline =
        parse_baseline(&text).unwrap_or_else(|e| panic!("{}: {e}", baseline_file.display()));
    let verdict = compare(&current, &baseline, workspace);
    for note in &verdict.notes {
        println!("note: {note}");
    }
    assert!(
        verdict.failures.is_empty(),
        "module cycles differ from {}:\n\n{}\n",
        baseline_file.strip_prefix(workspace).unwrap_or(&baseline_file).display(),
        verdict.failures.join("\n\n")
    );
}
