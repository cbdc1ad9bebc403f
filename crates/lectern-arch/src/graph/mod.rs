//! One crate's module graph: its modules (files and inline `mod`s, test-only ones left out),
//! its edges (a path in one module's code that names another module) and its knots (strongly
//! connected components of more than one module).

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::{Component, Path, PathBuf};

use proc_macro2::{Spacing, Span, TokenStream, TokenTree};
use syn::ext::IdentExt;
use syn::punctuated::Punctuated;
use syn::visit::{self, Visit};
use syn::{Attribute, ImplItem, Item, Meta, Token, TraitItem, UseTree};

/// The name of the crate root's module (`src/lib.rs` or `src/main.rs`) in a graph and a baseline.
pub const ROOT: &str = "crate";

/// Where an edge is used: a file and a 1-based line.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Location {
    pub file: PathBuf,
    pub line: usize,
}

impl Location {
    /// `file:line`, the file relative to `base` where it lies under it.
    pub fn display_from(&self, base: &Path) -> String {
        let file = self.file.strip_prefix(base).unwrap_or(&self.file);
        format!("{}:{}", file.display(), self.line)
    }
}

/// One edge of a graph: its first use (the earliest line) and how many uses it has.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Edge {
    pub first: Location,
    pub uses: usize,
}

/// A crate's modules and the edges between them.
#[derive(Clone, Debug, Default)]
pub struct Graph {
    /// Module names, the root first: `crate`, then paths from the root such as `flow::dit`.
    pub modules: Vec<String>,
    /// `(from, to)` indices into `modules` (never `from == to`).
    pub edges: BTreeMap<(usize, usize), Edge>,
    /// What could not be read: a declared module without its file, a file that is not Rust.
    pub problems: Vec<String>,
}

/// A strongly connected component of more than one module: every module of it reaches every
/// other through the edges in `edges`, so none of them can be read (or moved) on its own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Knot {
    /// Sorted.
    pub modules: Vec<String>,
    /// The edges between the knot's modules, sorted by `from` then `to`.
    pub edges: Vec<KnotEdge>,
}

/// An edge inside a knot, by module names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KnotEdge {
    pub from: String,
    pub to: String,
    pub first: Location,
    pub uses: usize,
}

impl Knot {
    /// The modules on one line, then one line per edge with where it is first used (files
    /// relative to `base`).
    pub fn describe(&self, base: &Path) -> String {
        let mut out = self.modules.join(" ");
        for edge in &self.edges {
            let uses =
                if edge.uses == 1 { "1 use".to_string() } else { format!("{} uses", edge.uses) };
            let _ = write!(
                out,
                "\n    {} -> {}  at {} ({uses})",
                edge.from,
                edge.to,
                edge.first.display_from(base)
            );
        }
        out
    }
}

impl Graph {
    /// The index of the module named `name` (`crate`, `flow::dit`).
    pub fn index_of(&self, name: &str) -> Option<usize> {
        self.modules.iter().position(|m| m == name)
    }

    /// Whether the module `from` uses the module `to`.
    pub fn has_edge(&self, from: &str, to: &str) -> bool {
        match (self.index_of(from), self.index_of(to)) {
            (Some(from), Some(to)) => self.edges.contains_key(&(from, to)),
            _ => false,
        }
    }

    /// This graph without the edges from a module to one of its own descendants (a parent's
    /// `pub use child::X`, the crate root's re-exports): what is left are the edges that
    /// reach up (`super::`) or across. Its knots are the cycles that remain when a parent
    /// owning its children is not counted, only a child reaching back into a parent that
    /// another of the cycle's modules also depends on.
    pub fn without_descending_edges(&self) -> Graph {
        let descends = |from: &str, to: &str| {
            from == ROOT || to.strip_prefix(from).is_some_and(|rest| rest.starts_with("::"))
        };
        let mut graph = self.clone();
        graph.edges.retain(|&(from, to), _| !descends(&self.modules[from], &self.modules[to]));
        graph
    }

