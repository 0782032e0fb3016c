// Rule: a body that does not parse yet (the user is typing) keeps the tool: the fn is emitted as
// written, so the only error is rustc's on the syntax, and code using the tool's handle elsewhere
// gets no second error.
use pleach_core::tool;

/// Looks a word up.
#[tool]
async fn lookup(word: String) -> String {
    let meaning = ;
    word
}

fn main() {
    let _ = lookup::NAME;
    let _ = lookup::definition();
}
