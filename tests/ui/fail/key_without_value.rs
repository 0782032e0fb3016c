// Rule: a key takes a value (`name = "…"`); a bare key is an error on it.
use pleach_core::tool;

/// Looks a word up.
#[tool(name)]
async fn lookup(word: String) -> String {
    word
}

fn main() {
    let _ = lookup(String::new());
}
