//! A server's `tools/list`, every page, read tool by tool: each tool pleach can accept becomes a
//! definition (its name prefixed, its schemas compiled, its tier and batching from its
//! annotations and the host's overrides); each one it cannot is skipped, saying why.

use std::collections::HashSet;
use std::sync::{Arc, PoisonError, RwLock};

use rmcp::model::{ClientRequest, CustomRequest, ServerResult};
use serde_json::{Value, json};
use tracing::Instrument as _;

use super::connection::Connection;
use super::{Overrides, SkippedTool};
use pleach_core::batch::{BatchingHint, BatchingStrategy};
use pleach_core::error::{ErrorCode, ToolError};
use pleach_core::tool::{DefinitionSite, UnifiedToolDefinition};

/// The most pages one listing follows: a server whose cursors never end is cut off there.
const MAX_PAGES: usize = 1000;

/// One tool pleach took from the server.
#[derive(Clone)]
pub(super) struct RemoteTool {
    /// The server's own name for it.
    pub(super) remote_name: String,
    pub(super) definition: UnifiedToolDefinition,
    /// `readOnlyHint`: its calls may run in parallel.
    pub(super) read_only: bool,
    /// `idempotentHint` of a tool that is not read-only: whether a call may run again when a
    /// durable engine lost its first run (a read-only tool is idempotent anyway).
    pub(super) idempotent: Option<bool>,
    /// The tool as the server listed it, for its pin.
    pub(super) listing: Value,
}

impl super::pin::Listing for RemoteTool {
    fn remote_name(&self) -> &str {
        &self.remote_name
    }

    fn listing(&self) -> &Value {
        &self.listing
    }
}

impl RemoteTool {
    pub(super) fn hint(&self) -> Option<BatchingHint> {
        self.read_only
            .then(|| BatchingHint::new(self.definition.name(), BatchingStrategy::Parallel))
    }
}

/// The server's names of the tools it lists now, and of those whose definitions are held back: a
/// definition refuses a call to a tool the server stopped listing (1003), or whose definition
/// changed and is held back (1012), instead of sending it.
#[derive(Clone, Default)]
pub(super) struct ListedNames(Arc<RwLock<Names>>);

#[derive(Default)]
struct Names {
    offered: HashSet<String>,
    held: HashSet<String>,
}

impl ListedNames {
    pub(super) fn replace(
        &self,
        offered: impl IntoIterator<Item = String>,
        held: impl IntoIterator<Item = String>,
    ) {
        *self.0.write().unwrap_or_else(PoisonError::into_inner) = Names {
            offered: offered.into_iter().collect(),
            held: held.into_iter().collect(),
        };
    }

    /// Why a call to `name` is not sent, if it is not.
    fn refusal(&self, name: &str, label: &str) -> Option<ToolError> {
        let names = self.0.read().unwrap_or_else(PoisonError::into_inner);
        if names.offered.contains(name) {
            None
        } else if names.held.contains(name) {
            Some(ToolError::new(
                ErrorCode::SafetyHalt,
                format!(
                    "the definition of `{name}` on the MCP server `{label}` changed since it was \
                     pinned and is held back until it is trusted (`pleach mcp trust`, \
                     `RemoteServer::trust`); the call was not sent"
                ),
            ))
        } else {
            Some(ToolError::new(
                ErrorCode::UnknownTool,
                format!("the MCP server `{label}` no longer lists `{name}`; the call was not sent"),
            ))
        }
    }
}

/// What a listing gave.
pub(super) struct Listed {
    pub(super) tools: Vec<RemoteTool>,
    pub(super) skipped: Vec<SkippedTool>,
}

/// Every tool the server lists (following `nextCursor`), as raw JSON.
pub(super) async fn list_raw(connection: &Connection) -> Result<Vec<Value>, ToolError> {
    let peer = connection.peer().await?;
    let label = connection.label();
    let mut tools = Vec::new();
    let mut cursor: Option<String> = None;
    let mut seen = HashSet::new();
    for _ in 0..MAX_PAGES {
        let span = super::span::request(connection, "tools/list", None);
        let mut params = serde_json::Map::new();
        if let Some(cursor) = &cursor {
            params.insert("cursor".to_owned(), json!(cursor));
        }
        if let Some(meta) = super::span::trace_meta(&span) {
            params.insert("_meta".to_owned(), Value::Object(meta.0));
        }
        let params = (!params.is_empty()).then_some(Value::Object(params));
        let request = ClientRequest::CustomRequest(CustomRequest::new("tools/list", params));
        let page = match peer.send_request(request).instrument(span.clone()).await {
            Ok(page) => page,
            Err(rmcp::service::ServiceError::McpError(error)) => {
                super::span::failed(&span, error.code.0);
                return Err(ToolError::failed(format!(
                    "the MCP server `{label}` refused `tools/list`: {}",
                    error.message
                )));
            }
            Err(error) => {
                super::span::failed(&span, ErrorCode::RemoteUnavailable);
                connection.failed().await;
                return Err(super::connection::unavailable(format!(
                    "the MCP server `{label}` did not list its tools: {error}"
                )));
            }
        };
        let page = page_json(page);
        match page.get("tools") {
            Some(Value::Array(listed)) => tools.extend(listed.iter().cloned()),
            _ => {
                return Err(ToolError::failed(format!(
                    "the MCP server `{label}` answered `tools/list` without a `tools` array"
                )));
            }
        }
        cursor = match page.get("nextCursor") {
            Some(Value::String(next)) if !next.is_empty() => Some(next.clone()),
            _ => return Ok(tools),
        };
        if !seen.insert(cursor.clone()) {
            tracing::warn!(
                "the MCP server `{label}` gave the cursor {cursor:?} twice; listing stops there"
            );
            return Ok(tools);
        }
    }
    tracing::warn!(
        "the MCP server `{label}` lists more than {MAX_PAGES} pages of tools; listing stops there"
    );
    Ok(tools)
}

