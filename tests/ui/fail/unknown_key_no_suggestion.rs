// Rule: an unknown key with no near miss lists every key the macro takes.
use pleach_core::tool;

/// Looks a word up.
#[tool(retries = 3)]
async fn lookup(word: String) -> String {
    word
}

fn main() {
    let _ = lookup(String::new());
}
