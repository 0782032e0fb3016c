// A doc comment on a parameter: Rust does not allow one there, and rustc's own error (re-emitted
// by the macro) only lists the attributes it does allow. One error, on the comment, with the
// `#[arg]` that says the same.
use pleach_core::tool;

/// Free-text search.
#[tool]
async fn search(
    /// What to look for.
    query: String,
) -> String {
    query
}

fn main() {
    let _ = search(String::new());
}
