// Rule: a `match` half written in a tool's body keeps the tool's handle: only rustc's syntax
// error is reported, not one from the macro or from code using `lookup::definition()`.
use pleach_core::tool;

/// Looks a word up.
#[tool]
async fn lookup(word: String) -> String {
    match word.as_str() {
        "" =>
    }
}

fn main() {
    let _ = lookup::definition();
}