    /// The knots (strongly connected components of more than one module), sorted by their
    /// first module.
    pub fn knots(&self) -> Vec<Knot> {
        let mut successors = vec![Vec::new(); self.modules.len()];
        for &(from, to) in self.edges.keys() {
            successors[from].push(to);
        }
        let mut knots: Vec<Knot> = strongly_connected(&successors)
            .into_iter()
            .filter(|component| component.len() > 1)
            .map(|component| {
                let mut modules: Vec<String> =
                    component.iter().map(|&m| self.modules[m].clone()).collect();
                modules.sort();
                let mut edges: Vec<KnotEdge> = self
                    .edges
                    .iter()
                    .filter(|((from, to), _)| component.contains(from) && component.contains(to))
                    .map(|(&(from, to), edge)| KnotEdge {
                        from: self.modules[from].clone(),
                        to: self.modules[to].clone(),
                        first: edge.first.clone(),
                        uses: edge.uses,
                    })
                    .collect();
                edges.sort_by(|a, b| (&a.from, &a.to).cmp(&(&b.from, &b.to)));
                Knot { modules, edges }
            })
            .collect();
        knots.sort_by(|a, b| a.modules.cmp(&b.modules));
        knots
    }
}

/// The module graph of the crate in `crate_root`: from `src/lib.rs`, or `src/main.rs` where
/// there is no library. Files under `tests/`, `examples/` and `benches/` are never read.
pub fn module_graph(crate_root: &Path) -> Graph {
    let crate_root = normalize(crate_root);
    let Some(root_file) = ["src/lib.rs", "src/main.rs"]
        .iter()
        .map(|file| crate_root.join(file))
        .find(|file| file.is_file())
    else {
        return Graph {
            problems: vec![format!("{}: no src/lib.rs or src/main.rs", crate_root.display())],
            ..Graph::default()
        };
    };
    let skipped: Vec<PathBuf> =
        ["tests", "examples", "benches"].iter().map(|dir| crate_root.join(dir)).collect();
    module_graph_from(&root_file, &|file: &Path| {
        if skipped.iter().any(|dir| file.starts_with(dir)) {
            return None;
        }
        std::fs::read_to_string(file).ok()
    })
}

/// The module graph of the crate whose root file is `root_file`, its files read through `read`
/// (`None`: no such file). [`module_graph`] reads them from the disk; tests, from memory.
pub fn module_graph_from(root_file: &Path, read: &dyn Fn(&Path) -> Option<String>) -> Graph {
    let mut loader = Loader { read, modules: Vec::new(), problems: Vec::new() };
    let root_file = normalize(root_file);
    match read(&root_file) {
        Some(source) => {
            let dir = Dir { path: parent_dir(&root_file), relative: None };
            loader.load_file(Vec::new(), None, &root_file, &source, dir);
        }
        None => loader.problems.push(format!("{}: cannot be read", root_file.display())),
    }
    let Loader { modules, problems, .. } = loader;
    if modules.is_empty() {
        return Graph { problems, ..Graph::default() };
    }

    let collected: Vec<Collector> = modules
        .iter()
        .map(|module| {
            let mut collector = Collector::default();
            for item in &module.items {
                // Child modules are modules of their own; test-only ones are no modules at all.
                if !matches!(item, Item::Mod(_)) {
                    collector.visit_item(item);
                }
            }
            collector
        })
        .collect();

    let mut resolver = Resolver {
        by_path: HashMap::new(),
        scopes: (0..modules.len()).map(|_| Scope::default()).collect(),
        modules: &modules,
    };

    // Modules of one path (`#[cfg(unix)] mod imp;` next to `#[cfg(not(unix))] mod imp { .. }`)
    // are one node of the graph, the first one's.
    let mut names: Vec<String> = Vec::new();
    let mut node_of: Vec<usize> = Vec::with_capacity(modules.len());
    for (m, module) in modules.iter().enumerate() {
        let first = *resolver.by_path.entry(module.path.clone()).or_insert(m);
        if first == m {
            node_of.push(names.len());
            let name =
                if module.path.is_empty() { ROOT.to_string() } else { module.path.join("::") };
            names.push(name);
        } else {
            node_of.push(node_of[first]);
        }
    }

    // The names each module's `use`s bring in, to a fixed point: a `use` may go through a name
    // another `use` brought in (`use self::flow as f; use f::dit;`) or through a glob.
    let mut bound: Vec<Vec<bool>> = collected.iter().map(|c| vec![false; c.uses.len()]).collect();
    loop {
        let mut changed = false;
        for (m, collector) in collected.iter().enumerate() {
            for (u, leaf) in collector.uses.iter().enumerate() {
                if bound[m][u] {
                    continue;
                }
                let Some(target) = resolver.resolve(m, &leaf.segments) else { continue };
                bound[m][u] = true;
                changed = true;
                match &leaf.binding {
                    Binding::Name(name) => {
                        resolver.scopes[m].imports.insert(name.clone(), target);
                    }
                    Binding::Glob => {
                        if let Some(&g) = resolver.by_path.get(&target) {
                            resolver.scopes[m].globs.push(g);
                        }
                    }
                    Binding::Hidden => {}
                }
            }
        }
        if !changed {
            break;
        }
    }

    let mut edges: BTreeMap<(usize, usize), Edge> = BTreeMap::new();
    for (m, collector) in collected.iter().enumerate() {
        let uses = collector.uses.iter().map(|leaf| (&leaf.segments, leaf.span));
        let paths = collector.paths.iter().map(|(segments, span)| (segments, *span));
        for (segments, span) in uses.chain(paths) {
            let Some(target) = resolver.resolve(m, segments) else { continue };
            let (from, to) = (node_of[m], node_of[resolver.module_of(&target)]);
            if to == from {
                continue;
            }
            let first = Location { file: modules[m].file.clone(), line: span.start().line };
            edges
                .entry((from, to))
                .and_modify(|edge| {
                    edge.uses += 1;
                    if first < edge.first {
                        edge.first = first.clone();
                    }
                })
                .or_insert(Edge { first, uses: 1 });
        }
    }

    Graph { modules: names, edges, problems }
}

