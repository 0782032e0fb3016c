//! Model Context Protocol: tools as `tools/list` lists them, and `tools/call` results.
//!
//! MCP is not a model API: a client lists the tools and calls them, but sends no model's calls
//! and keeps its own conversation, so there are no calls to read and no messages to write. This
//! form is therefore free functions, not a [`ProviderFormat`](super::ProviderFormat).
//!
//! MCP carries `title` (the registry's display name) beside the name, and an `outputSchema` only
//! for tools whose output is an object: MCP's `structuredContent` is a JSON object, so an output
//! schema of another type is left out (the result still goes back as text).
//!
//! ```
//! use pleach_core::providers::mcp_tools;
//!
//! let registry = pleach_core::ToolRegistryBuilder::new().build().unwrap();
//! assert!(mcp_tools::definitions(&registry).unwrap().is_empty());
//! let result = mcp_tools::call_tool_result(&Ok(serde_json::json!({ "ok": true }).into()));
//! assert_eq!(result["structuredContent"]["ok"], true);
//! ```

use serde_json::{Value, json};

use crate::content::{Block, ContentBlock, ToolOutput};
use crate::error::ToolError;
use crate::registry::ToolSource;
use crate::tool::UnifiedToolDefinition;

use super::format::each_definition;
use super::{Profile, ProfileError, ProfileProblem};

/// A tool as MCP's `tools/list` describes it: `name`, `title`, `description`, `inputSchema`, and
/// `outputSchema` when the output is an object. The input schema is checked against
/// [`Profile::Mcp`].
///
/// ```
/// use pleach_core::{ToolError, UnifiedToolDefinition, ToolDefinition};
/// use pleach_core::providers::mcp_tools;
/// use serde_json::json;
///
/// let tool = ToolDefinition::builder("get_user", "Looks a user up.")
///     .output_schema(json!({ "type": "object", "properties": { "name": { "type": "string" } } }))
///     .execute_json(|_, _| async { Ok::<_, ToolError>(json!({ "name": "Ada" })) })
///     .unwrap();
/// let listed = mcp_tools::definition(&UnifiedToolDefinition::from(tool)).unwrap();
/// assert_eq!(listed["title"], "Get User");
/// assert_eq!(listed["inputSchema"], json!({ "type": "object" }));
/// assert_eq!(listed["outputSchema"]["properties"]["name"]["type"], "string");
/// ```
pub fn definition(tool: &UnifiedToolDefinition) -> Result<Value, Vec<ProfileProblem>> {
    let definition = tool.definition();
    let input_schema = Profile::Mcp.apply_tool(definition)?;
    let mut listed = json!({
        "name": tool.name(),
        "title": tool.display_name(),
        "description": definition.description(),
        "inputSchema": input_schema,
    });
    if let Some(output) = definition
        .output_schema()
        .filter(|s| s.get("type").and_then(Value::as_str) == Some("object"))
    {
        listed["outputSchema"] =
            super::profile::sendable_numbers(&super::profile::standard_formats_only(output));
    }
    Ok(listed)
}

/// Every tool of a registry as `tools/list` lists them; every problem of every tool if any.
///
/// ```
/// use pleach_core::{ToolError, ToolRegistryBuilder, ToolDefinition};
/// let ping = ToolDefinition::builder("ping", "Answers pong.")
///     .execute_json(|_, _| async { Ok::<_, ToolError>(serde_json::json!("pong")) })
///     .unwrap();
/// let registry = ToolRegistryBuilder::new().register(ping).build().unwrap();
/// let tools = pleach_core::providers::mcp_tools::definitions(&registry).unwrap();
/// assert_eq!(tools[0]["title"], "Ping");
/// ```
pub fn definitions(registry: &dyn ToolSource) -> Result<Vec<Value>, ProfileError> {
    each_definition(registry, Some(Profile::Mcp), definition)
}

/// A `tools/call` result: the structured result as text in a `text` content block (a string as
/// itself, any other value as its JSON), then the result's content blocks as MCP content blocks
/// ([`content_block`]); the value itself as `structuredContent` when it is an object, and
/// `isError` for a failure (whose text is the error's model text).
///
/// ```
/// use pleach_core::ToolError;
/// use pleach_core::providers::mcp_tools;
/// use serde_json::json;
///
/// assert_eq!(
///     mcp_tools::call_tool_result(&Ok(json!({ "name": "Ada" }).into())),
///     json!({
///         "content": [{ "type": "text", "text": "{\"name\":\"Ada\"}" }],
///         "structuredContent": { "name": "Ada" },
///         "isError": false
///     })
/// );
/// // A string is its own text, not a JSON string literal (what a remote tool's text was).
/// assert_eq!(mcp_tools::call_tool_result(&Ok(json!("slept 450").into()))["content"][0]["text"], "slept 450");
/// // Content blocks are MCP content blocks: an image with its base64 data and MIME type.
/// let shot = pleach_core::ToolOutput::from_blocks([pleach_core::ContentBlock::image(vec![1u8, 2, 3], "image/png")]);
/// assert_eq!(
///     mcp_tools::call_tool_result(&Ok(shot))["content"],
///     json!([{ "type": "image", "data": "AQID", "mimeType": "image/png" }])
/// );
/// let failed = mcp_tools::call_tool_result(&Err(ToolError::failed("no such user")));
/// assert_eq!(failed["isError"], true);
/// assert_eq!(failed["content"][0]["text"], "error 1008: no such user");
/// ```
pub fn call_tool_result(outcome: &Result<ToolOutput, ToolError>) -> Value {
    match outcome {
        Ok(output) => {
            let mut content = Vec::with_capacity(output.content.len() + 1);
            if let Some(value) = &output.structured {
                let text = match value {
                    Value::String(text) => text.clone(),
                    other => other.to_string(),
                };
                content.push(json!({ "type": "text", "text": text }));
            }
            content.extend(output.content.iter().map(content_block));
            let mut result = json!({ "content": content, "isError": false });
            if let Some(value) = output.structured.as_ref().filter(|v| v.is_object()) {
                result["structuredContent"] = value.clone();
            }
            result
        }
        Err(error) => json!({
            "content": [{ "type": "text", "text": error.model_text() }],
            "isError": true,
        }),
    }
}

/// A content block as an MCP content block (`text`, `image`, `audio`, `resource_link`,
/// `resource`); a file, which MCP has no block for, as an embedded resource with a `blob`.
///
/// ```
/// use pleach_core::ContentBlock;
/// use pleach_core::providers::mcp_tools;
///
/// let pdf = ContentBlock::file(&b"%PDF-"[..], "application/pdf");
/// let block = mcp_tools::content_block(&pdf);
/// assert_eq!(block["type"], "resource");
/// assert_eq!(block["resource"]["mimeType"], "application/pdf");
/// assert_eq!(block["resource"]["blob"], "JVBERi0=");
/// ```
pub fn content_block(block: &ContentBlock) -> Value {
    let mut json = crate::content::wire::to_value(block);
    if let (Block::File(media), Value::Object(fields)) = (&block.block, &mut json) {
        let name = media.name.as_deref().unwrap_or("attachment");
        let resource = json!({
            "uri": format!("file:///{name}"),
            "mimeType": media.mime_type,
            "blob": fields.remove("data").unwrap_or_default(),
        });
        fields.remove("mimeType");
        fields.remove("name");
        fields.insert("type".to_owned(), Value::from("resource"));
        fields.insert("resource".to_owned(), resource);
    }
    json
}
