// Literal bounds the wrong way round: no value fits, so every call would be refused. One error, on
// `max`.
use pleach_core::tool;

/// Pages through results.
#[tool]
async fn page(#[arg(min = 50, max = 1)] size: u32) -> u32 {
    size
}

fn main() {
    let _ = page(1);
}
