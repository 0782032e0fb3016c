//! `name = "…"` sets the name the model calls, different from the fn's; the fn keeps its own name.
#![deny(warnings)]

use pleach_core::{ToolContext, serde_json::json, tool};

/// Looks a word up.
#[tool(name = "dictionary-lookup")]
async fn lookup(word: String) -> String {
    format!("{word}: a word")
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let registry = pleach_core::tool_registry();
    assert!(registry.contains("dictionary-lookup"));
    assert!(!registry.contains("lookup"));
    assert_eq!(lookup::NAME, "dictionary-lookup");
    assert_eq!(lookup::definition().name(), "dictionary-lookup");

    // Also through the `ToolSource` trait a host sees.
    let active = pleach_core::active_registry();
    let tool = active.get("dictionary-lookup").unwrap();
    let out = tool
        .definition()
        .call(r#"{"word":"pleach"}"#, ToolContext::new("c1"))
        .await;
    assert_eq!(out.unwrap(), json!("pleach: a word"));

    assert_eq!(lookup("pleach".into()).await, "pleach: a word");
}
