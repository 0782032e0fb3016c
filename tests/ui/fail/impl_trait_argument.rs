// Rule: `impl Trait` names no type to derive a schema from; the error sits on the `impl Trait`.
use pleach_core::tool;

/// Echoes its input.
#[tool]
async fn echo(text: impl Into<String>) -> String {
    text.into()
}

fn main() {
    let _ = echo("x");
}
