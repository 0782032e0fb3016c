// Rule: a type error in a tool's body is reported once, in the body, as for any fn: the handle
// and the registration are generated from the signature, so code using them stays error-free.
use pleach_core::tool;

/// Counts the characters of a word.
#[tool]
async fn count(word: String) -> usize {
    let length: usize = word;
    length
}

fn main() {
    let _ = count::NAME;
    let _ = count::definition();
}
