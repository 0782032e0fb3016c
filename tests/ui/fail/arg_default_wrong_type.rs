// A string `#[arg(default = "…")]` on a parameter that is not a string type: one error, on the
// parameter type, in our words.
use pleach_core::tool;

/// Free-text search.
#[tool]
async fn search(query: String, #[arg(default = "ten")] limit: u32) -> String {
    format!("{query} {limit}")
}

fn main() {
    let _ = search(String::new(), 1);
}
