// A `#[cfg]`'d parameter: the macro sees every parameter as written, the compiler then removes
// some, and the generated call no longer fits the fn (rustc's error is an argument count on the
// fn's name). One error, on the `#[cfg]`, saying what to do instead.
use pleach_core::tool;

/// Free-text search.
#[tool]
async fn search(query: String, #[cfg(test)] region: String) -> String {
    query
}

fn main() {
    let _ = search(String::new());
}
