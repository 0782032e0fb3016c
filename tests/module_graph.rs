//! The module graph of every crate of the workspace (`ARCHITECTURE.md`, "Module graph"): modules
//! import each other in one direction, and pleach-core's layers are imported downwards only.
//!
//! Each test reads one crate's sources (`<crate>/src`), collects every `crate::…`, `super::…` and
//! `self::…` path (in `use` items, expressions, types and patterns alike, resolved from the module
//! it is written in, inline modules included), and turns each into an edge between the two sibling
//! modules it connects, at any depth of the module tree: `crate::session::pipeline` naming
//! `crate::batch::Semaphore` is the edge `session -> batch` below the root. A cycle among siblings
//! means an item lives in the wrong file. Re-exports at the crate root (`crate::ToolCall`) count as
//! the module that defines the item; the root itself (`lib.rs`, `main.rs`) is not a node.
//!
//! [`PLEACH_CORE_LAYERS`] is the table of pleach-core's layers that ARCHITECTURE.md draws: a
//! top-level module may import its own layer or a lower one, never a higher one.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use syn::visit::Visit;

/// pleach-core's layers, lowest first, and the modules in each (ARCHITECTURE.md, "Module graph",
/// draws the same table: change both together). A module may import one of its own layer or a
/// lower one, never one of a higher layer; within a layer, the cycle check keeps the order.
///
/// The contract's modules are pleach-contract's (pleach-core re-exports them), so nothing in
/// pleach-core can import upwards from them; the test checks that each is a module of that crate.
/// Every other entry must be a top-level module of pleach-core, and every top-level module of
/// pleach-core must be in the table: a module added, renamed or removed fails the test until the
/// table (and the drawing) follows.
const PLEACH_CORE_LAYERS: &[(&str, &[&str])] = &[
    (
        "contract",
        &[
            "call",
            "content",
            "error",
            "tier",
            "extensions",
            "schema",
            "tool",
            "registry",
        ],
    ),
    ("support", &["defaults", "http_client", "trace_context"]),
    (
        "runtime",
        &[
            "event",
            "safety",
            "batch",
            "conversation",
            "plugin",
            "session",
            "runtime",
            "search",
        ],
    ),
    ("edges", &["assemble", "providers", "agent", "durable"]),
    ("prelude", &["prelude"]),
];

/// Every crate of the workspace with a `src/` folder; `every_crate_is_checked` holds the list to
/// the folders that exist.
pub(crate) const CRATES: &[&str] = &[
    "pleach-suggest",
    "pleach-macros",
    "pleach-contract",
    "pleach-core",
    "pleach-mcp",
    "pleach-tools",
    "pleach-cli",
    "pleach-temporal",
    "pleach-bench",
    "test-support",
];

