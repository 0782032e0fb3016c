// Rule: the name defaults to the fn's name, so a non-ASCII fn name without `name = "…"` is an
// invalid tool name; the error on the fn's name says to set `name`.
use pleach_core::tool;

/// Summarises a CV.
#[tool]
async fn résumé(text: String) -> String {
    text
}

fn main() {
    let _ = résumé(String::new());
}
