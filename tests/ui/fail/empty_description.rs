// Rule: an explicit description must say something; a blank one is an error on the literal.
use pleach_core::tool;

#[tool(description = "  ")]
async fn echo(text: String) -> String {
    text
}

fn main() {
    let _ = echo(String::new());
}
