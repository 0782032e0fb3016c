//! `#[unified_tool]` with every key, and with none (the registry-level defaults).
#![deny(warnings)]

use pleach_core::{SafetyTier, unified_tool};

/// Looks up an account by id.
#[unified_tool(
    name = "account_lookup",
    description = "Looks up an account by its id.",
    id = "accounts.lookup",
    display_name = "Account Lookup",
    category = "analysis",
    schema_key = "AccountLookupArgs",
    safety_tier = "critical"
)]
async fn lookup_account(account_id: String) -> String {
    account_id
}

/// Reads a note.
#[unified_tool(safety_tier = "advisory")]
async fn read_note(key: String) -> String {
    key
}

/// Echoes its input.
#[unified_tool]
async fn echo_text(text: String) -> String {
    text
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let registry = pleach_core::tool_registry();
    let tool = registry.get("account_lookup").unwrap();
    assert_eq!(tool.name(), "account_lookup");
    assert_eq!(
        tool.definition().description(),
        "Looks up an account by its id."
    );
    assert_eq!(tool.id(), "accounts.lookup");
    assert_eq!(tool.display_name(), "Account Lookup");
    assert_eq!(tool.category(), "analysis");
    assert_eq!(tool.schema_key(), "AccountLookupArgs");
    assert_eq!(tool.safety_tier(), Some(SafetyTier::Critical));
    assert_eq!(lookup_account::NAME, "account_lookup");
    assert!(!registry.contains("lookup_account"));

    assert_eq!(
        read_note::unified().safety_tier(),
        Some(SafetyTier::Advisory)
    );

    let plain = echo_text::unified();
    assert_eq!(
        (
            plain.id(),
            plain.display_name(),
            plain.category(),
            plain.schema_key(),
            plain.safety_tier()
        ),
        ("echo_text", "Echo Text", "general", "EchoTextInput", None)
    );

    assert_eq!(lookup_account("acc_1".into()).await, "acc_1");
}
