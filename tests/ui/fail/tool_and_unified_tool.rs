// `#[tool]` and `#[unified_tool]` on one fn (a tool moved to the registry-level shape with the old
// attribute left): each would define the handle and the registry entry, and rustc would report
// every generated item twice. One error, on the second attribute.
use pleach_core::{tool, unified_tool};

/// Looks up an account by id.
#[tool]
#[unified_tool(safety_tier = "critical")]
async fn lookup(account_id: String) -> String {
    account_id
}

fn main() {
    let _ = lookup(String::new());
}
