//! The modules of pleach-core and of the contract it re-exports (pleach-contract) import each
//! other in one direction (`ARCHITECTURE.md`, "Module
//! graph"): a cycle means an item lives in the wrong file. This test reads the crate's sources,
//! collects every `crate::…`, `super::…` and `self::…` path (in `use` items, expressions, types and
//! patterns alike), and fails naming the cycle when sibling modules reach each other, at any depth
//! of the module tree.
//!
//! Re-exports at the crate root (`crate::ToolCall`) count as the module that defines the item.
//! `lib.rs` itself is the root that re-exports everything and is not a node of the graph.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use syn::visit::Visit;

/// A module's path below the crate root: `["session", "pipeline"]`.
type ModPath = Vec<String>;

struct Crate {
    /// Every module the sources declare, by path.
    modules: BTreeSet<ModPath>,
    /// Each module's file, parsed.
    files: BTreeMap<ModPath, syn::File>,
    /// Crate-root re-exports: item name → the path it names.
    root_exports: BTreeMap<String, Vec<String>>,
}

fn module_path(src: &Path, file: &Path) -> ModPath {
    let relative = file.strip_prefix(src).expect("a file under src");
    let mut parts: Vec<String> = relative
        .iter()
        .map(|part| part.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().expect("a file name");
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" && stem != "lib" {
        parts.push(stem.to_owned());
    }
    parts
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("a readable source folder") {
        let path = entry.expect("a folder entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            out.push(path);
        }
    }
}

fn use_tree_paths(prefix: &[String], tree: &syn::UseTree, out: &mut Vec<Vec<String>>) {
    match tree {
        syn::UseTree::Path(path) => {
            let mut next = prefix.to_vec();
            next.push(path.ident.to_string());
            use_tree_paths(&next, &path.tree, out);
        }
        syn::UseTree::Name(name) => {
            let mut next = prefix.to_vec();
            next.push(name.ident.to_string());
            out.push(next);
        }
        syn::UseTree::Rename(rename) => {
            let mut next = prefix.to_vec();
            next.push(rename.ident.to_string());
            out.push(next);
        }
        syn::UseTree::Glob(_) => out.push(prefix.to_vec()),
        syn::UseTree::Group(group) => {
            for tree in &group.items {
                use_tree_paths(prefix, tree, out);
            }
        }
    }
}

/// Collects every path of a file that starts at `crate`, `super` or `self`.
#[derive(Default)]
struct Paths(Vec<Vec<String>>);

impl<'ast> Visit<'ast> for Paths {
    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        if matches!(
            segments.first().map(String::as_str),
            Some("crate" | "super" | "self")
        ) {
            self.0.push(segments);
        }
        syn::visit::visit_path(self, path);
    }

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        let mut paths = Vec::new();
        use_tree_paths(&[], &item.tree, &mut paths);
        self.0.extend(paths.into_iter().filter(|p| {
            matches!(
                p.first().map(String::as_str),
                Some("crate" | "super" | "self")
            )
        }));
    }
}

impl Crate {
    fn read(src: &Path) -> Crate {
        let mut files = Vec::new();
        rust_files(src, &mut files);
        let mut parsed = BTreeMap::new();
        for file in files {
            let text = std::fs::read_to_string(&file).expect("a readable source file");
            let ast = syn::parse_file(&text)
                .unwrap_or_else(|e| panic!("{} does not parse: {e}", file.display()));
            parsed.insert(module_path(src, &file), ast);
        }
        let modules = parsed.keys().cloned().collect();
        let mut root_exports = BTreeMap::new();
        if let Some(root) = parsed.get(&Vec::new()) {
            for item in &root.items {
                if let syn::Item::Use(item) = item {
                    let mut paths = Vec::new();
                    use_tree_paths(&[], &item.tree, &mut paths);
                    for path in paths {
                        if let Some(name) = path.last() {
                            root_exports.insert(name.clone(), path);
                        }
                    }
                }
            }
        }
        Crate {
            modules,
            files: parsed,
            root_exports,
        }
    }

