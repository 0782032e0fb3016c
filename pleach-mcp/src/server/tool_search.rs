//! Tool search over MCP: `tools/list` gives a search tool, a call-by-name tool and the tools
//! always listed, instead of every tool, so a client that takes only so many tools reaches them
//! all ([`McpServer::tool_search`], docs/tool-search.md, "Over MCP").

use rmcp::ErrorData;
use rmcp::model::{CallToolRequestParams, CallToolResponse, CallToolResult, ResultType, Tool};
use serde_json::{Value, json};

use super::McpServer;
use pleach_core::search::{SearchResults, ToolSearch};

/// The search tool's name.
pub(super) const SEARCH_TOOL: &str = "search_tools";
/// The call-by-name tool's name.
pub(super) const CALL_TOOL: &str = "call_tool";

/// What a server listing a search tool keeps: the search and the short list.
pub(super) struct Listing {
    search: ToolSearch,
    /// What `tools/list` answers: the search tool, the call tool, then the tools always listed.
    pub(super) tools: Vec<Tool>,
}

impl McpServer {
    /// Lists a search tool (`search_tools`), a call-by-name tool (`call_tool`) and the tools
    /// named in `always` instead of every tool. A client with a limit on tools (or a model that
    /// chooses worse among many) then reaches every tool of the runtime: `search_tools`
    /// (`{"query", "limit"?}`) answers with the definitions of the best matches, and
    /// `call_tool` (`{"name", "arguments"}`) runs one of them as `tools/call` would, with the
    /// same approvals, progress and result. A `tools/call` naming an unlisted tool runs it too.
    /// Names in `always` that are no tool of the runtime are left out.
    ///
    /// ```
    /// use pleach_mcp::McpServer;
    /// use pleach_core::{Runtime, ToolError, ToolRegistryBuilder, ToolDefinition};
    ///
    /// let tool = |name: &str| ToolDefinition::builder(name, "A tool.")
    ///     .execute_json(|_, _| async { Ok::<_, ToolError>(serde_json::json!(null)) })
    ///     .unwrap();
    /// let registry = ToolRegistryBuilder::new().register(tool("ping")).register(tool("refund")).build().unwrap();
    /// let runtime = Runtime::builder().registry(registry).build().unwrap();
    /// let server = McpServer::new(runtime).unwrap().tool_search(["ping"]);
    /// let listed: Vec<&str> = server.tools().iter().map(|tool| tool.name.as_ref()).collect();
    /// assert_eq!(listed, ["search_tools", "call_tool", "ping"]);
    /// ```
    #[must_use]
    pub fn tool_search<S: AsRef<str>>(mut self, always: impl IntoIterator<Item = S>) -> McpServer {
        let always: Vec<String> = always
            .into_iter()
            .map(|name| name.as_ref().to_owned())
            .collect();
        let deferred: Vec<_> = self
            .shared
            .runtime
            .registry()
            .tools()
            .iter()
            .filter(|tool| !always.iter().any(|name| name == tool.name()))
            .cloned()
            .collect();
        let search = ToolSearch::new(&deferred)
            .name(SEARCH_TOOL)
            .results(SearchResults::Definitions);
        let mut tools = vec![search_tool(&search, deferred.len()), call_tool()];
        tools.extend(
            self.shared
                .tools
                .iter()
                .filter(|tool| always.iter().any(|name| name == tool.name.as_ref()))
                .cloned(),
        );
        if let Some(shared) = std::sync::Arc::get_mut(&mut self.shared) {
            shared.listing = Some(Listing { search, tools });
        } else {
            tracing::warn!("McpServer::tool_search on a shared server: the list is left whole");
        }
        self
    }

    /// Answers a call of the search tool or the call-by-name tool when the server lists a
    /// search; `Ok(None)` for any other call.
    pub(super) fn listing_call(
        &self,
        request: &CallToolRequestParams,
    ) -> Result<Option<Routed>, ErrorData> {
        let Some(listing) = &self.shared.listing else {
            return Ok(None);
        };
        let arguments = request.arguments.clone().unwrap_or_default();
        match request.name.as_ref() {
            SEARCH_TOOL => Ok(Some(Routed::Answer(listing.search(&arguments)))),
            CALL_TOOL => {
                let Some(name) = arguments.get("name").and_then(Value::as_str) else {
                    return Err(ErrorData::invalid_params(
                        "`call_tool` takes {\"name\": the tool's name, \"arguments\": its arguments}",
                        None,
                    ));
                };
                let inner = match arguments.get("arguments") {
                    None | Some(Value::Null) => serde_json::Map::new(),
                    Some(Value::Object(map)) => map.clone(),
                    Some(_) => {
                        return Err(ErrorData::invalid_params(
                            "`call_tool`'s `arguments` must be an object",
                            None,
                        ));
                    }
                };
                let mut call = request.clone();
                call.name = name.to_owned().into();
                call.arguments = Some(inner);
                Ok(Some(Routed::Call(call)))
            }
            _ => Ok(None),
        }
    }
}

