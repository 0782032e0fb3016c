// Rule: a tool is an `async fn` (the runtime awaits it and cancels it); the error sits on `fn`.
use pleach_core::tool;

/// Adds two integers.
#[tool]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

fn main() {
    let _ = add(1, 2);
}
