//! **rmcp**: the official MCP SDK's tool router, called directly, without a transport.
//!
//! The tool is a `#[tool]` method in a `#[tool_router]` impl, taking `Parameters<AddArgs>` and
//! returning `Json<i64>`, the SDK's way to hand back a typed JSON value. The router is built once.
//! One call is what rmcp's server does for a `tools/call` request once the JSON-RPC frame is
//! read, and no more: `serde_json::from_str` of the arguments text into a `JsonObject` (on the wire
//! they arrive inside the request and are parsed with it), `CallToolRequestParams` with those
//! arguments, a `RequestContext` (request id, a fresh `CancellationToken`, empty meta and
//! extensions, a clone of the `Peer`), `ToolCallContext::new`, and `ToolRouter::call`: the
//! lookup by name, `serde_json::from_value` into the parameters, the method, and the
//! `CallToolResult` with the value as structured content plus a text copy (`value.to_string()`).
//! No schema validation happens on this path (rmcp checks input schemas only in its streamable
//! HTTP transport), and there are no events, timeout or panic catching.
//!
//! rmcp's `Peer::new` is crate-private, so the one `Peer` every call clones comes from
//! `serve_directly` over an in-memory `tokio::io::duplex` pipe that nothing ever writes to. That
//! setup happens once; its idle task never runs during a timed batch.

use std::hint::black_box;
use std::time::{Duration, Instant};

use rmcp::handler::server::tool::{ToolCallContext, ToolRouter};
use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::model::{CallToolRequestParams, CallToolResponse, JsonObject, NumberOrString};
use rmcp::service::{Peer, RequestContext, RunningService};
use rmcp::{RoleServer, tool, tool_router};
use serde::Deserialize;
use tokio::io::DuplexStream;
use tokio::runtime::Runtime;

use super::ARGUMENTS;
use crate::measure::Contender;

/// The column's name.
pub(super) const LABEL: &str = "rmcp";

#[derive(Deserialize, schemars::JsonSchema)]
struct AddArgs {
    a: i64,
    b: i64,
}

/// The server type the router routes to; it holds no state. `mcp-stdio` serves it on stdio as
/// rmcp's column (hence `server_handler`: its `ServerHandler` answers `tools/list` and
/// `tools/call` through the router; this column calls the router directly).
#[derive(Debug, Clone, Copy)]
pub(crate) struct AddServer;

#[tool_router(server_handler)]
impl AddServer {
    #[tool(description = "Adds two integers.")]
    async fn add(&self, Parameters(AddArgs { a, b }): Parameters<AddArgs>) -> Json<i64> {
        Json(a + b)
    }
}

/// `ToolRouter::call` with a router built once.
pub(super) struct RouterCall {
    server: AddServer,
    router: ToolRouter<AddServer>,
    peer: Peer<RoleServer>,
    /// Keeps the service (and so the peer's channel) alive; never used.
    _service: RunningService<RoleServer, AddServer>,
    /// The pipe's other end, kept open so the idle service does not see it close.
    _client_end: DuplexStream,
}

impl RouterCall {
    pub(super) fn new(runtime: &Runtime) -> Self {
        let _entered = runtime.enter(); // `serve_directly` spawns its (idle) service loop
        let (server_end, client_end) = tokio::io::duplex(4096);
        let service = rmcp::service::serve_directly(AddServer, server_end, None);
        RouterCall {
            server: AddServer,
            router: AddServer::tool_router(),
            peer: service.peer().clone(),
            _service: service,
            _client_end: client_end,
        }
    }

    async fn call(&self, arguments: &str) -> Result<CallToolResponse, String> {
        let arguments: JsonObject = serde_json::from_str(arguments).map_err(|e| e.to_string())?;
        let params = CallToolRequestParams::new("add").with_arguments(arguments);
        let context = RequestContext::new(NumberOrString::Number(1), self.peer.clone());
        let call = ToolCallContext::new(&self.server, params, context);
        self.router.call(call).await.map_err(|e| e.to_string())
    }
}

impl Contender for RouterCall {
    fn label(&self) -> &'static str {
        LABEL
    }

    fn describe(&self) -> &'static str {
        "from_str into JsonObject + ToolCallContext + ToolRouter::call"
    }

    fn verify(&mut self, runtime: &Runtime) -> Result<(), String> {
        match runtime.block_on(self.call(ARGUMENTS))? {
            CallToolResponse::Complete(result)
                if result.is_error != Some(true)
                    && result.structured_content == Some(serde_json::Value::from(3)) =>
            {
                Ok(())
            }
            other => Err(format!("{other:?}")),
        }
    }

    fn time_batch(&mut self, runtime: &Runtime, calls: u32) -> Duration {
        runtime.block_on(async {
            let start = Instant::now();
            for _ in 0..calls {
                black_box(self.call(black_box(ARGUMENTS)).await.ok());
            }
            start.elapsed()
        })
    }
}
