// `#[arg(min/max)]` on a type that is neither a number, a string nor a list (JSON Schema's bounds
// would be ignored, and the bound silently not apply): one error, on the parameter type, saying
// what to use.
use pleach_core::tool;

/// Toggles something.
#[tool]
async fn toggle(#[arg(min = 1, max = 3)] on: bool) -> bool {
    on
}

fn main() {
    let _ = toggle(true);
}
