// Rule: `safety_tier` belongs to the registry-level shape; on `#[tool]` it is an error on that
// key naming `#[unified_tool]` (the Rust form of the TypeScript spec's excess-property error).
use pleach_core::tool;

/// Deletes an account.
#[tool(name = "x", safety_tier = "critical")]
async fn delete_account(id: String) -> String {
    id
}

fn main() {}