/// Where a call of a listing tool goes.
pub(super) enum Routed {
    /// The search's answer.
    Answer(CallToolResponse),
    /// The call `call_tool` asked for, to run as a `tools/call`.
    Call(CallToolRequestParams),
}

impl Listing {
    /// One search: the definitions of the best matches, as `structuredContent` and as text.
    fn search(&self, arguments: &serde_json::Map<String, Value>) -> CallToolResponse {
        let query = arguments
            .get("query")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let limit = arguments
            .get("limit")
            .and_then(Value::as_u64)
            .and_then(|n| usize::try_from(n).ok());
        let search = match limit {
            Some(limit) => self.search.clone().limit(limit),
            None => self.search.clone(),
        };
        let found: Vec<Value> = search
            .find(query)
            .iter()
            .filter_map(|hit| search.deferred().find(|tool| tool.name() == hit.name()))
            .map(|tool| {
                json!({
                    "name": tool.name(),
                    "description": tool.definition().description(),
                    "inputSchema": tool.definition().input_schema(),
                })
            })
            .collect();
        let value = json!({ "tools": found });
        let mut result = CallToolResult::structured(value);
        result.result_type = Some(ResultType::COMPLETE);
        CallToolResponse::Complete(result)
    }
}

/// The search tool as listed.
fn search_tool(search: &ToolSearch, deferred: usize) -> Tool {
    let description = format!(
        "Searches {deferred} more tools than are listed, by what they do. Returns the best \
         matches' names, descriptions and input schemas; run one with `{CALL_TOOL}`."
    );
    let schema = search.definition().map_or_else(
        |_| json!({"type": "object"}),
        |definition| definition.input_schema().clone(),
    );
    tool(json!({ "name": SEARCH_TOOL, "description": description, "inputSchema": schema }))
}

/// The call-by-name tool as listed.
fn call_tool() -> Tool {
    tool(json!({
        "name": CALL_TOOL,
        "description": format!(
            "Runs a tool `{SEARCH_TOOL}` found, by its name, with arguments that fit its input schema."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "The tool's name, as the search gave it."},
                "arguments": {"type": "object", "description": "The tool's arguments."}
            },
            "required": ["name"]
        }
    }))
}

fn tool(listed: Value) -> Tool {
    // Both are fixed shapes MCP's `Tool` takes: name, description and an object schema.
    serde_json::from_value(listed).unwrap_or_else(|_| Tool::default())
}

#[cfg(test)]
mod tests {
    use pleach_core::{Runtime, ToolDefinition, ToolError, ToolRegistryBuilder};

    use super::*;

    fn server() -> McpServer {
        let tool = |name: &str, description: &str| {
            ToolDefinition::builder(name, description)
                .execute_json(|_, _| async { Ok::<_, ToolError>(json!(null)) })
                .unwrap()
        };
        let registry = ToolRegistryBuilder::new()
            .register(tool("ping", "Answers pong."))
            .register(tool("refund_payment", "Refunds a card payment."))
            .register(tool("send_invoice", "Emails an invoice to a customer."))
            .build()
            .unwrap();
        let runtime = Runtime::builder().registry(registry).build().unwrap();
        McpServer::new(runtime).unwrap().tool_search(["ping"])
    }

    #[expect(
        clippy::needless_pass_by_value,
        reason = "reads as a call: `call(name, json!(…))`"
    )]
    fn call(name: &str, arguments: Value) -> CallToolRequestParams {
        serde_json::from_value(json!({"name": name, "arguments": arguments})).unwrap()
    }

    #[test]
    fn the_search_finds_unlisted_tools_and_call_tool_runs_one_by_name() {
        let server = server();
        let listed: Vec<&str> = server.tools().iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(listed, [SEARCH_TOOL, CALL_TOOL, "ping"]);

        let Ok(Some(Routed::Answer(CallToolResponse::Complete(found)))) =
            server.listing_call(&call(SEARCH_TOOL, json!({"query": "refund a payment"})))
        else {
            panic!("the search answers itself");
        };
        let tools = &found.structured_content.unwrap()["tools"];
        assert_eq!(tools[0]["name"], "refund_payment");
        assert_eq!(tools[0]["inputSchema"]["type"], "object");
        assert!(
            tools
                .as_array()
                .unwrap()
                .iter()
                .all(|t| t["name"] != "ping"),
            "a listed tool is not searched"
        );

        let Ok(Some(Routed::Call(routed))) = server.listing_call(&call(
            CALL_TOOL,
            json!({"name": "send_invoice", "arguments": {"to": "a@b.c"}}),
        )) else {
            panic!("call_tool routes the call");
        };
        assert_eq!(routed.name, "send_invoice");
        assert_eq!(routed.arguments.unwrap()["to"], "a@b.c");

        assert!(
            server
                .listing_call(&call(CALL_TOOL, json!({"arguments": {}})))
                .is_err()
        );
        assert!(
            server
                .listing_call(&call(CALL_TOOL, json!({"name": "ping", "arguments": [1]})))
                .is_err()
        );
        assert!(matches!(
            server.listing_call(&call("ping", json!({}))),
            Ok(None)
        ));
    }
}
