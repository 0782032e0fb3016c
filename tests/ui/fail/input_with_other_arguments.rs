// Rule: with an `#[input]` parameter the input type is the whole input; any other parameter
// besides the `ToolContext` is an error on that parameter.
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
async fn find(#[input] query: Query, limit: u32) -> String {
    format!("{} {limit}", query.text)
}

fn main() {
    let _ = find(
        Query {
            text: String::new(),
        },
        1,
    );
}
