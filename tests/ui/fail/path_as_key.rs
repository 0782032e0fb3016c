// Rule: keys are plain identifiers; a path is an error on it listing the keys.
use pleach_core::tool;

/// Looks a word up.
#[tool(tool::name = "lookup")]
async fn lookup(word: String) -> String {
    word
}

fn main() {
    let _ = lookup(String::new());
}
