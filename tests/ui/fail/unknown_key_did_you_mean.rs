// Rule: an unknown key that is a near miss of a real one gets "did you mean".
use pleach_core::tool;

/// Looks a word up.
#[tool(nmae = "x")]
async fn lookup(word: String) -> String {
    word
}

fn main() {
    let _ = lookup(String::new());
}
