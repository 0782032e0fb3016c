// A literal string default outside the literal length bounds: every call that leaves the argument
// out would be refused. One error, on the default.
use pleach_core::tool;

/// Greets someone.
#[tool]
async fn greet(#[arg(default = "", min = 1, max = 20)] name: String) -> String {
    format!("hello {name}")
}

fn main() {
    let _ = greet(String::new());
}
