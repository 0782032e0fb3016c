//! One call of a remote tool: sent as `tools/call`, the server's progress, logs and requests
//! during it passed to its context (see `requests`), cancelled with `notifications/cancelled` when its signal fires (or its future is dropped),
//! and its result read as the tool's outcome.

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotificationParam,
    ClientRequest, RequestId, ServerResult,
};
use rmcp::service::{PeerRequestOptions, ServiceError};
use rmcp::{Peer, RoleClient};
use serde_json::Value;
use tracing::Instrument;

use super::connection::{Connection, unavailable};
use pleach_core::ToolContext;
use pleach_core::content::{ToolOutput, wire};
use pleach_core::error::{ErrorCode, ToolError};

/// Calls `tool` (the server's own name) with `arguments` (already validated against the server's
/// input schema) and waits for its result, its signal, or its connection to fail.
pub(super) async fn call(
    connection: &Connection,
    tool: &str,
    arguments: Value,
    ctx: ToolContext,
) -> Result<ToolOutput, ToolError> {
    let span = super::span::request(connection, "tools/call", Some(tool));
    let outcome = send(connection, tool, arguments, ctx, &span)
        .instrument(span.clone())
        .await;
    if let Err(error) = &outcome {
        super::span::failed(&span, error.code());
    }
    outcome
}

/// [`call`] inside its span.
async fn send(
    connection: &Connection,
    tool: &str,
    arguments: Value,
    ctx: ToolContext,
    span: &tracing::Span,
) -> Result<ToolOutput, ToolError> {
    let label = connection.label();
    let peer = connection.peer().await?;
    let mut params = CallToolRequestParams::new(tool.to_owned());
    if let Value::Object(arguments) = arguments {
        params = params.with_arguments(arguments);
    }
    // The server's work joins this call's trace (MCP's `_meta.traceparent`, SEP-414).
    params.meta = super::span::trace_meta(span).map(rmcp::model::RequestMetaObject);
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
    let entry = connection.enter(ctx.clone());
    let handle = match peer
        .send_request_with_option(request, PeerRequestOptions::no_options())
        .await
    {
        Ok(handle) => handle,
        Err(error) => return Err(broken(connection, &error, false).await),
    };
    span.record("jsonrpc.request.id", tracing::field::display(&handle.id));
    entry.sent(handle.id.clone(), handle.progress_token.clone());
    let mut pending = Pending {
        peer,
        id: Some(handle.id.clone()),
    };
    tokio::select! {
        answered = handle.await_response() => {
            pending.id = None;
            match answered {
                Ok(ServerResult::CallToolResult(result)) => outcome(label, tool, result),
                Ok(other) => Err(ToolError::failed(format!(
                    "the MCP server `{label}` answered `{tool}` with something other than a \
                     tool result"
                ))
                .with_detail(format!("{other:?}"))),
                Err(ServiceError::McpError(error)) => Err(ToolError::failed(format!(
                    "the MCP server `{label}` refused the call: {} (JSON-RPC error {})",
                    error.message, error.code.0
                ))),
                Err(error) => Err(broken(connection, &error, true).await),
            }
        }
        () = ctx.signal.cancelled() => {
            pending.cancel("the call was cancelled").await;
            Err(ToolError::new(
                ErrorCode::Cancelled,
                format!("the call was cancelled; the MCP server `{label}` was told"),
            ))
        }
    }
}

/// A request sent and not answered: dropped, the server is told it is cancelled.
struct Pending {
    peer: Peer<RoleClient>,
    id: Option<RequestId>,
}

impl Pending {
    async fn cancel(&mut self, reason: &str) {
        if let Some(id) = self.id.take() {
            let _ = self.peer.notify_cancelled(cancelled(id, reason)).await;
        }
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if let Some(id) = self.id.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            let peer = self.peer.clone();
            runtime.spawn(async move {
                let _ = peer
                    .notify_cancelled(cancelled(id, "the call was abandoned"))
                    .await;
            });
        }
    }
}

fn cancelled(id: RequestId, reason: &str) -> CancelledNotificationParam {
    CancelledNotificationParam::new(Some(id), Some(reason.to_owned()))
}

