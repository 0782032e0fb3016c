// Rule: all mistakes are reported at once, each on its own token (here: an unknown key, a
// registry-level key on `#[tool]`, and a missing `async`), and nothing else.
use pleach_core::tool;

/// Looks a word up.
#[tool(nmae = "lookup", safety_tier = "critical")]
fn lookup(#[arg(maximum = 5)] word: String) -> String {
    word
}

fn main() {
    let _ = lookup(String::new());
}
