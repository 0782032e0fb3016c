// Rule: a tool name must match `^[A-Za-z0-9_-]{1,64}$` (providers refuse anything else); checked
// at compile time, on the literal.
use pleach_core::tool;

/// Looks a word up.
#[tool(name = "dictionary lookup")]
async fn lookup(word: String) -> String {
    word
}

fn main() {
    let _ = lookup(String::new());
}
