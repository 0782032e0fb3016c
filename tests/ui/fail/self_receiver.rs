// Rule: a tool cannot take `self`: a model calls it by name, with no value to call a method on.
use pleach_core::tool;

struct Counter;

impl Counter {
    /// Counts.
    #[tool]
    async fn count(&self, step: u32) -> u32 {
        step
    }
}

fn main() {
    let _ = Counter.count(1);
}
