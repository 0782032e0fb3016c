// Rule: `#[input]` on a type takes no arguments; the type's own `#[serde(…)]` says the rest.
use pleach_core::{input, tool};

#[input(deny_unknown_fields)]
struct Query {
    text: String,
}

/// Free-text search.
#[tool]
async fn find(#[input] query: Query) -> String {
    query.text
}

fn main() {}