/// A page as JSON, whichever variant rmcp read it as.
fn page_json(page: ServerResult) -> Value {
    match page {
        ServerResult::CustomResult(custom) => custom.0,
        other => serde_json::to_value(other).unwrap_or(Value::Null),
    }
}

/// The definitions for `listed`: each calls its tool through `connection`.
pub(super) fn definitions(
    listed: &[Value],
    connection: &Arc<Connection>,
    overrides: &Overrides,
    names: &ListedNames,
) -> Listed {
    let label = connection.label().to_owned();
    let mut tools: Vec<RemoteTool> = Vec::new();
    let mut skipped = Vec::new();
    let mut seen = HashSet::new();
    for (index, tool) in listed.iter().enumerate() {
        let Some(Value::String(remote_name)) = tool.get("name") else {
            skipped.push(SkippedTool {
                name: format!("#{index}"),
                reason: "it has no `name` string".to_owned(),
            });
            continue;
        };
        let remote_name = remote_name.clone();
        if tools.len() >= overrides.max_tools {
            skipped.push(SkippedTool {
                name: remote_name,
                reason: format!(
                    "the server lists more than {} tools (`McpRemote::max_tools`)",
                    overrides.max_tools
                ),
            });
            continue;
        }
        if !seen.insert(remote_name.clone()) {
            skipped.push(SkippedTool {
                name: remote_name,
                reason: "the server lists this name twice; the first is used".to_owned(),
            });
            continue;
        }
        match definition(tool, &remote_name, &label, connection, overrides, names) {
            Ok(remote) => tools.push(remote),
            Err(reason) => skipped.push(SkippedTool {
                name: remote_name,
                reason,
            }),
        }
    }
    Listed { tools, skipped }
}

/// One tool's definition, or why pleach cannot accept it.
fn definition(
    tool: &Value,
    remote_name: &str,
    label: &str,
    connection: &Arc<Connection>,
    overrides: &Overrides,
    names: &ListedNames,
) -> Result<RemoteTool, String> {
    let name = match &overrides.prefix {
        Some(prefix) => format!("{prefix}__{remote_name}"),
        None => remote_name.to_owned(),
    };
    let input_schema = match tool.get("inputSchema") {
        Some(schema @ Value::Object(_)) => schema.clone(),
        Some(_) => return Err("its `inputSchema` is not a JSON object".to_owned()),
        None => return Err("it has no `inputSchema`".to_owned()),
    };
    let description = tool
        .get("description")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|text| !text.is_empty())
        .map_or_else(
            || format!("`{remote_name}`, a tool of the MCP server `{label}`."),
            str::to_owned,
        );
    let annotations = tool.get("annotations");
    let hint = |key: &str| {
        annotations
            .and_then(|annotations| annotations.get(key))
            .and_then(Value::as_bool)
    };
    let read_only = hint("readOnlyHint") == Some(true);
    let idempotent = hint("idempotentHint").filter(|_| !read_only);
    let destructive = hint("destructiveHint") == Some(true) && !read_only;

    let called = Arc::clone(connection);
    let remote = remote_name.to_owned();
    let listed = names.clone();
    let mut builder = pleach_core::tool::ToolDefinition::builder(name.clone(), description)
        .defined_at(DefinitionSite::elsewhere(format!(
            "the MCP server `{label}` (its tool `{remote_name}`)"
        )))
        .input_schema(input_schema);
    match tool.get("outputSchema") {
        None | Some(Value::Null) => {}
        Some(schema @ Value::Object(_)) => builder = builder.output_schema(schema.clone()),
        Some(_) => return Err("its `outputSchema` is not a JSON object".to_owned()),
    }
    let defined = builder
        .execute_json(move |arguments, ctx| {
            let connection = Arc::clone(&called);
            let remote = remote.clone();
            let refused = listed.refusal(&remote, connection.label());
            async move {
                if let Some(refused) = refused {
                    return Err(refused);
                }
                super::call::call(&connection, &remote, arguments, ctx).await
            }
        })
        .map_err(|error| error.to_string())?;
    let mut definition = UnifiedToolDefinition::from(defined).with_category("mcp");
    if let Some(title) = tool.get("title").and_then(Value::as_str) {
        definition = definition.with_display_name(title);
    }
    let tier = overrides
        .tiers
        .iter()
        .find(|(tool, _)| tool == remote_name || *tool == name)
        .map(|(_, tier)| *tier)
        .or(overrides.default_tier)
        .or(destructive.then_some(overrides.destructive_tier));
    if let Some(tier) = tier {
        definition = definition.with_safety_tier(tier);
    }
    Ok(RemoteTool {
        remote_name: remote_name.to_owned(),
        definition,
        read_only,
        idempotent,
        listing: tool.clone(),
    })
}