struct Module {
    /// From the crate root (empty for the root).
    path: Vec<String>,
    parent: Option<usize>,
    children: BTreeMap<String, usize>,
    file: PathBuf,
    items: Vec<Item>,
}

/// Where a module's `mod x;` declarations look for their files, rustc's way: a `lib.rs`,
/// `main.rs` or `mod.rs` file (or one named by `#[path]`) owns its directory (`relative` is
/// `None`); `a/b.rs` has `path` `a` and `relative` `b`, its children in `a/b/`.
#[derive(Clone)]
struct Dir {
    path: PathBuf,
    relative: Option<String>,
}

impl Dir {
    /// The directory the module's children live in.
    fn owned(&self) -> PathBuf {
        match &self.relative {
            Some(relative) => self.path.join(relative),
            None => self.path.clone(),
        }
    }
}

struct Loader<'a> {
    read: &'a dyn Fn(&Path) -> Option<String>,
    modules: Vec<Module>,
    problems: Vec<String>,
}

impl Loader<'_> {
    fn load_file(
        &mut self,
        path: Vec<String>,
        parent: Option<usize>,
        file: &Path,
        source: &str,
        dir: Dir,
    ) -> Option<usize> {
        let ast = match syn::parse_file(source) {
            Ok(ast) => ast,
            Err(error) => {
                let line = error.span().start().line;
                self.problems.push(format!("{}:{line}: not parsed: {error}", file.display()));
                return None;
            }
        };
        // A file that opens with `#![cfg(test)]`.
        if test_only(&ast.attrs) {
            return None;
        }
        Some(self.add_module(path, parent, file, ast.items, &dir))
    }

    fn add_module(
        &mut self,
        path: Vec<String>,
        parent: Option<usize>,
        file: &Path,
        items: Vec<Item>,
        dir: &Dir,
    ) -> usize {
        let index = self.modules.len();
        self.modules.push(Module {
            path: path.clone(),
            parent,
            children: BTreeMap::new(),
            file: file.to_path_buf(),
            items: Vec::new(),
        });
        for item in &items {
            let Item::Mod(declared) = item else { continue };
            if test_only(&declared.attrs) {
                continue;
            }
            let name = declared.ident.unraw().to_string();
            let mut child_path = path.clone();
            child_path.push(name.clone());
            let attr_path = path_attr(&declared.attrs);
            let child = match &declared.content {
                Some((_, content)) => {
                    let child_dir = match attr_path {
                        Some(attr_path) => {
                            Dir { path: normalize(&dir.path.join(attr_path)), relative: None }
                        }
                        None => Dir { path: dir.owned().join(&name), relative: None },
                    };
                    Some(self.add_module(
                        child_path,
                        Some(index),
                        file,
                        content.clone(),
                        &child_dir,
                    ))
                }
                None => {
                    let line = declared.ident.span().start().line;
                    let at = Location { file: file.to_path_buf(), line };
                    self.load_declared(child_path, index, &name, attr_path, dir, at)
                }
            };
            if let Some(child) = child {
                self.modules[index].children.entry(name).or_insert(child);
            }
        }
        self.modules[index].items = items;
        index
    }

    /// The file of `mod name;` (declared `at`), loaded.
    fn load_declared(
        &mut self,
        path: Vec<String>,
        parent: usize,
        name: &str,
        attr_path: Option<String>,
        dir: &Dir,
        at: Location,
    ) -> Option<usize> {
        let candidates: Vec<(PathBuf, Dir)> = match attr_path {
            Some(attr_path) => {
                let file = normalize(&dir.path.join(attr_path));
                let dir = Dir { path: parent_dir(&file), relative: None };
                vec![(file, dir)]
            }
            None => {
                let base = dir.owned();
                vec![
                    (
                        base.join(format!("{name}.rs")),
                        Dir { path: base.clone(), relative: Some(name.to_string()) },
                    ),
                    (base.join(name).join("mod.rs"), Dir { path: base.join(name), relative: None }),
                ]
            }
        };
        for (file, child_dir) in &candidates {
            if let Some(source) = (self.read)(file) {
                return self.load_file(path, Some(parent), file, &source, child_dir.clone());
            }
        }
        let tried: Vec<String> = candidates.iter().map(|(f, _)| f.display().to_string()).collect();
        self.problems.push(format!(
            "{}:{}: `mod {name};` has no file ({})",
            at.file.display(),
            at.line,
            tried.join(" or ")
        ));
        None
    }
}

