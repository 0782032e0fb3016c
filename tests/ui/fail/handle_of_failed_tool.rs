// Rule: one mistake gives one error even where code uses the tool's handle (not generated on
// error): rustc reports no unresolved paths after the attribute's error.
use pleach_core::tool;

/// Looks a word up.
#[tool(nmae = "lookup")]
async fn lookup(word: String) -> String {
    word
}

fn main() {
    let _ = lookup(String::new());
    let _ = lookup::NAME;
    let _ = lookup::definition();
}
