//! The spans of the requests an [`McpServer`](super::McpServer) answers (`tools/call`,
//! `tools/list`), with the attributes of OpenTelemetry's MCP semantic conventions, and joined to
//! the caller's trace when the request carries its W3C trace context in `_meta` (SEP-414).

use rmcp::RoleServer;
use rmcp::service::RequestContext;
use tracing::Span;
use tracing::field::Empty;

/// The server span of one request: `method` is `tools/call` (with the `tool` called) or
/// `tools/list`. The request's attributes are read only for an enabled span.
pub(super) fn request(
    method: &'static str,
    tool: Option<&str>,
    context: &RequestContext<RoleServer>,
) -> Span {
    let span = tracing::info_span!(
        target: "pleach::mcp",
        "mcp request",
        otel.name = %tool.map_or_else(|| method.to_owned(), |tool| format!("{method} {tool}")),
        otel.kind = "server",
        mcp.method.name = method,
        gen_ai.operation.name = tool.map(|_| "execute_tool"),
        gen_ai.tool.name = tool,
        jsonrpc.request.id = %context.id,
        mcp.protocol.version = Empty,
        mcp.session.id = Empty,
        network.transport = Empty,
        network.protocol.name = Empty,
        error.type = Empty,
        otel.status_code = Empty,
    );
    if !span.is_disabled() {
        if let Some(version) = context.protocol_version() {
            span.record("mcp.protocol.version", version.as_str());
        }
        record_network(&span, context);
        join_callers_trace(&span, context);
    }
    span
}

/// Marks `span` failed with the JSON-RPC error `code` it answered.
pub(super) fn failed(span: &Span, code: i32) {
    span.record("error.type", code);
    span.record("otel.status_code", "ERROR");
}

/// How the request came: over HTTP (`tcp`, `http`, and its `Mcp-Session-Id` if any), else
/// `pipe` (stdio, or any byte stream a host serves MCP on).
fn record_network(span: &Span, context: &RequestContext<RoleServer>) {
    #[cfg(feature = "http")]
    if let Some(parts) = http_parts(context) {
        span.record("network.transport", "tcp");
        span.record("network.protocol.name", "http");
        if let Some(id) = session_header(parts) {
            span.record("mcp.session.id", id);
        }
        return;
    }
    #[cfg(not(feature = "http"))]
    let _ = context;
    span.record("network.transport", "pipe");
}

/// The HTTP request `context` came with, when it came over HTTP.
#[cfg(feature = "http")]
fn http_parts(context: &RequestContext<RoleServer>) -> Option<&axum::http::request::Parts> {
    context.extensions.get::<axum::http::request::Parts>()
}

/// An HTTP request's `Mcp-Session-Id`, if it has one.
#[cfg(feature = "http")]
fn session_header(parts: &axum::http::request::Parts) -> Option<&str> {
    parts.headers.get("mcp-session-id")?.to_str().ok()
}

/// The `Mcp-Session-Id` of the HTTP request `context` came with, if any.
#[cfg(feature = "redis")]
pub(super) fn session_id(context: &RequestContext<RoleServer>) -> Option<String> {
    http_parts(context)
        .and_then(session_header)
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
        pleach_core::trace_context::adopt(span, &headers);
    }
    #[cfg(not(feature = "otel"))]
    let _ = (span, context);
}
