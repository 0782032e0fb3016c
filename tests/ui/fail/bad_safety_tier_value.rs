// Rule: `safety_tier` takes one of the TypeScript spec's three values; the error lists all of them.
use pleach_core::unified_tool;

/// Looks up an account by id.
#[unified_tool(safety_tier = "urgent")]
async fn lookup_account(account_id: String) -> String {
    account_id
}

fn main() {
    let _ = lookup_account(String::new());
}
