// Rule: an `#[arg]` key takes a value (`default = …`); a bare key is an error on it.
use pleach_core::tool;

/// Free-text search.
#[tool]
async fn search(query: String, #[arg(default)] limit: u32) -> String {
    format!("{query} {limit}")
}

fn main() {
    let _ = search(String::new(), 1);
}
