// Rule: a tool takes at most one `#[input]` parameter (it is the whole input).
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
async fn find(#[input] first: Query, #[input] second: Query) -> String {
    format!("{} {}", first.text, second.text)
}

fn main() {
    let _ = find(
        Query {
            text: String::new(),
        },
        Query {
            text: String::new(),
        },
    );
}
