//! The resolver and the knots on small in-memory crates.

use super::*;

/// The graph of an in-memory crate whose root is `src/lib.rs`.
fn graph(files: &[(&str, &str)]) -> Graph {
    let files: HashMap<PathBuf, String> =
        files.iter().map(|(path, source)| (PathBuf::from(path), source.to_string())).collect();
    let graph = module_graph_from(Path::new("src/lib.rs"), &|path| files.get(path).cloned());
    assert!(graph.problems.is_empty(), "{:?}", graph.problems);
    graph
}

fn knot_names(graph: &Graph) -> Vec<Vec<String>> {
    graph.knots().into_iter().map(|k| k.modules).collect()
}

#[test]
fn a_two_module_cycle_through_super() {
    let g = graph(&[
        ("src/lib.rs", "mod a; mod b;"),
        ("src/a.rs", "pub fn f() { super::b::g() }"),
        ("src/b.rs", "pub fn g() {}\npub fn h() { super::a::f() }"),
    ]);
    assert!(g.has_edge("a", "b") && g.has_edge("b", "a"));
    let knots = g.knots();
    assert_eq!(knot_names(&g), vec![vec!["a".to_string(), "b".to_string()]]);
    let edges: Vec<(String, String, String)> = knots[0]
        .edges
        .iter()
        .map(|e| (e.from.clone(), e.to.clone(), e.first.display_from(Path::new(""))))
        .collect();
    assert_eq!(
        edges,
        vec![
            ("a".into(), "b".into(), "src/a.rs:1".into()),
            ("b".into(), "a".into(), "src/b.rs:2".into()),
        ]
    );
}

#[test]
fn a_parent_using_its_child_is_an_edge_and_mod_alone_is_not() {
    let g = graph(&[
        ("src/lib.rs", "pub mod flow; pub mod lone;"),
        ("src/flow/mod.rs", "mod dit;\npub use dit::Dit;\nfn f() -> dit::Dit { todo!() }"),
        ("src/flow/dit.rs", "pub struct Dit;"),
        ("src/lone.rs", "mod inner { pub struct X; }"),
    ]);
    assert!(g.has_edge("flow", "flow::dit"));
    assert!(!g.has_edge("flow::dit", "flow"));
    assert!(!g.has_edge(ROOT, "flow") && !g.has_edge("lone", "lone::inner"));
    assert_eq!(g.edges.len(), 1);
    // The child reaching back through `super::` closes the cycle.
    let g = graph(&[
        ("src/lib.rs", "pub mod flow;"),
        ("src/flow.rs", "mod dit;\npub use self::dit::Dit;\npub struct Cfg;"),
        ("src/flow/dit.rs", "pub struct Dit(super::Cfg);"),
    ]);
    assert_eq!(knot_names(&g), vec![vec!["flow".to_string(), "flow::dit".to_string()]]);
}

#[test]
fn test_only_modules_and_items_are_ignored() {
    let g = graph(&[
        ("src/lib.rs", "pub mod a;\npub mod b;\npub mod c;"),
        (
            "src/a.rs",
            "pub struct A;\n#[cfg(test)]\nmod tests { use crate::b::B; }\n\
             #[cfg(all(test, feature = \"x\"))]\nfn helper() { crate::b::f() }\n\
             #[cfg(test)]\nmod more;",
        ),
        ("src/b.rs", "pub struct B(crate::a::A);"),
        ("src/c.rs", "#![cfg(test)]\nuse crate::b::B;"),
    ]);
    assert_eq!(g.modules, vec![ROOT, "a", "b"]);
    assert!(g.has_edge("b", "a"));
    assert!(!g.has_edge("a", "b"));
    assert!(g.knots().is_empty());
}

#[test]
fn crate_paths_are_absolute_and_map_to_the_longest_module_prefix() {
    let g = graph(&[
        ("src/lib.rs", "pub mod x;\npub mod y;\npub struct Top;"),
        ("src/x.rs", "pub mod deep { pub fn f() {} }"),
        ("src/y.rs", "pub mod z {\n    pub fn g() { crate::x::deep::f(); let _ = crate::Top; }\n}"),
    ]);
    assert!(g.has_edge("y::z", "x::deep"));
    assert!(g.has_edge("y::z", ROOT));
    assert!(!g.has_edge("y::z", "x") && !g.has_edge("y", "x"));
    assert_eq!(g.edges[&(g.index_of("y::z").unwrap(), 0)].first.line, 2);
}