/// 1017 for a transport that failed (`during` the call, or before it was sent); the connection
/// is opened again for the next call.
async fn broken(connection: &Connection, error: &ServiceError, during: bool) -> ToolError {
    connection.failed().await;
    let label = connection.label();
    let message = if during {
        format!(
            "the connection to the MCP server `{label}` failed during the call ({error}); \
             whether the server ran it is unknown"
        )
    } else {
        format!("the call could not be sent to the MCP server `{label}` ({error})")
    };
    unavailable(message)
}

/// The tool's outcome from the server's result: `isError` is the tool's own failure with the
/// server's text; `structuredContent` is the result (checked against the output schema by the
/// runtime); otherwise the text content, or the content blocks when some are not text.
pub(super) fn outcome(
    label: &str,
    tool: &str,
    result: CallToolResult,
) -> Result<ToolOutput, ToolError> {
    let content = serde_json::to_value(&result.content).unwrap_or(Value::Null);
    if result.is_error == Some(true) {
        let text = text_of(&content)
            .filter(|text| !text.trim().is_empty())
            .unwrap_or_else(|| format!("`{tool}` on the MCP server `{label}` failed"));
        return Err(ToolError::failed(text));
    }
    let Some(text) = text_of(&content) else {
        // Images, audio, resources: blocks, their bytes as the server sent them.
        return media_outcome(label, tool, &content, result.structured_content);
    };
    if let Some(structured) = result.structured_content {
        return Ok(ToolOutput::new(structured));
    }
    Ok(ToolOutput::new(Value::String(text)))
}

/// A result holding blocks other than text: each block as a `ContentBlock` (text blocks too,
/// unless the result has a structured value, whose JSON they repeat by MCP's convention).
fn media_outcome(
    label: &str,
    tool: &str,
    content: &Value,
    structured: Option<Value>,
) -> Result<ToolOutput, ToolError> {
    let mut blocks = Vec::new();
    for block in content.as_array().into_iter().flatten() {
        if structured.is_some() && block.get("type").is_some_and(|kind| kind == "text") {
            continue;
        }
        let block = wire::from_value(block).map_err(|reason| {
            ToolError::failed(format!(
                "`{tool}` on the MCP server `{label}` returned a content block pleach cannot read"
            ))
            .with_detail(reason)
        })?;
        blocks.push(block);
    }
    let mut output = ToolOutput::from_blocks(blocks);
    output.structured = structured;
    Ok(output)
}

/// The text of `content` when every block is text, joined by newlines.
fn text_of(content: &Value) -> Option<String> {
    let blocks = content.as_array()?;
    let texts: Option<Vec<&str>> = blocks
        .iter()
        .map(|block| {
            (block.get("type")? == "text")
                .then(|| block.get("text")?.as_str())
                .flatten()
        })
        .collect();
    texts.map(|texts| texts.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn result(value: Value) -> CallToolResult {
        serde_json::from_value(value).expect("a tool result")
    }

    #[test]
    fn results_become_outcomes() {
        let text = result(
            json!({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}),
        );
        assert_eq!(outcome("s", "t", text).unwrap(), json!("a\nb"));

        let structured = result(json!({"content": [{"type": "text", "text": "{\"sum\":3}"}],
            "structuredContent": {"sum": 3}}));
        assert_eq!(outcome("s", "t", structured).unwrap(), json!({"sum": 3}));

        let image = result(
            json!({"content": [{"type": "image", "data": "AA==", "mimeType": "image/png"}]}),
        );
        let image = outcome("s", "t", image).unwrap();
        assert_eq!(image.structured, None);
        assert_eq!(
            image.content[0]
                .media()
                .map(|m| (&m.data[..], m.mime_type.as_str())),
            Some((&[0u8][..], "image/png"))
        );

        let bad =
            result(json!({"content": [{"type": "image", "data": "***", "mimeType": "image/png"}]}));
        let error = outcome("s", "t", bad).unwrap_err();
        assert_eq!(error.code(), ErrorCode::ToolFailed);

        let failed =
            result(json!({"content": [{"type": "text", "text": "it broke"}], "isError": true}));
        let error = outcome("s", "t", failed).unwrap_err();
        assert_eq!(
            (error.code(), error.message()),
            (ErrorCode::ToolFailed, "it broke")
        );

        let silent = result(json!({"content": [], "isError": true}));
        let error = outcome("files", "rm", silent).unwrap_err();
        assert_eq!(error.message(), "`rm` on the MCP server `files` failed");
    }
}
