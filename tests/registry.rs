//! The compile-time registry: `#[tool]` fns of this binary are found by name, sorted, with their
//! schemas; explicit registration refuses duplicate names with both sites; the TypeScript spec's
//! `setOrchestratorRegistry` (`set_active_registry`) swaps the active registry.

use pleach_core::{
    SafetyTier, ToolCall, ToolContext, ToolDefinition, ToolError, ToolRegistryBuilder, ToolSource,
    UnifiedToolDefinition, tool, tool_registry, unified_tool,
};
use serde_json::json;

/// Adds two integers.
#[tool]
async fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// Says hello.
#[tool(name = "hello-world")]
async fn greet() -> &'static str {
    "hello"
}

/// Reads an account's balance.
#[unified_tool(category = "accounts", safety_tier = "standard")]
async fn read_balance(account_id: String) -> String {
    account_id
}

#[test]
fn macro_tools_are_registered_sorted_with_schemas() {
    let registry = tool_registry();
    let names: Vec<&str> = registry.names().collect();
    for name in ["add", "hello-world", "read_balance"] {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted, "the registry is sorted by name");
    assert_eq!(registry.len(), names.len());
    assert_eq!(registry.tools().len(), names.len());

    let add = registry.definition("add").expect("add is registered");
    assert_eq!(add.description(), "Adds two integers.");
    assert_eq!(
        add.input_schema(),
        &json!({
            "type": "object",
            "properties": {
                "a": { "type": "integer", "format": "int64", "minimum": i64::MIN, "maximum": i64::MAX },
                "b": { "type": "integer", "format": "int64", "minimum": i64::MIN, "maximum": i64::MAX }
            },
            "required": ["a", "b"],
            "additionalProperties": false
        })
    );
    assert_eq!(
        add.output_schema().map(|s| &s["type"]),
        Some(&json!("integer"))
    );
    assert!(add.site().file().ends_with("registry.rs"), "{}", add.site());

    assert!(registry.contains("hello-world"));
    assert!(
        !registry.contains("greet"),
        "the `name` key replaces the fn's name"
    );
    assert!(pleach_core::try_tool_registry().is_ok());
}

#[test]
fn unified_fields_reach_the_registry() {
    let tool = tool_registry().get("read_balance").expect("registered");
    assert_eq!(tool.safety_tier(), Some(SafetyTier::Standard));
    assert_eq!(tool.category(), "accounts");
    assert_eq!(tool.display_name(), "Read Balance");
    assert_eq!(tool.schema_key(), "ReadBalanceInput");
    // A basic tool carries no tier.
    assert_eq!(
        tool_registry()
            .get("add")
            .and_then(UnifiedToolDefinition::safety_tier),
        None
    );
}

