//! The spans of the requests an [`McpServer`](super::McpServer) answers (`tools/call`,
//! `tools/list`), with the attributes of OpenTelemetry's MCP semantic conventions, and joined to
//! the caller's trace when the request carries its W3C trace context in `_meta` (SEP-414).

use rmcp::RoleServer;
use rmcp::service::RequestContext;
use tracing::Span;
use tracing::field::Empty;

/// The server span of one request: `method` is `tools/call` (with the `tool` called) or
/// `tools/list`.
pub(super) fn request(
    method: &'static str,
    tool: Option<&str>,
    context: &RequestContext<RoleServer>,
) -> Span {
    let request = Request::of(context);
    let span = tracing::info_span!(
        target: "pleach::mcp",
        "mcp request",
        otel.name = %tool.map_or_else(|| method.to_owned(), |tool| format!("{method} {tool}")),
        otel.kind = "server",
        mcp.method.name = method,
        gen_ai.operation.name = tool.map(|_| "execute_tool"),
        gen_ai.tool.name = tool,
        jsonrpc.request.id = %context.id,
        mcp.protocol.version = request.protocol_version.as_deref(),
        mcp.session.id = request.session_id.as_deref(),
        network.transport = request.transport,
        network.protocol.name = request.protocol,
        error.type = Empty,
        otel.status_code = Empty,
    );
    join_callers_trace(&span, context);
    span
}

/// Marks `span` failed with the JSON-RPC error `code` it answered.
pub(super) fn failed(span: &Span, code: i32) {
    span.record("error.type", code);
    span.record("otel.status_code", "ERROR");
}

/// What the conventions record about the request a span answers.
struct Request {
    protocol_version: Option<String>,
    /// The `Mcp-Session-Id` it came with, over HTTP.
    session_id: Option<String>,
    /// `tcp` over HTTP; `pipe` otherwise (stdio, or any byte stream a host serves MCP on).
    transport: &'static str,
    /// `http` over HTTP.
    protocol: Option<&'static str>,
}

impl Request {
    fn of(context: &RequestContext<RoleServer>) -> Request {
        let protocol_version = context
            .protocol_version()
            .map(|version| version.as_str().to_owned());
        #[cfg(feature = "mcp-http")]
        if context
            .extensions
            .get::<axum::http::request::Parts>()
            .is_some()
        {
            return Request {
                protocol_version,
                session_id: session_id(context),
                transport: "tcp",
                protocol: Some("http"),
            };
        }
        Request {
            protocol_version,
            session_id: None,
            transport: "pipe",
            protocol: None,
        }
    }
}

/// The `Mcp-Session-Id` of the HTTP request `context` came with, if any.
#[cfg(feature = "mcp-http")]
pub(super) fn session_id(context: &RequestContext<RoleServer>) -> Option<String> {
    context
        .extensions
        .get::<axum::http::request::Parts>()?
        .headers
        .get("mcp-session-id")?
        .to_str()
        .ok()
        .map(str::to_owned)
}

/// Makes `span` a child of the caller's span when the request's `_meta` carries a
/// `traceparent` (and `tracestate`); without the `otel` feature there is no trace to join.
fn join_callers_trace(span: &Span, context: &RequestContext<RoleServer>) {
    #[cfg(feature = "otel")]
    {
        let mut headers = std::collections::HashMap::new();
        if let Some(traceparent) = context.meta.get_traceparent() {
            headers.insert("traceparent".to_owned(), traceparent.to_owned());
        }
        if let Some(tracestate) = context.meta.get_tracestate() {
            headers.insert("tracestate".to_owned(), tracestate.to_owned());
        }
        crate::trace_context::adopt(span, &headers);
    }
    #[cfg(not(feature = "otel"))]
    let _ = (span, context);
}
