// Rule: `impl Trait` in the return type names no type to derive an output schema from.
use pleach_core::tool;

/// Echoes its input.
#[tool]
async fn echo(text: String) -> impl std::fmt::Display {
    text
}

fn main() {
    let _ = echo(String::new());
}
