// Rule: every argument type has a JSON Schema; the error is our `ToolArgument` message on the
// parameter's type, with the derive that fixes it.
use pleach_core::serde::Deserialize;
use pleach_core::tool;

#[derive(Deserialize)]
#[serde(crate = "pleach_core::serde")]
struct Filter {
    text: String,
}

/// Free-text search.
#[tool]
async fn search(filter: Filter) -> String {
    filter.text
}

fn main() {
    let _ = search(Filter {
        text: String::new(),
    });
}
