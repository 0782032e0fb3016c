// Rule: `#[arg]` takes `description`, `default`, `min` and `max`; a near miss gets "did you mean".
use pleach_core::tool;

/// Free-text search.
#[tool]
async fn search(query: String, #[arg(maximum = 5)] limit: u32) -> String {
    format!("{query} {limit}")
}

fn main() {
    let _ = search(String::new(), 1);
}
