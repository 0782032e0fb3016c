// Rule: a tool cannot have a `where` clause (its schema is fixed at compile time).
use pleach_core::tool;

/// Echoes its input.
#[tool]
async fn echo(text: String) -> String
where
    String: Clone,
{
    text
}

fn main() {
    let _ = echo(String::new());
}