    /// `path` as seen from module `from`, made absolute (without the leading `crate`).
    fn absolute(&self, from: &ModPath, path: &[String]) -> Vec<String> {
        let mut base: Vec<String> = Vec::new();
        let mut rest = path;
        match path.first().map(String::as_str) {
            Some("crate") => rest = &path[1..],
            Some("self") => {
                base.clone_from(from);
                rest = &path[1..];
            }
            Some("super") => {
                base.clone_from(from);
                while rest.first().map(String::as_str) == Some("super") {
                    base.pop();
                    rest = &rest[1..];
                }
            }
            _ => {}
        }
        base.extend(rest.iter().cloned());
        // A crate-root re-export names the module that defines the item.
        if base.len() == 1
            && !self.modules.contains(&base)
            && let Some(target) = self.root_exports.get(&base[0])
        {
            return self.absolute(&Vec::new(), target);
        }
        base
    }

    /// The edges between sibling modules: (parent, from child, to child).
    fn edges(&self) -> BTreeSet<(ModPath, String, String)> {
        let mut edges = BTreeSet::new();
        for (from, file) in &self.files {
            let mut paths = Paths::default();
            paths.visit_file(file);
            for path in paths.0 {
                let target = self.absolute(from, &path);
                let common = from.iter().zip(&target).take_while(|(a, b)| a == b).count();
                // Only where both sides are modules below the same parent.
                if common >= from.len() || common >= target.len() {
                    continue;
                }
                let mut sibling = from[..common].to_vec();
                sibling.push(target[common].clone());
                if !self.modules.contains(&sibling) {
                    continue;
                }
                edges.insert((
                    from[..common].to_vec(),
                    from[common].clone(),
                    target[common].clone(),
                ));
            }
        }
        edges
    }
}

/// The cycles among each parent's children, each as a list of module names.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mark {
    OnStack,
    Done,
}

/// Depth-first search from `node`: a neighbour still on the stack closes a cycle, recorded as the
/// path from it back to itself.
fn visit<'a>(
    node: &'a str,
    graph: &BTreeMap<&'a str, BTreeSet<&'a str>>,
    state: &mut BTreeMap<&'a str, Mark>,
    stack: &mut Vec<&'a str>,
    found: &mut Vec<Vec<&'a str>>,
) {
    state.insert(node, Mark::OnStack);
    stack.push(node);
    for &next in graph.get(node).into_iter().flatten() {
        match state.get(next) {
            Some(Mark::OnStack) => {
                let start = stack.iter().position(|&n| n == next).unwrap_or(0);
                let mut cycle = stack[start..].to_vec();
                cycle.push(next);
                found.push(cycle);
            }
            Some(Mark::Done) => {}
            None => visit(next, graph, state, stack, found),
        }
    }
    stack.pop();
    state.insert(node, Mark::Done);
}

fn cycles(edges: &BTreeSet<(ModPath, String, String)>) -> Vec<String> {
    let mut by_parent: BTreeMap<&ModPath, BTreeMap<&str, BTreeSet<&str>>> = BTreeMap::new();
    for (parent, from, to) in edges {
        by_parent
            .entry(parent)
            .or_default()
            .entry(from)
            .or_default()
            .insert(to);
    }
    let mut found = Vec::new();
    for (parent, graph) in by_parent {
        let mut state: BTreeMap<&str, Mark> = BTreeMap::new();
        let mut stack: Vec<&str> = Vec::new();
        let mut local = Vec::new();
        for &node in graph.keys() {
            if !state.contains_key(node) {
                visit(node, &graph, &mut state, &mut stack, &mut local);
            }
        }
        let prefix = if parent.is_empty() {
            "crate".to_owned()
        } else {
            format!("crate::{}", parent.join("::"))
        };
        for cycle in local {
            found.push(format!("{prefix}: {}", cycle.join(" -> ")));
        }
    }
    found
}

fn assert_acyclic(src: &Path) {
    let krate = Crate::read(src);
    let edges = krate.edges();
    let found = cycles(&edges);
    if !found.is_empty() {
        let mut graph = String::new();
        for (parent, from, to) in &edges {
            let prefix: String = parent.iter().flat_map(|p| [p.as_str(), "::"]).collect();
            writeln!(graph, "  {prefix}{from} -> {to}").expect("writing to a String");
        }
        panic!(
            "{} has import cycles among its modules (ARCHITECTURE.md, \"Module graph\"):\n{}\n\nall edges:\n{graph}",
            src.display(),
            found.join("\n")
        );
    }
}

#[test]
fn pleach_core_modules_import_each_other_in_one_direction() {
    assert_acyclic(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
}

#[test]
fn the_contract_modules_import_each_other_in_one_direction() {
    assert_acyclic(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../pleach-contract/src"));
}
