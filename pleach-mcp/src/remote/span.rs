//! The spans of the requests pleach sends an MCP server (`tools/call`, `tools/list`), with the
//! attributes of OpenTelemetry's MCP semantic conventions (`docs/observability.md`).

use std::fmt;

use tracing::Span;
use tracing::field::Empty;

use super::connection::Connection;

/// The client span of one request: `method` is `tools/call` (with the server's own name for the
/// `tool`) or `tools/list` (one page).
pub(super) fn request(connection: &Connection, method: &'static str, tool: Option<&str>) -> Span {
    let network = connection.network();
    tracing::info_span!(
        target: "pleach::mcp",
        "mcp request",
        otel.name = %tool.map_or_else(|| method.to_owned(), |tool| format!("{method} {tool}")),
        otel.kind = "client",
        mcp.method.name = method,
        gen_ai.operation.name = tool.map(|_| "execute_tool"),
        gen_ai.tool.name = tool,
        jsonrpc.request.id = Empty,
        pleach.mcp.server = connection.label(),
        network.transport = network.transport,
        network.protocol.name = network.protocol,
        server.address = network.address.as_deref(),
        server.port = network.port,
        error.type = Empty,
        otel.status_code = Empty,
    )
}

/// The `_meta` of a request sent in `span`: its W3C trace context (`traceparent`, `tracestate`;
/// SEP-414), so the server's work joins the trace. `None` without a trace to carry (or without
/// the `otel` feature).
pub(super) fn trace_meta(span: &Span) -> Option<rmcp::model::MetaObject> {
    #[cfg(feature = "otel")]
    {
        let context = span.in_scope(pleach_core::trace_context::current_headers);
        let traceparent = context.get("traceparent")?;
        let mut meta = rmcp::model::MetaObject::new();
        meta.set_traceparent(traceparent.clone());
        if let Some(tracestate) = context.get("tracestate") {
            meta.set_tracestate(tracestate.clone());
        }
        Some(meta)
    }
    #[cfg(not(feature = "otel"))]
    {
        let _ = span;
        None
    }
}

/// Marks `span` failed, `error_type` naming how (a pleach error code's name, say).
pub(super) fn failed(span: &Span, error_type: impl fmt::Debug) {
    span.record("error.type", tracing::field::debug(error_type));
    span.record("otel.status_code", "ERROR");
}