#[test]
fn a_use_group_with_self_binds_the_module() {
    let g = graph(&[
        ("src/lib.rs", "pub mod a;\npub mod b;\npub mod c;"),
        ("src/a.rs", "pub mod inner { pub struct I; }\npub struct B;"),
        // `a` is bound by the group's `self`, so `a::inner::I` leads to `a::inner`.
        ("src/b.rs", "use crate::a::{self, B};\nfn f(_: B) -> a::inner::I { todo!() }"),
        ("src/c.rs", "use crate::a as alias;\nfn f() -> alias::inner::I { todo!() }"),
    ]);
    assert!(g.has_edge("b", "a") && g.has_edge("b", "a::inner"));
    assert!(g.has_edge("c", "a") && g.has_edge("c", "a::inner"));
    // A bare name that is not a module of the crate (an external crate) is no edge.
    let g = graph(&[("src/lib.rs", "mod a { fn f() { std::mem::drop(candle::Tensor) } }")]);
    assert!(g.edges.is_empty());
}

#[test]
fn globs_path_attributes_and_macros() {
    let g = graph(&[
        ("src/lib.rs", "pub mod simd;\npub mod flow;\n#[path = \"odd/place.rs\"]\npub mod p;"),
        ("src/simd.rs", "macro_rules! m { () => { $crate::flow::x() } }\npub(crate) use m;"),
        (
            "src/flow/mod.rs",
            "mod cpu;\npub fn x() {}\ncrate::simd::multiversioned! { fn y() {} }\n\
             fn z() { println!(\"{}\", crate::p::Q); }",
        ),
        ("src/flow/cpu.rs", "use super::*;\nfn f() { simd::go(); }"),
        ("src/odd/place.rs", "pub struct Q;\nmod near;"),
        ("src/odd/near.rs", "fn f() { super::super::simd::go() }"),
    ]);
    assert!(g.has_edge("flow", "simd") && g.has_edge("flow", "p"));
    assert!(!g.has_edge("simd", "flow"), "macro_rules bodies are not read");
    // `use super::*` is an edge to the parent, and brings in the parent's own names.
    assert!(g.has_edge("flow::cpu", "flow"));
    assert!(!g.has_edge("flow::cpu", "simd"));
    assert!(g.has_edge("p::near", "simd"));
    let g = graph(&[
        ("src/lib.rs", "pub mod simd;\npub mod flow;"),
        ("src/simd.rs", "pub fn go() {}"),
        ("src/flow/mod.rs", "use crate::simd;\nmod cpu;"),
        ("src/flow/cpu.rs", "use super::*;\nfn f() { simd::go(); }"),
    ]);
    assert!(g.has_edge("flow::cpu", "simd"));
}

#[test]
fn modules_of_one_path_under_different_cfgs_are_one_node() {
    let g = graph(&[
        (
            "src/lib.rs",
            "pub mod k;\n#[cfg(unix)]\nmod imp { pub fn f() { super::k::g() } }\n\
             #[cfg(not(unix))]\nmod imp { pub fn f() { crate::k::g() } }\npub fn h() { imp::f() }",
        ),
        ("src/k.rs", "pub fn g() {}"),
    ]);
    assert_eq!(g.modules, vec![ROOT, "k", "imp"]);
    let imp = g.index_of("imp").unwrap();
    assert_eq!(g.edges[&(imp, 1)].uses, 2);
    assert_eq!(g.edges[&(imp, 1)].first.line, 3);
    assert!(g.has_edge(ROOT, "imp"));
}

#[test]
fn without_descending_edges_keeps_the_upward_and_sideways_ones() {
    let g = graph(&[
        ("src/lib.rs", "pub mod a;\npub mod b;\npub use a::A;\npub struct E;"),
        ("src/a.rs", "mod x;\npub use x::A;\npub fn f() { crate::b::g() }"),
        ("src/a/x.rs", "pub struct A(crate::E);\nfn k() { super::f() }"),
        ("src/b.rs", "pub fn g() { let _ = crate::a::A; }"),
    ]);
    assert_eq!(g.knots().len(), 1);
    assert_eq!(g.knots()[0].modules, vec!["a", "a::x", "b", "crate"]);
    let up = g.without_descending_edges();
    assert!(!up.has_edge(ROOT, "a") && !up.has_edge("a", "a::x"));
    assert!(up.has_edge("a::x", ROOT) && up.has_edge("a::x", "a"));
    assert_eq!(knot_names(&up), vec![vec!["a".to_string(), "b".to_string()]]);
}

#[test]
fn tarjan_finds_each_component() {
    let successors = vec![vec![1], vec![2], vec![0, 3], vec![4], vec![3], vec![]];
    let mut components: Vec<Vec<usize>> = strongly_connected(&successors)
        .into_iter()
        .map(|mut c| {
            c.sort();
            c
        })
        .collect();
    components.sort();
    assert_eq!(components, vec![vec![0, 1, 2], vec![3, 4], vec![5]]);
}
