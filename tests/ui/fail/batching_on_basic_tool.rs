// Rule: batching is not a tool field; the error on `batching` points at batching hints (the
// runtime's per-tool override), keyed by tool name.
use pleach_core::tool;

/// Reads a file.
#[tool(batching = "serial")]
async fn read_file(path: String) -> String {
    path
}

fn main() {
    let _ = read_file(String::new());
}
