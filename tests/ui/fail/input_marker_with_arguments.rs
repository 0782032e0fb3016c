// Rule: `#[input]` is a bare marker; arguments to it are an error.
use pleach_core::schemars::JsonSchema;
use pleach_core::serde::Deserialize;
use pleach_core::tool;

#[derive(Deserialize, JsonSchema)]
#[serde(crate = "pleach_core::serde")]
#[schemars(crate = "pleach_core::schemars")]
struct Query {
    text: String,
}

/// Free-text search.
#[tool]
async fn find(#[input(flatten)] query: Query) -> String {
    query.text
}

fn main() {
    let _ = find(Query {
        text: String::new(),
    });
}
