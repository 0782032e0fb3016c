// Rule: a misspelt safety tier gets "did you mean" besides the list of allowed values.
use pleach_core::unified_tool;

/// Deletes an account.
#[unified_tool(safety_tier = "critcal")]
async fn delete_account(account_id: String) -> String {
    account_id
}

fn main() {
    let _ = delete_account(String::new());
}
