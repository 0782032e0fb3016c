// Rule: an `#[input]` type has a JSON Schema; one error, on the type (in rustc's words for now:
// `__private::input_schema` bounds `JsonSchema` directly, so our `ToolArgument` message is unused).
use pleach_core::serde::Deserialize;
use pleach_core::tool;

#[derive(Deserialize)]
#[serde(crate = "pleach_core::serde")]
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
