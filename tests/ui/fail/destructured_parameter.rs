// Rule: a parameter's name is the argument the model sees, so it must be a plain name, not a
// pattern.
use pleach_core::tool;

/// Adds two integers.
#[tool]
async fn add((a, b): (i64, i64)) -> i64 {
    a + b
}

fn main() {
    let _ = add((1, 2));
}
