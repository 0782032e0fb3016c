// `#[arg(min/max)]` on a type that is not a number (JSON Schema's `minimum`/`maximum` would be
// ignored, and the bound silently not apply): one error, on the parameter type, saying what to use.
use pleach_core::tool;

/// Greets someone.
#[tool]
async fn greet(#[arg(min = 1, max = 3)] name: String) -> String {
    format!("hello {name}")
}

fn main() {
    let _ = greet(String::new());
}
