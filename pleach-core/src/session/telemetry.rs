//! A call's `tracing` span, named and attributed after the OpenTelemetry semantic conventions
//! for generative AI (`docs/observability.md`): `execute_tool {tool}` with `gen_ai.*` attributes, the
//! pleach error code and `error.type` on failure, and the payloads only when the host opts in.
//!
//! Without a subscriber that can want them and without a meter ([`Recording::active`]), a call
//! creates no span and reads no clock: the pipeline runs as if this module were not there
//! (docs/performance.md, "Observability off"). With one, the fields (a name formatted, an argument
//! text capped) are built only for an enabled span.

use serde_json::Value;
use tracing::Span;
use tracing::field::Empty;

use crate::call::ToolCall;
use crate::content::{ContentBlock, ToolOutput};
use crate::error::ToolError;

/// What a runtime records of its calls beyond their spans: the payload cap the host opted into,
/// and the metrics when it gave a meter.
#[derive(Debug, Default)]
pub(crate) struct Recording {
    /// The cap on arguments and results recorded on spans, when the host opted in.
    pub(crate) trace_payloads: Option<usize>,
    /// The tool-call metrics, when the host gave a meter.
    #[cfg(feature = "otel")]
    pub(crate) metrics: Option<super::metrics::Instruments>,
}

impl Recording {
    /// Whether anything may record a call: a subscriber that can enable `INFO` spans (one
    /// relaxed atomic load: `tracing`'s global level hint) or a meter. When nothing does, a
    /// call skips its span and clock altogether, so the pipeline costs what it cost without them.
    #[inline]
    // Without the `otel` feature there is no meter to look at, only the level.
    #[cfg_attr(not(feature = "otel"), allow(clippy::unused_self))]
    pub(super) fn active(&self) -> bool {
        #[cfg(feature = "otel")]
        if self.metrics.is_some() {
            return true;
        }
        tracing::level_enabled!(tracing::Level::INFO)
    }
}

/// The span of one call. `payloads`: the host's cap on recorded arguments and results, when it
/// opted in.
pub(super) fn call_span(call: &ToolCall, payloads: Option<usize>) -> Span {
    let span = tracing::info_span!(
        target: "pleach::tool",
        "execute_tool",
        otel.name = %format_args!("execute_tool {}", call.name()),
        otel.kind = "internal",
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = call.name(),
        gen_ai.tool.call.id = call.id(),
        gen_ai.tool.type = "function",
        gen_ai.tool.call.arguments = Empty,
        gen_ai.tool.call.result = Empty,
        pleach.tool.result.blocks = Empty,
        pleach.tool.result.content_bytes = Empty,
        pleach.error.code = Empty,
        error.type = Empty,
        otel.status_code = Empty,
        otel.status_description = Empty,
    );
    if let Some(cap) = payloads
        && !span.is_disabled()
    {
        span.record("gen_ai.tool.call.arguments", capped(call.arguments(), cap));
    }
    span
}

/// Runs `work` (a call that finishes where it starts) inside its span, and records its outcome
/// on the span and in the metrics; when nothing records (`recorded`, the caller's reading of
/// [`Recording::active`]), just runs it.
#[inline]
pub(super) fn in_call_span(
    recording: &Recording,
    recorded: bool,
    call: &ToolCall,
    work: impl FnOnce() -> Result<ToolOutput, ToolError>,
) -> Result<ToolOutput, ToolError> {
    if recorded {
        record_call(recording, call, work)
    } else {
        work()
    }
}

/// [`in_call_span`] when something records: kept out of line, off the path of a call nobody
/// records.
#[inline(never)]
fn record_call(
    recording: &Recording,
    call: &ToolCall,
    work: impl FnOnce() -> Result<ToolOutput, ToolError>,
) -> Result<ToolOutput, ToolError> {
    let started = started(recording, call.name());
    let span = call_span(call, recording.trace_payloads);
    let outcome = span.in_scope(work);
    record_outcome(&span, &outcome, recording.trace_payloads);
    ended(recording, call.name(), started, &outcome);
    outcome
}

/// A call of `tool` starts: its clock, when the host gave a meter (feature `otel`).
#[cfg(feature = "otel")]
pub(super) fn started(recording: &Recording, tool: &str) -> Option<std::time::Instant> {
    recording
        .metrics
        .as_ref()
        .map(|metrics| metrics.started(tool))
}

/// A call of `tool` starts: nothing is measured without the `otel` feature.
#[cfg(not(feature = "otel"))]
pub(super) fn started(_recording: &Recording, _tool: &str) -> Option<std::time::Instant> {
    None
}

/// A call of `tool` started at `started` ended with `outcome`: its metrics.
pub(super) fn ended(
    recording: &Recording,
    tool: &str,
    started: Option<std::time::Instant>,
    outcome: &Result<ToolOutput, ToolError>,
) {
    #[cfg(feature = "otel")]
    if let (Some(metrics), Some(started)) = (&recording.metrics, started) {
        metrics.ended(tool, started, outcome);
    }
    #[cfg(not(feature = "otel"))]
    let _ = (recording, tool, started, outcome);
}

/// A call of `tool` starts (`1`) or stops (`-1`) waiting for the user's approval.
pub(super) fn awaiting_approval(recording: &Recording, tool: &str, change: i64) {
    #[cfg(feature = "otel")]
    if let Some(metrics) = &recording.metrics {
        metrics.awaiting_approval(tool, change);
    }
    #[cfg(not(feature = "otel"))]
    let _ = (recording, tool, change);
}

/// Records how the call ended on its span.
pub(super) fn record_outcome(
    span: &Span,
    outcome: &Result<ToolOutput, ToolError>,
    payloads: Option<usize>,
) {
    if span.is_disabled() {
        return;
    }
    match outcome {
        Ok(result) => {
            if let Some(cap) = payloads {
                let text = result
                    .structured
                    .as_ref()
                    .map(Value::to_string)
                    .unwrap_or_default();
                span.record("gen_ai.tool.call.result", capped(&text, cap));
            }
            // Content blocks: how many and how big, never their bytes.
            if !result.content.is_empty() {
                span.record("pleach.tool.result.blocks", result.content.len());
                span.record(
                    "pleach.tool.result.content_bytes",
                    result.content.iter().map(ContentBlock::len).sum::<usize>(),
                );
            }
        }
        Err(error) => {
            span.record("pleach.error.code", error.code().as_u16());
            span.record("error.type", tracing::field::debug(error.code()));
            span.record("otel.status_code", "ERROR");
            span.record("otel.status_description", error.message());
        }
    }
}

/// `text` cut to at most `cap` bytes at a character boundary, with `…` when cut.
fn capped(text: &str, cap: usize) -> String {
    if text.len() <= cap {
        return text.to_owned();
    }
    format!("{}…", &text[..text.floor_char_boundary(cap)])
}

#[cfg(test)]
mod tests {
    use super::capped;

    #[test]
    fn payloads_are_cut_at_a_character_boundary() {
        assert_eq!(capped("short", 10), "short");
        assert_eq!(capped("abcdef", 3), "abc…");
        assert_eq!(capped("aé", 2), "a…"); // `é` is two bytes
    }
}