#[tokio::test]
async fn the_handle_and_the_registry_share_one_definition() {
    let from_handle = add::definition();
    let from_registry = tool_registry().definition("add").expect("registered");
    assert_eq!(from_handle.input_schema(), from_registry.input_schema());
    // Built once: the handle reads the very definition the registry holds.
    assert!(std::ptr::eq(
        from_handle.input_schema(),
        from_registry.input_schema()
    ));
    assert_eq!(from_handle.site(), from_registry.site());
    let out = from_registry
        .call(r#"{"a":40,"b":2}"#, ToolContext::new("call_1"))
        .await
        .expect("valid call");
    assert_eq!(out, json!(42));
    // The fn is still the fn.
    assert_eq!(add(1, 2).await, 3);
    assert_eq!(greet::NAME, "hello-world");
}

fn ping(description: &str) -> pleach_core::ToolDefinition {
    ToolDefinition::builder("ping", description)
        .execute_json(|_, _| async { Ok::<_, ToolError>(json!("pong")) })
        .expect("valid definition")
}

#[test]
fn explicit_registration_refuses_duplicates_naming_both_sites() {
    // Two definitions of one name, at two lines.
    let first = ToolDefinition::builder("ping", "first")
        .execute_json(|_, _| async { Ok::<_, ToolError>(json!(1)) });
    let second = ToolDefinition::builder("ping", "second")
        .execute_json(|_, _| async { Ok::<_, ToolError>(json!(2)) });
    let (first, second) = (first.expect("valid"), second.expect("valid"));
    assert_ne!(
        first.site(),
        second.site(),
        "each ToolDefinition::builder call records its own line"
    );
    let err = ToolRegistryBuilder::new()
        .register(first.clone())
        .register(second.clone())
        .build()
        .expect_err("duplicate names are refused");
    let text = err.to_string();
    assert!(text.contains("`ping` is defined twice"), "{text}");
    assert!(text.contains(&first.site().to_string()), "{text}");
    assert!(text.contains(&second.site().to_string()), "{text}");
    assert_eq!(err.problems().len(), 1);
}

#[test]
fn explicit_registration_mixes_macro_and_runtime_tools() {
    let registry = ToolRegistryBuilder::new()
        .register(ping("Answers pong."))
        .register(add::unified())
        .register(read_balance::unified())
        .build()
        .expect("unique names");
    assert_eq!(
        registry.names().collect::<Vec<_>>(),
        ["add", "ping", "read_balance"]
    );
    assert_eq!(
        registry
            .get("read_balance")
            .and_then(UnifiedToolDefinition::safety_tier),
        Some(SafetyTier::Standard)
    );
}

/// The TypeScript spec's shim: a host's own storage behind the trait.
struct ListRegistry(Vec<UnifiedToolDefinition>);

impl ToolSource for ListRegistry {
    fn tools(&self) -> Vec<&UnifiedToolDefinition> {
        self.0.iter().collect()
    }
    fn get(&self, name: &str) -> Option<&UnifiedToolDefinition> {
        self.0.iter().find(|t| t.name() == name)
    }
    fn len(&self) -> usize {
        self.0.len()
    }
}

#[test]
fn set_active_registry_replaces_and_clear_restores_the_active_registry() {
    let call = ToolCall::new("c1", "ping", "{}");
    assert!(
        !pleach_core::validate_tool_call(&call).valid,
        "ping is not a macro tool"
    );

    pleach_core::set_active_registry(ListRegistry(vec![ping("Answers pong.").into()]));
    assert!(pleach_core::validate_tool_call(&call).valid);
    assert!(pleach_core::active_registry().contains("ping"));
    assert!(
        !pleach_core::active_registry().contains("add"),
        "the shim replaces, not merges"
    );

    pleach_core::clear_active_registry();
    assert!(!pleach_core::validate_tool_call(&call).valid);
    assert!(pleach_core::active_registry().contains("add"));
}

#[test]
fn linked_tools_assertion_passes_for_present_tools() {
    pleach_core::registry::assert_tools_linked(&["add", "hello-world", "read_balance"]);
}

#[test]
#[should_panic(expected = "tools missing from the registry: [\"not_linked\"]")]
fn linked_tools_assertion_catches_a_missing_tool() {
    pleach_core::registry::assert_tools_linked(&["add", "not_linked"]);
}

/// Builds a runtime over an empty active registry and serves it: run in a child process by
/// [`an_empty_registry_is_said_on_stderr`], whose stderr it writes to.
#[test]
#[ignore = "a child process of an_empty_registry_is_said_on_stderr"]
fn empty_registry_child() {
    pleach_core::set_active_registry(ToolRegistryBuilder::new().build().expect("empty"));
    let runtime = pleach_core::Runtime::builder()
        .build()
        .expect("an empty runtime builds");
    let _server = pleach_mcp::McpServer::new(runtime).expect("an empty server");
}

/// A runtime built over no tools, and an MCP server serving none, say so on stderr (no `tracing`
/// subscriber is installed), with the fix: tools of an unreferenced crate vanish silently
/// otherwise.
#[test]
fn an_empty_registry_is_said_on_stderr() {
    let output = std::process::Command::new(std::env::current_exe().expect("the test binary"))
        .args([
            "--exact",
            "empty_registry_child",
            "--ignored",
            "--nocapture",
        ])
        .output()
        .expect("the child runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    for what in ["the runtime has no tools", "the MCP server has no tools"] {
        assert!(stderr.contains(what), "{what}: {stderr}");
    }
    assert!(stderr.contains("pleach_core::link_tools!"), "{stderr}");
}
