::core::compile_error! {
    "`safety_tier` is not a field of the basic tool shape (`#[tool]` takes only `name` and `description`); use `#[unified_tool(safety_tier = …)]` for the registry-level shape"
}
/// Deletes an account.
async fn delete_account(id: String) {}
