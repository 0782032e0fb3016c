// Rule: `#[tool]` goes on an `async fn`; on anything else the error says so.
use pleach_core::tool;

/// A search.
#[tool]
struct Search {
    query: String,
}

fn main() {
    let _ = Search {
        query: String::new(),
    }
    .query;
}
