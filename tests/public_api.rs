//! The public API's shape where a type check or the sources can hold it: every public error type
//! is a `std::error::Error`, and pleach-core names pleach-contract's items at the contract's own
//! paths (ARCHITECTURE.md, "Crates").

use std::collections::BTreeSet;
use std::path::Path;

use syn::visit::Visit;
use syn::{Attribute, Item, ItemEnum, ItemMacro, ItemStruct, ItemUse, UseTree, Visibility};

use crate::docs::rust_files;

fn is_error<E: std::error::Error + Send + Sync + 'static>() {}

/// Every public error type of the library crates this binary links, each asserted to be an error
/// a `?` can box (`Send + Sync + 'static`): a type that lost its `Error` or `Display` impl fails
/// to compile here. `every_public_error_type_is_listed` holds the list to the sources.
macro_rules! public_errors {
    ($($($segment:ident)::+),* $(,)?) => {
        const PUBLIC_ERRORS: &[&str] = &[$(stringify!($($segment)::+)),*];

        #[test]
        fn every_public_error_type_is_a_std_error() {
            $(is_error::<$($segment)::+>();)*
        }
    };
}

public_errors! {
    pleach_contract::error::ToolError,
    pleach_contract::registry::RegistryError,
    pleach_contract::registry::RegistryProblem,
    pleach_contract::schema::ValidationError,
    pleach_contract::tier::ParseSafetyTierError,
    pleach_contract::tool::DefinitionError,
    pleach_core::agent::ModelError,
    pleach_core::assemble::IncrementalJsonError,
    pleach_core::assemble::StreamError,
    pleach_core::durable::StepFailure,
    pleach_core::providers::ProfileError,
    pleach_core::providers::ResponseError,
    pleach_core::providers::sse::FrameError,
    pleach_core::runtime::RuntimeError,
    pleach_core::safety::DecisionError,
    pleach_core::safety::SealError,
    pleach_core::search::SearchError,
    pleach_core::session::RestoreError,
    pleach_core::session::SessionError,
    pleach_mcp::McpError,
    pleach_mcp::remote::RemoteError,
    pleach_mcp::remote::KeyError,
}

fn unwind_safe<T: std::panic::UnwindSafe + std::panic::RefUnwindSafe>() {}

/// `AgentOptions` were unwind-safe before they could hold a `ToolSearch` (whose definitions hold
/// `Arc<dyn Fn>` handlers the compiler cannot see through): they still are.
#[test]
fn agent_options_and_a_tool_search_are_unwind_safe() {
    unwind_safe::<pleach_core::agent::AgentOptions>();
    unwind_safe::<pleach_core::search::ToolSearch>();
}

/// `McpRemote` was unwind-safe before it could hold an OAuth sign-in (the host's callbacks and
/// store as `dyn` objects, rmcp's authorization manager): it still is.
#[test]
fn a_remote_server_and_its_oauth_are_unwind_safe() {
    unwind_safe::<pleach_mcp::remote::McpRemote>();
    unwind_safe::<pleach_mcp::remote::OAuth>();
}

/// The error types of library crates this binary does not link, each checked in its own crate:
/// pleach-temporal (outside `cargo test`'s default members) boxes `DurableError` as an error in
/// its doc example, which CI's Temporal section runs.
const ERRORS_CHECKED_IN_THEIR_CRATE: &[&str] = &["DurableError"];

/// The crates whose public types are API: every crate but the binary, the benchmarks and the
/// test support.
fn library_crates() -> impl Iterator<Item = &'static str> {
    crate::module_graph::CRATES
        .iter()
        .copied()
        .filter(|krate| !["pleach-cli", "pleach-bench", "test-support"].contains(krate))
}

fn parse(path: &Path) -> syn::File {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|err| panic!("{}: {err}", path.display()));
    syn::parse_file(&text).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

fn workspace_path(relative: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(relative)
}

/// The `pub` structs and enums named `…Error` of one file, inline modules included.
#[derive(Default)]
struct ErrorTypes(Vec<String>);

