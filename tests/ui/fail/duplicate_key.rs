// Rule: each key is given once; the error sits on the second occurrence.
use pleach_core::tool;

/// Looks a word up.
#[tool(name = "lookup", name = "find")]
async fn lookup(word: String) -> String {
    word
}

fn main() {
    let _ = lookup(String::new());
}
