//! [`infer_batching_strategy`]: a tool's strategy from its name and input schema.

use serde_json::Value;

use super::BatchingStrategy;
use crate::tool::ToolDefinition;

/// Name prefixes of tools that only read: their calls can run side by side.
const READ_VERBS: &[&str] = &[
    "get",
    "list",
    "search",
    "find",
    "read",
    "fetch",
    "lookup",
    "query",
    "describe",
    "count",
    "show",
    "view",
    "check",
    "validate",
    "calculate",
    "compute",
    "convert",
    "math",
    "parse",
    "format",
    "estimate",
    "summarize",
    "inspect",
    "stat",
    "exists",
    "resolve",
];

/// Whether a tool's name starts with a read-only verb (rule 1 below, as a whole word): what
/// the inference calls a read, run side by side and (`Runtime::is_idempotent`) safe to run
/// again, whatever hint orders its calls.
pub(crate) fn names_a_read(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    let first_word = name.split(['_', '-']).next().unwrap_or_default();
    READ_VERBS.contains(&first_word)
}

/// Argument names that identify the resource a call acts on.
const RESOURCE_KEYS: &[&str] = &[
    "path",
    "file",
    "file_path",
    "filepath",
    "filename",
    "user_id",
    "account_id",
    "resource_id",
    "document_id",
    "key",
    "url",
    "id",
];

/// The strategy a definition implies, by these rules (in order; `docs/batching.md`):
///
/// 1. a name that starts with a read-only verb (`get`, `list`, `search`, `read`, `fetch`,
///    `lookup`, …, as a whole word: `get_user`, `search-corpus`, `math`) → [`Parallel`];
/// 2. an input schema with a resource key among its properties (`path`, `file`, `user_id`,
///    `account_id`, `key`, `url`, `id`, …) → [`Chunked`] on the first one;
/// 3. otherwise → [`Serial`], the safe default.
///
/// [`Parallel`]: BatchingStrategy::Parallel
/// [`Chunked`]: BatchingStrategy::Chunked
/// [`Serial`]: BatchingStrategy::Serial
///
/// ```
/// use pleach_core::{infer_batching_strategy, BatchingStrategy, ToolError, ToolDefinition};
/// use serde_json::json;
///
/// let tool = |name: &str, schema| ToolDefinition::builder(name, "A tool.")
///     .input_schema(schema)
///     .execute_json(|v, _| async move { Ok::<_, ToolError>(v) })
///     .unwrap();
/// let object = json!({ "type": "object", "properties": { "path": { "type": "string" } } });
/// assert_eq!(infer_batching_strategy(&tool("read_file", object.clone())), BatchingStrategy::Parallel);
/// assert_eq!(
///     infer_batching_strategy(&tool("write_file", object)),
///     BatchingStrategy::Chunked { key: "path".into() }
/// );
/// assert_eq!(infer_batching_strategy(&tool("send_email", json!({ "type": "object" }))), BatchingStrategy::Serial);
/// ```
pub fn infer_batching_strategy(definition: &ToolDefinition) -> BatchingStrategy {
    if names_a_read(definition.name()) {
        return BatchingStrategy::Parallel;
    }
    let properties = definition
        .input_schema()
        .get("properties")
        .and_then(Value::as_object);
    if let Some(properties) = properties {
        for key in RESOURCE_KEYS {
            if properties.contains_key(*key) {
                return BatchingStrategy::Chunked {
                    key: (*key).to_owned(),
                };
            }
        }
    }
    BatchingStrategy::Serial
}
