//! The public API's shape where a type check or the sources can hold it: every public error type
//! is a `std::error::Error`.

use std::collections::BTreeSet;
use std::path::Path;

use syn::visit::Visit;
use syn::{ItemEnum, ItemStruct, Visibility};

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
    pleach_core::session::RestoreError,
    pleach_core::session::SessionError,
    pleach_mcp::McpError,
    pleach_mcp::remote::RemoteError,
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
