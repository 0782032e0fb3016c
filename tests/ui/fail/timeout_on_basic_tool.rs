// Rule: a timeout is not a tool field; per-tool timeouts are runtime or plugin configuration.
use pleach_core::tool;

/// Fetches a page.
#[tool(timeout = "30s")]
async fn fetch(url: String) -> String {
    url
}

fn main() {
    let _ = fetch(String::new());
}
