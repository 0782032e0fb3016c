// A bound that is not a number: one error, on the bound.
use pleach_core::tool;

/// Counts.
#[tool]
async fn count(#[arg(min = "a")] n: u32) -> u32 {
    n
}

fn main() {
    let _ = count(1);
}
