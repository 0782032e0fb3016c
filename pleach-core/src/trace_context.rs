//! W3C trace context across process boundaries (feature `otel`, `docs/observability.md`): the
//! current span's context written into a remote MCP call's `_meta` (`traceparent`,
//! `tracestate`, as MCP's SEP-414 reserves them) and into the model clients' HTTP requests, and
//! read from an incoming MCP request's `_meta` as the parent of its server span. Through
//! `tracing-opentelemetry` and the SDK's `TraceContextPropagator`; with no OpenTelemetry layer
//! installed the current context is empty and nothing is written.

use std::collections::HashMap;

use opentelemetry::propagation::TextMapPropagator as _;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

/// The current span's context as W3C headers (`traceparent`, and `tracestate` when there is
/// one); empty when there is no sampled OpenTelemetry context.
pub fn current_headers() -> HashMap<String, String> {
    let context = tracing::Span::current().context();
    let mut headers = HashMap::new();
    TraceContextPropagator::new().inject_context(&context, &mut headers);
    headers
}

/// Makes the context in `headers` (a `traceparent`, maybe a `tracestate`) the parent of `span`;
/// nothing when there is none or it does not parse.
pub fn adopt<S: std::hash::BuildHasher>(
    span: &tracing::Span,
    headers: &HashMap<String, String, S>,
) {
    if headers.is_empty() || span.is_disabled() {
        return;
    }
    let context = TraceContextPropagator::new().extract(headers);
    let _ = span.set_parent(context);
}
