//! [`validate_tool_call`]: a call checked against the active registry's tool without running it.

use super::{ToolSource, active_registry};
use crate::call::ToolCall;
use crate::schema::{KEYWORD_UNKNOWN_TOOL, ValidationError, ValidationResult};

/// Checks a call against the active registry's tool (see
/// [`set_active_registry`](crate::set_active_registry)), without running it: the
/// tool exists, the arguments are JSON with no duplicate key, and they satisfy the input schema.
/// It knows no runtime: a session also applies its runtime's [`Limits`](https://docs.rs/pleach-core/latest/pleach_core/session/struct.Limits.html) (size and
/// nesting, 1006) and enabled tools, so a valid verdict does not promise those.
///
/// ```
/// use pleach_core::{set_active_registry, validate_tool_call, ToolCall, ToolError, ToolRegistryBuilder, ToolDefinition};
/// use serde_json::json;
///
/// let search = ToolDefinition::builder("search_corpus", "Free-text search.")
///     .input_schema(json!({
///         "type": "object",
///         "properties": { "query": { "type": "string", "minLength": 1 } },
///         "required": ["query"]
///     }))
///     .execute_json(|v, _| async move { Ok::<_, ToolError>(v) })
///     .unwrap();
/// set_active_registry(ToolRegistryBuilder::new().register(search).build().unwrap());
///
/// assert!(validate_tool_call(&ToolCall::new("c1", "search_corpus", r#"{"query":"rust"}"#)).valid);
///
/// let verdict = validate_tool_call(&ToolCall::new("c2", "search_corpus", r#"{"query":""}"#));
/// assert_eq!(verdict.errors[0].path, "/query");
/// assert_eq!(verdict.errors[0].keyword, "minLength");
///
/// // serde_json would keep the last `query`; an approval screen could show the first one.
/// let verdict = validate_tool_call(&ToolCall::new("c3", "search_corpus", r#"{"query":"a","query":"b"}"#));
/// assert_eq!(verdict.errors[0].keyword, "duplicateKey");
/// ```
pub fn validate_tool_call(call: &ToolCall) -> ValidationResult {
    validate_in(&*active_registry(), call)
}

/// [`validate_tool_call`] against `registry`.
pub fn validate_in(registry: &dyn ToolSource, call: &ToolCall) -> ValidationResult {
    match registry.get(call.name()) {
        Some(tool) => tool.definition().validate_arguments(call.arguments()),
        None => ValidationResult::invalid(vec![ValidationError {
            path: String::new(),
            keyword: KEYWORD_UNKNOWN_TOOL.to_owned(),
            message: format!("no tool named `{}` is registered", call.name()),
        }]),
    }
}