impl Visit<'_> for ErrorTypes {
    fn visit_item_struct(&mut self, item: &ItemStruct) {
        self.found(&item.vis, &item.ident);
    }

    fn visit_item_enum(&mut self, item: &ItemEnum) {
        self.found(&item.vis, &item.ident);
    }
}

impl ErrorTypes {
    fn found(&mut self, visibility: &Visibility, ident: &syn::Ident) {
        let name = ident.to_string();
        if matches!(visibility, Visibility::Public(_)) && name.ends_with("Error") {
            self.0.push(name);
        }
    }
}

/// A new public error type fails here until `public_errors!` asserts it is an error.
#[test]
fn every_public_error_type_is_listed() {
    let listed: BTreeSet<&str> = PUBLIC_ERRORS
        .iter()
        .map(|path| path.rsplit("::").next().unwrap_or(path).trim())
        .chain(ERRORS_CHECKED_IN_THEIR_CRATE.iter().copied())
        .collect();
    let mut unlisted = Vec::new();
    for krate in library_crates() {
        let mut files = Vec::new();
        rust_files(&workspace_path(&format!("{krate}/src")), &mut files);
        for file in files {
            let mut found = ErrorTypes::default();
            found.visit_file(&parse(&file));
            unlisted.extend(
                found
                    .0
                    .into_iter()
                    .filter(|name| !listed.contains(name.as_str()))
                    .map(|name| format!("{name} ({})", file.display())),
            );
        }
    }
    assert!(
        unlisted.is_empty(),
        "public error types `public_errors!` in tests/public_api.rs does not assert: {unlisted:?}"
    );
}

/// Items named through either crate at one path are one type: pleach-core re-exports the
/// contract's modules whole and its root items by name.
#[test]
fn a_contract_item_has_the_same_path_in_pleach_core() {
    macro_rules! one_type {
        ($($($segment:ident)::+),* $(,)?) => {
            $(let _: fn(pleach_contract::$($segment)::+) -> pleach_core::$($segment)::+ =
                std::convert::identity;)*
        };
    }
    one_type! {
        call::ToolCall,
        error::ErrorCode,
        error::ToolError,
        extensions::Extensions,
        extensions::SessionState,
        registry::ToolRegistry,
        registry::RegistryError,
        schema::ValidationError,
        schema::ValidationResult,
        tier::SafetyTier,
        tier::ParseSafetyTierError,
        tool::ToolDefinition,
        tool::UnifiedToolDefinition,
        SafetyTier,
        ToolCall,
        ToolDefinition,
        ToolError,
        ValidationError,
    }
    assert_eq!(
        pleach_core::tier::SafetyTier::Critical,
        pleach_contract::SafetyTier::Critical
    );
}

fn is_doc_hidden(attrs: &[Attribute]) -> bool {
    attrs.iter().any(|attr| {
        attr.path().is_ident("doc")
            && attr
                .meta
                .require_list()
                .is_ok_and(|list| list.tokens.to_string() == "hidden")
    })
}

/// One path a `use` brings in: its segments, the last the item's own name (`*` for a glob), and
/// whether it is renamed.
struct UsePath {
    segments: Vec<String>,
    renamed: bool,
}

fn use_paths(tree: &UseTree, prefix: &mut Vec<String>, out: &mut Vec<UsePath>) {
    let mut leaf = |last: String, renamed: bool| {
        let mut segments = prefix.clone();
        segments.push(last);
        out.push(UsePath { segments, renamed });
    };
    match tree {
        UseTree::Path(path) => {
            prefix.push(path.ident.to_string());
            use_paths(&path.tree, prefix, out);
            prefix.pop();
        }
        UseTree::Name(name) => leaf(name.ident.to_string(), false),
        UseTree::Rename(rename) => leaf(rename.ident.to_string(), true),
        UseTree::Glob(_) => leaf("*".to_owned(), false),
        UseTree::Group(group) => {
            for tree in &group.items {
                use_paths(tree, prefix, out);
            }
        }
    }
}

/// Every path the `pub use`s of one file re-export, inline modules included.
#[derive(Default)]
struct Reexports(Vec<UsePath>);

impl Visit<'_> for Reexports {
    fn visit_item_use(&mut self, item: &ItemUse) {
        if matches!(item.vis, Visibility::Public(_)) {
            use_paths(&item.tree, &mut Vec::new(), &mut self.0);
        }
    }
}