/// `#[path = "..."]`'s value.
fn path_attr(attrs: &[Attribute]) -> Option<String> {
    attrs.iter().find_map(|attr| match &attr.meta {
        Meta::NameValue(nv) if nv.path.is_ident("path") => match &nv.value {
            syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) => Some(s.value()),
            _ => None,
        },
        _ => None,
    })
}

/// Whether the attributes hold a `#[cfg(...)]` that is only true under `cfg(test)`:
/// `test`, `all(test, ...)`, `any(test, all(test, ...))`.
fn test_only(attrs: &[Attribute]) -> bool {
    attrs.iter().any(|attr| {
        attr.path().is_ident("cfg")
            && attr.parse_args::<Meta>().is_ok_and(|predicate| requires_test(&predicate))
    })
}

fn requires_test(predicate: &Meta) -> bool {
    let nested = |list: &syn::MetaList| -> Vec<Meta> {
        list.parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated)
            .map(|p| p.into_iter().collect())
            .unwrap_or_default()
    };
    match predicate {
        Meta::Path(path) => path.is_ident("test"),
        Meta::List(list) if list.path.is_ident("all") => nested(list).iter().any(requires_test),
        Meta::List(list) if list.path.is_ident("any") => {
            let nested = nested(list);
            !nested.is_empty() && nested.iter().all(requires_test)
        }
        _ => false,
    }
}

/// A name a `use` brings into its module.
enum Binding {
    Name(String),
    Glob,
    /// `use x as _;`
    Hidden,
}

/// One leaf of a `use` tree: `use a::{self, b::C as D, e::*}` has three.
struct UseLeaf {
    binding: Binding,
    /// The full path, `self` leaves without their `self` (`a`, `a::b::C`, `a::e`).
    segments: Vec<String>,
    span: Span,
}

/// The `use`s and the paths (of two or more segments, no leading `::`) of one module's code,
/// test-only items and `macro_rules!` bodies left out.
#[derive(Default)]
struct Collector {
    uses: Vec<UseLeaf>,
    paths: Vec<(Vec<String>, Span)>,
}

impl<'ast> Visit<'ast> for Collector {
    fn visit_item(&mut self, item: &'ast Item) {
        if test_only(item_attrs(item)) {
            return;
        }
        if let Item::Macro(m) = item
            && m.mac.path.is_ident("macro_rules")
        {
            return;
        }
        visit::visit_item(self, item);
    }

    fn visit_impl_item(&mut self, item: &'ast ImplItem) {
        let attrs = match item {
            ImplItem::Const(i) => &i.attrs,
            ImplItem::Fn(i) => &i.attrs,
            ImplItem::Type(i) => &i.attrs,
            ImplItem::Macro(i) => &i.attrs,
            _ => return visit::visit_impl_item(self, item),
        };
        if !test_only(attrs) {
            visit::visit_impl_item(self, item);
        }
    }

