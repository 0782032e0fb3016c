// Rule: arguments are owned (read from the call's JSON and moved into the tool's future); a
// borrowed type is an error on it.
use pleach_core::tool;

/// Echoes its input.
#[tool]
async fn echo(text: &str) -> String {
    text.to_owned()
}

fn main() {
    let _ = echo("x");
}
