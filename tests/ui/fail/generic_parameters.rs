// Rule: a tool cannot be generic: its JSON Schema is generated once from concrete types.
use pleach_core::tool;

/// Echoes its input.
#[tool]
async fn echo<T: ToString>(value: T) -> String {
    value.to_string()
}

fn main() {
    let _ = echo(1);
}