    fn visit_trait_item(&mut self, item: &'ast TraitItem) {
        let attrs = match item {
            TraitItem::Const(i) => &i.attrs,
            TraitItem::Fn(i) => &i.attrs,
            TraitItem::Type(i) => &i.attrs,
            TraitItem::Macro(i) => &i.attrs,
            _ => return visit::visit_trait_item(self, item),
        };
        if !test_only(attrs) {
            visit::visit_trait_item(self, item);
        }
    }

    fn visit_local(&mut self, local: &'ast syn::Local) {
        if !test_only(&local.attrs) {
            visit::visit_local(self, local);
        }
    }

    fn visit_stmt_macro(&mut self, mac: &'ast syn::StmtMacro) {
        if !test_only(&mac.attrs) {
            visit::visit_stmt_macro(self, mac);
        }
    }

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        // `use ::x` names an external crate.
        if item.leading_colon.is_none() {
            flatten_use(&item.tree, &mut Vec::new(), &mut self.uses);
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        if path.leading_colon.is_none() && path.segments.len() > 1 {
            let segments = path.segments.iter().map(|s| s.ident.unraw().to_string()).collect();
            self.paths.push((segments, path.segments[0].ident.span()));
        }
        visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        // The macro's own path (`crate::simd::multiversioned!`), then the paths in its tokens.
        visit::visit_macro(self, mac);
        scan_tokens(mac.tokens.clone(), &mut self.paths);
    }
}

fn item_attrs(item: &Item) -> &[Attribute] {
    match item {
        Item::Const(i) => &i.attrs,
        Item::Enum(i) => &i.attrs,
        Item::ExternCrate(i) => &i.attrs,
        Item::Fn(i) => &i.attrs,
        Item::ForeignMod(i) => &i.attrs,
        Item::Impl(i) => &i.attrs,
        Item::Macro(i) => &i.attrs,
        Item::Mod(i) => &i.attrs,
        Item::Static(i) => &i.attrs,
        Item::Struct(i) => &i.attrs,
        Item::Trait(i) => &i.attrs,
        Item::TraitAlias(i) => &i.attrs,
        Item::Type(i) => &i.attrs,
        Item::Union(i) => &i.attrs,
        Item::Use(i) => &i.attrs,
        _ => &[],
    }
}

fn flatten_use(tree: &UseTree, prefix: &mut Vec<String>, out: &mut Vec<UseLeaf>) {
    let mut leaf = |ident: &syn::Ident, rename: Option<&syn::Ident>, prefix: &[String]| {
        let name = ident.unraw().to_string();
        let mut segments = prefix.to_vec();
        if name != "self" {
            segments.push(name);
        }
        let Some(last) = segments.last().cloned() else { return };
        let binding = match rename.map(|r| r.unraw().to_string()) {
            Some(rename) if rename == "_" => Binding::Hidden,
            Some(rename) => Binding::Name(rename),
            None => Binding::Name(last),
        };
        out.push(UseLeaf { binding, segments, span: ident.span() });
    };
    match tree {
        UseTree::Path(p) => {
            prefix.push(p.ident.unraw().to_string());
            flatten_use(&p.tree, prefix, out);
            prefix.pop();
        }
        UseTree::Name(n) => leaf(&n.ident, None, prefix),
        UseTree::Rename(r) => leaf(&r.ident, Some(&r.rename), prefix),
        UseTree::Glob(g) => {
            if !prefix.is_empty() {
                out.push(UseLeaf {
                    binding: Binding::Glob,
                    segments: prefix.clone(),
                    span: g.star_token.spans[0],
                });
            }
        }
        UseTree::Group(g) => {
            for tree in &g.items {
                flatten_use(tree, prefix, out);
            }
        }
    }
}

