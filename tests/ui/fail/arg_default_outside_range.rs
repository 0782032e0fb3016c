// A literal default outside the literal bounds: every call that leaves the argument out would be
// refused. One error, on the default.
use pleach_core::tool;

/// Pages through results.
#[tool]
async fn page(#[arg(default = 100, min = 1, max = 50)] size: u32) -> u32 {
    size
}

fn main() {
    let _ = page(1);
}