fn reexports(path: &Path) -> Vec<UsePath> {
    let mut found = Reexports::default();
    found.visit_file(&parse(path));
    found.0
}

/// The public names at pleach-contract's root: its modules, its re-exports and its exported
/// macros (`#[macro_export]` puts one at the root wherever it is written); not what is
/// `#[doc(hidden)]`.
fn contract_root() -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for item in parse(&workspace_path("pleach-contract/src/lib.rs")).items {
        match item {
            Item::Mod(module)
                if matches!(module.vis, Visibility::Public(_)) && !is_doc_hidden(&module.attrs) =>
            {
                names.insert(module.ident.to_string());
            }
            Item::Use(item)
                if matches!(item.vis, Visibility::Public(_)) && !is_doc_hidden(&item.attrs) =>
            {
                let mut paths = Vec::new();
                use_paths(&item.tree, &mut Vec::new(), &mut paths);
                names.extend(
                    paths
                        .into_iter()
                        .filter_map(|path| path.segments.last().cloned()),
                );
            }
            _ => {}
        }
    }
    let mut files = Vec::new();
    rust_files(&workspace_path("pleach-contract/src"), &mut files);
    for file in files {
        let mut macros = ExportedMacros::default();
        macros.visit_file(&parse(&file));
        names.extend(macros.0);
    }
    // The sources were read as meant: a module, a re-export and an exported macro were found.
    for known in ["tier", "SafetyTier", "link_tools"] {
        assert!(names.contains(known), "`{known}` at the contract's root");
    }
    names
}

/// The `#[macro_export]` macros of one file.
#[derive(Default)]
struct ExportedMacros(Vec<String>);

impl Visit<'_> for ExportedMacros {
    fn visit_item_macro(&mut self, item: &ItemMacro) {
        let exported = item
            .attrs
            .iter()
            .any(|attr| attr.path().is_ident("macro_export"));
        if let (true, Some(ident)) = (exported, &item.ident) {
            self.0.push(ident.to_string());
        }
    }
}

/// pleach-core re-exports the contract from its root only, each item as
/// `pub use pleach_contract::{name}` under its own name, and from no module of its own but the
/// prelude: `pub use pleach_contract::tier::SafetyTier` in `safety` (or `pub use
/// crate::tier::SafetyTier` there) would name a contract item at a path pleach-contract does not
/// have.
#[test]
fn pleach_core_reexports_contract_items_only_at_the_contracts_paths() {
    let contract_root = contract_root();
    let src = workspace_path("pleach-core/src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut elsewhere = Vec::new();
    for file in files {
        let at_root = file == src.join("lib.rs");
        if file == src.join("prelude.rs") {
            continue;
        }
        for path in reexports(&file) {
            let from_contract = path.segments[0] == "pleach_contract";
            let contract_item_through_the_root = path.segments[0] == "crate"
                && path
                    .segments
                    .get(1)
                    .is_some_and(|name| contract_root.contains(name));
            let misplaced = if at_root {
                from_contract && (path.segments.len() != 2 || path.renamed)
            } else {
                from_contract || contract_item_through_the_root
            };
            if misplaced {
                elsewhere.push(format!("{} ({})", path.segments.join("::"), file.display()));
            }
        }
    }
    assert!(
        elsewhere.is_empty(),
        "pleach-core re-exports these contract items at paths pleach-contract does not have: \
         {elsewhere:?}"
    );
}

/// Every public item at pleach-contract's root is at pleach-core's root too, so a path that works
/// in the contract works in core.
#[test]
fn pleach_core_names_every_item_of_the_contract_root() {
    let core_root: BTreeSet<String> = reexports(&workspace_path("pleach-core/src/lib.rs"))
        .into_iter()
        .filter(|path| path.segments[0] == "pleach_contract" && path.segments.len() == 2)
        .map(|path| path.segments[1].clone())
        .collect();
    let missing: Vec<String> = contract_root().difference(&core_root).cloned().collect();
    assert!(
        missing.is_empty(),
        "pleach-contract has these at its root and pleach-core does not: {missing:?}"
    );
}
