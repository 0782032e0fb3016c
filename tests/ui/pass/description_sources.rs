//! The description comes from `description = "…"` or, without it, from the doc comment (lines
//! joined, common indentation removed); the key wins over the doc comment.
#![deny(warnings)]

use pleach_core::tool;

/// Converts a temperature
///   from degrees Celsius.
#[tool]
async fn convert(celsius: f64) -> f64 {
    celsius * 9.0 / 5.0 + 32.0
}

/// Internal note for maintainers: the model should not read this.
#[tool(description = "Says hello.")]
async fn greet(name: String) -> String {
    format!("hello {name}")
}

fn main() {
    assert_eq!(
        convert::definition().description(),
        "Converts a temperature\n  from degrees Celsius."
    );
    assert_eq!(greet::definition().description(), "Says hello.");
}