fn workspace_root() -> PathBuf {
    // This package lives in `tests/`, one level below the workspace root.
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

/// A module's path below the crate root: `["session", "pipeline"]`.
type ModPath = Vec<String>;

/// An edge between two sibling modules: (their parent, from, to).
type Edge = (ModPath, String, String);

struct Crate {
    /// Every module the sources declare in a file of their own, by path.
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
    let is_root = parts.is_empty() && (stem == "lib" || stem == "main");
    if stem != "mod" && !is_root {
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

fn is_relative(path: &[String]) -> bool {
    matches!(
        path.first().map(String::as_str),
        Some("crate" | "super" | "self")
    )
}

/// Collects every path of a file that starts at `crate`, `super` or `self`, each with the module
/// it is written in (the file's module, or an inline module within it).
struct Paths {
    module: ModPath,
    found: Vec<(ModPath, Vec<String>)>,
}

impl<'ast> Visit<'ast> for Paths {
    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        if is_relative(&segments) {
            self.found.push((self.module.clone(), segments));
        }
        syn::visit::visit_path(self, path);
    }

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        let mut paths = Vec::new();
        use_tree_paths(&[], &item.tree, &mut paths);
        for path in paths.into_iter().filter(|p| is_relative(p)) {
            self.found.push((self.module.clone(), path));
        }
    }

    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        // `super` in `mod tests { … }` is the file's module, not its parent.
        self.module.push(item.ident.to_string());
        syn::visit::visit_item_mod(self, item);
        self.module.pop();
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
        let mut modules: BTreeSet<ModPath> = parsed.keys().cloned().collect();
        modules.remove(&Vec::new());
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

    /// The crate's top-level modules.
    fn top_level(&self) -> BTreeSet<&str> {
        self.modules
            .iter()
            .filter(|path| path.len() == 1)
            .map(|path| path[0].as_str())
            .collect()
    }

    /// `path` as seen from module `from`, made absolute (without the leading `crate`).
    fn absolute(&self, from: &[String], path: &[String]) -> Vec<String> {
        let mut base: Vec<String> = Vec::new();
        let mut rest = path;
        match path.first().map(String::as_str) {
            Some("crate") => rest = &path[1..],
            Some("self") => {
                base = from.to_vec();
                rest = &path[1..];
            }
            Some("super") => {
                base = from.to_vec();
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
            return self.absolute(&[], target);
        }
        base
    }

    /// The edges between sibling modules.
    fn edges(&self) -> BTreeSet<Edge> {
        let mut edges = BTreeSet::new();
        for (file_module, file) in &self.files {
            let mut paths = Paths {
                module: file_module.clone(),
                found: Vec::new(),
            };
            paths.visit_file(file);
            for (from, path) in paths.found {
                let target = self.absolute(&from, &path);
                let common = from.iter().zip(&target).take_while(|(a, b)| a == b).count();
                // Only where both sides are modules below the same parent.
                if common >= from.len() || common >= target.len() {
                    continue;
                }
                let mut source = from[..common].to_vec();
                source.push(from[common].clone());
                let mut sibling = from[..common].to_vec();
                sibling.push(target[common].clone());
                if !self.modules.contains(&source) || !self.modules.contains(&sibling) {
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

fn module_name(parent: &[String], child: &str) -> String {
    let mut name = String::from("crate");
    for part in parent {
        write!(name, "::{part}").expect("writing to a String");
    }
    write!(name, "::{child}").expect("writing to a String");
    name
}

/// The cycles among each parent's children, each as a line naming its modules.
fn cycles(edges: &BTreeSet<Edge>) -> Vec<String> {
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
        for cycle in local {
            let names: Vec<String> = cycle.iter().map(|m| module_name(parent, m)).collect();
            found.push(names.join(" -> "));
        }
    }
    found
}

fn edge_list(edges: &BTreeSet<Edge>) -> String {
    let mut list = String::new();
    for (parent, from, to) in edges {
        writeln!(
            list,
            "  {} -> {}",
            module_name(parent, from),
            module_name(parent, to)
        )
        .expect("writing to a String");
    }
    list
}

fn assert_acyclic(name: &str) {
    let src = workspace_root().join(name).join("src");
    let edges = Crate::read(&src).edges();
    let found = cycles(&edges);
    assert!(
        found.is_empty(),
        "{name} has import cycles among its modules (ARCHITECTURE.md, \"Module graph\"): move the \
         item that one side imports to the module it belongs in\n{}\n\nall edges:\n{}",
        found.join("\n"),
        edge_list(&edges)
    );
}

#[test]
fn every_crate_is_checked() {
    let mut with_src: Vec<String> = std::fs::read_dir(workspace_root())
        .expect("a readable workspace root")
        .map(|entry| entry.expect("a folder entry").path())
        .filter(|path| path.join("src").is_dir() && path.join("Cargo.toml").is_file())
        .map(|path| {
            path.file_name()
                .expect("a name")
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    with_src.sort();
    let mut listed: Vec<String> = CRATES.iter().map(|&c| c.to_owned()).collect();
    listed.sort();
    assert_eq!(
        listed, with_src,
        "`CRATES` in tests/module_graph.rs lists every crate with a src/ folder, and a test each"
    );
}

macro_rules! acyclic {
    ($($test:ident: $name:literal,)*) => {
        $(
            #[test]
            fn $test() {
                assert_acyclic($name);
            }
        )*

        #[test]
        fn every_crate_has_its_test() {
            let mut tested = vec![$($name),*];
            tested.sort_unstable();
            let mut listed = CRATES.to_vec();
            listed.sort_unstable();
            assert_eq!(tested, listed, "one `acyclic!` line per crate of `CRATES`");
        }
    };
}

acyclic! {
    pleach_suggest_imports_one_way: "pleach-suggest",
    pleach_macros_imports_one_way: "pleach-macros",
    pleach_contract_imports_one_way: "pleach-contract",
    pleach_core_imports_one_way: "pleach-core",
    pleach_mcp_imports_one_way: "pleach-mcp",
    pleach_tools_imports_one_way: "pleach-tools",
    pleach_cli_imports_one_way: "pleach-cli",
    pleach_temporal_imports_one_way: "pleach-temporal",
    pleach_bench_imports_one_way: "pleach-bench",
    test_support_imports_one_way: "test-support",
}

#[test]
fn pleach_core_layers_import_downwards() {
    let root = workspace_root();
    let core = Crate::read(&root.join("pleach-core/src"));
    let contract = Crate::read(&root.join("pleach-contract/src"));

    let mut layer_of: BTreeMap<&str, usize> = BTreeMap::new();
    for (rank, (_, modules)) in PLEACH_CORE_LAYERS.iter().enumerate() {
        for &module in *modules {
            assert!(
                layer_of.insert(module, rank).is_none(),
                "`{module}` is in two layers of PLEACH_CORE_LAYERS"
            );
        }
    }

    let mut problems = Vec::new();
    let contract_modules = contract.top_level();
    let core_modules = core.top_level();
    for (rank, (layer, modules)) in PLEACH_CORE_LAYERS.iter().enumerate() {
        let (owner, known) = if rank == 0 {
            ("pleach-contract", &contract_modules)
        } else {
            ("pleach-core", &core_modules)
        };
        for &module in *modules {
            if !known.contains(module) {
                problems.push(format!(
                    "the {layer} layer names `{module}`, which is no module of {owner}: take it out \
                     of PLEACH_CORE_LAYERS and ARCHITECTURE.md's \"Module graph\""
                ));
            }
        }
    }
    for &module in &core_modules {
        if !layer_of.contains_key(module) {
            problems.push(format!(
                "crate::{module} is in no layer: place it in PLEACH_CORE_LAYERS and in \
                 ARCHITECTURE.md's \"Module graph\""
            ));
        }
    }
    let edges = core.edges();
    for (parent, from, to) in &edges {
        if !parent.is_empty() {
            continue;
        }
        let (Some(&from_rank), Some(&to_rank)) =
            (layer_of.get(from.as_str()), layer_of.get(to.as_str()))
        else {
            continue;
        };
        if from_rank < to_rank {
            problems.push(format!(
                "crate::{from} ({} layer) imports crate::{to} ({} layer), a higher one",
                PLEACH_CORE_LAYERS[from_rank].0, PLEACH_CORE_LAYERS[to_rank].0
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "pleach-core's layers (ARCHITECTURE.md, \"Module graph\") do not hold:\n{}\n\nall edges:\n{}",
        problems.join("\n"),
        edge_list(&edges)
    );
}