/// The paths in a macro invocation's tokens (`ident :: ident ...`, not after `::` or `$`).
fn scan_tokens(tokens: TokenStream, out: &mut Vec<(Vec<String>, Span)>) {
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    let is_sep = |i: usize| {
        matches!(
            (&tokens.get(i), &tokens.get(i + 1)),
            (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)))
                if a.as_char() == ':' && a.spacing() == Spacing::Joint && b.as_char() == ':'
        )
    };
    let mut i = 0;
    while i < tokens.len() {
        match &tokens[i] {
            TokenTree::Group(group) => scan_tokens(group.stream(), out),
            TokenTree::Ident(ident) => {
                let after_sep = i >= 2 && is_sep(i - 2);
                let after_dollar =
                    i >= 1 && matches!(&tokens[i - 1], TokenTree::Punct(p) if p.as_char() == '$');
                let mut segments = vec![ident.unraw().to_string()];
                let mut j = i + 1;
                while is_sep(j) {
                    let Some(TokenTree::Ident(next)) = tokens.get(j + 2) else { break };
                    segments.push(next.unraw().to_string());
                    j += 3;
                }
                if !after_sep && !after_dollar && segments.len() > 1 {
                    out.push((segments, ident.span()));
                }
                i = j;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
}

/// The names a module's `use`s bring in (absolute paths from the crate root) and the modules
/// it glob-imports.
#[derive(Default)]
struct Scope {
    imports: HashMap<String, Vec<String>>,
    globs: Vec<usize>,
}

struct Resolver<'a> {
    modules: &'a [Module],
    by_path: HashMap<Vec<String>, usize>,
    scopes: Vec<Scope>,
}

impl Resolver<'_> {
    /// A path in module `m`'s code, as a path from the crate root; `None` where it does not
    /// lead into the crate (an external crate, a local type, a generic parameter, `Self`).
    fn resolve(&self, m: usize, segments: &[String]) -> Option<Vec<String>> {
        let (first, rest) = segments.split_first()?;
        let (base, rest) = match first.as_str() {
            "crate" => (Vec::new(), rest),
            "self" => (self.modules[m].path.clone(), rest),
            "super" => {
                let mut at = self.modules[m].parent?;
                let mut rest = rest;
                while let Some((next, tail)) = rest.split_first()
                    && next == "super"
                {
                    at = self.modules[at].parent?;
                    rest = tail;
                }
                (self.modules[at].path.clone(), rest)
            }
            name => (self.lookup(m, name, 0)?, rest),
        };
        let mut path = base;
        path.extend(rest.iter().cloned());
        Some(path)
    }

    /// What a bare name stands for in module `m`: one of its child modules, a name one of its
    /// `use`s brought in, or either of those in a module it glob-imports.
    fn lookup(&self, m: usize, name: &str, depth: usize) -> Option<Vec<String>> {
        if let Some(&child) = self.modules[m].children.get(name) {
            return Some(self.modules[child].path.clone());
        }
        if let Some(path) = self.scopes[m].imports.get(name) {
            return Some(path.clone());
        }
        if depth < 4 {
            return self.scopes[m].globs.iter().find_map(|&g| self.lookup(g, name, depth + 1));
        }
        None
    }

    /// The module a path from the crate root lies in: its longest prefix that is a module.
    fn module_of(&self, path: &[String]) -> usize {
        (0..=path.len()).rev().find_map(|n| self.by_path.get(&path[..n]).copied()).unwrap_or(0)
    }
}

/// Tarjan's strongly connected components of the graph `successors[v]`.
fn strongly_connected(successors: &[Vec<usize>]) -> Vec<Vec<usize>> {
    struct State<'a> {
        successors: &'a [Vec<usize>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        next: usize,
        components: Vec<Vec<usize>>,
    }
    fn connect(s: &mut State<'_>, v: usize) {
        s.index[v] = Some(s.next);
        s.low[v] = s.next;
        s.next += 1;
        s.stack.push(v);
        s.on_stack[v] = true;
        let successors = s.successors;
        for &w in &successors[v] {
            match s.index[w] {
                None => {
                    connect(s, w);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(index) if s.on_stack[w] => s.low[v] = s.low[v].min(index),
                Some(_) => {}
            }
        }
        if s.index[v] == Some(s.low[v]) {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack[w] = false;
                component.push(w);
                if w == v {
                    break;
                }
            }
            s.components.push(component);
        }
    }
    let n = successors.len();
    let mut state = State {
        successors,
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        next: 0,
        components: Vec::new(),
    };
    for v in 0..n {
        if state.index[v].is_none() {
            connect(&mut state, v);
        }
    }
    state.components
}

fn parent_dir(file: &Path) -> PathBuf {
    file.parent().map(Path::to_path_buf).unwrap_or_default()
}

/// `a/./b/../c` → `a/c`, without touching the disk.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                if matches!(out.components().next_back(), Some(Component::Normal(_))) {
                    out.pop();
                } else {
                    out.push("..");
                }
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests;
