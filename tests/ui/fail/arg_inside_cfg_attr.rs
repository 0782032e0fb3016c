// `#[arg]` inside `#[cfg_attr]`: the macro reads the parameter before `cfg_attr` applies, so the
// `#[arg]` would be left for the compiler ("cannot find attribute `arg`"). One error, on the
// `cfg_attr`.
use pleach_core::tool;

/// Free-text search.
#[tool]
async fn search(#[cfg_attr(all(), arg(min = 1))] query: String) -> String {
    query
}

fn main() {
    let _ = search(String::new());
}
