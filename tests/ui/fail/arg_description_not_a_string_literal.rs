// Rule: `#[arg(description = …)]` takes a string literal; the error sits on the value.
use pleach_core::tool;

/// Free-text search.
#[tool]
async fn search(#[arg(description = 5)] query: String) -> String {
    query
}

fn main() {
    let _ = search(String::new());
}
