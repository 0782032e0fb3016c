// A tool whose future is not `Send` (the runtime runs tools on a multi-threaded executor):
// one error, on the fn's name, with rustc's note on the `.await` that holds the non-`Send` value.
use pleach_core::tool;
use std::rc::Rc;

/// Counts.
#[tool]
async fn count(step: u32) -> u32 {
    let shared = Rc::new(step);
    std::future::ready(()).await;
    *shared
}

fn main() {
    let _ = count(1);
}
