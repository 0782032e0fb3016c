//! Refusals as MCP clients read them: a JSON-RPC error with no id, with the HTTP status that
//! says what went wrong (a 503 with `Retry-After` for one to retry), and rmcp's own plain-text
//! refusals rewritten so.

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

/// rmcp answers a request it cannot take in plain text: the same status with a JSON-RPC error
/// (no id) as its body, which MCP clients read. A JSON body that does not parse is a parse
/// error (400, -32700) as JSON-RPC says, not rmcp's 415.
pub(super) async fn as_json_rpc_error(response: Response, sent_json: bool) -> Response {
    let status = response.status();
    let text = axum::body::to_bytes(response.into_body(), 64 * 1024)
        .await
        .map(|bytes| String::from_utf8_lossy(&bytes).trim().to_owned())
        .unwrap_or_default();
    let reason = status.canonical_reason().unwrap_or("refused");
    let message = if text.is_empty() { reason } else { &text };
    if status == StatusCode::UNSUPPORTED_MEDIA_TYPE && sent_json {
        return json_rpc_error(
            StatusCode::BAD_REQUEST,
            -32700,
            &format!("parse error: {message}"),
        );
    }
    json_rpc_error(status, -32600, message)
}

pub(super) fn is_json(headers: &HeaderMap) -> bool {
    has_content_type(headers, "application/json")
}

/// Whether the `Content-Type` in `headers` is `kind` (with or without parameters).
pub(super) fn has_content_type(headers: &HeaderMap, kind: &str) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.trim_start().starts_with(kind))
}

/// 503 with `Retry-After: 1`: a refusal a client should retry in a moment.
pub(super) fn try_again_shortly(message: &str) -> Response {
    let mut response = refuse(StatusCode::SERVICE_UNAVAILABLE, message);
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    response
}

/// A refusal as MCP clients read one: a JSON-RPC error with no id.
pub(super) fn refuse(status: StatusCode, message: &str) -> Response {
    json_rpc_error(status, -32000, message)
}

pub(super) fn json_rpc_error(status: StatusCode, code: i64, message: &str) -> Response {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": { "code": code, "message": message },
    });
    (status, axum::Json(body)).into_response()
}
