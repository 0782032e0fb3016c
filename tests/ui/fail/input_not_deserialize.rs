// An `#[input]` type without `Deserialize`: one error, on the type.
use pleach_core::schemars::JsonSchema;
use pleach_core::tool;

#[derive(JsonSchema)]
#[schemars(crate = "pleach_core::schemars")]
struct Query {
    text: String,
}

/// Free-text search.
#[tool]
async fn find(#[input] query: Query) -> String {
    query.text
}

fn main() {
    let _ = find(Query {
        text: String::new(),
    });
}
