// Rule: a tool needs a description (the model reads it to decide when to call the tool): a doc
// comment or `description = "…"`; neither is an error on the fn's name.
use pleach_core::tool;

#[tool]
async fn echo(text: String) -> String {
    text
}

fn main() {
    let _ = echo(String::new());
}
