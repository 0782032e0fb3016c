// Rule: each `#[arg]` key is given once; the error sits on the second occurrence.
use pleach_core::tool;

/// Free-text search.
#[tool]
async fn search(query: String, #[arg(max = 5, max = 10)] limit: u32) -> String {
    format!("{query} {limit}")
}

fn main() {
    let _ = search(String::new(), 1);
}
