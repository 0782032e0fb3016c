// Rule: `#[arg]` takes keys in parentheses; a bare `#[arg]` is an error on it.
use pleach_core::tool;

/// Free-text search.
#[tool]
async fn search(#[arg] query: String) -> String {
    query
}

fn main() {
    let _ = search(String::new());
}
